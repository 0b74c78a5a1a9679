"""The OpenViking provider: the same protocol as the embedded store, over HTTP 0.5.2."""

from __future__ import annotations

import time
from typing import Any

from capabilities.providers._errors import ProviderNotFound
from capabilities.providers.base import Hit, Preflight, ProviderScopeError
from capabilities.providers.client import ProviderClient
from capabilities.providers.hybrid import CANDIDATES, rerank
from capabilities.providers.scopes import classify_scope
from turn_hooks import ProviderError

PROVIDER_ID = "openviking"


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
        """``content/write`` in replace mode, waiting until it is searchable."""
        self.client.request(
            "POST",
            "/api/v1/content/write",
            peer=actor_peer_id,
            body={"uri": _checked(uri), "content": text, "mode": "replace", "wait": True},
            timeout=timeout,
        )

    def search(
        self,
        scope_ref: str,
        query: str,
        *,
        limit: int,
        actor_peer_id: str | None,
        timeout: float = 5.0,
    ) -> list[Hit]:
        """``search/find`` below the scope, best ``limit`` hits in hybrid order.

        One search asks for :data:`~capabilities.providers.hybrid.CANDIDATES` rows (or
        ``limit``, if more), and their abstracts are re-ranked by the query's words
        (:func:`~capabilities.providers.hybrid.rerank`): only the ones relevant to it
        are returned, so a query about nothing stored gets nothing. With a :attr:`floor`
        the server's similarity decides, fused with the words. Directory-level rows
        (level 0, 1) are dropped.
        """
        asked = max(limit, CANDIDATES)
        result = self.client.request(
            "POST",
            "/api/v1/search/find",
            peer=actor_peer_id,
            body={
                "query": query,
                "target_uri": _checked(scope_ref),
                "limit": asked,
            },
            timeout=timeout,
        )
        rows: list[Any] = []
        if isinstance(result, dict):
            rows = [*(result.get("memories") or []), *(result.get("resources") or [])]
        hits: list[tuple[Hit, str]] = []
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("uri"), str):
                continue
            if row.get("level") in (0, 1):
                continue
            score = row.get("score")
            abstract = str(row.get("abstract") or "")
            hit = Hit(
                uri=row["uri"],
                score=float(score) if isinstance(score, int | float) else 0.0,
                summary=abstract[:200],
            )
            hits.append((hit, abstract))
        return rerank(query, hits, sample=len(rows) >= asked, floor=self.floor)[:limit]

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
        """``DELETE fs``: remove one record (operator retirement, tests)."""
        deadline = time.monotonic() + timeout
        existed = self.read_exact(uri, actor_peer_id=actor_peer_id, timeout=timeout) is not None
        self.client.request(
            "DELETE",
            "/api/v1/fs",
            params={"uri": _checked(uri)},
            peer=actor_peer_id,
            timeout=deadline - time.monotonic(),
        )
        return existed
