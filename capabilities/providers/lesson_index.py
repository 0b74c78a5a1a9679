"""The lesson index of an OpenViking corpus: each active record's lesson in plain words.

OpenViking embeds what a file holds. A record is JSON whose keys, refs and digests
outweigh its lesson, so every record sits close to every prompt and the server's
similarity barely tells them apart. So beside each active record the provider keeps
an *index entry*: a small plain-text file holding the lesson's own words (its summary
and its experience's strings, one per line; :func:`entry_text`), which the server
embeds instead, and recall searches.

An entry is only a pointer. Its name is the record's, in a parallel scope
(:func:`index_scope`: the corpus scope with :data:`INDEX_SUFFIX`, a sibling, so
nothing that lists or searches the corpus scope, LoopX 2.1.1 included, ever meets an
entry); recall maps a hit back to the record's URI (:func:`record_uri`) and reads and
checks the real record as it always did. The records themselves are written exactly
as before, byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

from capabilities.providers.scopes import classify_scope
from capabilities.providers.terms import _strings

INDEX_SUFFIX = "-lessons"
"""What the corpus scope's name gains to name its index's scope."""
COMPLETE_MARK = "complete.txt"
"""The file an index holds once every record of its corpus has had its entry made (not
an entry's name, so never mapped to a record; the server refuses dot names). Until it
is there, recall also searches the records themselves, and each index write fills in
the entries of the records written before the index existed (:func:`complete_uri`)."""
RECORD_SCHEMA = "reward_memory_active_record_v0"
_RECORD_EXT = ".json"
_ENTRY_EXT = ".md"


def index_scope(scope_ref: str) -> str | None:
    """The index's scope for a corpus scope: its sibling of the same kind and owner, or
    ``None`` when it has none (a bare ``…/memories`` or ``…/resources`` root): then no
    index is kept, and recall searches the records."""
    scope = scope_ref.strip().rstrip("/")
    sibling = scope + INDEX_SUFFIX
    own, other = classify_scope(scope), classify_scope(sibling)
    if (
        own is None
        or other is None
        or len(own.segments) <= 2
        or own.segments[-1] in {"memories", "resources"}
    ):
        return None
    same = (own.visibility, own.kind, own.user, own.peer)
    return sibling if same == (other.visibility, other.kind, other.user, other.peer) else None


def complete_uri(index: str) -> str:
    """Where the index ``index`` keeps its :data:`COMPLETE_MARK`."""
    return f"{index.rstrip('/')}/{COMPLETE_MARK}"


def entry_uri(record_uri: str) -> str | None:
    """The index entry of the record at ``record_uri``, or ``None`` when its corpus
    keeps no index or the name is not a record's (``….json``)."""
    scope, _, name = record_uri.strip().rpartition("/")
    index = index_scope(scope)
    if index is None or not name.endswith(_RECORD_EXT) or name == _RECORD_EXT:
        return None
    return f"{index}/{name.removesuffix(_RECORD_EXT)}{_ENTRY_EXT}"


def record_uri(scope_ref: str, hit_uri: str) -> str | None:
    """The record an index hit below ``index_scope(scope_ref)`` points at, or ``None``
    for anything else the index scope holds (a directory, a foreign file)."""
    index = index_scope(scope_ref)
    if index is None:
        return None
    folder, _, name = hit_uri.split("#", 1)[0].rpartition("/")
    if folder != index or not name.endswith(_ENTRY_EXT) or name.startswith("."):
        return None
    return f"{scope_ref.strip().rstrip('/')}/{name.removesuffix(_ENTRY_EXT)}{_RECORD_EXT}"


def _line(value: object) -> str:
    """One field on one line: its words, whitespace collapsed."""
    return " ".join(value.split()) if isinstance(value, str) else ""


def parse_record(text: str) -> dict[str, Any] | None:
    """A stored reward-memory record's document (of any lifecycle state), or ``None``
    for text that is not one (a canary, a mark, a foreign file)."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("schema_version") != RECORD_SCHEMA:
        return None
    return record


def is_record(text: str) -> bool:
    """Whether ``text`` is a reward-memory record (of any lifecycle state)."""
    return parse_record(text) is not None


def entry_text(record_text: str) -> str | None:
    """The index entry of a stored record: its lesson in plain words, or ``None`` when
    the text is not an *active* record (a retired one is never recalled, so it keeps
    no entry) or holds no summary.

    The words are what the embedded store embeds of a record (its summary, then every
    string of its experience by key, :func:`~capabilities.providers.terms._strings`),
    one string a line, the summary first: the JSON's keys, digests and lifecycle are
    left out. Measured on the dev half against shorter entries (summary, trigger,
    action, check and stop condition; the same less check and stop; summary and
    trigger): at 90 % no-match silence these recalled the most (benchmarks/HISTORY.md).
    """
    record = parse_record(record_text)
    if record is None:
        return None
    lifecycle = record.get("lifecycle")
    if isinstance(lifecycle, dict) and lifecycle.get("state", "active") != "active":
        return None
    summary = _line(record.get("content_summary"))
    if not summary:
        return None
    lines = [summary, *(_line(text) for text in _strings(record.get("experience")))]
    return "\n".join(line for line in lines if line)


def as_record(entry: str) -> str:
    """An entry's words in a record's shape, so the lexical re-rank weighs its summary
    (the first line) as a record's head (:func:`~capabilities.providers.terms.held_stems`)
    and every line as its meaning."""
    summary = entry.split("\n", 1)[0]
    return json.dumps({"content_summary": summary, "experience": {"meaning": entry}})
