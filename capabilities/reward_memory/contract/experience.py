"""Procedural experience, Turn reflections and validator attestations (contracts.md §13).

Also the scoped-feedback event a validated reflection maps to (§7.3): a pure
function of the reflection and its corpus, so it lives with the reflection rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.identities import (
    experience_digest,
    reflection_digest,
    turn_source_ref,
)

EXPERIENCE_SCHEMA = "procedural_experience_contract_v0"
REFLECTION_V1 = "turn_reward_memory_reflection_v1"
REFLECTION_V0 = "turn_reward_memory_reflection_v0"
ATTESTATION_SCHEMA = "reward_memory_reflection_validation_v0"
MAX_REFLECTION_BYTES = 16384
MAX_ATTESTATION_BYTES = 4096
SOURCE_KINDS = {
    "research": "research_review",
    "simulation": "simulation_review",
    "real": "real_outcome_review",
    "engineering": "engineering_review",
}
CONFIDENCES = ("low", "medium", "high")

_EXPERIENCE_KEYS = frozenset(
    {
        "schema_version",
        "applicability",
        "observed_outcome",
        "attribution",
        "future_behavior",
        "limitations",
        "evidence_refs",
    }
)
_BEHAVIOUR_KEYS = frozenset({"trigger", "action", "validation", "stop_condition"})


def _compact_list(value: object, field: str) -> list[str]:
    items = [v.compact(item, 500, field) for item in v.listing(value, field, 1, 5)]
    return v.unique(items, field)


def normalise_experience(value: object, field: str = "experience") -> dict[str, Any]:
    """A ``procedural_experience_contract_v0``, exact at both levels (§13.1)."""
    contract = v.exact_keys(value, field, _EXPERIENCE_KEYS)
    if contract["schema_version"] != EXPERIENCE_SCHEMA:
        v.fail(f"{field}.schema_version", f"must be {EXPERIENCE_SCHEMA}")
    behaviour = v.exact_keys(
        contract["future_behavior"], f"{field}.future_behavior", _BEHAVIOUR_KEYS
    )
    refs = v.listing(contract["evidence_refs"], f"{field}.evidence_refs", 1, 8)
    return {
        "schema_version": EXPERIENCE_SCHEMA,
        "applicability": _compact_list(contract["applicability"], f"{field}.applicability"),
        "observed_outcome": v.compact(
            contract["observed_outcome"], 500, f"{field}.observed_outcome"
        ),
        "attribution": v.compact(contract["attribution"], 500, f"{field}.attribution"),
        "future_behavior": {
            key: v.compact(behaviour[key], 500, f"{field}.future_behavior.{key}")
            for key in ("trigger", "action", "validation", "stop_condition")
        },
        "limitations": _compact_list(contract["limitations"], f"{field}.limitations"),
        "evidence_refs": v.unique(
            [v.token(ref, f"{field}.evidence_refs") for ref in refs], f"{field}.evidence_refs"
        ),
    }


def experience_quality(target_class: str, experience: dict[str, Any] | None) -> dict[str, Any]:
    """The quality receipt of a normalised contract for a class (§13.1 table)."""
    required = target_class == "procedural_experience"
    if experience is None:
        return {
            "required": required,
            "passed": not required,
            "status": "missing" if required else "not_applicable",
            "contract_version": EXPERIENCE_SCHEMA,
            "reason_codes": ["procedural_experience_quality_contract_missing"] if required else [],
            "value_status": "unproven",
        }
    return {
        "required": required,
        "passed": True,
        "status": "qualified_for_activation" if required else "supporting_context",
        "contract_version": EXPERIENCE_SCHEMA,
        "experience_digest": experience_digest(experience),
        "reason_codes": [],
        "value_status": "unproven_until_application_evidence",
    }


@dataclass(frozen=True, slots=True)
class Reflection:
    """A parsed reflection: ``kind`` is ``none``, ``no_evidence``, ``legacy`` or ``eligible``."""

    kind: str
    normalised: dict[str, Any] | None = None
    raw_digest: str | None = None


_REFLECTION_V0_KEYS = frozenset(
    {
        "schema_version",
        "status",
        "surface_id",
        "outcome_kind",
        "content_summary",
        "reasoning_summary",
        "confidence",
        "evidence_refs",
    }
)
_REFLECTION_V1_KEYS = _REFLECTION_V0_KEYS | {"experience"}


def parse_reflection(raw: object, field: str = "reward_memory_reflection_json") -> Reflection:
    """Parse the model's reflection text in the order of §13.2."""
    if raw is None:
        return Reflection(kind="none")
    if not isinstance(raw, str):
        v.fail(field, "must be a string", "reflection_invalid")
    text = raw.strip()
    if not text:
        return Reflection(kind="none")
    if len(text.encode("utf-8")) > MAX_REFLECTION_BYTES:
        v.fail(field, "exceeds 16384 bytes", "reflection_too_large")
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        v.fail(field, "is not JSON", "reflection_invalid")
    if not isinstance(document, dict):
        v.fail(field, "must be a JSON object", "reflection_invalid")
    schema = document.get("schema_version")
    versions = {REFLECTION_V1: _REFLECTION_V1_KEYS, REFLECTION_V0: _REFLECTION_V0_KEYS}
    allowed = versions.get(schema) if isinstance(schema, str) else None
    if allowed is None:
        v.fail(f"{field}.schema_version", "is not a reflection schema", "reflection_invalid")
    if set(document) - allowed:
        v.fail(field, "has keys outside the reflection contract", "reflection_invalid")
    digest = reflection_digest(text)
    if document.get("status") == "no_evidence":
        return Reflection(kind="no_evidence", raw_digest=digest)
    if document.get("status") != "eligible":
        v.fail(f"{field}.status", "must be eligible or no_evidence", "reflection_invalid")
    if schema == REFLECTION_V0:
        return Reflection(kind="legacy", raw_digest=digest)
    return Reflection(
        kind="eligible", normalised=normalise_reflection(document, field), raw_digest=digest
    )


def normalise_reflection(document: dict[str, Any], field: str) -> dict[str, Any]:
    """The normalised v1 eligible reflection stored in journals and sidecars."""
    refs = v.listing(document.get("evidence_refs"), f"{field}.evidence_refs", 1, 5)
    evidence = []
    for ref in refs:
        text = v.compact(ref, 180, f"{field}.evidence_refs")
        if any(character.isspace() for character in text):
            v.fail(f"{field}.evidence_refs", "must not contain whitespace", "reflection_invalid")
        evidence.append(text)
    v.unique(evidence, f"{field}.evidence_refs")
    experience = normalise_experience(document.get("experience"), f"{field}.experience")
    if experience["evidence_refs"] != evidence:
        v.fail(f"{field}.experience.evidence_refs", "must equal the reflection's evidence refs")
    return {
        "schema_version": REFLECTION_V1,
        "status": "eligible",
        "surface_id": v.compact(document.get("surface_id"), 160, f"{field}.surface_id"),
        "outcome_kind": v.enum(
            document.get("outcome_kind"), tuple(SOURCE_KINDS), f"{field}.outcome_kind"
        ),
        "content_summary": v.compact(
            document.get("content_summary"), 500, f"{field}.content_summary"
        ),
        "reasoning_summary": v.compact(
            document.get("reasoning_summary"), 500, f"{field}.reasoning_summary"
        ),
        "confidence": v.enum(document.get("confidence"), CONFIDENCES, f"{field}.confidence"),
        "evidence_refs": evidence,
        "experience": experience,
    }


_ATTESTATION_KEYS = frozenset({"schema_version", "status", "reflection_digest", "evidence_refs"})


def parse_attestation(
    stdout: str, raw_digest: str, evidence_refs: list[str]
) -> dict[str, Any] | None:
    """The attestation a validator printed, if it is exactly one for this reflection (§13.3)."""
    text = stdout.strip()
    if not text or len(text.encode("utf-8")) > MAX_ATTESTATION_BYTES:
        return None
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict) or set(document) - _ATTESTATION_KEYS:
        return None
    if (
        document.get("schema_version") != ATTESTATION_SCHEMA
        or document.get("status") != "validated"
        or document.get("reflection_digest") != raw_digest
        or document.get("evidence_refs") != evidence_refs
    ):
        return None
    return document


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
        v.RAW_CONTENT: False,
    }
    for key in ("user_ref", "peer_ref", "session_ref"):
        if scope[key] is not None:
            event[key] = scope[key]
    return event
