"""Running an evaluator for one utility observation, failing open.

The trusted facts are checked first: a bad receipt, outcome or context is the
caller's error and raises. The evaluator is not trusted: when it is absent, fails,
times out or proposes something the contract rejects, the result is ``not_observed``
with the reason, and nothing anywhere changes.
"""

from __future__ import annotations

from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility.proposal import application_receipt, build_observation
from turn_hooks import InvalidInputError, run_external

SCHEMA = "memory_utility_observation_result_v0"
FACT_KEYS = frozenset(
    {"application_receipt", "verified_outcome", "attribution_context", "created_at"}
)


_REASONS = {
    "external_timeout": "utility_evaluator_timeout",
    "external_unavailable": "utility_evaluator_unavailable",
    "external_failed": "utility_evaluator_failed",
    "external_output_too_large": "utility_evaluator_malformed",  # as a huge proposal was
}


def _run(argv: list[str], facts: dict[str, Any], timeout: int) -> tuple[Any, str | None]:
    # Bytes, not text: output that is not UTF-8 is a malformed proposal, not a crash.
    run = run_external(argv, facts, timeout=timeout)
    if run.reason is not None:
        return None, _REASONS[run.reason]
    if not run.stdout.strip():
        return None, "utility_evaluator_absent"
    try:
        return run.json(), None
    except InvalidInputError:
        return None, "utility_evaluator_malformed"


def observe(
    document: object, *, evaluator_argv: list[str] | None, timeout: int = 20
) -> dict[str, Any]:
    """``memory_utility_observation_result_v0``: ``observed`` or ``not_observed``."""
    facts = v.exact_keys(document, "input", FACT_KEYS, frozenset({"evaluator_proposal"}))
    receipt = application_receipt(facts["application_receipt"])
    created_at = u.timestamp(facts["created_at"], "observation_malformed", "created_at")
    trusted = {
        key: facts[key]
        for key in ("application_receipt", "verified_outcome", "attribution_context")
    }
    if evaluator_argv is not None:
        proposal, reason = _run(evaluator_argv, trusted, timeout)
    else:
        proposal = facts.get("evaluator_proposal")
        reason = None if proposal is not None else "utility_evaluator_absent"
    observation = None
    if reason is None:
        try:
            observation = build_observation(
                receipt,
                facts["verified_outcome"],
                facts["attribution_context"],
                proposal,
                created_at=created_at,
            )
        except u.UtilityError as exc:
            reason = exc.reason_code
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "status": "observed" if observation else "not_observed",
        "reason_code": reason,
        "application_receipt_id": u.application_receipt_id(receipt),
        "observation": observation,
        "fail_open": True,
        "provider_write_performed": False,
        v.EXTERNAL_WRITES: False,
    }
