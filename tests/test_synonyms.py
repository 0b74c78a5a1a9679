"""The synonym and abbreviation table: well formed, precise, and read the way its header says."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from capabilities.providers import synonyms
from capabilities.providers.terms import STOP_WORDS, _words

ROOT = Path(__file__).parent.parent
TEXT = Path(synonyms.TABLE).read_text(encoding="utf-8")
ENTRIES = synonyms.parse(TEXT)
TERMS = sorted({term for entry in ENTRIES for term in (*entry.sources, *entry.targets)})
MOST_ENTRIES_PER_TERM = 3
"""A term in many entries would fan a common word out to many others: recall would
speak for prompts it has nothing for."""


def test_the_table_lives_beside_its_module_in_the_package():
    assert Path(synonyms.TABLE) == ROOT / "capabilities" / "providers" / "synonyms.txt"


def test_the_table_is_broad():
    assert 400 <= len(ENTRIES) <= 700


def test_every_line_is_an_entry_a_comment_or_blank():
    lines = TEXT.splitlines()
    meaningful = [n for n, line in enumerate(lines, 1) if line.partition("#")[0].strip()]
    assert [entry.line for entry in ENTRIES] == meaningful


def test_the_header_names_the_source_and_the_projects_licence():
    header = TEXT.split("\n\n")[0]
    licence = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert "written for turn-hooks from common usage in software work" in " ".join(header.split())
    assert f"{licence} licence" in header


def test_every_term_is_written_as_a_search_folds_it():
    assert [term for term in TERMS if " ".join(_words(term)) != term] == []
    assert [term for term in TERMS if term in STOP_WORDS] == []
    assert [term for term in TERMS if not synonyms.term_words(term)] == []


def test_no_entry_is_listed_twice():
    seen = Counter(
        (frozenset(entry.sources), frozenset(entry.targets), entry.one_way) for entry in ENTRIES
    )
    assert [entry for entry, count in seen.items() if count > 1] == []


def test_no_term_is_in_more_than_three_entries():
    counts = Counter(term for entry in ENTRIES for term in {*entry.sources, *entry.targets})
    assert {term: n for term, n in counts.items() if n > MOST_ENTRIES_PER_TERM} == {}


def test_no_phrase_is_longer_than_the_phrase_search_looks():
    assert max(len(term.split()) for term in TERMS) <= synonyms.LONGEST_PHRASE


def test_every_term_of_a_group_finds_every_other():
    for entry in ENTRIES:
        if entry.one_way:
            continue
        for term in entry.sources:
            found = {
                **synonyms.alternatives(synonyms.term_words(term)),
                **{" ".join(k): v for k, v in synonyms.phrase_alternatives(term.split()).items()},
            }
            others = found[" ".join(synonyms.term_words(term))]
            expected = {synonyms.term_words(other) for other in entry.sources if other != term}
            assert expected <= set(others), (entry.line, term)


@pytest.mark.parametrize(
    ("word", "alternative"),
    [
        ("db", ("database",)),
        ("database", ("db",)),
        ("flaky", ("intermittent",)),
        ("intermittent", ("flaky",)),
        ("k8s", ("kubernetes",)),
        ("regenerate", ("rebuild",)),
        ("rebuild", ("regenerate",)),
        ("pr", ("pull", "request")),
        ("oom", ("out", "memory")),
        ("postgresql", ("postgres",)),
        ("auth", ("authentication",)),
        ("auth", ("authorization",)),
    ],
)
def test_a_word_finds_its_alternatives(word, alternative):
    assert alternative in synonyms.alternatives([word])[word]


def test_an_ambiguous_abbreviation_does_not_chain_its_meanings():
    # "auth" is either; "authentication" is never "authorization".
    assert ("authorization",) not in synonyms.alternatives(["authentication"])["authentication"]


@pytest.mark.parametrize(
    ("words", "phrase", "alternative"),
    [
        (["open", "a", "pull", "request"], ("pull", "request"), ("pr",)),
        (["we", "ran", "out", "of", "memory"], ("out", "memory"), ("oom",)),
        (["ran", "out", "memory"], ("out", "memory"), ("oom",)),
        (["the", "stack", "trace", "says"], ("stack", "trace"), ("traceback",)),
    ],
)
def test_a_phrase_in_a_query_finds_its_alternatives(words, phrase, alternative):
    assert alternative in synonyms.phrase_alternatives(words)[phrase]


def test_one_way_entries_look_from_the_narrow_term_only():
    assert ("crash",) in synonyms.alternatives(["segfault"])["segfault"]
    assert ("segfault",) not in synonyms.alternatives(["crash"]).get("crash", ())
    assert ("cache",) in synonyms.alternatives(["memoize"])["memoize"]
    assert ("memoize",) not in synonyms.alternatives(["cache"]).get("cache", ())


def test_a_word_or_phrase_in_no_entry_is_absent():
    assert synonyms.alternatives(["haiku", "slugify", "the"]) == {}
    assert synonyms.phrase_alternatives(["celsius", "to", "fahrenheit"]) == {}
    assert synonyms.phrase_alternatives([]) == {}


def test_no_word_stands_for_itself():
    for word, others in synonyms.alternatives(term for term in TERMS if " " not in term).items():
        assert (word,) not in others


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("db", "a group needs two terms"),
        ("DB, database", "not written as a search folds it"),
        ("db,database", "not written as a search folds it"),
        ("db,  database", "not written as a search folds it"),
        ("the, a", "is a stop word"),
        ("login, log in", "leaves one word"),
        ("db, db", "listed twice"),
        ("db => db", "on both sides"),
        ("a1 => b1 => c1", "not written as a search folds it"),
        ("a1, one two three four five six", "more than 5 words"),
    ],
)
def test_a_malformed_line_is_refused_with_its_number(line, reason):
    with pytest.raises(ValueError, match=rf"line 2: .*{reason}"):
        synonyms.parse(f"# a table\n{line}\n")


def test_importing_the_module_reads_no_table():
    # It sits on every PreTurn: a Turn that never asks for an alternative pays nothing.
    code = (
        "from capabilities.providers import synonyms; print(synonyms._table.cache_info().currsize)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "0"
