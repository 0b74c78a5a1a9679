"""Provider-neutral write and read compositions (providers.md §1).

``sync`` never overwrites a different record and never reports a write it did not
read back; ``retrieve`` reads each hit back exactly, lazily, as far as its caller
consumes them. Both return public packets in
the upstream ``context_provider_sync_v0`` shape plus in-process details that never
leave the process (raw URIs, record text).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from capabilities.providers.base import Hit, Provider, ProviderTimeout
from capabilities.providers.lesson_index import is_record
from capabilities.providers.scopes import ScopeClass, classify_scope
from turn_hooks import ProviderError
from turn_hooks.canonical import hex_n

SYNC_SCHEMA = "context_provider_sync_v0"


SETUP_FAILURES = frozenset({"provider_endpoint_unconfigured", "provider_unsupported"})


def canonical_text(text: str) -> str:
    """CRLF to LF and one trailing newline removed (identities.md §11)."""
    normalised = text.replace("\r\n", "\n")
    return normalised[:-1] if normalised.endswith("\n") else normalised


def stored_form(body: str) -> str:
    """What providers store: the canonical text, stripped like OpenViking memories."""
    return canonical_text(body).strip()


def opaque_provider_ref(provider_id: str, namespace: str, uri: str) -> str:
    """The public handle of a stored record (identities.md §8); raw URIs stay private."""
    return "provider-" + hex_n(f"{provider_id}\n{namespace}\n{uri}", 20)


@dataclass
class SyncResult:
    """The outcome of one sync: counts, status and the target refs it verified."""

    provider_id: str
    namespace: str
    observed_at: str
    requested_count: int
    status: str = "completed"
    reason_code: str | None = None
    retry_disposition: str = "no_retry"
    completed_count: int = 0
    write_count: int = 0
    pending_count: int = 0
    result_refs: list[str] = field(default_factory=list)
    provider_version: str | None = None
    visibility: str = "private"
    target_scope_kind: str = "provider_defined"
    write_strategy: str = "provider_defined"
    actor_binding_verified: bool = False
    provider_preflight_performed: bool = False
    target_access_preflight_verified: bool = False
    writability_verified: bool = False
    latency_ms: int = 0
    call_count: int = 0

    def packet(self) -> dict[str, Any]:
        """The public ``context_provider_sync_v0`` packet (opaque refs only)."""
        return {
            "schema_version": SYNC_SCHEMA,
            "ok": self.status in {"completed", "preflight_ready"},
            "provider": self.provider_id,
            "namespace": self.namespace,
            "visibility": self.visibility,
            "target_scope_kind": self.target_scope_kind,
            "write_strategy": self.write_strategy,
            "actor_binding_verified": self.actor_binding_verified,
            "provider_preflight_performed": self.provider_preflight_performed,
            "target_access_preflight_verified": self.target_access_preflight_verified,
            "writability_verified": self.writability_verified,
            "status": self.status,
            "reason_code": self.reason_code,
            "provider_version": self.provider_version,
            "observed_at": self.observed_at,
            "requested_count": self.requested_count,
            "completed_count": self.completed_count,
            "write_count": self.write_count,
            "pending_count": self.pending_count,
            "reconciliation_performed": False,
            "retry_disposition": self.retry_disposition,
            "result_refs": [
                opaque_provider_ref(self.provider_id, self.namespace, r) for r in self.result_refs
            ],
            "telemetry": {"latency_ms": self.latency_ms},
            "external_writes_performed": self.write_count > 0,
            "raw_provider_payload_captured": False,
            "raw_content_captured": False,
            "credentials_captured": False,
        }


def binds_actor(scope: ScopeClass, actor_peer_id: str | None) -> bool:
    """Whether a write to ``scope`` is bound to the actor, as LoopX 2.1.1 reports it.

    A peer scope is bound when it names the actor's own peer. The account's shared
    resources belong to no actor, so there is no binding to miss: LoopX reports them
    verified. A user scope is shared by every peer of that user and binds none.
    """
    if scope.visibility == "public":
        return True
    return scope.peer is not None and scope.peer == actor_peer_id


def _stop(result: SyncResult, status: str, reason: str, retry: str) -> SyncResult:
    result.status, result.reason_code, result.retry_disposition = status, reason, retry
    return result


def held(provider: Provider) -> contextlib.AbstractContextManager[object]:
    """One connection for the provider calls inside the block, when the provider keeps one.

    The embedded store does (``EmbeddedSqliteProvider.holding``); any other
    provider's calls run as they always do.
    """
    holding = getattr(provider, "holding", None)
    return contextlib.nullcontext() if holding is None else holding()


def sync(
    provider: Provider,
    resources: list[tuple[str, str]],
    *,
    namespace: str,
    execute: bool,
    actor_peer_id: str | None,
    timeout: float,
    observed_at: str,
) -> SyncResult:
    """Write each ``(body, target_uri)`` at most once, proven by exact readback."""
    started = time.monotonic()
    result = SyncResult(
        provider_id=provider.provider_id,
        namespace=namespace,
        observed_at=observed_at,
        requested_count=len(resources),
    )
    try:
        return _sync(provider, resources, result, execute, actor_peer_id, timeout)
    finally:
        result.latency_ms = int((time.monotonic() - started) * 1000)


def _sync(
    provider: Provider,
    resources: list[tuple[str, str]],
    result: SyncResult,
    execute: bool,
    actor_peer_id: str | None,
    timeout: float,
) -> SyncResult:
    scopes = [classify_scope(target) for _body, target in resources]
    if not resources or any(scope is None for scope in scopes):
        return _stop(
            result, "unavailable", "provider_sync_target_scope_invalid", "repair_target_scope"
        )
    first = scopes[0]
    assert first is not None
    result.visibility = first.visibility
    result.target_scope_kind = first.scope_kind
    result.write_strategy = first.write_strategy
    result.actor_binding_verified = all(
        scope is not None and binds_actor(scope, actor_peer_id) for scope in scopes
    )
    result.call_count += 1
    preflight = provider.preflight(timeout=timeout)
    result.provider_preflight_performed = True
    result.provider_version = preflight.provider_version
    if not preflight.ok:
        reason = preflight.reason_code or "provider_unavailable"
        # A provider that is not set up is no transient fault: LoopX 2.1.1 says no_retry
        # when its `ov` CLI is missing, and so do we for a missing endpoint.
        disposition = "no_retry" if reason in SETUP_FAILURES else "safe_to_retry"
        return _stop(result, "unavailable", reason, disposition)
    for body, target in resources:
        expected = stored_form(body)
        try:
            result.call_count += 1
            current = provider.read_exact(target, actor_peer_id=actor_peer_id, timeout=timeout)
        except ProviderError:
            status = "unavailable" if execute else "preflight_incomplete"
            return _stop(
                result, status, "provider_sync_target_parent_unavailable", "repair_target_scope"
            )
        result.target_access_preflight_verified = True
        if not execute:
            continue
        if current is not None:
            if stored_form(current) != expected:
                return _stop(
                    result, "partial", "provider_sync_revision_conflict", "manual_reconcile"
                )
            result.completed_count += 1
            result.result_refs.append(target)
            _reindex(provider, target, expected, actor_peer_id, timeout)
            continue
        outcome = _write_then_read(provider, target, expected, actor_peer_id, timeout, result)
        if outcome is not None:
            return outcome
    if not execute:
        return _stop(
            result, "preflight_ready", "execute_required_for_verified_write", "execute_required"
        )
    return result


def _reindex(
    provider: Provider, target: str, text: str, actor_peer_id: str | None, timeout: float
) -> None:
    """A record found already written gets its search index entry made right, where
    the provider keeps one (OpenViking's lesson index): so the retry of a sync whose
    entry failed to write, and an import of a store's own export, write the missing
    entries. Best effort: the record is what the sync proves."""
    index = getattr(provider, "index_record", None)
    if index is not None:
        index(target, text, actor_peer_id=actor_peer_id, timeout=timeout)


def _write_then_read(
    provider: Provider,
    target: str,
    expected: str,
    actor_peer_id: str | None,
    timeout: float,
    result: SyncResult,
) -> SyncResult | None:
    write_reason = "provider_sync_success_readback_absent"
    try:
        result.call_count += 1
        provider.write(target, expected, actor_peer_id=actor_peer_id, timeout=timeout)
    except ProviderTimeout:
        write_reason = "provider_sync_write_timeout_absent"
    except ProviderError:
        write_reason = "provider_sync_write_failed_absent"
    try:
        result.call_count += 1
        readback = provider.read_exact(target, actor_peer_id=actor_peer_id, timeout=timeout)
    except ProviderError:
        # The write may have landed; only a later readback can tell.
        result.pending_count += 1
        return _stop(
            result, "partial", "provider_sync_reconciliation_unavailable", "manual_reconcile"
        )
    if readback is None:
        return _stop(result, "partial", write_reason, "safe_to_retry")
    if stored_form(readback) != expected:
        result.pending_count += 1
        return _stop(result, "committed_pending", "provider_commit_pending", "wait_and_reconcile")
    result.write_count += 1
    result.completed_count += 1
    result.writability_verified = True
    result.result_refs.append(target)
    return None


@dataclass(frozen=True, slots=True)
class RetrievedItem:
    """One exactly read record: in-process only (raw URI and text never leave)."""

    uri: str
    content: str
    summary: str
    score: float


@dataclass
class Retrieval:
    """The outcome of one retrieve: a status and the readable record items.

    ``items`` is lazy: each hit is read back exactly only when the caller asks for the
    next item, so a caller that stops early (recall, at ``limit`` qualified records)
    never pays for the reads it does not use. ``read_performed`` and a
    ``provider_reads_unusable`` reason code are final once ``items`` is exhausted.
    """

    status: str
    reason_code: str | None = None
    items: Iterator[RetrievedItem] = field(default_factory=lambda: iter(()))
    search_performed: bool = False
    read_performed: bool = False


_GENERIC_REASONS = frozenset({"provider_error", "provider_unavailable", "provider_rejected"})


def search_failure(exc: ProviderError) -> str:
    """The reason code of a failed search: the provider's own when it named one (an
    embedded store's ``embedded_store_corrupt``, a spent budget, ...), so the hook log
    and ``memory search`` say why; else ``provider_search_failed``. A code, never a
    message: no path reaches a receipt."""
    code = exc.reason_code
    return "provider_search_failed" if code in _GENERIC_REASONS else code


def retrieve(
    provider: Provider,
    scope_ref: str,
    query: str,
    *,
    max_results: int,
    actor_peer_id: str | None,
    timeout: float,
) -> Retrieval:
    """Search below the scope now; read the usable hits back exactly, in order, on demand."""
    search_read = getattr(provider, "search_read", None)
    try:
        if search_read is not None:
            pairs = search_read(
                scope_ref, query, limit=max_results, actor_peer_id=actor_peer_id, timeout=timeout
            )
        else:
            pairs = [
                (hit, None)
                for hit in provider.search(
                    scope_ref,
                    query,
                    limit=max_results,
                    actor_peer_id=actor_peer_id,
                    timeout=timeout,
                )
            ]
    except ProviderError as exc:
        return Retrieval(status="unavailable", reason_code=search_failure(exc))
    retrieval = Retrieval(status="completed", search_performed=True)
    retrieval.items = _read_hits(
        retrieval,
        provider,
        pairs,
        prefix=scope_ref.strip().rstrip("/") + "/",
        max_results=max_results,
        actor_peer_id=actor_peer_id,
        timeout=timeout,
    )
    return retrieval


def _read_hits(
    retrieval: Retrieval,
    provider: Provider,
    pairs: list[tuple[Hit, str | None]],
    *,
    prefix: str,
    max_results: int,
    actor_peer_id: str | None,
    timeout: float,
) -> Iterator[RetrievedItem]:
    """Each usable hit, read back exactly only when the caller asks for it."""
    seen: set[str] = set()
    count = 0
    for hit, known_text in pairs:
        uri = hit.uri.split("#", 1)[0]
        if (
            not uri.startswith(prefix)
            or uri in seen
            or uri.endswith((".overview.md", ".abstract.md"))
        ):
            continue
        seen.add(uri)
        retrieval.read_performed = True
        text = known_text
        if text is None or hit.uri != uri:
            try:
                text = provider.read_exact(uri, actor_peer_id=actor_peer_id, timeout=timeout)
            except ProviderError:
                continue
        if text is None or not is_record(text):
            continue
        count += 1
        yield RetrievedItem(uri=uri, content=text, summary=hit.summary, score=hit.score)
        if count >= max_results:
            return
    if retrieval.read_performed and not count:
        retrieval.reason_code = "provider_reads_unusable"
