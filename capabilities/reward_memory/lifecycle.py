"""PostSettlement: a validated reflection becomes one verified memory (turn-lifecycle §7).

Order of one Turn's ingest: binding → automation → reflection → route → identities →
journal → evidence → write-ahead journal → ingest → final journal. Nothing reaches a
provider without an independent validator's attestation of the exact reflection,
and the journal is written (locked, 0600) before any provider call, so a crash or
an outage leaves a pending journal that the next Turn reconciles.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capabilities.providers.base import Provider
from capabilities.reward_memory import values as v
from capabilities.reward_memory.experience import (
    SOURCE_KINDS,
    experience_quality,
    parse_attestation,
    parse_reflection,
)
from capabilities.reward_memory.identities import (
    evidence_digest,
    source_event_id,
    turn_source_ref,
)
from capabilities.reward_memory.ingest import ingest_scoped_event
from capabilities.reward_memory.registry import Resolution
from capabilities.reward_memory.runtime import now_timestamp
from sidecars import SidecarStore, goal_agent_parts, path_token, sidecar_root
from turn_hooks import SidecarError

INGEST_SCHEMA = "turn_reward_memory_ingest_v0"
JOURNAL_SCHEMA = "turn_reward_memory_sidecar_v0"
RECONCILIATION_SCHEMA = "turn_reward_memory_reconciliation_v0"
LEGACY_MIGRATION_SCHEMA = "turn_reward_memory_legacy_pending_migration_v0"
CLI_WIRING = "codex_cli_turn_post_settlement"
APP_WIRING = "codex_app_refresh_spend_post_settlement"
JOURNAL_DIR = "reward-memory-outcomes"
PENDING_INGEST_STATUSES = frozenset(
    {
        "committed_pending",
        "provider_unavailable",
        "readback_unverified",
        "recall_unverified",
        # A provider that failed its preflight (server down) is retried too: upstream
        # rejects such a journal, the OpenViking provider issue asks for it to stay
        # pending and be reconciled after the server is back.
        "unavailable",
    }
)
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
REFLECTION_FIELD = "reward_memory_reflection_json"
LEGACY_ATTESTATION_KEY = "reward_memory_reflection_validation"
REFLECTION_REJECTED = "reflection_rejected"

ProviderFor = Callable[[dict[str, Any]], Provider]


def journal_path(store: SidecarStore, goal_id: str, agent_id: str, event_id: str) -> Path:
    """``reward-memory-outcomes/T(goal)/T(agent)/T(source_event_id).json`` (identities §4)."""
    return store.path(
        *goal_agent_parts(JOURNAL_DIR, goal_id, agent_id), path_token(event_id, "event") + ".json"
    )


def journal_files_of(repo: Path) -> list[Path]:
    """Every journal below a Goal repository, sorted (for operators and tests)."""
    root = sidecar_root(repo) / JOURNAL_DIR
    return sorted(root.rglob("*.json")) if root.is_dir() else []


def base_receipt(status: dict[str, Any], wiring: str = CLI_WIRING) -> dict[str, Any]:
    """The receipt fields every Turn ingest outcome carries."""
    return {
        "ok": True,
        "schema_version": INGEST_SCHEMA,
        "status": "runtime_unavailable",
        "reason_code": None,
        "goal_id": status["goal_id"],
        "agent_id": status["agent_id"],
        "automatic_ingest": status["automatic_ingest"],
        "provider_sync_count": 0,
        "exact_readback_verified": False,
        "deduplicated": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
        "host_wiring": wiring,
        "fail_open": True,
        "provider_failure_is_user_gate": False,
        "grants_new_action_authority": False,
    }


def accepted_attestation(
    evidence: dict[str, Any], raw_digest: str, evidence_refs: list[str]
) -> dict[str, Any] | None:
    """The attestation, if the settlement evidence is accountable (§7.2, §8).

    Task validation passed with an attestation of exactly this reflection; the
    writeback was read back; quota spend was read back where the host has a quota
    owner (``quota_spend`` is ``None`` for hosts without one, never fabricated).
    """
    validation = evidence.get("task_validation")
    writeback = evidence.get("writeback")
    quota = evidence.get("quota_spend")
    if not isinstance(validation, dict) or validation.get("ok") is not True:
        return None
    if (
        not isinstance(writeback, dict)
        or writeback.get("ok") is not True
        or (writeback.get("appended") is not True)
    ):
        return None
    if quota is not None and (
        not isinstance(quota, dict)
        or quota.get("ok") is not True
        or quota.get("appended") is not True
    ):
        return None
    # Hooks hosts keep the validator's output under their generic key; the Codex App
    # path and spools written before it use the reflection-specific one.
    attestation = validation.get("attestation", validation.get(LEGACY_ATTESTATION_KEY))
    if not isinstance(attestation, dict):
        return None
    checked = parse_attestation(
        json.dumps({k: v for k, v in attestation.items() if k != "validator_kind"}),
        raw_digest,
        evidence_refs,
    )
    if checked is None:
        return None
    return {**checked, "validator_kind": validation.get("validator_kind") or "command"}


def reflection_event(
    reflection: dict[str, Any],
    *,
    corpus: dict[str, Any],
    agent: str,
    turn_key: str,
    event_id: str,
    evidence: str,
) -> dict[str, Any]:
    """The scoped-feedback event a validated reflection maps to (§7.3)."""
    scope = corpus["scope"]
    source_ref = turn_source_ref(event_id, evidence)
    event: dict[str, Any] = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "feedback_ref": source_ref,
        "workspace_ref": scope["workspace_ref"],
        "project_ref": scope["project_ref"],
        "surface_id": reflection["surface_id"],
        "revision_ref": turn_key,
        "target_class": corpus["class_id"],
        "content_summary": reflection["content_summary"],
        "experience": reflection["experience"],
        "source": {
            "source_kind": SOURCE_KINDS[reflection["outcome_kind"]],
            "source_ref": source_ref,
            "actor_ref": f"agent:{agent}",
            "actor_role": "validated_goal_agent",
        },
        "reasoning": {
            "summary": reflection["reasoning_summary"],
            "confidence": reflection["confidence"],
        },
        "guard_context": {
            "source_freshness": "current",
            "conflict_state": "clear",
            "current_artifact_verified": True,
        },
        "requested_action_scopes": [],
        "raw_content_captured": False,
    }
    for key in ("user_ref", "peer_ref", "session_ref"):
        if scope[key] is not None:
            event[key] = scope[key]
    return event


def _route(config: dict[str, Any], reflection: dict[str, Any], agent: str) -> dict[str, Any]:
    surface = config["surfaces"].get(reflection["surface_id"])
    if surface is None or surface["adapter"] != "scoped_feedback":
        v.fail(
            "reflection.surface_id",
            "is not a configured scoped_feedback surface",
            "surface_not_configured",
        )
    entry: dict[str, Any] = config["corpora"][surface["ingest_corpus_id"]]
    peer = entry["corpus"]["scope"]["peer_ref"]
    if peer is not None and peer != f"agent:{agent}":
        v.fail("corpus.scope.peer_ref", "is not this Agent's peer", "ingest_peer_mismatch")
    return entry


def _reconciliation_state(status: str, exact: bool) -> str:
    if status == "activated" and exact:
        return "completed"
    return "pending" if status in PENDING_INGEST_STATUSES else "rejected"


def _public_receipt(
    receipt: dict[str, Any], ingest: dict[str, Any], quality: dict[str, Any]
) -> dict[str, Any]:
    destination = ingest.get("destination_recall") or {}
    reasons = ingest.get("reason_codes") or ingest.get("guard", {}).get("reason_codes") or []
    receipt.update(
        status=ingest["status"],
        reason_code=reasons[0] if reasons else None,
        provider_sync_count=1 if "write" in ingest else 0,
        exact_readback_verified=ingest["exact_readback_verified"],
        deduplicated=ingest["deduplicated"],
        external_writes_performed=ingest["external_writes_performed"],
        experience_quality=quality,
        destination_recall={
            "required": destination.get("required", False),
            "verified": destination.get("verified", False),
            "query_kind": destination.get("query_kind"),
            "experience_digest": destination.get("experience_digest"),
        },
        reconciliation_state=_reconciliation_state(
            ingest["status"], ingest["exact_readback_verified"]
        ),
    )
    return receipt


def run_turn_ingest(
    resolution: Resolution,
    *,
    turn_key: str,
    host_result: dict[str, Any],
    evidence: dict[str, Any] | None,
    provider_for: ProviderFor,
    observed_at: str | None = None,
    wiring: str = CLI_WIRING,
    attested_digest: str | None = None,
) -> dict[str, Any]:
    """One settled Turn's reflection → verified memory, or a receipt saying why not.

    ``attested_digest`` is the raw-text digest recorded when the reflection was first
    submitted (the Codex App stages it); the attestation must bind that digest.
    """
    status = resolution.status
    receipt = base_receipt(status, wiring)
    if not status["available"] or resolution.config is None:
        receipt.update(status=status["status"], reason_code=status.get("reason_code"))
        return receipt
    config = resolution.config
    if not config["automation"]["automatic_ingest"]:
        receipt.update(
            status="explicitly_disabled", reason_code="automatic_ingest_explicitly_disabled"
        )
        return receipt
    raw = host_result.get("reward_memory_reflection_json")
    if isinstance(raw, str) and len(raw) > 2400:
        v.fail("reward_memory_reflection_json", "exceeds 2400 characters", "reflection_too_large")
    parsed = parse_reflection(raw)
    if parsed.kind in {"none", "no_evidence"}:
        receipt.update(
            status="no_eligible_evidence", reason_code="validated_turn_declared_no_reward_evidence"
        )
        return receipt
    if parsed.kind == "legacy":
        receipt.update(
            status="no_eligible_evidence",
            reason_code="legacy_reflection_requires_transferable_experience",
        )
        return receipt
    reflection = parsed.normalised
    assert reflection is not None and parsed.raw_digest is not None
    agent = status["agent_id"]
    entry = _route(config, reflection, agent)
    policy_id = entry["standing_policy"]["policy_id"]
    evidence_id = evidence_digest(reflection["evidence_refs"])
    event_id = source_event_id(
        status["goal_id"], agent, turn_key, reflection["surface_id"], policy_id, evidence_id
    )
    receipt.update(surface_id=reflection["surface_id"], source_event_id=event_id)
    store = resolution.sidecars
    path = journal_path(store, status["goal_id"], agent, event_id)
    identity = {
        "goal_id": status["goal_id"],
        "agent_id": agent,
        "turn_key": turn_key,
        "source_event_id": event_id,
    }
    try:
        with store.transaction(path) as journal:
            return _attempt(
                journal,
                receipt,
                resolution,
                identity,
                reflection,
                attested_digest or parsed.raw_digest,
                entry,
                evidence,
                provider_for,
                observed_at,
            )
    except SidecarError as exc:
        receipt.update(status="runtime_state_unavailable", reason_code=exc.reason_code)
        return receipt


def _attempt(
    journal: Any,
    receipt: dict[str, Any],
    resolution: Resolution,
    identity: dict[str, str],
    reflection: dict[str, Any],
    raw_digest: str,
    entry: dict[str, Any],
    evidence: dict[str, Any] | None,
    provider_for: ProviderFor,
    observed_at: str | None,
) -> dict[str, Any]:
    stored = journal.read()
    if stored is not None:
        if stored.get("schema_version") != JOURNAL_SCHEMA or any(
            stored.get(key) != value for key, value in identity.items()
        ):
            receipt.update(
                status="runtime_state_invalid", reason_code="outcome_sidecar_identity_mismatch"
            )
            return receipt
        if stored.get("reflection") != reflection:
            receipt.update(
                status="runtime_state_invalid", reason_code="outcome_sidecar_payload_mismatch"
            )
            return receipt
        if stored.get("status") == "completed":
            return {
                **stored.get("public_receipt", receipt),
                "status": "activated",
                "provider_sync_count": 0,
                "exact_readback_verified": True,
                "deduplicated": True,
                "external_writes_performed": False,
                "reconciliation_state": "completed",
                "sidecar_receipt_reused": True,
            }
        if stored.get("status") == "rejected":
            return {
                **stored.get("public_receipt", receipt),
                "reconciliation_state": "rejected",
                "sidecar_receipt_reused": True,
            }
        if not isinstance(stored.get("observed_at"), str):
            receipt.update(
                status="runtime_state_invalid", reason_code="outcome_sidecar_observation_missing"
            )
            return receipt
        observed_at = stored["observed_at"]
    attestation = accepted_attestation(evidence or {}, raw_digest, reflection["evidence_refs"])
    settlement = _settlement_validation(evidence)
    if attestation is None and stored is not None:
        attestation = stored.get("reflection_validation")
        settlement = stored.get("settlement_validation", settlement)
    if attestation is None:
        receipt.update(
            status="evidence_validation_required",
            reason_code="reflection_not_bound_to_independent_validation",
            candidate_state="awaiting_evidence_validation",
        )
        return receipt
    observed = observed_at or now_timestamp()
    document = {
        "schema_version": JOURNAL_SCHEMA,
        "status": "pending",
        **identity,
        "surface_id": reflection["surface_id"],
        "reflection": reflection,
        "reflection_validation": attestation,
        "settlement_validation": settlement,
        "observed_at": observed,
        "attempt_count": int((stored or {}).get("attempt_count", 0)) + 1,
        "raw_content_captured": False,
    }
    if "binding_revision" in resolution.status:
        document["binding_revision"] = resolution.status["binding_revision"]
    if stored is not None and "public_receipt" in stored:
        document["public_receipt"] = stored["public_receipt"]
    try:
        journal.write(document)
    except SidecarError:
        receipt.update(
            status="runtime_state_unavailable",
            reason_code="outcome_sidecar_write_failed_before_provider",
        )
        return receipt
    event = reflection_event(
        reflection,
        corpus=entry["corpus"],
        agent=identity["agent_id"],
        turn_key=identity["turn_key"],
        event_id=identity["source_event_id"],
        evidence=evidence_digest(reflection["evidence_refs"]),
    )
    ingest = ingest_scoped_event(
        event,
        corpus=entry["corpus"],
        standing_policy=entry["standing_policy"],
        provider_binding=entry["provider_binding"],
        observed_at=observed,
        execute=True,
        provider=provider_for(entry["provider_binding"]),
        automatic_recall=resolution.status["automatic_recall"],
    )
    quality = experience_quality(entry["corpus"]["class_id"], reflection["experience"])
    receipt = _public_receipt(receipt, ingest, quality)
    document["status"] = receipt["reconciliation_state"]
    document["public_receipt"] = receipt
    try:
        journal.write(document)
    except SidecarError:
        receipt["reconciliation_state"] = "state_write_failed"
        receipt["reason_code"] = (
            receipt["reason_code"] or "outcome_sidecar_write_failed_after_provider"
        )
    return receipt


def _settlement_validation(evidence: dict[str, Any] | None) -> dict[str, Any]:
    evidence = evidence or {}
    return {
        "writeback": evidence.get("writeback") or {},
        "quota_spend": evidence.get("quota_spend") or {},
    }


def run_turn_ingest_fail_open(resolution: Resolution, **kwargs: Any) -> dict[str, Any]:
    """:func:`run_turn_ingest`, but any failure is a fail-open receipt.

    A reflection the contract refuses (not JSON, secret-like or path-like text, a
    broken experience) can never become a memory however often it is retried, so it
    is the final ``reflection_rejected`` with the refusal's reason code. Any other
    failure is the retryable ``runtime_unavailable``.
    """
    receipt = base_receipt(resolution.status, kwargs.get("wiring", CLI_WIRING))
    try:
        return run_turn_ingest(resolution, **kwargs)
    except v.RewardMemoryInputError as exc:
        if not str(exc.field or "").startswith(REFLECTION_FIELD):
            receipt.update(
                status="runtime_unavailable", reason_code="automatic_ingest_runtime_failed"
            )
            return receipt
        receipt.update(status=REFLECTION_REJECTED, reason_code=exc.reason_code)
        return receipt
    except Exception:  # the Turn is settled; a failing ingest must never undo it
        receipt.update(status="runtime_unavailable", reason_code="automatic_ingest_runtime_failed")
        return receipt


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
        "external_writes_performed": False,
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
    for path in store.iter_documents(
        *goal_agent_parts(JOURNAL_DIR, status["goal_id"], status["agent_id"])
    ):
        try:
            document = store.read(path)
        except SidecarError:
            continue
        if not document or document.get("status") != "pending":
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
        receipt["receipts"].append(result)
        receipt["provider_sync_count"] += result.get("provider_sync_count", 0)
        receipt["external_writes_performed"] |= result.get("external_writes_performed") is True
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
    reflection = document.get("reflection")
    if (
        isinstance(reflection, dict)
        and reflection.get("schema_version") != "turn_reward_memory_reflection_v1"
    ):
        return _terminalise_legacy(store, path, resolution, observed_at)
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


def _terminalise_legacy(
    store: SidecarStore, path: Path, resolution: Resolution, observed_at: str | None
) -> dict[str, Any]:
    def terminal(document: dict[str, Any] | None) -> dict[str, Any] | None:
        if document is None or document.get("status") != "pending":
            return None
        return {
            **document,
            "status": "rejected",
            "legacy_pending_migration": {
                "schema_version": LEGACY_MIGRATION_SCHEMA,
                "status": "terminal_rejected",
                "reason_code": "legacy_reflection_requires_transferable_experience",
                "provider_write_state": "unknown_may_have_committed",
                "provider_cleanup_performed": False,
                "migrated_at": observed_at or now_timestamp(),
            },
        }

    store.update(path, terminal)
    receipt = base_receipt(resolution.status)
    receipt.update(
        status="no_eligible_evidence",
        reason_code="legacy_reflection_requires_transferable_experience",
        reconciliation_state="rejected",
    )
    return receipt
