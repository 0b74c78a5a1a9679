"""PostSettlement: a validated reflection becomes one verified memory (turn-lifecycle §7).

Order of one Turn's ingest: binding → automation → reflection → route → identities →
journal → evidence → write-ahead journal → ingest → final journal. Nothing reaches a
provider without an independent validator's attestation of the exact reflection,
and the journal is written (locked, 0600) before any provider call, so a crash or
an outage leaves a pending journal that the next Turn reconciles. The journal's
address and states are :mod:`.journal`'s, its replay is :mod:`.reconcile`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from capabilities.providers.base import Provider
from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.experience import (
    experience_quality,
    parse_attestation,
    parse_reflection,
    reflection_event,
)
from capabilities.reward_memory.contract.identities import (
    evidence_digest,
    source_event_id,
)
from capabilities.reward_memory.contract.reader import refuse_unreadable
from capabilities.reward_memory.contract.values import now_timestamp
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from capabilities.reward_memory.turn.journal import (
    JOURNAL_SCHEMA,
    flag_pending,
    journal_path,
    reconciliation_state,
    unflag_written,
)
from turn_hooks import SidecarError

if TYPE_CHECKING:
    from capabilities.reward_memory.contract.documents import (
        ExperimentStatus,
        IngestReceipt,
        JournalEntry,
        JournalIdentity,
    )

INGEST_SCHEMA = "turn_reward_memory_ingest_v0"
CLI_WIRING = "codex_cli_turn_post_settlement"
APP_WIRING = "codex_app_refresh_spend_post_settlement"
REFLECTION_FIELD = "reward_memory_reflection_json"
LEGACY_ATTESTATION_KEY = "reward_memory_reflection_validation"
REFLECTION_REJECTED = "reflection_rejected"

ProviderFor = Callable[[dict[str, Any]], Provider]


def base_receipt(status: ExperimentStatus, wiring: str = CLI_WIRING) -> dict[str, Any]:
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
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
        "host_wiring": wiring,
        "fail_open": True,
        "provider_failure_is_user_gate": False,
        v.NEW_ACTION_AUTHORITY: False,
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


def _public_receipt(
    receipt: dict[str, Any], ingest: IngestReceipt, quality: dict[str, Any]
) -> dict[str, Any]:
    destination = ingest.get("destination_recall") or {}
    reasons = ingest.get("reason_codes") or ingest.get("guard", {}).get("reason_codes") or []
    receipt.update(
        {
            "status": ingest["status"],
            "reason_code": reasons[0] if reasons else None,
            "provider_sync_count": 1 if "write" in ingest else 0,
            "exact_readback_verified": ingest["exact_readback_verified"],
            "deduplicated": ingest["deduplicated"],
            v.EXTERNAL_WRITES: ingest[v.EXTERNAL_WRITES],
            "experience_quality": quality,
            "destination_recall": {
                "required": destination.get("required", False),
                "verified": destination.get("verified", False),
                "query_kind": destination.get("query_kind"),
                "experience_digest": destination.get("experience_digest"),
            },
            "reconciliation_state": reconciliation_state(
                ingest["status"], ingest["exact_readback_verified"]
            ),
        }
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
    refuse_unreadable(raw)  # the reader's refusal, text that is not UTF-8 among them
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
    identity: JournalIdentity = {
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
    identity: JournalIdentity,
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
                v.EXTERNAL_WRITES: False,
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
    document: JournalEntry = {
        "schema_version": JOURNAL_SCHEMA,
        "status": "pending",
        "goal_id": identity["goal_id"],
        "agent_id": identity["agent_id"],
        "turn_key": identity["turn_key"],
        "source_event_id": identity["source_event_id"],
        "surface_id": reflection["surface_id"],
        "reflection": reflection,
        "reflection_validation": attestation,
        "settlement_validation": settlement,
        "observed_at": observed,
        "attempt_count": int((stored or {}).get("attempt_count", 0)) + 1,
        v.RAW_CONTENT: False,
    }
    if "binding_revision" in resolution.status:
        document["binding_revision"] = resolution.status["binding_revision"]
    if stored is not None and "public_receipt" in stored:
        document["public_receipt"] = stored["public_receipt"]
    store = resolution.sidecars
    try:
        flag_pending(store, journal.path)  # first: a pending journal is always flagged
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
    unflag_written(store, journal.path, document["status"])
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
