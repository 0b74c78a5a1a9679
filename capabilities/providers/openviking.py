"""The OpenViking provider: the same protocol as the embedded store, over HTTP 0.5.2.

Each active record also gets an entry in its corpus's lesson index
(:mod:`capabilities.providers.lesson_index`): its lesson in plain words, which the
server embeds, and which recall searches; hits are mapped back to the records, which
are read and checked as before. The record write is what counts: an entry that fails
to write is left missing (the record stands, and a later sync of the same record
writes it, :meth:`OpenVikingProvider.index_record`). An index is complete once it holds
its mark (:data:`~capabilities.providers.lesson_index.COMPLETE_MARK`): until then (a
store written before the index, or an index whose filling ran out of time) recall
also searches the records by their words, and each index write fills in the entries
of older records, within its deadline, and sets the mark when none is left.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from capabilities.providers import lesson_index
from capabilities.providers._errors import ProviderNotFound
from capabilities.providers.base import Hit, Preflight, ProviderScopeError
from capabilities.providers.client import ProviderClient
from capabilities.providers.hybrid import CANDIDATES, rerank
from capabilities.providers.scopes import classify_scope
from turn_hooks import ProviderError

PROVIDER_ID = "openviking"


FILL_LIMIT = 1000
"""The most records a corpus may hold for its index to be filled in and marked
complete (the inventory lists as many)."""
FILL_RESERVE = 1.0
"""Seconds of a write's deadline left untouched by filling in older entries: the
record's own write and entry come first, and the rest waits for the next write."""


def _left(deadline: float) -> float:
    """Seconds to ``deadline``, at least a little (the request then fails fast)."""
    return max(deadline - time.monotonic(), 0.05)


def _checked(uri: str) -> str:
    if classify_scope(uri) is None:
        raise ProviderScopeError("the URI is not an accepted viking:// scope")
    return uri


class OpenVikingProvider:
    """Reward-memory records on an OpenViking server (memory namespaces, content API)."""

    provider_id = PROVIDER_ID

    def __init__(self, client: ProviderClient, *, floor: float | None = None) -> None:
        self.client = client
        # The server similarity's recall floor (hybrid.similarity_floor), or None: the
        # lexical gate alone.
        self.floor = floor

    def preflight(self, *, timeout: float = 5.0) -> Preflight:
        """Health without credentials, then one authenticated call, within ``timeout``."""
        deadline = time.monotonic() + timeout
        try:
            health = self.client.request("GET", "/health", auth=False, timeout=timeout)
            self.client.request(
                "GET",
                "/api/v1/fs/ls",
                params={"uri": "viking://resources", "limit": 1},
                timeout=deadline - time.monotonic(),
            )
        except ProviderNotFound:
            pass  # authenticated, the probe path just does not exist yet
        except ProviderError as exc:
            return Preflight(ok=False, reason_code=exc.reason_code)
        version = health.get("version") if isinstance(health, dict) else None
        return Preflight(ok=True, provider_version=f"openviking-{version}" if version else None)

    def read_exact(
        self, uri: str, *, actor_peer_id: str | None, timeout: float = 5.0
    ) -> str | None:
        """``content/read``: the stored (stripped) text, ``None`` when absent."""
        try:
            result = self.client.request(
                "GET",
                "/api/v1/content/read",
                params={"uri": _checked(uri)},
                peer=actor_peer_id,
                timeout=timeout,
            )
        except ProviderNotFound:
            return None
        return result if isinstance(result, str) else None

    def write(
        self, uri: str, text: str, *, actor_peer_id: str | None, timeout: float = 5.0
    ) -> None:
        """``content/write`` in replace mode, waiting until it is searchable; then the
        record's lesson index entry, within the same ``timeout`` (:meth:`index_record`)."""
        deadline = time.monotonic() + timeout
        self._put(uri, text, actor_peer_id, timeout)
        self.index_record(
            uri, text, actor_peer_id=actor_peer_id, timeout=deadline - time.monotonic()
        )

    def _put(self, uri: str, text: str, peer: str | None, timeout: float) -> None:
        self.client.request(
            "POST",
            "/api/v1/content/write",
            peer=peer,
            body={"uri": _checked(uri), "content": text, "mode": "replace", "wait": True},
            timeout=timeout,
        )

    def index_record(
        self, uri: str, text: str, *, actor_peer_id: str | None, timeout: float = 5.0
    ) -> bool:
        """Bring the lesson index entry of the record ``text`` at ``uri`` in line with it:
        written for an active record, removed for any other record (retired, so never
        recalled). Best effort, never raises: ``False`` when the entry could not be
        made right (the record stands; recall just cannot find it by its lesson until
        a later sync of it calls this again). Text that is not a record, or a corpus
        that keeps no index, is left alone (``True``)."""
        entry = lesson_index.entry_uri(uri)
        if entry is None or not lesson_index.is_record(text):
            return True
        deadline = time.monotonic() + timeout
        try:
            self._index_one(entry, text, actor_peer_id, timeout)
            index = entry.rsplit("/", 1)[0]
            if not self._complete(index, actor_peer_id, deadline - time.monotonic()):
                self._fill(uri.rsplit("/", 1)[0], index, actor_peer_id, deadline)
        except ProviderError:
            return False
        return True

    def _index_one(self, entry: str, text: str, peer: str | None, timeout: float) -> None:
        """Make the entry at ``entry`` match the record ``text`` (written, or removed for
        a record that is not active)."""
        body = lesson_index.entry_text(text)
        deadline = time.monotonic() + timeout
        current = self.read_exact(entry, actor_peer_id=peer, timeout=timeout)
        if body is None:
            if current is not None:
                self._remove(entry, peer, deadline - time.monotonic())
        elif current is None or current.strip() != body:
            self._put(entry, body, peer, deadline - time.monotonic())

    def _complete(self, index: str, peer: str | None, timeout: float) -> bool:
        """Whether the index holds its mark
        (:func:`~capabilities.providers.lesson_index.complete_uri`)."""
        mark = lesson_index.complete_uri(index)
        return self.read_exact(mark, actor_peer_id=peer, timeout=timeout) is not None

    def _fill(self, scope: str, index: str, peer: str | None, deadline: float) -> None:
        """Write the entries the corpus's records lack, in listing order, while
        :data:`FILL_RESERVE` seconds of ``deadline`` are left, then the index's mark
        once no record lacks one. A corpus listed whole is needed for the mark: one
        larger than :data:`FILL_LIMIT` records keeps searching its records too."""
        records = self.list(scope, limit=FILL_LIMIT, actor_peer_id=peer, timeout=_left(deadline))
        if len(records) >= FILL_LIMIT:
            return
        held = set(self.list(index, limit=FILL_LIMIT, actor_peer_id=peer, timeout=_left(deadline)))
        for uri in records:
            entry = lesson_index.entry_uri(uri)
            if entry is None or entry in held:
                continue
            if deadline - time.monotonic() < FILL_RESERVE:
                return
            text = self.read_exact(uri, actor_peer_id=peer, timeout=_left(deadline))
            if text is not None and lesson_index.is_record(text):
                self._index_one(entry, text, peer, _left(deadline))
        self._put(lesson_index.complete_uri(index), "complete\n", peer, _left(deadline))

    def search(
        self,
        scope_ref: str,
        query: str,
        *,
        limit: int,
        actor_peer_id: str | None,
        timeout: float = 5.0,
    ) -> list[Hit]:
        """``search/find`` over the scope's lesson index, best ``limit`` hits in hybrid
        order, each the URI of the record its entry points at.

        One search asks for :data:`~capabilities.providers.hybrid.CANDIDATES` rows (or
        ``limit``, if more), and their texts are re-ranked by the query's words
        (:func:`~capabilities.providers.hybrid.rerank`): only the ones relevant to it
        are returned, so a query about nothing stored gets nothing. With a :attr:`floor`
        the server's similarity (to the query with its synonyms, :meth:`_asked`)
        decides, fused with the words. Directory-level rows
        (level 0, 1) and anything in the index that is not an entry are dropped.

        A corpus without an index is searched record by record, by the lexical gate
        alone (the floor is calibrated for the entries' plain words, not for whole
        records); so are the records of one whose index is not complete yet (a store
        written before it: its mark is missing), after the index's own hits.
        """
        deadline = time.monotonic() + timeout
        index = lesson_index.index_scope(_checked(scope_ref))
        found: list[Hit] = []
        if index is not None:
            try:
                rows, full = self._find(index, self._asked(query), limit, actor_peer_id, timeout)
            except ProviderNotFound:
                rows, full = [], False
            hits = []
            for row in rows:
                pair = self._row(row)
                uri = lesson_index.record_uri(scope_ref, pair[0].uri) if pair else None
                if pair is not None and uri is not None:
                    hit, text = pair
                    hits.append((dataclasses.replace(hit, uri=uri), lesson_index.as_record(text)))
            found = rerank(query, hits, sample=full, floor=self.floor)[:limit] if hits else []
            if rows and self._complete(index, actor_peer_id, _left(deadline)):
                return found
        rows, full = self._find(scope_ref, query, limit, actor_peer_id, _left(deadline))
        pairs = [pair for row in rows if (pair := self._row(row)) is not None]
        known = {hit.uri for hit in found}
        by_words = [hit for hit in rerank(query, pairs, sample=full) if hit.uri not in known]
        return [*found, *by_words][:limit]

    def _asked(self, query: str) -> str:
        """What the server embeds for ``query``: with a :attr:`floor`, the query and
        the other terms the synonym table gives for its words (as the embedded store
        embeds it, :func:`~capabilities.providers.semantic.embedding_query`), so "DB"
        also reads as "database"; else the query (the words decide)."""
        if self.floor is None:
            return query
        from capabilities.providers.semantic import embedding_query

        return embedding_query(query)

    def _find(
        self, target: str, query: str, limit: int, peer: str | None, timeout: float
    ) -> tuple[list[Any], bool]:
        """The rows of one ``search/find`` below ``target``, and whether the page was full."""
        asked = max(limit, CANDIDATES)
        result = self.client.request(
            "POST",
            "/api/v1/search/find",
            peer=peer,
            body={"query": query, "target_uri": _checked(target), "limit": asked},
            timeout=timeout,
        )
        rows: list[Any] = []
        if isinstance(result, dict):
            rows = [*(result.get("memories") or []), *(result.get("resources") or [])]
        return rows, len(rows) >= asked

    @staticmethod
    def _row(row: Any) -> tuple[Hit, str] | None:
        """A file row as a hit with its text (the server's abstract), or ``None``."""
        if not isinstance(row, dict) or not isinstance(row.get("uri"), str):
            return None
        if row.get("level") in (0, 1):
            return None
        score = row.get("score")
        abstract = str(row.get("abstract") or "")
        hit = Hit(
            uri=row["uri"],
            score=float(score) if isinstance(score, int | float) else 0.0,
            summary=abstract[:200],
        )
        return hit, abstract

    def list(
        self, scope_ref: str, *, limit: int, actor_peer_id: str | None, timeout: float = 5.0
    ) -> list[str]:
        """``fs/ls``: record URIs directly below the scope."""
        try:
            result = self.client.request(
                "GET",
                "/api/v1/fs/ls",
                peer=actor_peer_id,
                params={"uri": _checked(scope_ref), "limit": limit},
                timeout=timeout,
            )
        except ProviderNotFound:
            return []
        entries = result if isinstance(result, list) else []
        return [
            e["uri"]
            for e in entries
            if isinstance(e, dict) and isinstance(e.get("uri"), str) and not e.get("isDir")
        ]

    def delete(self, uri: str, *, actor_peer_id: str | None, timeout: float = 5.0) -> bool:
        """``DELETE fs``: remove one record (operator retirement, tests), then its
        lesson index entry (best effort: a stale entry is never recalled, its record
        being gone)."""
        deadline = time.monotonic() + timeout
        existed = self.read_exact(uri, actor_peer_id=actor_peer_id, timeout=timeout) is not None
        self._remove(uri, actor_peer_id, deadline - time.monotonic())
        entry = lesson_index.entry_uri(uri)
        if entry is not None:
            try:
                self._remove(entry, actor_peer_id, deadline - time.monotonic())
            except ProviderError:
                pass
        return existed

    def _remove(self, uri: str, peer: str | None, timeout: float) -> None:
        self.client.request(
            "DELETE",
            "/api/v1/fs",
            params={"uri": _checked(uri)},
            peer=peer,
            timeout=timeout,
        )
