"""The embedded default provider: one SQLite database with FTS5 (providers.md §2).

Records are addressed by the same ``viking://`` URIs as on OpenViking and partitioned
by peer exactly as OpenViking's actor-peer header does, so records move between the
two providers unchanged. Every call opens a short-lived connection: SQLite's own
locking is the only concurrency control needed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from capabilities.providers.base import (
    Hit,
    Preflight,
    ProviderPermissionError,
    ProviderScopeError,
)
from capabilities.providers.scopes import classify_scope
from turn_hooks import ProviderUnavailable

PROVIDER_ID = "embedded_sqlite"
SCHEMA_VERSION = "turn_hooks_sqlite_v1"
DATABASE_NAME = "memory.sqlite3"
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SUMMARY = re.compile(r'"content_summary":"((?:[^"\\]|\\.)*)"')

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS records(uri TEXT PRIMARY KEY, user TEXT NOT NULL, "
    "peer TEXT NOT NULL, content TEXT NOT NULL, updated_at TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5("
    "uri UNINDEXED, body, tokenize = 'unicode61 remove_diacritics 2')",
    # Document frequency per search term, kept in the write transaction: choosing the
    # rarest query terms then costs one index lookup per term.
    "CREATE TABLE IF NOT EXISTS term_docs(term TEXT PRIMARY KEY, docs INTEGER NOT NULL) "
    "WITHOUT ROWID",
)
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


def _terms(query: str) -> list[str]:
    """Query words folded the way the ``unicode61 remove_diacritics 2`` tokenizer folds them."""
    folded = unicodedata.normalize("NFKD", query.lower())
    plain = "".join(char for char in folded if not unicodedata.combining(char))
    return list(dict.fromkeys(_WORD.findall(plain)))


def _fts_queries(connection: sqlite3.Connection, query: str) -> list[str]:
    """FTS5 queries for ``query``, most precise first: all known terms, then any.

    Each term is quoted, so FTS5 syntax in a query is matched literally, never run.
    Terms no record contains are dropped (they cannot match). The AND query finds the
    records that share every remaining term; the OR query fills up with the rarest
    terms within :data:`MATCH_BUDGET` (see there), so neither grows with the store.
    """
    terms = _terms(query)
    if not terms:
        return []
    marks = ",".join("?" * len(terms))
    frequencies = dict(
        connection.execute(
            f"SELECT term, docs FROM term_docs WHERE term IN ({marks})", terms
        ).fetchall()
    )
    known = sorted((frequencies[t], t) for t in terms if t in frequencies)[:MAX_QUERY_TERMS]
    if not known:
        return []
    chosen: list[str] = []
    matched = 0
    for count, term in known:
        if chosen and matched + count > MATCH_BUDGET:
            break
        chosen.append(term)
        matched += count
    queries = [" OR ".join(f'"{term}"' for term in chosen)]
    if len(known) > 1:
        queries.insert(0, " AND ".join(f'"{term}"' for _count, term in known))
    return queries


def _count_terms(connection: sqlite3.Connection, body: str, delta: int) -> None:
    connection.executemany(
        "INSERT INTO term_docs(term, docs) VALUES (?, ?) "
        "ON CONFLICT(term) DO UPDATE SET docs = docs + excluded.docs",
        [(term, delta) for term in _terms(body)],
    )


def _summary(content: str) -> str:
    match = _SUMMARY.search(content)
    return match.group(1)[:200] if match else ""


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


def _search_text(content: str) -> str:
    """What the full-text index sees: the record's meaning, not its JSON boilerplate.

    Indexing the whole JSON body would make every record match the ids and field
    names that every record shares (peer, goal, schema names), so each query would
    rank the whole store. Non-record text is indexed as it is.
    """
    try:
        document = json.loads(content)
    except ValueError:
        return content
    if not isinstance(document, dict) or "content_summary" not in document:
        return content
    return "\n".join(text for key in _SEARCH_KEYS for text in _strings(document.get(key)))


class EmbeddedSqliteProvider:
    """Reward-memory records in ``<goal repo>/.local/turn-hooks/memory.sqlite3``."""

    provider_id = PROVIDER_ID

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path).absolute()
        # read_only opens mode=ro: it never creates the file, its schema or anything
        # in it, and trusts the schema a writer made (its reads fail otherwise).
        self.read_only = read_only
        self._schema_ready = read_only

    def _open(self, timeout: float) -> sqlite3.Connection:
        if not self.read_only:
            self._create_private()
            return sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        if not self.path.exists():
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
        try:
            connection = self._open(timeout)
        except sqlite3.Error as exc:
            raise ProviderUnavailable("the embedded store cannot be opened") from exc
        old_umask = os.umask(0o077)  # -wal and -shm are created on first write
        try:
            if not self._schema_ready:  # WAL mode persists in the file once set
                connection.execute("PRAGMA journal_mode=WAL")
            if not self.read_only:
                connection.execute("PRAGMA synchronous=FULL")
            connection.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            connection.execute("PRAGMA foreign_keys=ON")
            yield connection
        except sqlite3.OperationalError as exc:
            raise ProviderUnavailable(
                "the embedded store failed", reason_code=_operational_reason(exc)
            ) from exc
        finally:
            os.umask(old_umask)
            connection.close()

    def _create_private(self) -> None:
        directory = self.path.parent
        if not directory.exists():
            directory.mkdir(mode=0o700, parents=True)
        if not self.path.exists():
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))

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
            connection.execute("BEGIN IMMEDIATE")
            try:
                for uri, text, user, peer in rows:
                    self._store(connection, uri, text, user, peer, now)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

    def _store(
        self, connection: sqlite3.Connection, uri: str, text: str, user: str, peer: str, now: str
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
        body = _search_text(text)
        if old is not None:
            _count_terms(connection, _search_text(str(old[0])), -1)
            connection.execute("DELETE FROM records_fts WHERE rowid = ?", (rowid,))
        _count_terms(connection, body, +1)
        connection.execute(
            "INSERT INTO records_fts(rowid, uri, body) VALUES (?, ?, ?)", (rowid, uri, body)
        )

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
        found: dict[str, tuple[str, float, str]] = {}
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            for match in _fts_queries(connection, query):
                rows = connection.execute(
                    "SELECT r.uri, bm25(records_fts) AS rank, r.content FROM records_fts "
                    "JOIN records r ON r.rowid = records_fts.rowid "
                    f"WHERE records_fts MATCH ? AND {clause} ORDER BY rank, r.uri LIMIT ?",
                    (match, *params, limit),
                ).fetchall()
                for uri, rank, text in rows:
                    found.setdefault(str(uri), (str(uri), -float(rank), str(text)))
                if len(found) >= limit:
                    break
        return list(found.values())[:limit]

    def search(
        self,
        scope_ref: str,
        query: str,
        *,
        limit: int,
        actor_peer_id: str | None,
        timeout: float = 5.0,
    ) -> list[Hit]:
        """FTS5 search strictly below the scope, best (lowest bm25) first."""
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
                    connection.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0],))
                    _count_terms(connection, _search_text(str(row[1])), -1)
                removed = row is not None
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        return bool(removed)


def _operational_reason(exc: sqlite3.OperationalError) -> str:
    text = str(exc).lower()
    if "fts5" in text:
        return "embedded_fts5_unavailable"
    if "locked" in text or "busy" in text:
        return "embedded_store_busy"
    return "embedded_store_failed"
