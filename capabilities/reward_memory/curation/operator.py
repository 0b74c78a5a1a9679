"""Operator controls: an authorised edit or retirement of an active memory, as a decision.

A verified operator checkpoint must name this corpus and project, the requested
action, and an authority that matches the corpus declaration: its owner for an edit,
its retirement authority for a retirement. The result is the review decision and a
``reward_memory_operator_control_v0`` receipt that says what the corpus owner must do
next; nothing is written here.
"""

from __future__ import annotations

import copy
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.candidate import REVIEW_SCHEMA
from capabilities.reward_memory.contract.corpus import normalise_corpus
from capabilities.reward_memory.contract.identities import short_digest
from capabilities.reward_memory.curation.review import review_candidate

SCHEMA = "reward_memory_operator_control_v0"
ACTIONS = ("edit", "retire")
REASONING_LIMIT = 360
"""An operator's reasoning is kept to 360 characters (code points, never bytes, so no
character is ever split), shorter than a review's 500, as LoopX 2.1.1 keeps it."""
NEXT_STEP = {
    "edit": "review_replacement_then_owner_write_and_exact_readback",
    "retire": "owner_write_retirement_then_exact_readback",
}
_CHECKPOINT_TOKENS = (
    "action",
    "operator_ref",
    "authority_ref",
    "source_ref",
    "corpus_id",
    "project_ref",
)


def _checkpoint(value: object) -> dict[str, Any]:
    document = v.mapping(value, "operator_checkpoint")
    verified = v.boolean(document.get("verified"), "operator_checkpoint.verified")
    tokens = {
        key: v.token(document.get(key), f"operator_checkpoint.{key}") for key in _CHECKPOINT_TOKENS
    }
    if not verified:
        v.fail("operator_checkpoint.verified", "must be true", "operator_checkpoint_unverified")
    return tokens


def _check_record_in_corpus(scope: dict[str, Any], corpus: dict[str, Any]) -> None:
    """The record lives in the corpus: same workspace and project, surfaces inside the
    corpus', and for a revision-bound corpus its source revision (as upstream checks)."""
    declared = corpus["scope"]
    surfaces = scope.get("surface_ids") or []  # none named is none outside, as upstream reads it
    freshness = corpus["freshness"]
    if (
        scope.get("workspace_ref") != declared["workspace_ref"]
        or scope.get("project_ref") != declared["project_ref"]
        or not isinstance(surfaces, list)
        or not all(isinstance(surface, str) for surface in surfaces)
        or not set(surfaces) <= set(declared["surface_ids"])
        or (
            freshness["mode"] == "revision_bound"
            and scope.get("revision_ref") != freshness["source_revision"]
        )
    ):
        v.fail(
            "reviewed_record.record.scope", "is not the corpus' scope", "operator_scope_mismatch"
        )


def operator_control(
    document: object,
    *,
    action: str,
    control_ref: str,
    reasoning_summary: str,
    edited_content_summary: str | None = None,
) -> dict[str, Any]:
    """The decision and receipt of one operator edit or retirement."""
    source = v.mapping(document, "input")
    reviewed = v.mapping(source.get("reviewed_record"), "reviewed_record")
    corpus = normalise_corpus(v.mapping(source.get("corpus"), "corpus"))
    checkpoint = _checkpoint(source.get("operator_checkpoint"))
    action = v.enum(action, ACTIONS, "action")
    if (
        reviewed.get("schema_version") != REVIEW_SCHEMA
        or reviewed.get("guard_passed") is not True
        or reviewed.get("status") != "active"
    ):
        v.fail("reviewed_record", "must be a guard-passed active record", "operator_target_invalid")
    record = v.mapping(reviewed.get("record"), "reviewed_record.record")
    if not record.get("candidate_ref"):
        # The control names the record it acts on by this ref, so an absent or empty
        # one is refused (as LoopX 2.1.1 refuses it); any other value is its text.
        v.fail("reviewed_record.record.candidate_ref", "is required", "missing_key")
    if (
        v.mapping(record.get("lifecycle"), "reviewed_record.record.lifecycle").get("state")
        != "active"
    ):
        v.fail("reviewed_record", "must be active", "operator_target_not_active")
    if checkpoint["action"] != action:
        v.fail(
            "operator_checkpoint.action", "does not match --action", "operator_authority_mismatch"
        )
    if checkpoint["corpus_id"] != corpus["corpus_id"]:
        v.fail(
            "operator_checkpoint.corpus_id",
            "does not match the corpus",
            "operator_authority_mismatch",
        )
    scope = v.mapping(record.get("scope"), "reviewed_record.record.scope")
    if checkpoint["project_ref"] != scope.get("project_ref"):
        v.fail(
            "operator_checkpoint.project_ref",
            "does not match the record",
            "operator_authority_mismatch",
        )
    if record.get("target_class") != corpus["class_id"]:
        v.fail(
            "reviewed_record.record.target_class",
            "is not the corpus' class",
            "operator_scope_mismatch",
        )
    _check_record_in_corpus(scope, corpus)
    declared = (
        corpus["owner_ref"] if action == "edit" else corpus["maintenance"]["retirement_authority"]
    )
    if checkpoint["authority_ref"] != declared:
        v.fail(
            "operator_checkpoint.authority_ref",
            "is not the corpus owner (edit) or retirement authority (retire)",
            "operator_authority_mismatch",
        )
    subject = copy.deepcopy(reviewed)
    if action == "edit":  # an edit proposes a replacement candidate for the active record
        subject["record"]["lifecycle"]["state"] = "candidate"
    review: dict[str, Any] = {
        "decision": action,
        "reviewer_ref": checkpoint["operator_ref"],
        "review_ref": control_ref,
        "reasoning_summary": v.compact(reasoning_summary, REASONING_LIMIT, "reasoning_summary"),
    }
    if action == "edit":
        review["edited_content_summary"] = edited_content_summary
    decision = review_candidate(subject, review)
    result = decision["record"]
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "status": "control_ready",
        "decision": decision,
        "receipt": {
            "schema_version": SCHEMA,
            "control_ref": decision["review"]["review_ref"],
            "action": action,
            "effective_action": decision["effective_decision"],
            "operator_ref": checkpoint["operator_ref"],
            "authority_ref": checkpoint["authority_ref"],
            "authority_source_ref": checkpoint["source_ref"],
            "authority_verified": True,
            "corpus_id": corpus["corpus_id"],
            "prior_candidate_ref_digest": short_digest(str(record.get("candidate_ref"))),
            "result_candidate_ref_digest": short_digest(str(result.get("candidate_ref"))),
            "result_state": result["lifecycle"]["state"],
            "reasoning_summary": decision["review"]["reasoning_summary"],
            "provider_write_performed": False,
            "readback_verified": False,
            "next_step": NEXT_STEP[action],
            v.NEW_ACTION_AUTHORITY: False,
            v.RAW_CONTENT: False,
            v.EXTERNAL_WRITES: False,
        },
    }
