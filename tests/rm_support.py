"""Helpers for the reward-memory tests: a real embedded store, wrapped to count or fail."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixtures import f1

from capabilities.providers.base import Preflight, ProviderTimeout
from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.contract.config import normalise_config
from turn_hooks import ProviderUnavailable


@dataclass
class Recording:
    """Wraps a real provider; counts calls and injects faults on request."""

    inner: EmbeddedSqliteProvider
    calls: list[str] = field(default_factory=list)
    fail: dict[str, Exception] = field(default_factory=dict)
    write_lands_then: str | None = None
    """When set, a write stores this text instead (a commit that lands but differs)."""
    readback_text: str | None = None
    """When set, reads return this text (a mismatching readback)."""

    @property
    def provider_id(self) -> str:
        return self.inner.provider_id

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name in self.fail:
            raise self.fail[name]

    def preflight(self, *, timeout: float) -> Preflight:
        self._call("preflight")
        return self.inner.preflight(timeout=timeout)

    def read_exact(self, uri: str, *, actor_peer_id: str | None, timeout: float) -> str | None:
        self._call("read_exact")
        if self.readback_text is not None:
            return self.readback_text
        return self.inner.read_exact(uri, actor_peer_id=actor_peer_id, timeout=timeout)

    def write(self, uri: str, text: str, *, actor_peer_id: str | None, timeout: float) -> None:
        self._call("write")
        stored = self.write_lands_then if self.write_lands_then is not None else text
        self.inner.write(uri, stored, actor_peer_id=actor_peer_id, timeout=timeout)

    def search(
        self, scope_ref: str, query: str, *, limit: int, actor_peer_id: str | None, timeout: float
    ) -> list[Any]:
        self._call("search")
        return self.inner.search(
            scope_ref, query, limit=limit, actor_peer_id=actor_peer_id, timeout=timeout
        )

    def list(
        self, scope_ref: str, *, limit: int, actor_peer_id: str | None, timeout: float
    ) -> list[str]:
        self._call("list")
        return self.inner.list(scope_ref, limit=limit, actor_peer_id=actor_peer_id, timeout=timeout)

    def delete(self, uri: str, *, actor_peer_id: str | None, timeout: float) -> bool:
        self._call("delete")
        return self.inner.delete(uri, actor_peer_id=actor_peer_id, timeout=timeout)


def recording(tmp_path: Path) -> Recording:
    return Recording(EmbeddedSqliteProvider(tmp_path / "store" / "memory.sqlite3"))


UNAVAILABLE = ProviderUnavailable("down")
TIMEOUT = ProviderTimeout("slow")


def embedded_entry(**automation: bool) -> dict[str, Any]:
    return normalise_config(f1.config("embedded_sqlite", **automation))["corpora"]["experience"]


def ingest_kwargs(provider: Any, entry: dict[str, Any] | None = None) -> dict[str, Any]:
    entry = entry or embedded_entry()
    return {
        "corpus": entry["corpus"],
        "standing_policy": entry["standing_policy"],
        "provider_binding": entry["provider_binding"],
        "observed_at": f1.OBSERVED_AT,
        "provider": provider,
    }


def operator_checkpoint(**changes: Any) -> dict[str, Any]:
    """A verified operator checkpoint for F1's corpus (retire unless changed)."""
    return {
        "verified": True,
        "action": "retire",
        "operator_ref": "operator:alice",
        "source_ref": "source:1",
        "corpus_id": "experience",
        "authority_ref": "owner:demo",
        "project_ref": "project:demo",
        **changes,
    }


def unenabled_goal(root: Path) -> Path:
    """An embedded-store Goal whose Agent is registered but not yet enabled."""
    registry = f1.write_goal(root, f1.config("embedded_sqlite"))
    document = json.loads(registry.read_text())
    binding = document["goals"][0]["control_plane"]["reward_memory"]
    binding.update(enabled=False, enabled_agents=[])
    binding.pop("enablement_receipts")
    registry.write_text(json.dumps(document))
    return registry
