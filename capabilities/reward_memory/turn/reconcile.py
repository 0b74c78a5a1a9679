"""Reconciliation: retry a binding's pending journals, fairly, and end hopeless ones.

The next executing Turn retries the same deterministic event before recall (§7.6),
as does ``turn-hooks reward-memory reconcile``. Separate from
:mod:`.post_settlement` because it works over many journals (rotation, typed
terminal states) while an ingest works on one Turn.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.values import now_timestamp
from capabilities.reward_memory.turn.journal import pending_journals, unflag_unless_pending
from sidecars import SidecarStore
from turn_hooks import SidecarError

if TYPE_CHECKING:
    from capabilities.reward_memory.turn.post_settlement import ProviderFor

RECONCILIATION_SCHEMA = "turn_reward_memory_reconciliation_v0"
MAX_RECONCILE = 3
MAX_VERIFY_ATTEMPTS = 12
"""Attempts after which a journal whose provider answers, but never with the record
(exact readback or destination recall fails, or the target holds other content), is
ended as ``rejected``: such a provider will not start to."""
UNVERIFIABLE_STATUSES = frozenset({"readback_unverified", "recall_unverified"})
UNVERIFIABLE_REASONS = frozenset({"provider_sync_revision_conflict"})
"""The target holds other content than the record: a provider that answers, and
answers with something else, every time."""
TERMINAL_SCHEMA = "turn_reward_memory_terminal_failure_v0"


def reconcile(
    resolution: Resolution,
    *,
    provider_for: ProviderFor,
    limit: int = MAX_RECONCILE,
    observed_at: str | None = None,
) -> dict[str, Any]:
    """Retry up to ``limit`` pending journals of the current binding (§7.6)."""
    status = resolution.status
    receipt: dict[str, Any] = {
        "ok": True,
        "schema_version": RECONCILIATION_SCHEMA,
        "goal_id": status["goal_id"],
        "agent_id": status["agent_id"],
        "status": "empty",
        "pending_count": 0,
        "attempted_count": 0,
        "completed_count": 0,
        "provider_sync_count": 0,
        v.EXTERNAL_WRITES: False,
        "fail_open": True,
        "receipts": [],
    }
    if not 1 <= limit <= MAX_RECONCILE:
        v.fail("limit", "must be between 1 and 3", "reconcile_limit_invalid")
    if not status["available"] or resolution.config is None:
        receipt["status"] = status["status"]
        return receipt
    if not resolution.config["automation"]["automatic_ingest"]:
        receipt["status"] = "explicitly_disabled"
        return receipt
    store = resolution.sidecars
    revision = status.get("binding_revision")
    eligible = []
    try:
        # The flagged journals only: a PreTurn must not look at the Agent's history.
        candidates = pending_journals(store, status["goal_id"], status["agent_id"])
    except SidecarError:
        receipt.update(
            status="runtime_unavailable", reason_code="automatic_ingest_reconciliation_failed"
        )
        return receipt
    for path in candidates:
        try:
            document = store.read(path)
        except SidecarError:
            continue
        if not document or document.get("status") != "pending":
            unflag_unless_pending(store, path)  # settled since it was flagged
            continue
        receipt["pending_count"] += 1
        if document.get("binding_revision") == revision:
            eligible.append((_last_attempt(path), path, document))
    # Oldest attempt first (upstream takes the first by file name, so three stuck
    # journals that sort early would starve every other one). Each attempt touches
    # its journal, so with N eligible journals each is retried within ceil(N/limit)
    # reconciliations.
    eligible.sort(key=lambda item: (item[0], item[1].name))
    for _when, path, document in eligible[:limit]:
        receipt["attempted_count"] += 1
        result = _replay(store, path, document, resolution, provider_for, observed_at)
        result = _end_if_hopeless(store, path, result, observed_at)
        _touch(store, path)
        unflag_unless_pending(store, path)
        receipt["receipts"].append(result)
        receipt["provider_sync_count"] += result.get("provider_sync_count", 0)
        receipt[v.EXTERNAL_WRITES] |= result.get(v.EXTERNAL_WRITES) is True
        receipt["completed_count"] += result.get("reconciliation_state") == "completed"
    if receipt["attempted_count"]:
        receipt["status"] = "completed"
    return receipt


def _last_attempt(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _touch(store: SidecarStore, path: Path) -> None:
    """Mark the journal as just attempted, whatever the attempt did to its content."""
    try:
        with store.lock(path):
            if os.path.isfile(path):
                os.utime(path)
    except (SidecarError, OSError):
        return  # the rotation only orders retries; losing one mark loses nothing


def _end_if_hopeless(
    store: SidecarStore, path: Path, result: dict[str, Any], observed_at: str | None
) -> dict[str, Any]:
    """End a pending journal that can never succeed in a typed terminal state.

    Two kinds: its reflection is refused by the contract (``reflection_rejected``),
    or the provider keeps accepting the write without ever returning the exact
    record, for :data:`MAX_VERIFY_ATTEMPTS` attempts. An unreachable provider is
    never a reason: the journal waits for it. The journal keeps the reflection and
    its attestation, with ``terminal_failure`` saying why.
    """
    from capabilities.reward_memory.turn.post_settlement import REFLECTION_REJECTED

    rejected = result.get("status") == REFLECTION_REJECTED

    def end(document: dict[str, Any] | None) -> dict[str, Any] | None:
        if document is None or document.get("status") != "pending":
            return None
        public = document.get("public_receipt") or {}
        last = public.get("status")
        attempts = document.get("attempt_count")
        exhausted = (
            (last in UNVERIFIABLE_STATUSES or public.get("reason_code") in UNVERIFIABLE_REASONS)
            and isinstance(attempts, int)
            and attempts >= MAX_VERIFY_ATTEMPTS
        )
        if not (rejected or exhausted):
            return None
        return {
            **document,
            "status": "rejected",
            "terminal_failure": {
                "schema_version": TERMINAL_SCHEMA,
                "reason_code": result.get("reason_code")
                if rejected
                else "reconcile_verification_attempts_exhausted",
                "last_status": result.get("status") if rejected else last,
                "attempt_count": attempts,
                "ended_at": observed_at or now_timestamp(),
            },
        }

    try:
        ended = store.update(path, end)
    except SidecarError:
        return result
    if not ended or ended.get("status") != "rejected" or "terminal_failure" not in ended:
        return result
    return {**result, "reconciliation_state": "rejected"}


def _replay(
    store: SidecarStore,
    path: Path,
    document: dict[str, Any],
    resolution: Resolution,
    provider_for: ProviderFor,
    observed_at: str | None,
) -> dict[str, Any]:
    # The write path is imported only here, for a pending journal: a PreTurn whose
    # binding has none (nearly every Turn) loads no ingest code.
    from capabilities.reward_memory.turn.legacy import terminalise_legacy
    from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open

    reflection = document.get("reflection")
    if (
        isinstance(reflection, dict)
        and reflection.get("schema_version") != "turn_reward_memory_reflection_v1"
    ):
        return terminalise_legacy(store, path, resolution, observed_at)
    # The stored attestation and settlement evidence are what made the first attempt
    # accountable; the journal supplies them, so nothing is re-attested here.
    raw = json.dumps(reflection, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return run_turn_ingest_fail_open(
        resolution,
        turn_key=str(document.get("turn_key")),
        host_result={"reward_memory_reflection_json": raw},
        evidence=None,
        provider_for=provider_for,
        observed_at=document.get("observed_at"),
    )
