"""Bounded dogfood: settlement receipts and the batch readiness decision (§16).

A receipt settles one application of memory inside one module outcome: applied,
not applied or refuted (coverage, never utility), with exact readback and
current-artifact verification behind ``applied`` and ``refuted``. Utility attribution
is optional and never changes readiness. The batch is ready for a bounded Issue Fix
pilot only with the Stage 4 gate open, an Issue Fix result, two LoopX domains, all
three dispositions and both operator controls; it claims nothing beyond that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility.proposal import (
    application_receipt,
    build_observation,
    receipt_text,
)
from turn_hooks.canonical import hex_n, s2

RECEIPT_SCHEMA = "reward_memory_dogfood_receipt_v1"
BATCH_SCHEMA = "reward_memory_dogfood_batch_v1"
CONTROL_SCHEMA = "reward_memory_operator_control_v0"
FAMILIES = ("issue_fix", "loopx")
DISPOSITIONS = ("applied", "not_applied", "refuted")
DISPOSITION_OF = {"applied": "applied", "refuted": "refuted"}
CONTROL_ACTIONS = ("edit", "retire")
# What an operator control leaves behind: an edit is a new candidate to review.
RESULT_STATE = {"edit": "candidate", "retire": "retired"}
MAX_RECEIPTS = 24
MAX_CONTROLS = 8
_INPUT_KEYS = frozenset(
    {"domain_family", "domain_id", "application_receipt", "module_outcome", "cost", "intervention"}
)


def _count(value: object, field: str) -> int:
    return v.integer(value, field, 0)


def _summary(value: object, limit: int, field: str, present: bool) -> str | None:
    if not present:
        # Nothing happened: a summary given anyway is not read, as upstream reads it.
        return None
    return v.compact(value, limit, field)


def _utility(
    attribution: object, receipt: dict[str, Any], outcome: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if attribution is None:
        return {
            "status": "not_requested",
            "reason_code": "utility_attribution_not_requested",
        }, None
    verified = {
        "verified": True,
        "outcome_ref": outcome["outcome_ref"],
        "artifact_ref": receipt["artifact_ref"],
        "outcome_status": outcome["outcome_status"],
    }
    try:
        # A malformed attribution (not an object, keys missing) is a rejected
        # evaluation of this receipt, as upstream reports it, not a batch error.
        document = v.exact_keys(
            attribution, "utility_attribution", frozenset({"context", "proposal", "created_at"})
        )
        observation = build_observation(
            receipt,
            verified,
            document["context"],
            document["proposal"],
            created_at=u.timestamp(document["created_at"], "observation_malformed", "created_at"),
        )
    except v.RewardMemoryInputError:  # UtilityError included
        return {"status": "rejected", "reason_code": "utility_attribution_rejected"}, None
    return {"status": "accepted"}, observation


def build_receipt(value: object) -> dict[str, Any]:
    """One ``reward_memory_dogfood_receipt_v1`` from a settled observation."""
    # Keys beyond the contract's are ignored, as upstream ignores them; none is echoed.
    document = v.mapping(value, "observation")
    missing = sorted(_INPUT_KEYS - set(document))
    if missing:
        v.fail(f"observation.{missing[0]}", "is required", "missing_key")
    # The flag is required, as LoopX requires it: a missing or non-boolean one is
    # invalid, not read as false (issue 19).
    if not isinstance(document.get(v.RAW_CONTENT), bool):
        v.fail(f"observation.{v.RAW_CONTENT}", "must be a boolean")
    if document[v.RAW_CONTENT]:
        v.fail(f"observation.{v.RAW_CONTENT}", "must be false", "raw_content_rejected")
    family = v.enum(document["domain_family"], FAMILIES, "observation.domain_family")
    domain = v.token(document["domain_id"], "observation.domain_id")
    if not domain.startswith(family + "."):
        v.fail("observation.domain_id", f"must start with {family}.")
    receipt = application_receipt(document["application_receipt"])
    # The module's own sub-documents are read by the fields the batch uses; other
    # keys are the module's business and ignored, as LoopX 2.1.1 ignores them. A
    # missing field fails its value check.
    raw_outcome = v.mapping(document["module_outcome"], "observation.module_outcome")
    if raw_outcome.get("outcome_verified") is not True:
        v.fail("observation.module_outcome.outcome_verified", "must be true")
    if raw_outcome.get("artifact_ref") != receipt["artifact_ref"]:
        v.fail("observation.module_outcome.artifact_ref", "must match the application receipt")
    outcome = {
        "verified": True,
        "outcome_ref": v.token(
            raw_outcome.get("outcome_ref"), "observation.module_outcome.outcome_ref"
        ),
        "outcome_status": v.token(
            raw_outcome.get("outcome_status"), "observation.module_outcome.outcome_status"
        ),
        "summary": v.compact(raw_outcome.get("summary"), 360, "observation.module_outcome.summary"),
    }
    disposition = DISPOSITION_OF.get(receipt["outcome"], "not_applied")
    verification = {
        "result_readback_verified": receipt["result_readback_verified"] is True,
        "current_artifact_verified": receipt["current_artifact_verified"] is True,
    }
    if disposition != "not_applied" and not (
        all(verification.values()) and receipt["memory_ref_digests"]
    ):
        v.fail(
            "observation.application_receipt",
            f"{disposition} needs exact readback, current-artifact verification and a digest",
            "dogfood_verification_missing",
        )
    cost_input = v.mapping(document["cost"], "observation.cost")
    cost = {
        key: _count(cost_input.get(key), f"observation.cost.{key}")
        for key in ("latency_ms", "model_tokens", "provider_call_count")
    }
    # Summaries are optional upstream: absent reads as null (issue 19).
    intervention_input = v.mapping(document["intervention"], "observation.intervention")
    count = _count(intervention_input.get("count"), "observation.intervention.count")
    feedback_input = v.mapping(
        document.get("bot_feedback") or {"captured": False}, "observation.bot_feedback"
    )
    captured = v.boolean(feedback_input.get("captured"), "observation.bot_feedback.captured")
    evaluation, observation = _utility(document.get("utility_attribution"), receipt, outcome)
    identity = {
        "schema_version": RECEIPT_SCHEMA,
        "application_receipt_id": u.application_receipt_id(receipt),
        "application_outcome": receipt["outcome"],
        "application_disposition": disposition,
        "module_outcome_ref": outcome["outcome_ref"],
        "module_outcome_status": outcome["outcome_status"],
    }
    return {
        "ok": True,
        "schema_version": RECEIPT_SCHEMA,
        "domain_family": family,
        "domain_id": domain,
        "application_id": receipt_text(receipt, "application_id"),
        "application_receipt_id": identity["application_receipt_id"],
        "artifact_ref": receipt["artifact_ref"],
        "corpus_id": receipt_text(receipt, "corpus_id"),
        "surface_id": receipt_text(receipt, "surface_id"),
        "application_outcome": receipt["outcome"],
        "application_disposition": disposition,
        "module_outcome": outcome,
        "utility_evaluation": evaluation,
        "utility_observation": observation,
        "memory_ref_digests": list(receipt["memory_ref_digests"]),
        "verification": verification,
        "cost": cost,
        "intervention": {
            "count": count,
            "summary": _summary(
                intervention_input.get("summary"),
                240,
                "observation.intervention.summary",
                count > 0,
            ),
        },
        "bot_feedback": {
            "captured": captured,
            "summary": _summary(
                feedback_input.get("summary"), 240, "observation.bot_feedback.summary", captured
            ),
        },
        "receipt_id": "dogfood:" + hex_n(s2(identity), 20),
        v.NEW_ACTION_AUTHORITY: False,
        v.RAW_CONTENT: False,
        v.EXTERNAL_WRITES: False,
    }


def _compact(receipt: dict[str, Any]) -> dict[str, Any]:
    return {
        "receipt_id": receipt["receipt_id"],
        "domain_family": receipt["domain_family"],
        "domain_id": receipt["domain_id"],
        "application": {
            "application_id": receipt["application_id"],
            "application_receipt_id": receipt["application_receipt_id"],
            "artifact_ref": receipt["artifact_ref"],
            "corpus_id": receipt["corpus_id"],
            "surface_id": receipt["surface_id"],
            "outcome": receipt["application_outcome"],
            "disposition": receipt["application_disposition"],
            "memory_ref_digests": receipt["memory_ref_digests"],
            "verification": receipt["verification"],
        },
        "module_outcome": receipt["module_outcome"],
        "utility": {
            "evaluation": receipt["utility_evaluation"],
            "observation": receipt["utility_observation"],
        },
        "cost": receipt["cost"],
        "intervention": receipt["intervention"],
        "bot_feedback": receipt["bot_feedback"],
    }


def _controls(value: object) -> list[str]:
    items = v.listing(value, "operator_controls", 0, MAX_CONTROLS)
    actions, refs = [], set()
    for index, item in enumerate(items):
        field = f"operator_controls[{index}]"
        control = v.mapping(item, field)
        if control.get("schema_version") != CONTROL_SCHEMA:
            v.fail(f"{field}.schema_version", f"must be {CONTROL_SCHEMA}")
        if control.get("authority_verified") is not True:
            v.fail(f"{field}.authority_verified", "must be true", "operator_checkpoint_unverified")
        for flag in (
            "provider_write_performed",
            v.RAW_CONTENT,
            v.EXTERNAL_WRITES,
        ):
            if control.get(flag) is not False:
                v.fail(f"{field}.{flag}", "must be false")
        for key in (
            "operator_ref",
            "authority_ref",
            "authority_source_ref",
            "corpus_id",
            "prior_candidate_ref_digest",
            "result_candidate_ref_digest",
        ):
            v.token(control.get(key), f"{field}.{key}")  # as upstream checks them
        v.boolean(control.get(v.NEW_ACTION_AUTHORITY), f"{field}.{v.NEW_ACTION_AUTHORITY}")
        action = v.enum(control.get("action"), CONTROL_ACTIONS, f"{field}.action")
        if control.get("effective_action") != action:
            v.fail(f"{field}.effective_action", "must be the control's action")
        if control.get("result_state") != RESULT_STATE[action]:
            v.fail(f"{field}.result_state", f"must be {RESULT_STATE[action]} after {action}")
        actions.append(action)
        ref = v.token(control.get("control_ref"), f"{field}.control_ref")
        if ref in refs:
            v.fail(f"{field}.control_ref", "is a duplicate", "duplicate_control_ref")
        refs.add(ref)
    return sorted(set(actions))


def evaluate_batch(document: object, *, stage4: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``reward_memory_dogfood_batch_v1``: receipts, metrics and the readiness decision."""
    batch = v.mapping(document, "input")
    for key in ("observations", "operator_controls"):
        if key not in batch:
            v.fail(f"input.{key}", "is required", "missing_key")
    observations = v.listing(batch["observations"], "observations", 0, MAX_RECEIPTS)
    receipts = [build_receipt(item) for item in observations]
    for key in ("receipt_id", "application_receipt_id"):
        values = [receipt[key] for receipt in receipts]
        if len(set(values)) != len(values):
            v.fail(f"observations.{key}", "has a duplicate", f"duplicate_{key}")
    controls = _controls(batch["operator_controls"])
    evaluation = stage4()
    gate = evaluation.get("release_gate") or {}
    gate_ok = evaluation.get("status") == "passed" and gate.get("status") == (
        "ready_for_bounded_dogfood"
    )
    domains = sorted({r["domain_id"] for r in receipts if r["domain_family"] == "loopx"})
    dispositions = [
        d for d in DISPOSITIONS if any(r["application_disposition"] == d for r in receipts)
    ]
    reasons = [] if gate_ok else ["stage4_release_gate_not_ready"]
    if not any(r["domain_family"] == "issue_fix" for r in receipts):
        reasons.append("issue_fix_outcome_missing")
    if len(domains) < 2:
        reasons.append("two_loopx_domains_required")
    reasons += [
        f"application_disposition_missing:{d}" for d in DISPOSITIONS if d not in dispositions
    ]
    reasons += [f"operator_control_missing:{a}" for a in CONTROL_ACTIONS if a not in controls]
    labels = [
        r["utility_observation"]["utility_label"] for r in receipts if r["utility_observation"]
    ]
    statuses = [r["utility_evaluation"]["status"] for r in receipts]
    return {
        "ok": not reasons,
        "schema_version": BATCH_SCHEMA,
        "status": "ready_for_bounded_issue_fix_pilot" if not reasons else "hold",
        "reason_codes": reasons,
        "stage4_gate_verified": gate_ok,
        "loopx_domains": domains,
        "application_dispositions": dispositions,
        "operator_controls": controls,
        "metrics": {
            "receipt_count": len(receipts),
            "issue_fix_receipt_count": sum(r["domain_family"] == "issue_fix" for r in receipts),
            "loopx_domain_count": len(domains),
            **{
                f"{d}_count": sum(r["application_disposition"] == d for r in receipts)
                for d in DISPOSITIONS
            },
            "utility_observation_count": len(labels),
            **{f"utility_{label}_count": labels.count(label) for label in u.UTILITY_LABELS},
            "utility_rejected_count": statuses.count("rejected"),
            "utility_not_requested_count": statuses.count("not_requested"),
            **{
                key: sum(r["cost"][key] for r in receipts)
                for key in ("latency_ms", "model_tokens", "provider_call_count")
            },
            "intervention_count": sum(r["intervention"]["count"] for r in receipts),
            "bot_feedback_count": sum(r["bot_feedback"]["captured"] for r in receipts),
        },
        "receipts": [_compact(receipt) for receipt in receipts],
        "boundaries": {
            "semantic_uplift_claim_allowed": False,
            "production_rollout_allowed": False,
            "automatic_recall_enabled": False,
            "new_store_provider_or_scheduler_added": False,
            "operator_write_performed": False,
            v.RAW_CONTENT: False,
        },
    }
