"""The provider protocol (providers.md §1) and the values it exchanges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from turn_hooks import ProviderRejected, ProviderUnavailable


class ProviderPermissionError(ProviderRejected):
    """The actor peer may not see that record (OpenViking answers 403)."""

    reason_code = "provider_permission_denied"


class ProviderTimeout(ProviderUnavailable):
    """The call timed out: a write may or may not have landed."""

    reason_code = "provider_timeout"


class ProviderScopeError(ProviderRejected):
    """The URI is not an accepted ``viking://`` scope (``viking://agent/...`` included)."""

    reason_code = "provider_scope_rejected"


@dataclass(frozen=True, slots=True)
class Hit:
    """One search hit: a record URI, its score (higher is better) and a short summary."""

    uri: str
    score: float
    summary: str


@dataclass(frozen=True, slots=True)
class Preflight:
    """The result of a cheap reachability check; never writes."""

    ok: bool
    reason_code: str | None = None
    provider_version: str | None = None


class Provider(Protocol):
    """What the reward-memory core needs from a store of ``viking://`` records."""

    provider_id: str

    def preflight(self, *, timeout: float) -> Preflight:
        """Reachability and version; ``ok=False`` with a reason code when unusable."""

    def read_exact(self, uri: str, *, actor_peer_id: str | None, timeout: float) -> str | None:
        """The stored text of one record, or ``None`` when it is absent."""

    def write(self, uri: str, text: str, *, actor_peer_id: str | None, timeout: float) -> None:
        """Store ``text`` at ``uri`` (upsert); callers read it back afterwards."""

    def search(
        self, scope_ref: str, query: str, *, limit: int, actor_peer_id: str | None, timeout: float
    ) -> list[Hit]:
        """Hits strictly below ``scope_ref + "/"``, best first."""

    def list(
        self, scope_ref: str, *, limit: int, actor_peer_id: str | None, timeout: float
    ) -> list[str]:
        """Record URIs below ``scope_ref``."""

    def delete(self, uri: str, *, actor_peer_id: str | None, timeout: float) -> bool:
        """Remove one record (operator retirement); ``True`` if it existed."""
