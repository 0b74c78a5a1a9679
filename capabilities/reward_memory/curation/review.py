"""Review decisions as records, never persistence (contracts.md §8)."""

from __future__ import annotations

import copy
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.candidate import (
    CANDIDATE_SCHEMA,
    DECISIONS,
    REVIEW_SCHEMA,
    candidate_identity,
)
from capabilities.reward_memory.contract.identities import candidate_ref

PERSIST = "caller_uses_declared_corpus_write_authority_then_readback"
_REVIEW_KEYS = frozenset({"decision", "reviewer_ref", "review_ref", "reasoning_summary"})
_RETIRED = {
    "reject": "rejected_in_review",
    "retire": "reviewed_retirement",
    "no_write": "no_write_rationale",
}
_STATUS = {
    "accept": "active",
    "edit": "review_ready",
    "reject": "rejected",
    "retire": "retired",
    "no_write": "no_write",
}


def _subject(value: object) -> tuple[dict[str, Any], bool]:
    """The record under review and whether its guard passed."""
    document = v.mapping(value, "candidate")
    if document.get("schema_version") == REVIEW_SCHEMA:
        return copy.deepcopy(v.mapping(document.get("record"), "candidate.record")), (
            document.get("guard_passed") is True
        )
    if document.get("schema_version") != CANDIDATE_SCHEMA:
        v.fail("candidate.schema_version", "must be a candidate packet or a review")
    guard = v.mapping(document.get("guard"), "candidate.guard")
    return copy.deepcopy(v.mapping(document.get("candidate"), "candidate.candidate")), (
        guard.get("passed") is True
    )


def review_candidate(candidate_or_review: object, review: object) -> dict[str, Any]:
    """Apply one review decision; the result says what the caller must persist."""
    record, guard_passed = _subject(candidate_or_review)
    # Upstream reads a review by its own fields and ignores any others; a missing one
    # is still refused.
    decision_input = v.mapping(review, "review")
    missing = sorted(_REVIEW_KEYS - set(decision_input))
    if missing:
        v.fail(f"review.{missing[0]}", "is required", "missing_key")
    requested = v.enum(decision_input["decision"], DECISIONS, "review.decision")
    reviewed = {
        "reviewer_ref": v.token(decision_input["reviewer_ref"], "review.reviewer_ref"),
        "review_ref": v.token(decision_input["review_ref"], "review.review_ref"),
        "reasoning_summary": v.compact(
            decision_input["reasoning_summary"], 500, "review.reasoning_summary"
        ),
    }
    raw_lifecycle = record.get("lifecycle")
    lifecycle: dict[str, Any] = raw_lifecycle if isinstance(raw_lifecycle, dict) else {}
    state = lifecycle.get("state")
    if requested == "retire" and state != "active":
        v.fail(
            "review.decision",
            "retire requires an active reviewed record",
            "review_precondition_failed",
        )
    if requested != "retire" and state != "candidate":
        v.fail("review.decision", f"{requested} requires a candidate", "review_precondition_failed")
    effective = requested
    if not guard_passed and requested in {"accept", "edit"}:
        effective = "no_write"
    raw_supersedes = lifecycle.get("supersedes_refs") or []
    if not isinstance(raw_supersedes, (list, str, dict)):  # list() of these is LoopX's reading
        v.fail("record.lifecycle.supersedes_refs", "must be a list")
    supersedes = list(raw_supersedes)
    if effective != requested:
        pass  # a blocked accept or edit records the decision and leaves the record as it was
    elif effective == "accept":
        record["lifecycle"] = {"state": "active", "supersedes_refs": supersedes}
    elif effective == "edit":
        summary = v.compact(
            decision_input.get("edited_content_summary"), 500, "review.edited_content_summary"
        )
        old_ref = str(record["candidate_ref"])  # its text, as the digests read it
        # Each key is replaced where it stands (a new one goes last), in LoopX's
        # order, so the record prints its keys as upstream's does (issue 19).
        record["content_summary"] = summary
        record["candidate_ref"] = candidate_ref(candidate_identity(record))
        record["lifecycle"] = {"state": "candidate", "supersedes_refs": [old_ref]}
    else:
        record["lifecycle"] = {
            "state": "retired",
            "supersedes_refs": supersedes,
            "retired_reason": _RETIRED[effective],
        }
    if "expires_at" in lifecycle and effective in {"accept", "retire"}:
        record["lifecycle"]["expires_at"] = lifecycle["expires_at"]
    status = "guard_blocked" if effective != requested else _STATUS[effective]
    return {
        "ok": True,
        "schema_version": REVIEW_SCHEMA,
        "status": status,
        "requested_decision": requested,
        "effective_decision": effective,
        "guard_passed": guard_passed,
        "review": reviewed,
        "record": record,
        "persistence_next_step": PERSIST if effective in {"accept", "retire"} else "none",
        v.NEW_ACTION_AUTHORITY: False,
        "provider_write_performed": False,
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }
