"""Scoped feedback → candidate → review → active record (contracts.md §6-§9).

A candidate is a compact, public-safe proposal; only an accepted, guard-passing
candidate becomes an active record, and only an active record is ever written.
"""

from __future__ import annotations

from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.corpus import DURABLE_CLASSES, IDENTITY_FIELDS
from capabilities.reward_memory.contract.experience import experience_quality, normalise_experience
from capabilities.reward_memory.contract.identities import activation_ref, candidate_ref

EVENT_SCHEMA = "scoped_feedback_reward_memory_event_v0"
CANDIDATE_SCHEMA = "reward_memory_candidate_v0"
ADAPTER_SCHEMA = "scoped_feedback_reward_memory_candidate_adapter_v0"
GUARD_RULE = (
    "model_proposes_meaning_deterministic_guards_verify_scope_privacy_and_no_authority_expansion"
)
REVIEW_SCHEMA = "reward_memory_candidate_review_v0"
RECORD_SCHEMA = "reward_memory_active_record_v0"
DECISIONS = ("accept", "edit", "no_write", "reject", "retire")
HARD_POLICY_ROLES = ("verified_repository_core_contributor", "verified_project_owner_or_operator")

_EVENT_REQUIRED = frozenset(
    {
        "schema_version",
        "feedback_ref",
        "workspace_ref",
        "project_ref",
        "surface_id",
        "target_class",
        "content_summary",
        "source",
        "reasoning",
        "guard_context",
        v.RAW_CONTENT,
    }
)
_EVENT_OPTIONAL = frozenset(
    {*IDENTITY_FIELDS, "revision_ref", "experience", "requested_action_scopes"}
)
_SOURCE_KEYS = frozenset({"source_kind", "source_ref", "actor_ref", "actor_role"})
_REASONING_KEYS = frozenset({"summary", "confidence"})
_GUARD_KEYS = frozenset({"source_freshness", "conflict_state", "current_artifact_verified"})


def normalise_source(value: object, field: str) -> dict[str, str]:
    """``{source_kind, source_ref, actor_ref, actor_role}``."""
    source = v.exact_keys(value, field, _SOURCE_KEYS)
    return {
        "source_kind": v.token(source["source_kind"], f"{field}.source_kind"),
        "source_ref": v.compact(source["source_ref"], 240, f"{field}.source_ref"),
        "actor_ref": v.token(source["actor_ref"], f"{field}.actor_ref"),
        "actor_role": v.token(source["actor_role"], f"{field}.actor_role"),
    }


def normalise_guard_context(value: object, field: str) -> dict[str, Any]:
    """``{source_freshness, conflict_state, current_artifact_verified}``."""
    guard = v.exact_keys(value, field, _GUARD_KEYS)
    return {
        "source_freshness": v.enum(
            guard["source_freshness"], ("current", "stale", "unknown"), f"{field}.source_freshness"
        ),
        "conflict_state": v.enum(
            guard["conflict_state"], ("clear", "unresolved"), f"{field}.conflict_state"
        ),
        "current_artifact_verified": v.boolean(
            guard["current_artifact_verified"], f"{field}.current_artifact_verified"
        ),
    }


def _action_scopes(value: object, field: str) -> list[str]:
    items = v.listing(value, field, 0, 12)
    return sorted(v.unique([v.token(item, field) for item in items], field))


def normalise_event(value: object) -> dict[str, Any]:
    """A strict ``scoped_feedback_reward_memory_event_v0`` (§6)."""
    event = v.exact_keys(value, "event", _EVENT_REQUIRED, _EVENT_OPTIONAL)
    if event["schema_version"] != EVENT_SCHEMA:
        v.fail("event.schema_version", f"must be {EVENT_SCHEMA}")
    if event[v.RAW_CONTENT] is not False:
        v.fail(f"event.{v.RAW_CONTENT}", "must be false", "raw_content_rejected")
    reasoning = v.exact_keys(event["reasoning"], "event.reasoning", _REASONING_KEYS)
    experience = event.get("experience")
    target_class = v.enum(event["target_class"], DURABLE_CLASSES, "event.target_class")
    normal: dict[str, Any] = {
        "feedback_ref": v.compact(event["feedback_ref"], 160, "event.feedback_ref"),
        "workspace_ref": v.token(event["workspace_ref"], "event.workspace_ref"),
        "project_ref": v.token(event["project_ref"], "event.project_ref"),
        "surface_id": v.surface_id(event["surface_id"], "event.surface_id"),
        "revision_ref": v.optional_token(event.get("revision_ref"), "event.revision_ref"),
        "target_class": target_class,
        "content_summary": v.compact(event["content_summary"], 500, "event.content_summary"),
        "experience": None
        if experience is None
        else normalise_experience(experience, "event.experience"),
        "source": normalise_source(event["source"], "event.source"),
        "reasoning": {
            "summary": v.compact(reasoning["summary"], 500, "event.reasoning.summary"),
            "confidence": v.enum(
                reasoning["confidence"], ("low", "medium", "high"), "event.reasoning.confidence"
            ),
        },
        "guard_context": normalise_guard_context(event["guard_context"], "event.guard_context"),
        "requested_action_scopes": _action_scopes(
            event.get("requested_action_scopes", []), "event.requested_action_scopes"
        ),
    }
    for key in IDENTITY_FIELDS:
        normal[key] = v.optional_token(event.get(key), f"event.{key}")
    return normal


def authority_checkpoint(value: dict[str, Any] | None) -> dict[str, Any]:
    """The normalised checkpoint; absent means unverified with nothing in it."""
    checkpoint = value or {}
    scopes = checkpoint.get("action_scopes") or []
    return {
        "verified": checkpoint.get("verified") is True,
        "source_ref": checkpoint.get("source_ref") or None,
        "actor_ref": checkpoint.get("actor_ref") or None,
        "actor_role": checkpoint.get("actor_role") or None,
        "project_ref": checkpoint.get("project_ref") or None,
        "action_scopes": sorted({scope for scope in scopes if isinstance(scope, str)}),
    }


def candidate_guard_reasons(candidate: dict[str, Any], checkpoint: dict[str, Any]) -> list[str]:
    """Candidate guard reason codes in the fixed order of §7 (not sorted)."""
    reasons = []
    procedural = candidate["target_class"] == "procedural_experience"
    hard = candidate["target_class"] == "hard_policy"
    guard = candidate["guard_context"]
    # A reviewed record written without the field has requested nothing (as upstream).
    scopes = candidate.get("requested_action_scopes", [])
    source = candidate["source"]
    if procedural and "experience" not in candidate:
        reasons.append("procedural_experience_quality_contract_missing")
    if guard["source_freshness"] != "current":
        reasons.append("source_freshness_not_current")
    if guard["conflict_state"] != "clear":
        reasons.append("unresolved_higher_authority_conflict")
    if procedural and not guard["current_artifact_verified"]:
        reasons.append("procedural_experience_current_artifact_unverified")
    if not hard and scopes:
        reasons.append("advisory_class_requested_action_authority")
    if hard:
        if not scopes:
            reasons.append("hard_policy_missing_action_scope")
        if not checkpoint["verified"] or not checkpoint["source_ref"]:
            reasons.append("authority_checkpoint_unverified")
        if checkpoint["actor_ref"] != source["actor_ref"]:
            reasons.append("authority_actor_mismatch")
        if checkpoint["actor_role"] != source["actor_role"]:
            reasons.append("authority_actor_role_mismatch")
        if source["actor_role"] not in HARD_POLICY_ROLES:
            reasons.append("actor_role_cannot_derive_hard_policy")
        if checkpoint["project_ref"] != candidate["scope"]["project_ref"]:
            reasons.append("authority_project_mismatch")
        if not set(scopes) <= set(checkpoint["action_scopes"]):
            reasons.append("requested_action_scope_exceeds_verified_authority")
    return reasons


def build_candidate(
    event: dict[str, Any], *, checkpoint: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Candidate packet for a normalised event (§7)."""
    scope: dict[str, Any] = {
        "workspace_ref": event["workspace_ref"],
        "project_ref": event["project_ref"],
        "surface_ids": [event["surface_id"]],
        "revision_ref": event["revision_ref"],
    }
    for key in IDENTITY_FIELDS:
        if event.get(key) is not None:
            scope[key] = event[key]
    candidate: dict[str, Any] = {
        "schema_version": CANDIDATE_SCHEMA,
        "target_class": event["target_class"],
        "content_summary": event["content_summary"],
        "source": event["source"],
        "scope": scope,
        "reasoning": event["reasoning"],
        "guard_context": event["guard_context"],
        "requested_action_scopes": event["requested_action_scopes"],
        "lifecycle": {"state": "candidate", "supersedes_refs": []},
        "privacy": {v.RAW_CONTENT: False},
    }
    if event.get("experience") is not None:
        candidate["experience"] = event["experience"]
    candidate["candidate_ref"] = candidate_ref(candidate_identity(candidate))
    normal_checkpoint = authority_checkpoint(checkpoint)
    reasons = candidate_guard_reasons(candidate, normal_checkpoint)
    return {
        "ok": True,
        "schema_version": CANDIDATE_SCHEMA,
        "status": "guard_blocked" if reasons else "review_ready",
        "candidate": candidate,
        "authority_checkpoint": normal_checkpoint,
        "guard": {
            "passed": not reasons,
            "reason_codes": reasons,
            "rule": GUARD_RULE,
            "semantic_reasoning_preserved": True,
            "experience_quality": experience_quality(
                candidate["target_class"], candidate.get("experience")
            ),
        },
        "available_review_decisions": sorted(DECISIONS),
        "candidate_persisted": False,
        "provider_write_performed": False,
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }


def candidate_identity(candidate: dict[str, Any]) -> dict[str, Any]:
    """What a candidate ref digests (§5): every field recall later shows, and the guard's."""
    return {
        "target_class": candidate["target_class"],
        "content_summary": candidate["content_summary"],
        # The source and guard context are null when absent (an operator edits a
        # reviewed record as it was given), as upstream hashes them.
        "source": candidate.get("source"),
        "scope": candidate["scope"],
        "guard_context": candidate.get("guard_context"),
        "experience": candidate.get("experience"),
        "requested_action_scopes": candidate.get(
            "requested_action_scopes"
        ),  # null when absent, as upstream hashes it,
    }


def build_active_record(
    candidate: dict[str, Any], corpus: dict[str, Any], review: dict[str, Any], activated_at: str
) -> dict[str, Any]:
    """The only document ever written to a provider (§9)."""
    record: dict[str, Any] = {
        "schema_version": RECORD_SCHEMA,
        "activation_ref": activation_ref(
            corpus["corpus_id"], candidate["candidate_ref"], activated_at
        ),
        "activated_at": activated_at,
        "corpus_id": corpus["corpus_id"],
        "candidate_ref": candidate["candidate_ref"],
        "target_class": corpus["class_id"],
        "content_summary": candidate["content_summary"],
        "experience_quality": experience_quality(
            candidate["target_class"], candidate.get("experience")
        ),
        "scope": candidate["scope"],
        "source": candidate["source"],
        "review": review,
        "activation_lineage": {
            "effective_decision": "accept",
            "guard_passed": True,
            "review_ref": review["review_ref"],
        },
        "lifecycle": {"state": "active"},
        "privacy": {v.RAW_CONTENT: False},
        "provider_write_performed": False,
        v.EXTERNAL_WRITES: False,
    }
    if "expires_at" in candidate["lifecycle"]:
        record["lifecycle"]["expires_at"] = candidate["lifecycle"]["expires_at"]
    if "experience" in candidate:
        record["experience"] = candidate["experience"]
    return record


def scoped_feedback_candidate(
    event: dict[str, Any], *, checkpoint: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The scoped-feedback adapter's packet around the shared candidate (§6)."""
    return {
        "ok": True,
        "schema_version": ADAPTER_SCHEMA,
        "feedback_ref": event["feedback_ref"],
        "surface_id": event["surface_id"],
        "adapter_role": "strict_field_mapping_only_shared_core_owns_lifecycle",
        "shared_candidate": build_candidate(event, checkpoint=checkpoint),
        "provider_write_performed": False,
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }
