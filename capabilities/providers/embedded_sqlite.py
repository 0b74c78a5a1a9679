"""The embedded default provider: one SQLite database with FTS5 (providers.md §2).

Records are addressed by the same ``viking://`` URIs as on OpenViking and partitioned
by peer exactly as OpenViking's actor-peer header does, so records move between the
two providers unchanged. Every call opens a short-lived connection: SQLite's own
locking is the only concurrency control needed.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
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
_WORD = re.compile(r"\w+", re.UNICODE)
_SUMMARY = re.compile(r'"content_summary":"((?:[^"\\]|\\.)*)"')

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS records(uri TEXT PRIMARY KEY, user TEXT NOT NULL, "
    "peer TEXT NOT NULL, content TEXT NOT NULL, updated_at TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5("
    "uri UNINDEXED, body, tokenize = 'unicode61 remove_diacritics 2')",
)


def _partition(uri: str) -> tuple[str, str]:
    scope = classify_scope(uri)
    if scope is None:
        raise ProviderScopeError("the record URI is not an accepted viking:// scope")
    return scope.user or "", scope.peer or ""


def _fts_query(query: str) -> str:
    # Each word is quoted, so FTS5 syntax in a query is matched literally, never run.
    words = [word.replace('"', '""') for word in _WORD.findall(query)]
    return " OR ".join(f'"{word}"' for word in words)


def _summary(content: str) -> str:
    match = _SUMMARY.search(content)
    return match.group(1)[:200] if match else ""


class EmbeddedSqliteProvider:
    """Reward-memory records in ``<goal repo>/.local/turn-hooks/memory.sqlite3``."""

    provider_id = PROVIDER_ID

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).absolute()
        self._schema_ready = False

    @contextlib.contextmanager
    def _connect(self, timeout: float) -> Iterator[sqlite3.Connection]:
        self._create_private()
        try:
            connection = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise ProviderUnavailable("the embedded store cannot be opened") from exc
        old_umask = os.umask(0o077)  # -wal and -shm are created on first write
        try:
            connection.execute("PRAGMA journal_mode=WAL")
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
        user, peer = self._visible(uri, actor_peer_id)
        now = datetime.now(UTC).isoformat()
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(
                    "INSERT INTO records(uri, user, peer, content, updated_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(uri) DO UPDATE SET "
                    "content = excluded.content, updated_at = excluded.updated_at",
                    (uri, user, peer, text, now),
                )
                connection.execute("DELETE FROM records_fts WHERE uri = ?", (uri,))
                connection.execute("INSERT INTO records_fts(uri, body) VALUES (?, ?)", (uri, text))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

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
        clause, params = self._scope_filter(scope_ref, actor_peer_id)
        match = _fts_query(query)
        if not match:
            return []
        with self._connect(timeout) as connection:
            self._ensure_schema(connection)
            rows = connection.execute(
                "SELECT r.uri, bm25(records_fts) AS rank, r.content FROM records_fts "
                "JOIN records r ON r.uri = records_fts.uri "
                f"WHERE records_fts MATCH ? AND {clause} ORDER BY rank, r.uri LIMIT ?",
                (match, *params, limit),
            ).fetchall()
        return [Hit(uri=row[0], score=-float(row[1]), summary=_summary(row[2])) for row in rows]

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
                removed = connection.execute("DELETE FROM records WHERE uri = ?", (uri,)).rowcount
                connection.execute("DELETE FROM records_fts WHERE uri = ?", (uri,))
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
