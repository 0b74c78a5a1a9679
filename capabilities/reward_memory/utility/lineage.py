"""The observation of one Turn's memory application: the evaluator's, or lineage only.

Without an evaluator (or when the declared one fails, times out or proposes what the
contract refuses) an application and its verified outcome give ``unknown`` at set
level on ``insufficient`` evidence: the lineage is recorded, and nothing moves, since
applied + success does not prove helpful (RFC §3). With one, its proposal, bound to
the trusted facts (:mod:`.proposal`), run through :mod:`.evaluator`.
"""

from __future__ import annotations

from typing import Any

from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility.proposal import build_observation

NO_EVALUATOR_REF = "turn_hooks.no_evaluator"
EVALUATION_VERSION = "turn_hooks_utility_v0"
EVALUATOR_TIMEOUT = 10
"""An evaluator's deadline: settlement runs off the Turn's path on CLI hosts, yet an
inline host's hook waits for it, so it is short; past it, it fails open."""


def trusted_echo(record: dict[str, Any]) -> dict[str, Any]:
    """The fields a proposal about an application record must echo (contracts.md §14)."""
    receipt, verified = record["receipt"], record["verified_outcome"]
    context = record["attribution_context"]
    return {
        "scope": context["scope"],
        "application_id": receipt["application_id"],
        "artifact_ref": receipt["artifact_ref"],
        "outcome_ref": verified["outcome_ref"],
        "outcome_status": verified["outcome_status"],
        "retrieval_snapshot_ref": context["retrieval_snapshot_ref"],
        "policy_snapshot_ref": context["policy_snapshot_ref"],
    }


def null_proposal(record: dict[str, Any]) -> dict[str, Any]:
    """What is known without an evaluator: lineage, and no utility (``unknown``, set)."""
    return {
        **trusted_echo(record),
        "memory_ref_digests": record["receipt"]["memory_ref_digests"],
        "utility_label": "unknown",
        "attribution_level": "set",
        "evidence_basis": "insufficient",
        "confidence": 0.0,
        "reason_codes": ["utility_evaluator_absent"],
        "evidence_refs": [],
        "evaluator_ref": NO_EVALUATOR_REF,
        "evaluation_version": EVALUATION_VERSION,
    }


def observe(
    record: dict[str, Any], context: dict[str, Any], created_at: str, evaluator: Any
) -> tuple[dict[str, Any] | None, str | None]:
    """The observation of one application: the evaluator's when one is declared and
    its proposal holds, else the no-evaluator one (an evaluator fails open to it)."""
    trusted = {
        "application_receipt": record["receipt"],
        "verified_outcome": record["verified_outcome"],
        "attribution_context": record["attribution_context"],
    }
    reason = None
    if evaluator is not None:
        from capabilities.reward_memory.utility.evaluator import observe as run_evaluator

        result = run_evaluator(
            {**trusted, "created_at": created_at},
            evaluator_argv=evaluator["argv"],
            timeout=evaluator.get("timeout_seconds", EVALUATOR_TIMEOUT),
        )
        if result["observation"] is not None:
            return result["observation"], None
        reason = result["reason_code"]
    try:
        observation = build_observation(
            record["receipt"],
            record["verified_outcome"],
            record["attribution_context"],
            null_proposal(record),
            created_at=created_at,
        )
    except u.UtilityError as exc:
        return None, exc.reason_code
    return observation, reason
