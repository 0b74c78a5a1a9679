"""The reference utility evaluator: the evaluator protocol's worked example, no model.

Run as ``python -m capabilities.reward_memory.utility.reference_evaluator``, or declare
it with ``turn-hooks init --utility-evaluator "python3 -m
capabilities.reward_memory.utility.reference_evaluator"``.

The protocol (any evaluator, in any language):

* stdin: one JSON object, ``{application_receipt, verified_outcome,
  attribution_context}``: the Turn's ``reward_memory_application_receipt_v0``
  (digests only), the validator's verdict ``{verified, outcome_ref, artifact_ref,
  outcome_status: passed|failed}`` and ``{scope, retrieval_snapshot_ref,
  policy_snapshot_ref}``. Never a memory's text, a transcript or a path.
* stdout: one JSON object, the proposal (contracts.md §14): it echoes ``scope``,
  ``application_id``, ``artifact_ref``, ``outcome_ref``, ``outcome_status`` and both
  snapshot refs, and adds ``memory_ref_digests``, ``utility_label``,
  ``attribution_level``, ``evidence_basis``, ``confidence``, ``reason_codes``,
  ``evidence_refs``, ``evaluator_ref`` and ``evaluation_version``. Empty stdout: no
  judgement. Anything the contract refuses, a non-zero exit or a timeout is no
  observation but the no-evaluator one: the evaluator fails open.

This one judges only what the facts allow it to: one applied memory whose Turn passed
is ``helpful``, one whose Turn failed ``harmful``, as ``evaluator_inference`` (weak
evidence: the rank prior needs two agreeing before it moves); several memories stay
``unknown`` at set level, since their shares cannot be told apart; a refuted or
ignored memory is ``neutral`` for the outcome.
"""

from __future__ import annotations

import json
import sys
from typing import Any

EVALUATOR_REF = "turn_hooks.reference_evaluator"
EVALUATION_VERSION = "reference_evaluator_v0"
CONFIDENCE = 0.6


def propose(facts: dict[str, Any]) -> dict[str, Any]:
    """The proposal for one application and its verified outcome."""
    receipt, outcome = facts["application_receipt"], facts["verified_outcome"]
    context = facts["attribution_context"]
    digests = sorted(receipt["memory_ref_digests"])
    passed = outcome["outcome_status"] == "passed"
    if len(digests) != 1:
        label, level, reasons = "unknown", "set", ["multiple_memories_not_disambiguated"]
    elif receipt["outcome"] == "applied":
        label, level = ("helpful" if passed else "harmful"), "item"
        reasons = ["applied_and_passed" if passed else "applied_and_failed"]
    else:
        label, level, reasons = "neutral", "item", [f"{receipt['outcome']}_memory"]
    return {
        "scope": context["scope"],
        "application_id": receipt["application_id"],
        "artifact_ref": receipt["artifact_ref"],
        "outcome_ref": outcome["outcome_ref"],
        "outcome_status": outcome["outcome_status"],
        "retrieval_snapshot_ref": context["retrieval_snapshot_ref"],
        "policy_snapshot_ref": context["policy_snapshot_ref"],
        "memory_ref_digests": digests,
        "utility_label": label,
        "attribution_level": level,
        "evidence_basis": "evaluator_inference",
        "confidence": CONFIDENCE if label != "unknown" else 0.0,
        "reason_codes": reasons,
        "evidence_refs": [outcome["outcome_ref"]],
        "evaluator_ref": EVALUATOR_REF,
        "evaluation_version": EVALUATION_VERSION,
    }


def main() -> int:
    """Read the facts on stdin, print the proposal."""
    print(json.dumps(propose(json.load(sys.stdin)), separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
