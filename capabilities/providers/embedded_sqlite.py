"""The embedded default provider: one SQLite database with FTS5 (providers.md §2).

Records are addressed by the same ``viking://`` URIs as on OpenViking and partitioned
by peer exactly as OpenViking's actor-peer header does, so records move between the
two providers unchanged. Every call opens a short-lived connection (one ingest's
calls share one, :meth:`EmbeddedSqliteProvider.holding`): SQLite's own locking is the
only concurrency control needed.

The store's files follow the sidecar rules (docs/sidecars.md), checked before every
connection, for readers and writers alike:

- no symlink from below the *anchor* (the Goal repository, so ``.local`` and
  ``.local/turn-hooks`` included) down to the database and its companion files;
- directories the store creates are 0700, the database 0600;
- the database's directory must be private (no group or other bits) and ours, and so
  must the database. A widened or foreign one is **refused**, as a widened sidecar is
  (``embedded_store_permission_widened``), not narrowed: its records may already have
  been read, and someone changed the mode on purpose or by accident, which the
  operator should learn (``health-check`` reports it) before ``chmod 600`` repairs it;
- the companion files ``-wal``, ``-shm`` and ``-journal`` are the store's own
  scratch: a writer checks that each is a regular file of ours and **sets it to 0600**
  before connecting. SQLite creates them with the database's mode, so a database made
  0400 for a while leaves a 0400 ``-shm`` behind, and without this nothing could be
  stored again until someone fixed that file by hand. A reader changes nothing and
  refuses a widened companion instead.

SQLite opens paths by name, so the checks are made just before it does. Every
component checked lies in a private directory of ours by then; only our own user could
swap one in between.

Every ``sqlite3.Error``, a corrupt or truncated file included, becomes
``ProviderUnavailable`` with a reason code (``embedded_store_corrupt``,
``embedded_store_busy``, ``embedded_store_read_only``, ...), so callers fail open.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capabilities.providers.base import (
    Hit,
    Preflight,
    ProviderPermissionError,
    ProviderScopeError,
)
from capabilities.providers.query import QueryWords, Variant, query_words
from capabilities.providers.scopes import classify_scope
from capabilities.providers.terms import (
    STOP_WORDS,
    TOKENIZE,
    _head_and_body,
    _stemmer,
    _Stems,
    _words,
    held_stems,
)
from sidecars import kind_problem
from turn_hooks import ProviderUnavailable
from turn_hooks.errors import SidecarError

if TYPE_CHECKING:
    from capabilities.providers.semantic import SemanticIndex

PROVIDER_ID = "embedded_sqlite"
SCHEMA_VERSION = "turn_hooks_sqlite_v1"
DATABASE_NAME = "memory.sqlite3"
FILE_MODE = 0o600
DIR_MODE = 0o700
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside the database (write-ahead log, its index, rollback journal)."""
SEARCH_INDEX = "fts5_porter_unicode61_v1"
"""The ``meta`` mark of the search index's tokenizer and term counts."""
_SUMMARY = re.compile(r'"content_summary":"((?:[^"\\]|\\.)*)"')

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS records(uri TEXT PRIMARY KEY, user TEXT NOT NULL, "
    "peer TEXT NOT NULL, content TEXT NOT NULL, updated_at TEXT NOT NULL)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(uri UNINDEXED, body, {TOKENIZE})",
    # Document frequency per search term, kept in the write transaction: choosing the
    # rarest query terms then costs one index lookup per term.
    "CREATE TABLE IF NOT EXISTS term_docs(term TEXT PRIMARY KEY, docs INTEGER NOT NULL) "
    "WITHOUT ROWID",
    # Each record's stems, its head's and its whole meaning's, made when it is
    # written: the relevance gate then reads them instead of parsing and stemming
    # every candidate on every search. ``updated_at`` is the record's own: a row a
    # writer without this table changed (an older version) no longer matches it,
    # and its stems are made at search time as before (:func:`_relevant`).
    "CREATE TABLE IF NOT EXISTS record_stems(record INTEGER PRIMARY KEY, "
    "updated_at TEXT NOT NULL, head TEXT NOT NULL, body TEXT NOT NULL)",
)
STEMS_TABLE = "record_stems"
MAX_QUERY_TERMS = 6
"""The rarest query terms kept: common ones rank every record and cost time, not relevance."""
MATCH_BUDGET = 2000
"""How many matching records one query may rank. Terms are taken rarest first while
their document counts fit the budget (the rarest one always), so the work of a query
is bounded by the budget instead of growing with the store."""


def _partition(uri: str) -> tuple[str, str]:
    scope = classify_scope(uri)
    if scope is None:
        raise ProviderScopeError("the record URI is not an accepted viking:// scope")
    return scope.user or "", scope.peer or ""


def _unstemmed(query: str) -> QueryWords:
    """A store made before stemming indexes each word as it is, and has no alternatives."""
    words = [word for word in _words(query) if word not in STOP_WORDS]
    return QueryWords(
        {word: ((frozenset((word,)), 1.0),) for word in words}, {word: (word,) for word in words}
    )


def _group(texts: tuple[str, ...]) -> str:
    """One query word's FTS5 group: the word or any of its alternatives, each quoted, so
    FTS5 syntax in a query is matched literally, never run (a quoted text of several
    words is a phrase)."""
    quoted = [f'"{text}"' for text in texts]
    return quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")"


def _fts_queries(
    connection: sqlite3.Connection, query: str, stem: _Stems | None
) -> tuple[list[str], dict[str, float], QueryWords]:
    """FTS5 queries for ``query``, most precise first: all known words, then any.

    Each informative word (:func:`~capabilities.providers.query.query_words`) is a
    group of itself and its alternatives (:func:`_group`); FTS5 stems them as it
    stemmed the records (a stem stemmed again may change). Words that no record holds
    in any form are dropped (they cannot match). The AND query finds the records that
    hold every remaining word; the OR query fills up with the rarest words within
    :data:`MATCH_BUDGET` (see there), so neither grows with the store. ``stem`` is
    ``None`` on a store whose index predates stemming. Also returns each word's rarity
    weight (:func:`_weights`) and the words themselves, for :func:`_relevant`.
    """
    words = query_words(query, stem) if stem is not None else _unstemmed(query)
    if not words.variants:
        return [], {}, words
    stems = sorted(words.stems)
    marks = ",".join("?" * len(stems))
    frequencies = dict(
        connection.execute(
            f"SELECT term, docs FROM term_docs WHERE term IN ({marks}) AND docs > 0", stems
        ).fetchall()
    )
    weights = _weights(connection, words, frequencies) if stem is not None else {}
    # A word that most records hold tells them apart no better than none: it cannot
    # make a record relevant (its weight is near 0), yet ranking its matches would be
    # a search over most of the store. (A store indexed before stemming has no gate.)
    known = sorted(
        (count, term)
        for term, variants in words.variants.items()
        if (count := _matches(variants, frequencies)) and weights.get(term, 1.0) >= COMMON_WEIGHT
    )
    known = known[:MAX_QUERY_TERMS]
    if not known:
        return [], weights, words
    chosen: list[str] = []
    matched = 0
    for count, term in known:
        if chosen and matched + count > MATCH_BUDGET:
            break
        chosen.append(term)
        matched += count
    queries = [" OR ".join(_group(words.phrases[term]) for term in chosen)]
    if len(known) > 1:
        queries.insert(0, " AND ".join(_group(words.phrases[term]) for _count, term in known))
    return queries, weights, words


def _matches(variants: tuple[Variant, ...], frequencies: dict[str, int]) -> int:
    """At most how many records hold one of a word's variants: each variant's rarest
    stem's count, summed (0 when some stem of every variant is in no record)."""
    return sum(min(frequencies.get(s, 0) for s in need) for need, _factor in variants)


COMMON_WEIGHT = 0.1
"""A query term whose rarity weight (:func:`_weights`) is below this is not searched:
in a store of 10,000 records it is held by more than about 4,000 of them."""


def _weights(
    connection: sqlite3.Connection, words: QueryWords, frequencies: dict[str, int]
) -> dict[str, float]:
    """Each query word's rarity in ``(0, 1]`` over the whole store (:meth:`QueryWords.rarity`)."""
    # The highest rowid, not count(*): one index lookup instead of a scan, and exact
    # until a record is deleted (rare: retiring a record keeps it).
    records = connection.execute("SELECT coalesce(max(rowid), 0) FROM records").fetchone()[0]
    return words.rarity(frequencies, records)


Stems = tuple[str, str] | None
"""A record's stored stems (:data:`STEMS_TABLE`): its head's and its body's, each
joined by spaces; ``None`` where the store has none for the record as it is now."""
Row = tuple[str, float, str, Stems]
"""One search row: URI, rank, stored text and stored stems."""


def _relevant(
    rows: list[Row], weights: dict[str, float], words: QueryWords, stem: _Stems
) -> list[tuple[str, float, str]]:
    """The rows relevant enough to return, most relevant first, scored by relevance.

    A record's relevance is the weight of the query words it holds, in their own
    form or another (:meth:`QueryWords.held`), those in its summary or trigger
    counted :data:`~capabilities.providers.terms.HEAD_WEIGHT` times. It qualifies at
    :data:`~capabilities.providers.query.RELEVANCE_FLOOR`, or when it covers
    :data:`~capabilities.providers.query.RELEVANCE_COVER` of the query's whole weight
    (:meth:`QueryWords.relevance`, the same rule as for OpenViking's candidates). Nothing
    qualifying means nothing returned: the OR query's matches on a common word or two
    never fill the limit for a query that matches nothing. The stems are the ones
    stored with each record; a record without them (written by an older version) is
    parsed and stemmed here, to the same sets.
    """
    if not rows:
        return []
    held = _held(rows, words, stem)
    scores = words.relevance(weights, held)
    kept = [
        (uri, score, text)
        for (uri, _rank, text, _stems), score in zip(rows, scores, strict=True)
        if score is not None
    ]
    return sorted(kept, key=lambda row: -row[1])


def _held(rows: list[Row], words: QueryWords, stem: _Stems) -> list[tuple[set[str], set[str]]]:
    """Each row's head and whole-meaning stems of the query's words (stored, or made)."""
    unstored = [text for _uri, _rank, text, stems in rows if stems is None]
    made = iter(held_stems(unstored, words.stems, stem) if unstored else [])
    return [
        next(made) if stems is None else (set(stems[0].split()), set(stems[1].split()))
        for _uri, _rank, _text, stems in rows
    ]


def _lexical(
    rows: list[Row], weights: dict[str, float], words: QueryWords, stem: _Stems
) -> dict[str, tuple[float, bool]]:
    """Each row's lexical relevance and whether it qualifies on its own (as for
    :func:`_relevant`), by URI: what the fusion weighs beside the meaning."""
    held = _held(rows, words, stem)
    return {
        uri: (words.held(weights, *pair), qualified is not None)
        for (uri, _rank, _text, _stems), pair, qualified in zip(
            rows, held, words.relevance(weights, held), strict=True
        )
    }


def _count_terms(connection: sqlite3.Connection, terms: list[str], delta: int) -> None:
    """Add ``delta`` to the document count of each of a record's distinct stems."""
    connection.executemany(
        "INSERT INTO term_docs(term, docs) VALUES (?, ?) "
        "ON CONFLICT(term) DO UPDATE SET docs = docs + excluded.docs",
        [(term, delta) for term in terms],
    )


def _index_record(
    connection: sqlite3.Connection, rowid: int, uri: str, content: str, now: str, stem: _Stems
) -> None:
    """Index one record: its search row, its term counts and its stored stems.

    The index sees the record's meaning, not its JSON boilerplate: indexing the
    whole body would make every record match the ids and field names that every
    record shares (peer, goal, schema names), so each query would rank the whole
    store. Non-record text is indexed as it is, and is its own head.
    """
    head, body = _head_and_body(content)
    terms = stem.terms(body)
    _count_terms(connection, terms, +1)
    connection.execute(
        "INSERT INTO records_fts(rowid, uri, body) VALUES (?, ?, ?)", (rowid, uri, body)
    )
    connection.execute(
        f"INSERT OR REPLACE INTO {STEMS_TABLE}(record, updated_at, head, body) VALUES (?, ?, ?, ?)",
        (rowid, now, " ".join(stem.terms(head)), " ".join(terms)),
    )


def _unindex_record(connection: sqlite3.Connection, rowid: int, content: str, stem: _Stems) -> None:
    """Undo :func:`_index_record` for the record's ``content`` as it was indexed."""
    _count_terms(connection, stem.terms(_head_and_body(content)[1]), -1)
    connection.execute("DELETE FROM records_fts WHERE rowid = ?", (rowid,))
    connection.execute(f"DELETE FROM {STEMS_TABLE} WHERE record = ?", (rowid,))


def _summary(content: str) -> str:
    match = _SUMMARY.search(content)
    return match.group(1)[:200] if match else ""


class EmbeddedSqliteProvider:
    """Reward-memory records in ``<goal repo>/.local/turn-hooks/memory.sqlite3``.

    :param path: the database file.
    :param read_only: open ``mode=ro``: never create the file, its directories, its
        schema or anything in it, and trust the schema a writer made.
    :param anchor: the directory the store's tree hangs from (the Goal repository),
        above the database's directory; no component below it may be a symlink.
        By default the directory above the database's own, so that directory and the
        file are checked.
    :param absent_ok: (with ``read_only``) an absent store reads as an empty one: the
        preflight is ready, reads find nothing, and nothing is created anywhere. A dry
        run uses it, so a preview never leaves a database behind.
    """

    provider_id = PROVIDER_ID

    def __init__(
        self,
        path: str | Path,
        *,
        read_only: bool = False,
        anchor: str | Path | None = None,
        absent_ok: bool = False,
        semantic: str | None = None,
    ) -> None:
        self.path = Path(path).absolute()
        self.anchor = self.path.parent.parent if anchor is None else Path(anchor).absolute()
        if self.anchor not in self.path.parent.parents:
            raise ValueError("the anchor must lie above the store's directory")
        self.read_only = read_only
        self.absent_ok = absent_ok
        self._schema_ready = read_only
        self._index_current = False
        self._stems_stored = False
        self._held = threading.local()
        self.semantic: SemanticIndex | None = None
        """Record vectors fused with lexical relevance, when the user enabled them."""
        self.semantic_reason: str | None = None
        """Why the last search or write could not use them (``semantic_*``), if it could not."""
        if semantic is not None:
            from capabilities.providers.semantic import SemanticIndex

            self.semantic = SemanticIndex(semantic, self.path.parent, writable=not read_only)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """This thread's calls inside the block share one connection.

        For one ingest: its preflight, write, readback and destination recall. Each
        call otherwise opens its own, and closing the last connection makes SQLite
        checkpoint the write-ahead log and delete it, two more fsyncs and a file
        created and removed per call. The first call opens the connection, checking
        the store's files as any call does, and the block's end closes it, so each
        block sees the store as it is then (a file replaced, truncated or made
        read-only between two ingests). A call that fails with an SQLite error drops
        the connection: the next call checks and opens the store afresh. A nested
        block shares the outer one's connection.
        """
        depth = getattr(self._held, "depth", 0)
        self._held.depth = depth + 1
        try:
            yield
        finally:
            self._held.depth = depth
            if not depth:
                self._drop_held()

    def _drop_held(self) -> None:
        connection: sqlite3.Connection | None = getattr(self._held, "connection", None)
        self._held.connection = None
        if connection is not None:
            connection.close()

    def _open(self, timeout: float) -> sqlite3.Connection:
        try:
            exists = self._prepare()
        except OSError as exc:
            raise ProviderUnavailable(
                "the embedded store's files cannot be checked", reason_code="embedded_store_failed"
            ) from exc
        if not self.read_only:
            return sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        if not exists:
            if self.absent_ok:
                return _empty_store()
            raise ProviderUnavailable(
                "the embedded store does not exist yet", reason_code="embedded_store_absent"
            )
        # With no write-ahead log on disk every committed page is in the file, so the
        # reader opens it immutable and creates no -wal or -shm of its own; with a log
        # (a writer is at work) it shares that writer's files instead.
        wal = self.path.with_name(self.path.name + "-wal")
        mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
        uri = f"{self.path.as_uri()}?{mode}"
        return sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)

    @contextlib.contextmanager
    def _connect(self, timeout: float) -> Iterator[sqlite3.Connection]:
        held = getattr(self._held, "depth", 0) > 0
        connection: sqlite3.Connection | None = (
            getattr(self._held, "connection", None) if held else None
        )
        fresh = connection is None
        if connection is None:
            try:
                connection = self._open(timeout)
            except sqlite3.Error as exc:
                raise _unavailable(exc) from exc
        old_umask = os.umask(0o077)  # -wal and -shm are created on first write
        try:
            if fresh:
                if held:
                    self._held.connection = connection
                if not self._schema_ready:  # WAL mode persists in the file once set
                    connection.execute("PRAGMA journal_mode=WAL")
                if not self.read_only:
                    connection.execute("PRAGMA synchronous=FULL")
                connection.execute("PRAGMA foreign_keys=ON")
            connection.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            yield connection
        except sqlite3.Error as exc:  # corrupt, truncated, busy, read-only...
            if held:
                self._drop_held()  # the next call checks and opens the store afresh
            raise _unavailable(exc) from exc
        finally:
            os.umask(old_umask)
            if not held:
                connection.close()

    def _prepare(self) -> bool:
        """Check (a writer: make) the store's directories, file and companions.

        Returns whether the database exists; raises ProviderUnavailable for a link,
        a file of the wrong kind or a widened or foreign mode (module docstring).
        """
        if not self.read_only:
            _make_missing(self.anchor)
        for depth in range(len(self.anchor.parts) + 1, len(self.path.parts)):
            directory = Path(*self.path.parts[:depth])
            if not os.path.lexists(directory):
                if self.read_only:
                    return False
                _make_missing(directory)
            _check_kind(os.lstat(directory), directory=True)
        _check_private(os.lstat(self.path.parent))
        if not os.path.lexists(self.path):
            if self.read_only:
                return False
            with contextlib.suppress(FileExistsError):
                flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                fd = os.open(self.path, flags, FILE_MODE)
                os.fchmod(fd, FILE_MODE)  # whatever the umask
                os.close(fd)
        info = os.lstat(self.path)
        _check_kind(info, directory=False)
        _check_private(info)
        for suffix in COMPANION_SUFFIXES:
            companion = self.path.with_name(self.path.name + suffix)
            try:
                info = os.lstat(companion)
            except FileNotFoundError:
                continue
            _check_kind(info, directory=False)
            if self.read_only:
                _check_private(info)
            elif info.st_uid != os.getuid():
                raise _widened()
            elif stat.S_IMODE(info.st_mode) != FILE_MODE:
                os.chmod(companion, FILE_MODE)  # ours: see the module docstring
        return True

    def _ensure_schema(self, connection: sqlite3.Connection) -> None:
        # Once per provider object: a reader must not take a write lock on every call.
        if self._schema_ready:
            return
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (SCHEMA_VERSION,),
            )
            if _index_mark(connection) != SEARCH_INDEX:
                _rebuild_index(connection)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self._schema_ready = True

    def preflight(self, *, timeout: float = 5.0) -> Preflight:
        """The database opens, has FTS5 and our schema version."""
        try:
            with self._connect(timeout) as connection:
                self._ensure_schema(connection)
                row = connection.execute(
                    "SELECT value FROM meta WHERE key = 'schema_version'"
                ).fetchone()
        except ProviderUnavailable as exc:
            return Preflight(ok=False, reason_code=exc.reason_code)
        if row is None or row[0] != SCHEMA_VERSION:
            return Preflight(ok=False, reason_code="embedded_schema_unsupported")
        return Preflight(ok=True, provider_version=f"sqlite-{sqlite3.sqlite_version}")

    def _visible(self, uri: str, actor_peer_id: str | None) -> tuple[str, str]:
        user, peer = _partition(uri)
        if actor_peer_id is not None and peer and peer != actor_peer_id:
            raise ProviderPermissionError("the record belongs to another peer")
        return user, peer

    def read_exact(
        self, uri: str, *, actor_peer_id: str | None, timeout: float = 5.0
    ) -> str | None:
        """The exact stored text, or ``None``; another peer's record is a permission error."""
        self._visible(uri, actor_peer_id)
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            row = connection.execute("SELECT content FROM records WHERE uri = ?", (uri,)).fetchone()
        return None if row is None else str(row[0])

    def write(
        self, uri: str, text: str, *, actor_peer_id: str | None, timeout: float = 5.0
    ) -> None:
        """Upsert the record and its search row in one transaction."""
        self.write_many([(uri, text)], actor_peer_id=actor_peer_id, timeout=timeout)

    def write_many(
        self, items: list[tuple[str, str]], *, actor_peer_id: str | None, timeout: float = 30.0
    ) -> None:
        """Upsert several ``(uri, text)`` records in one transaction (imports, benchmarks)."""
        rows = [(uri, text, *self._visible(uri, actor_peer_id)) for uri, text in items]
        now = datetime.now(UTC).isoformat()
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            stem = _stemmer()
            connection.execute("BEGIN IMMEDIATE")
            try:
                for uri, text, user, peer in rows:
                    self._store(connection, uri, text, user, peer, now, stem)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            # Every record as stored now: the cache keeps only their vectors.
            stored = (
                [row[0] for row in connection.execute("SELECT content FROM records")]
                if self.semantic is not None
                else []
            )
        if self.semantic is not None:
            self._embed([text for _uri, text, _user, _peer in rows], stored)

    def _embed(self, texts: list[str], stored: list[str]) -> None:
        """Keep the vectors of records just written, so no Turn has to make them, and
        only of records still ``stored``; a failure only leaves them to be made at
        search, a few a Turn (:data:`~capabilities.providers.semantic.LAZY_EMBEDS`)."""
        from capabilities.providers.semantic import SemanticUnavailable, record_digest

        assert self.semantic is not None
        try:
            live = {record_digest(text) for text in stored}
            self.semantic.add([(_head_and_body(text)[1], text) for text in texts], live)
        except (SemanticUnavailable, SidecarError, OSError, ValueError) as exc:
            self.semantic_reason = getattr(exc, "reason_code", "semantic_failed")

    def _store(
        self,
        connection: sqlite3.Connection,
        uri: str,
        text: str,
        user: str,
        peer: str,
        now: str,
        stem: _Stems,
    ) -> None:
        old = connection.execute("SELECT content FROM records WHERE uri = ?", (uri,)).fetchone()
        # The search row shares the record's rowid, so replacing it is an index lookup
        # rather than a scan of the whole search table.
        rowid = connection.execute(
            "INSERT INTO records(uri, user, peer, content, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(uri) DO UPDATE SET "
            "content = excluded.content, updated_at = excluded.updated_at "
            "RETURNING rowid",
            (uri, user, peer, text, now),
        ).fetchone()[0]
        if old is not None:
            _unindex_record(connection, rowid, str(old[0]), stem)
        _index_record(connection, rowid, uri, text, now, stem)

    def _scope_filter(
        self, scope_ref: str, actor_peer_id: str | None
    ) -> tuple[str, tuple[str, ...]]:
        prefix = scope_ref.strip().rstrip("/") + "/"
        user, peer = _partition(prefix.rstrip("/"))
        if actor_peer_id is not None and peer and peer != actor_peer_id:
            raise ProviderPermissionError("the scope belongs to another peer")
        clause = "substr(r.uri, 1, ?) = ?"
        params: tuple[str, ...] = (str(len(prefix)), prefix)
        if actor_peer_id is not None:
            clause += " AND (r.peer = ? OR (r.peer = '' AND r.user = ?))"
            params += (actor_peer_id, user)
        return clause, params

    def _search_rows(
        self, scope_ref: str, query: str, limit: int, actor_peer_id: str | None, timeout: float
    ) -> list[tuple[str, float, str]]:
        clause, params = self._scope_filter(scope_ref, actor_peer_id)
        found: dict[str, Row] = {}
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            stem = _stemmer() if self._stemmed(connection) else None
            matches, weights, words = _fts_queries(connection, query, stem)
            stored = stem is not None and self._has_stems(connection)
            for match in matches:
                # The first of two is the AND query, which mostly matches one record
                # or none; a caller that scores by relevance needs no rank for one.
                lone = stem is not None and len(matches) > 1 and match is matches[0]
                for uri, rank, text, stems in _ranked(
                    connection, match, clause, params, limit, stems=stored, lone=lone
                ):
                    found.setdefault(str(uri), (str(uri), -float(rank), str(text), stems))
                if len(found) >= limit:
                    break
            scoped = (
                connection.execute(
                    "SELECT r.uri, r.content, s.head, s.body FROM records r "
                    f"LEFT JOIN {STEMS_TABLE} s ON s.record = r.rowid "
                    f"AND s.updated_at = r.updated_at WHERE {clause}"
                    if stored
                    else f"SELECT r.uri, r.content, NULL, NULL FROM records r WHERE {clause}",
                    params,
                ).fetchall()
                if self.semantic is not None and stem is not None
                else []
            )
        rows = list(found.values())[:limit]
        if stem is None:
            return [(uri, score, text) for uri, score, text, _stems in rows]
        if self.semantic is not None:
            fused = self._fused(query, rows, weights, words, stem, scoped, limit)
            if fused is not None:
                return fused
        return _relevant(rows, weights, words, stem)

    def _fused(
        self,
        query: str,
        rows: list[Row],
        weights: dict[str, float],
        words: QueryWords,
        stem: _Stems,
        scoped: list[tuple[str, str, str | None, str | None]],
        limit: int,
    ) -> list[tuple[str, float, str]] | None:
        """Lexical relevance and meaning fused (:func:`~capabilities.providers.semantic.fuse`)
        over every record in the scope (each with its stored stems), best first; ``None``
        (lexical recall, the reason kept in :attr:`semantic_reason`) when the encoder or
        its cache cannot be used.

        The full-text rows are found by the query's rarest terms only
        (:data:`MAX_QUERY_TERMS`), so a long prompt's own record may hold its other words
        and not be among them: the records nearest in meaning (:data:`MEANING_ROWS`)
        have their relevance measured too, from their stored stems, so the words they
        share count for them as for the rest."""
        from capabilities.providers.semantic import SemanticUnavailable, fuse

        assert self.semantic is not None
        lexical = _lexical(rows, weights, words, stem)
        try:
            cosines = self.semantic.cosines(
                query, [(_head_and_body(text)[1], text) for _uri, text, _h, _b in scoped]
            )
        except (SemanticUnavailable, SidecarError, OSError, ValueError) as exc:
            self.semantic_reason = getattr(exc, "reason_code", "semantic_failed")
            return None
        self.semantic_reason = self.semantic.take_notice()  # a damaged cache set aside
        nearest = sorted(
            (
                (-pair[1], index)
                for index, pair in enumerate(cosines)
                if pair is not None and scoped[index][0] not in lexical
            )
        )[:MEANING_ROWS]
        extra: list[Row] = [
            (uri, 0.0, text, None if head is None else (head, body or ""))
            for uri, text, head, body in (scoped[index] for _order, index in nearest)
        ]
        if extra:
            lexical.update(_lexical(extra, weights, words, stem))
        fused = fuse(
            [
                (*lexical.get(uri, (0.0, False)), *(pair or (None, None)))
                for (uri, _text, _h, _b), pair in zip(scoped, cosines, strict=True)
            ]
        )
        kept = [
            (str(uri), score, str(text))
            for (uri, text, _h, _b), score in zip(scoped, fused, strict=True)
            if score is not None
        ]
        kept.sort(key=lambda row: (-row[1], row[0]))
        return kept[:limit]

    def _stemmed(self, connection: sqlite3.Connection) -> bool:
        """Whether the index is the stemmed one (a store never goes back: once seen, kept)."""
        if not self._index_current:
            self._index_current = _index_mark(connection) == SEARCH_INDEX
        return self._index_current

    def _has_stems(self, connection: sqlite3.Connection) -> bool:
        """Whether the store keeps :data:`STEMS_TABLE` (a writer of this version made it;
        a reader of an older store looks again each call, until one has)."""
        if not self._stems_stored:
            self._stems_stored = (
                connection.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                    (STEMS_TABLE,),
                ).fetchone()
                is not None
            )
        return self._stems_stored

    def search(
        self,
        scope_ref: str,
        query: str,
        *,
        limit: int,
        actor_peer_id: str | None,
        timeout: float = 5.0,
    ) -> list[Hit]:
        """FTS5 search strictly below the scope, most relevant first (:func:`_relevant`)."""
        rows = self._search_rows(scope_ref, query, limit, actor_peer_id, timeout)
        return [Hit(uri=uri, score=score, summary=_summary(text)) for uri, score, text in rows]

    def search_read(
        self,
        scope_ref: str,
        query: str,
        *,
        limit: int,
        actor_peer_id: str | None,
        timeout: float = 5.0,
    ) -> list[tuple[Hit, str]]:
        """Search and exact reads in one transaction: each hit with its stored text.

        The text comes from the same row the hit came from, so it is exactly what
        :meth:`read_exact` would return, without a connection per hit.
        """
        rows = self._search_rows(scope_ref, query, limit, actor_peer_id, timeout)
        return [
            (Hit(uri=uri, score=score, summary=_summary(text)), text) for uri, score, text in rows
        ]

    def list(
        self, scope_ref: str, *, limit: int, actor_peer_id: str | None, timeout: float = 5.0
    ) -> list[str]:
        """Record URIs below the scope, sorted."""
        clause, params = self._scope_filter(scope_ref, actor_peer_id)
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            rows = connection.execute(
                f"SELECT r.uri FROM records r WHERE {clause} ORDER BY r.uri LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [row[0] for row in rows]

    def delete(self, uri: str, *, actor_peer_id: str | None, timeout: float = 5.0) -> bool:
        """Remove one record and its search row."""
        self._visible(uri, actor_peer_id)
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            connection.execute("BEGIN IMMEDIATE")
            try:
                row = connection.execute(
                    "DELETE FROM records WHERE uri = ? RETURNING rowid, content", (uri,)
                ).fetchone()
                if row is not None:
                    _unindex_record(connection, row[0], str(row[1]), _stemmer())
                removed = row is not None
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        return bool(removed)


MEANING_ROWS = 20
"""How many of the records nearest a query in meaning, beyond its full-text rows, have
their lexical relevance measured for the fusion (a stored record's stems are read, not
made: a few microseconds each)."""
RANK_HEAD = 4
"""How many times ``limit`` the best-ranked matches :func:`_ranked` looks up at a time."""


def _ranked(
    connection: sqlite3.Connection,
    match: str,
    clause: str,
    params: tuple[str, ...],
    limit: int,
    *,
    stems: bool = False,
    lone: bool = False,
) -> list[tuple[Any, float, Any, Stems]]:
    """The best ``limit`` matches in the scope, ordered by bm25 rank, then URI: what
    one statement joining every match to its record returns, read for less.

    FTS5 ranks its matches alone, and only the best are looked up in ``records``,
    a chunk at a time, for their scope and text. Joining every match cost far more
    than ranking it (a record is about 2 KB, so each match was a page read, on a
    connection whose cache starts empty): at 10k records, 3.6 ms against 0.9 ms for
    a median query. The chunks read so far decide once ``limit`` of their rows are
    in scope and the last of those ranks strictly better than the first match not
    read yet (a tie at the edge could go either way by URI), or once no match is
    left. (Smaller chunks, growing, read fewer records when no tie is at the edge,
    and cost more on the whole: ties are common among short records.)

    With ``lone`` (the caller orders by its own relevance), a query that matches one
    record returns it with rank 0 and is not ranked: bm25 reads each term's whole
    document list before it scores the first match, half the statement's time for
    a query of rare terms, and one match has no order to decide.
    """
    if limit <= 0:
        return []
    # Within the host parameters an old SQLite allows in one statement.
    chunk = min(RANK_HEAD * limit + 8, 500)
    # Every match is ranked (the query's terms bound how many: MATCH_BUDGET). A LIMIT
    # of one chunk spares the sort of the rest (a fifth of the statement for several
    # hundred matches), but the first chunk decides only 60-80 % of the benchmark's
    # queries (ties), and ranking them all again then cost more than it saved: at
    # 100,000 records, 10 % more CPU per recall.
    statement = (
        "SELECT rowid, bm25(records_fts) AS rank FROM records_fts "
        "WHERE records_fts MATCH ? ORDER BY rank"
    )
    matches = None
    if lone:
        probe = connection.execute(
            "SELECT rowid, 0.0 FROM records_fts WHERE records_fts MATCH ? LIMIT 2", (match,)
        ).fetchall()
        if len(probe) < 2:
            matches = probe
    if matches is None:
        matches = connection.execute(statement, (match,)).fetchall()
    kept: list[tuple[Any, float, Any]] = []
    for start in range(0, len(matches), chunk):
        ranks = dict(matches[start : start + chunk])
        marks = ",".join("?" * len(ranks))
        # The scope and the order need the URI only; a record's text (about 2 KB) is
        # read for the ``limit`` kept at the end, not for every row of a chunk.
        kept += [
            (uri, ranks[rowid], rowid)
            for rowid, uri in connection.execute(
                f"SELECT r.rowid, r.uri FROM records r WHERE r.rowid IN ({marks}) AND {clause}",
                (*ranks, *params),
            )
        ]
        kept.sort(key=_rank_order)
        # A row past the best ``limit`` never comes back: later chunks rank no better.
        # Dropping it keeps each sort to one chunk's rows, where sorting all kept so far
        # again for every chunk grew with the square of a tied query's matches.
        del kept[limit:]
        following = start + chunk
        if following >= len(matches) or (
            len(kept) >= limit and kept[limit - 1][1] < matches[following][1]
        ):
            break
    if not kept:
        return []
    marks = ",".join("?" * len(kept))
    # With ``stems``, each record's stored stems come along, where they are the
    # record's as it is now (the same ``updated_at``).
    statement = (
        "SELECT r.rowid, r.content, s.head, s.body FROM records r "
        f"LEFT JOIN {STEMS_TABLE} s ON s.record = r.rowid AND s.updated_at = r.updated_at "
        f"WHERE r.rowid IN ({marks})"
        if stems
        else f"SELECT rowid, content, NULL, NULL FROM records WHERE rowid IN ({marks})"
    )
    texts = {
        rowid: (content, None if head is None else (str(head), str(body)))
        for rowid, content, head, body in connection.execute(
            statement, [rowid for _uri, _rank, rowid in kept]
        )
    }
    # A record deleted since its chunk was read is not returned (each statement
    # reads its own snapshot), as one deleted before the search began is not.
    return [(uri, rank, *texts[rowid]) for uri, rank, rowid in kept if rowid in texts]


def _rank_order(row: tuple[Any, float, Any]) -> tuple[float, Any]:
    return row[1], row[0]


def _index_mark(connection: sqlite3.Connection) -> str | None:
    row = connection.execute("SELECT value FROM meta WHERE key = 'search_index'").fetchone()
    return None if row is None else str(row[0])


def _rebuild_index(connection: sqlite3.Connection) -> None:
    """Rebuild the search index and term counts with :data:`TOKENIZE`, then mark it.

    Run once per store, inside the writer's ``BEGIN IMMEDIATE`` transaction: other
    writers wait on the store's lock, readers keep the old index until the commit,
    and a failure rolls the whole rebuild back (DDL is transactional in SQLite). A
    new store takes the same path with no records.
    """
    connection.execute("DROP TABLE IF EXISTS records_fts")
    connection.execute(_SCHEMA[2])
    connection.execute("DELETE FROM term_docs")
    stem = _stemmer()
    for rowid, uri, content, updated_at in connection.execute(
        "SELECT rowid, uri, content, updated_at FROM records"
    ).fetchall():
        _index_record(connection, rowid, uri, str(content), str(updated_at), stem)
    connection.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('search_index', ?)", (SEARCH_INDEX,)
    )


def _make_missing(directory: Path) -> None:
    """Create ``directory`` and any missing parent, each 0700 (as sidecars do)."""
    missing = []
    current = directory
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    for created in reversed(missing):
        try:
            os.mkdir(created, DIR_MODE)
        except FileExistsError:
            continue  # another process made it, the same way
        os.chmod(created, DIR_MODE)  # mkdir's mode went through the umask


def _widened() -> ProviderUnavailable:
    return ProviderUnavailable(
        "the embedded store is open to other users or not ours; check who changed it, "
        "then chmod it back to 0600 (its directory to 0700)",
        reason_code="embedded_store_permission_widened",
    )


def _check_kind(info: os.stat_result, *, directory: bool) -> None:
    problem = kind_problem(info.st_mode, directory=directory)  # the sidecars' one rule
    if problem == "symlink":
        raise ProviderUnavailable(
            "the embedded store's path crosses a symlink (.local or .local/turn-hooks is a "
            "link): `turn-hooks doctor` says how to put it right",
            reason_code="embedded_store_symlink",
        )
    if problem is not None:
        raise ProviderUnavailable(
            "the embedded store's path holds the wrong kind of file (a FIFO, a device or a "
            "directory where memory.sqlite3 should be): `turn-hooks doctor` says how to put "
            "it right",
            reason_code="embedded_store_not_regular",
        )


def _check_private(info: os.stat_result) -> None:
    if stat.S_IMODE(info.st_mode) & 0o077 or info.st_uid != os.getuid():
        raise _widened()


def _empty_store() -> sqlite3.Connection:
    """An empty store with our schema, in memory and query-only: what an absent one holds."""
    connection = sqlite3.connect(":memory:", isolation_level=None)
    for statement in _SCHEMA:
        connection.execute(statement)
    connection.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?)",
        [("schema_version", SCHEMA_VERSION), ("search_index", SEARCH_INDEX)],
    )
    connection.execute("PRAGMA query_only=ON")
    return connection


def _unavailable(exc: sqlite3.Error) -> ProviderUnavailable:
    reason = _sqlite_reason(exc)
    message = (
        "the embedded store is corrupt"
        if reason == "embedded_store_corrupt"
        else "the embedded store failed"
    )
    return ProviderUnavailable(message, reason_code=reason)


def _sqlite_reason(exc: sqlite3.Error) -> str:
    """The reason code of any SQLite error: a corrupt file, FTS5, busy, read-only..."""
    primary = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return "embedded_store_corrupt"
    if isinstance(exc, sqlite3.OperationalError):
        return _operational_reason(exc)
    return "embedded_store_failed"


def _operational_reason(exc: sqlite3.OperationalError) -> str:
    text = str(exc).lower()
    if "fts5" in text:
        return "embedded_fts5_unavailable"
    if "locked" in text or "busy" in text:
        return "embedded_store_busy"
    if "readonly" in text or "read-only" in text:
        return "embedded_store_read_only"
    return "embedded_store_failed"
