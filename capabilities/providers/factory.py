"""Choose the provider a corpus binding names (providers.md §1-§3)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capabilities.providers.base import Preflight, Provider
from turn_hooks import ProviderUnavailable

SQLITE_PATH_ENV = "TURN_HOOKS_SQLITE_PATH"


def embedded_path(repo: Path | None) -> Path:
    """``TURN_HOOKS_SQLITE_PATH`` if set, else ``<repo>/.local/turn-hooks/memory.sqlite3``."""
    from capabilities.providers.embedded_sqlite import DATABASE_NAME

    override = os.environ.get(SQLITE_PATH_ENV)
    if override:
        return Path(override)
    return (repo or Path.cwd()) / ".local" / "turn-hooks" / DATABASE_NAME


SUPPORTED_PROVIDERS = frozenset({"embedded_sqlite", "openviking"})
"""The providers :func:`build_provider` can reach; any other is ``provider_unsupported``."""


class UnavailableProvider:
    """A provider that cannot be reached: every call fails open as unavailable."""

    def __init__(self, provider_id: str, reason_code: str) -> None:
        self.provider_id = provider_id
        self.reason_code = reason_code

    def preflight(self, *, timeout: float) -> Preflight:
        """Always unavailable, with the reason it was built with."""
        return Preflight(ok=False, reason_code=self.reason_code)

    def _fail(self) -> ProviderUnavailable:
        return ProviderUnavailable("the provider is unavailable", reason_code=self.reason_code)

    def read_exact(self, uri: str, *, actor_peer_id: str | None, timeout: float) -> str | None:
        """Unavailable."""
        raise self._fail()

    def write(self, uri: str, text: str, *, actor_peer_id: str | None, timeout: float) -> None:
        """Unavailable."""
        raise self._fail()

    def search(
        self, scope_ref: str, query: str, *, limit: int, actor_peer_id: str | None, timeout: float
    ) -> list[Any]:
        """Unavailable."""
        raise self._fail()

    def list(
        self, scope_ref: str, *, limit: int, actor_peer_id: str | None, timeout: float
    ) -> list[str]:
        """Unavailable."""
        raise self._fail()

    def delete(self, uri: str, *, actor_peer_id: str | None, timeout: float) -> bool:
        """Unavailable."""
        raise self._fail()


def build_provider(
    provider_binding: dict[str, Any],
    *,
    repo: Path | None,
    read_only: bool = False,
    dry_run: bool = False,
) -> Provider:
    """The provider for a corpus binding; never raises (an unusable one is unavailable).

    ``read_only`` opens the embedded store without creating or changing anything;
    the OpenViking provider is used through read calls only by such callers.
    ``dry_run`` is ``read_only`` for a preview that must write nothing anywhere: an
    absent embedded store then reads as an empty one instead of being unavailable.

    The embedded store's tree is anchored at the Goal repository (the working
    directory without one): ``.local`` and everything below it must be real
    directories. An explicit ``TURN_HOOKS_SQLITE_PATH`` is checked from its own
    directory down.
    """
    provider_id = provider_binding.get("provider_id")
    if provider_id == "embedded_sqlite":
        # Imported here: an OpenViking hook process needs neither the store nor sqlite3.
        from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
        from capabilities.providers.semantic import setting

        anchor = None if os.environ.get(SQLITE_PATH_ENV) else (repo or Path.cwd())
        return EmbeddedSqliteProvider(
            embedded_path(repo),
            read_only=read_only or dry_run,
            anchor=anchor,
            absent_ok=dry_run,
            semantic=setting(),  # the user's opt-in: TURN_HOOKS_SEMANTIC
        )
    if provider_id == "openviking":
        from capabilities.providers.client import OpenVikingSettings, ProviderClient
        from capabilities.providers.hybrid import similarity_floor
        from capabilities.providers.openviking import OpenVikingProvider

        settings = OpenVikingSettings.resolve(timeout=provider_binding.get("timeout_seconds"))
        if settings is None:
            return UnavailableProvider("openviking", "provider_endpoint_unconfigured")
        # The user's floor for the server's embedder: TURN_HOOKS_OPENVIKING_SIMILARITY_FLOOR
        return OpenVikingProvider(ProviderClient(settings), floor=similarity_floor())
    return UnavailableProvider(str(provider_id), "provider_unsupported")


def noting_semantic(
    provider_for: Callable[[dict[str, Any]], Any],
) -> tuple[Callable[[dict[str, Any]], Any], Callable[[], str | None]]:
    """``provider_for`` that keeps the providers it builds, and a function telling why
    the last search of any of them could not fully recall by meaning (an embedded
    store's ``semantic_reason``: ``semantic_cache_damaged``, ...), or ``None``."""
    built: list[Any] = []

    def tracked(binding: dict[str, Any]) -> Any:
        provider = provider_for(binding)
        built.append(provider)
        return provider

    def reason() -> str | None:
        found = (getattr(provider, "semantic_reason", None) for provider in built)
        return next((r for r in found if isinstance(r, str)), None)

    return tracked, reason
