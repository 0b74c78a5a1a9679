"""Other words for the same thing in software work: the synonym and abbreviation table.

Recall is lexical: stemming finds "migration" for "migrations", never "database" for
"DB" or "flaky" for "intermittent". ``synonyms.txt`` beside this module lists the
terms a developer uses for one thing (its header gives the syntax, source and
licence); this module reads it on first use, once per process, and says which other
terms a query's words stand for. It ships in the package and reads nothing else, so
it works offline.

A term comes back as a tuple of folded words, as
:func:`capabilities.providers.terms._words` makes them: ``("database",)``,
``("pull", "request")``. Stop words (:data:`~capabilities.providers.terms.STOP_WORDS`)
are left out, as a query never searches on them: "out of memory" is
``("out", "memory")``. Nothing here is stemmed: a caller stems the alternatives with
the stemmer of the query's own words (``terms._stemmer()``), so the table need not
list a word's inflections.

Like :mod:`~capabilities.providers.terms`, it imports nothing of a store.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator

from capabilities.providers.terms import STOP_WORDS, _fold, _words

TABLE = os.path.join(os.path.dirname(__file__), "synonyms.txt")
"""Where the table is: package data, shipped in the wheel beside this module."""

LONGEST_PHRASE = 5
"""The most words a term of the table has (``parse`` holds the table to it), so a
phrase search looks at runs of at most this many query words."""

ONE_WAY = " => "
SEPARATOR = ", "

Term = tuple[str, ...]
"""A term's searchable words: folded, stop words left out."""


class Entry:
    """One line of the table: each of ``sources`` stands for every other term of
    ``targets``. A group (``a, b, c``) has the same terms on both sides; a one-way
    entry (``a => b``) has its two."""

    # A plain class, not a NamedTuple: making one at import costs a millisecond, on
    # every PreTurn that imports this module.
    __slots__ = ("line", "one_way", "sources", "targets")

    def __init__(
        self, line: int, sources: tuple[str, ...], targets: tuple[str, ...], one_way: bool
    ) -> None:
        self.line = line
        self.sources = sources
        self.targets = targets
        self.one_way = one_way

    def __repr__(self) -> str:
        arrow = " => " if self.one_way else " | "
        return f"Entry({self.line}: {', '.join(self.sources)}{arrow}{', '.join(self.targets)})"


def _lines(text: str) -> Iterator[tuple[int, list[str], list[str], bool]]:
    """Each entry's line number, sources, targets and whether it is one way.

    The table is written as its header says, folded and with exactly ``", "`` and
    ``" => "`` between terms (:func:`parse` holds it to that), so reading it is
    splitting strings: a regular expression per term would cost the first lookup
    several times more.
    """
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.partition("#")[0].rstrip()
        if line:
            left, arrow, right = line.partition(ONE_WAY)
            sources = left.split(SEPARATOR)
            yield number, sources, right.split(SEPARATOR) if arrow else sources, bool(arrow)


def term_words(term: str) -> Term:
    """A term of the table as its searchable words: "out of memory" is ("out", "memory")."""
    return tuple(word for word in term.split() if word not in STOP_WORDS)


def _bad_term(term: str) -> str | None:
    if " ".join(_words(term)) != term:
        return f"{term!r} is not written as a search folds it (lower case, one space)"
    words = term_words(term)
    if not words:
        return f"{term!r} is a stop word"
    if len(words) == 1 and " " in term:
        return f"{term!r} leaves one word once its stop words are left out"
    if len(term.split()) > LONGEST_PHRASE:
        return f"{term!r} has more than {LONGEST_PHRASE} words"
    return None


def parse(text: str) -> list[Entry]:
    """The table's entries, each checked against the syntax of ``synonyms.txt``'s header.

    Reading the table for a search skips these checks; ``tests/test_synonyms.py``
    parses the shipped table with them.

    :raises ValueError: naming the line, for a term not written folded, a term of stop
        words (or one word and stop words), a term listed twice in an entry, a group
        of one, or a one-way entry with a term on both sides. A second ``=>`` makes
        a term that is not written folded.
    """
    entries = []
    for number, sources, targets, one_way in _lines(text):
        problems = [problem for term in {*sources, *targets} if (problem := _bad_term(term))]
        if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
            problems.append("a term is listed twice")
        if one_way and set(sources) & set(targets):
            problems.append("a term is on both sides of '=>'")
        if not one_way and len(sources) < 2:
            problems.append("a group needs two terms")
        if problems:
            raise ValueError(f"synonyms.txt line {number}: {'; '.join(sorted(problems))}")
        entries.append(Entry(number, tuple(sources), tuple(targets), one_way))
    return entries


_Index = tuple[dict[str, list[list[str]]], dict[str, str]]
"""Each source term's target lists, one per entry it is a source in; and each phrase
with stop words by its words without them ("out memory" is "out of memory")."""


@functools.cache
def _table() -> str:
    """The table's text, folded, read on first use: a process that never asks pays nothing."""
    with open(TABLE, encoding="utf-8") as table:
        return _fold(table.read())


@functools.lru_cache(maxsize=4096)
def _starts(word: str) -> tuple[int, ...]:
    """Where the table's lines that hold ``word`` as a whole word start."""
    text = _table()
    found = []
    # str.find runs in C: a pass per word costs less than one regular expression of
    # all of them, which tries every alternative at every position of the table.
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            found.append(text.rfind("\n", 0, at) + 1)
        at = text.find(word, end)
    return tuple(found)


def _index(words: Iterable[str]) -> _Index:
    """The lookups of the table's lines that hold one of ``words``: the only lines a
    lookup of them, or of a phrase of them, can use.

    Indexing the whole table took 1.5 ms and more on the first lookup of every cold
    PreTurn; finding the lines a query's words are on is a few scans of the text,
    and a few lines to split. Each word's lines are kept (:func:`_starts`), so a warm
    process (the resident server, an ingest's recall) scans for a word once.
    """
    text = _table()
    starts = sorted({start for word in set(words) if word for start in _starts(word)})
    ends = [text.find("\n", start) for start in starts]
    lines = "\n".join(
        text[s : e if e >= 0 else len(text)] for s, e in zip(starts, ends, strict=True)
    )
    targets: dict[str, list[list[str]]] = {}
    phrases: dict[str, str] = {}
    for _number, sources, entry_targets, _one_way in _lines(lines):
        for term in sources:
            targets.setdefault(term, []).append(entry_targets)
            if " " in term and not STOP_WORDS.isdisjoint(split := term.split()):
                phrases[" ".join(word for word in split if word not in STOP_WORDS)] = term
    return targets, phrases


def _others(term: str, index: _Index) -> tuple[Term, ...] | None:
    lists = index[0].get(term)
    if lists is None:
        return None
    others = dict.fromkeys(other for targets in lists for other in targets if other != term)
    return tuple(map(term_words, others))


def alternatives(words: Iterable[str]) -> dict[str, tuple[Term, ...]]:
    """``{word: the terms it also stands for}`` for each of ``words`` the table names.

    :param words: a query's folded words, as ``terms._words`` returns them.
    :return: each word that is a term of an entry, with the other terms of its entries
        (of a one-way entry, only its targets and only from its sources), in the
        table's order. A word in no entry is absent. Unstemmed: stem them as the
        query's words are.
    """
    words = list(words)
    index = _index(words)
    found = {}
    for word in words:
        if (others := _others(word, index)) is not None:
            found[word] = others
    return found


def phrase_alternatives(words: Iterable[str]) -> dict[Term, tuple[Term, ...]]:
    """``{phrase: the terms it also stands for}`` for each phrase of the table that
    ``words`` hold in a row: "pull request" stands for "pr".

    :param words: a query's folded words in order, as ``terms._words`` returns them,
        with or without their stop words: "out of memory" and "out memory" both find
        the phrase ``("out", "memory")``.
    :return: each phrase found, as its searchable words, with its alternatives as
        :func:`alternatives` gives a word's. A query with none gives ``{}``.
    """
    sequence = list(words)
    # A phrase of the table keeps two words that are not stop words: its line holds them.
    index = _index(word for word in sequence if word not in STOP_WORDS)
    found: dict[Term, tuple[Term, ...]] = {}
    for start in range(len(sequence) - 1):
        for end in range(start + 2, min(start + LONGEST_PHRASE, len(sequence)) + 1):
            run = " ".join(sequence[start:end])
            term = index[1].get(run, run)
            if (others := _others(term, index)) is not None:
                found[term_words(term)] = others
    return found
