"""The words a search sees: how text is folded, stemmed and split into a record's parts.

One rule for the embedded store's index and queries (:mod:`capabilities.providers.
embedded_sqlite`) and for the lexical re-rank of OpenViking's candidates
(:mod:`capabilities.providers.hybrid`), so a word counts the same in both. Stemming
is SQLite's own porter tokenizer, so this module imports ``sqlite3``, and nothing of
the embedded store: an OpenViking Turn loads no store code.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
TOKENIZE = "tokenize = 'porter unicode61 remove_diacritics 2'"
"""Porter stemming, so a query's "migrations" or "rebasing" finds a stored "migration"
or "rebase". Stores made before it have no ``SEARCH_INDEX`` mark and an index of
unstemmed words; a writer rebuilds it once (``embedded_sqlite._rebuild_index``)."""
STOP_WORDS = frozenset(
    # The Snowball project's English stop word list (snowballstem.org, BSD licence),
    # with its contractions as this module splits them ("don't" is "don" and "t"),
    # less the particles that name a state in software work ("out of memory", "scale
    # up", "the service is down", "turn it off", "rolled over", "under load") and the
    # negations a symptom is named by ("not responding", "no space left") ...
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his "
    "himself she her hers herself it its itself they them their theirs themselves what "
    "which who whom this that these those am is are was were be been being have has had "
    "having do does did doing would should could ought a an the and but if or because as "
    "until while of at by for with about against between into through during before after "
    "above below to from in on again further then once here "
    "there when where why how all any both each few more most other some such "
    "own same so than too very cannot s t d ll m ve isn aren wasn weren hasn haven "
    "hadn doesn don didn won wouldn shan shouldn couldn mustn let "
    # ... and the few words of asking it lacks.
    "can just will".split()
)
"""Words a query never searches on: they say how a developer asks, not what about."""


def _fold(text: str) -> str:
    """``text`` folded the way the ``unicode61 remove_diacritics 2`` tokenizer folds it."""
    plain = text.lower()
    if not plain.isascii():  # ASCII has nothing to fold, and most text is ASCII
        folded = unicodedata.normalize("NFKD", plain)
        plain = "".join(char for char in folded if not unicodedata.combining(char))
    return plain


def _words(text: str) -> list[str]:
    """Words folded the way the ``unicode61 remove_diacritics 2`` tokenizer folds them."""
    return list(dict.fromkeys(_WORD.findall(_fold(text))))


@functools.lru_cache(maxsize=64)
def _starting(starts: tuple[str, ...]) -> re.Pattern[str]:
    """The words of folded text that start with one of ``starts``: what
    ``[w for w in _words(text) if w.startswith(starts)]`` holds, found without
    splitting the whole text. A match begins where a word does (no word character
    before it) and runs to the word's end; a start that is not word characters
    only begins no word, as it begins none of ``_words``."""
    if "" in starts:
        return _WORD  # every word starts with nothing
    usable = sorted({start for start in starts if _WORD.fullmatch(start)}, key=len, reverse=True)
    if not usable:
        return re.compile(r"(?!)")  # matches nothing
    return re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, usable)) + r")[^\W_]*")


class _Stems:
    """Each word's stem exactly as the search index makes it.

    SQLite's own porter tokenizer, in a private in-memory table, so a term count and
    a query agree with the index on every word. One per thread (:func:`_stemmer`):
    making it costs more than using it.
    """

    def __init__(self) -> None:
        self._connection = sqlite3.connect(":memory:", isolation_level=None)
        self._connection.execute(f"CREATE VIRTUAL TABLE s USING fts5(t, {TOKENIZE})")
        self._connection.execute("CREATE VIRTUAL TABLE i USING fts5vocab(s, instance)")
        self._connection.execute("CREATE VIRTUAL TABLE r USING fts5vocab(s, row)")

    def of(self, words: list[str]) -> dict[str, str]:
        """``{word: its stem}`` for each word the tokenizer keeps."""
        if all(word.isascii() for word in words):
            # An ASCII word of _words() is letters and digits only: exactly one token,
            # so the words can go in as one document and each token's offset names
            # its word. One document instead of one per word is about ten times
            # cheaper (the relevance gate stems a few hundred words per search).
            self._connection.execute("INSERT INTO s(rowid, t) VALUES (0, ?)", (" ".join(words),))
            rows = self._connection.execute("SELECT offset, term FROM i ORDER BY offset").fetchall()
        else:
            self._connection.executemany("INSERT INTO s(rowid, t) VALUES (?, ?)", enumerate(words))
            rows = self._connection.execute(
                "SELECT doc, term FROM i ORDER BY doc, offset"
            ).fetchall()
        self._connection.execute("DELETE FROM s")
        found: dict[str, str] = {}
        for index, term in rows:
            found.setdefault(words[index], str(term))
        return found

    def __call__(self, words: list[str]) -> dict[str, str]:
        """``{stem: first word with that stem}``, in the words' order."""
        stems: dict[str, str] = {}
        for word, term in self.of(words).items():
            stems.setdefault(term, word)
        return stems

    def terms(self, text: str) -> list[str]:
        """The distinct stems of ``text``."""
        self._connection.execute("INSERT INTO s(rowid, t) VALUES (1, ?)", (text,))
        rows = self._connection.execute("SELECT term FROM r").fetchall()
        self._connection.execute("DELETE FROM s")
        return [str(row[0]) for row in rows]


_LOCAL = threading.local()


def _stemmer() -> _Stems:
    """This thread's :class:`_Stems` (a resident server serves calls on threads)."""
    stem: _Stems | None = getattr(_LOCAL, "stems", None)
    if stem is None:
        stem = _LOCAL.stems = _Stems()
    return stem


HEAD_WEIGHT = 1.5
"""A query term in a record's summary or trigger says more than one in its details."""


_SEARCH_KEYS = ("content_summary", "experience")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [
            text
            for key, item in sorted(value.items())
            if key != "schema_version"
            for text in _strings(item)
        ]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _record_text(document: dict[str, object]) -> str:
    return "\n".join(text for key in _SEARCH_KEYS for text in _strings(document.get(key)))


def _head_and_body(content: str) -> tuple[str, str]:
    """A record's summary and trigger, and all its meaning (what the
    search index holds), from one parse.

    Text that is not a record is both its head and its body.
    """
    try:
        document = json.loads(content)
    except ValueError:
        return content, content
    if not isinstance(document, dict) or "content_summary" not in document:
        return content, content
    experience = document.get("experience")
    behaviour = experience.get("future_behavior") if isinstance(experience, dict) else None
    trigger = behaviour.get("trigger") if isinstance(behaviour, dict) else None
    head = "\n".join(_strings([document["content_summary"], trigger]))
    return head, _record_text(document)


def held_stems(
    texts: list[str], terms: Iterable[str], stem: _Stems
) -> list[tuple[set[str], set[str]]]:
    """For each text, the stems its head (summary, trigger) and its whole meaning hold,
    of the words that can stem to one of ``terms``.

    A porter stem keeps the start of its word (a changed ending at most), so only the
    words that start like a query stem are stemmed, not whole records. The ending
    may be two letters, and a three-letter stem's last letter may be one the word
    does not have ("key" is "kei", "day" is "dai"), so a stem of three letters is
    looked for by its first two.
    """
    parts = [_head_and_body(text) for text in texts]
    starting = _starting(tuple(term[: max(len(term) - 2, min(len(term), 2))] for term in terms))
    heads = [set(starting.findall(_fold(head))) for head, _body in parts]
    bodies = [set(starting.findall(_fold(body))) for _head, body in parts]
    wanted = sorted({word for words in (*heads, *bodies) for word in words})
    stems = stem.of(wanted) if wanted else {}
    return [
        ({stems[w] for w in head if w in stems}, {stems[w] for w in body if w in stems})
        for head, body in zip(heads, bodies, strict=True)
    ]
