"""The utility reducer: observations in, ``memory_utility_projection_v0`` out (§15).

Pure and read-only. A semantic retry (same id, same delivery) counts once; two
different deliveries of one id are a conflict, kept out of every subject and
proposed for quarantine at rejection level. Per subject the strongest evidence tier
decides; an ``unknown`` there blocks any weaker direction, and two directions there
cancel into a review. Item, set and unattributed subjects never share credit. Any
observation outside the projection's scope or snapshots rejects the whole projection.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.utility import observation as u
from turn_hooks.canonical import s1, sha256_hex

SCHEMA = "memory_utility_projection_v0"
REDUCER_VERSION = "memory_utility_reducer_v0"
MAX_OBSERVATIONS = 1024
MAX_SUBJECTS = 128
MAX_HISTORY = 256
MAX_REJECTIONS = 64
MAX_FINGERPRINTS = 16
INPUT_FIELDS = frozenset({"observations", "scope", "retrieval_snapshot_ref", "policy_snapshot_ref"})
OPTIONAL_INPUT = frozenset({"reducer_version", "previous_projection"})
DIRECTIONS = {"helpful": 1, "harmful": -1, "neutral": 0}
RANK = {basis: rank for rank, basis in enumerate(u.EVIDENCE_BASES)}
LABEL_ORDER = {label: index for index, label in enumerate(u.UTILITY_LABELS)}
_REDUCER_ID = re.compile(r"^mur_[0-9a-f]{64}$")
SUBJECT_PREFIX = {"item": "mui_", "set": "mus_", "none": "mul_"}
BOUNDARIES = {
    "read_only": True,
    "grants_new_action_authority": False,
    "provider_write_performed": False,
    "external_writes_performed": False,
    "raw_content_captured": False,
}


def reducer_identity(
    scope: dict[str, Any], retrieval_snapshot_ref: str, policy_snapshot_ref: str, version: str
) -> str:
    """``mur_`` + hex(S1(the projection's context)) (identities.md §14)."""
    return "mur_" + sha256_hex(
        s1(
            {
                "schema_version": SCHEMA,
                "scope": scope,
                "retrieval_snapshot_ref": retrieval_snapshot_ref,
                "policy_snapshot_ref": policy_snapshot_ref,
                "reducer_version": version,
            }
        )
    )


def subject_id(observation: dict[str, Any]) -> str:
    """The subject an observation speaks about; unattributed ones stay per receipt."""
    level = observation["attribution_level"]
    identity: dict[str, Any] = {
        "attribution_level": level,
        "memory_ref_digests": observation["memory_ref_digests"],
    }
    if level == "none":
        identity["application_receipt_id"] = observation["application_receipt_id"]
    return SUBJECT_PREFIX[level] + sha256_hex(s1(identity))


def _order(observation: dict[str, Any]) -> tuple[Any, str, str]:
    created = observation["created_at"]
    return (u.instant(created), created, observation["observation_id"])


def _combined(observations: list[dict[str, Any]]) -> float:
    remaining = 1.0
    for observation in observations:
        remaining *= 1.0 - observation["confidence"]
    return round(1.0 - remaining, 6)


def _review(state: str, action: str, reasons: list[str]) -> dict[str, Any]:
    return {
        "state": state,
        "proposed_action": action,
        "reason_codes": sorted(reasons),
        "quarantine_proposed": state == "conflict",
        "automatic_deletion": False,
        "action_authority_granted": False,
    }


def _decide(observations: list[dict[str, Any]]) -> tuple[str, float, dict[str, Any]]:
    """Effective label, confidence and review of one subject (the §15 table)."""
    if observations[0]["attribution_level"] == "none":
        return (
            "unknown",
            0.0,
            _review(
                "unresolved_attribution", "collect_attribution", ["attribution_not_established"]
            ),
        )
    directional = [o for o in observations if o["utility_label"] in DIRECTIONS]
    if not directional:
        return "unknown", 0.0, _review("none", "none", [])
    strongest = max(RANK[o["evidence_basis"]] for o in observations)
    tier = [o for o in observations if RANK[o["evidence_basis"]] == strongest]
    labels = {o["utility_label"] for o in tier if o["utility_label"] in DIRECTIONS}
    if any(o["utility_label"] == "unknown" for o in tier):
        reasons = ["strongest_evidence_unknown"]
        if len(labels) > 1:
            reasons.append("same_evidence_tier_conflict")
        return "unknown", 0.0, _review("conflict", "manual_review", reasons)
    if len(labels) > 1:
        return "unknown", 0.0, _review("conflict", "manual_review", ["same_evidence_tier_conflict"])
    (label,) = labels
    confidence = _combined([o for o in tier if o["utility_label"] == label])
    if label == "harmful":
        review = _review(
            "attenuation_proposed", "attenuate_or_review", ["negative_utility_requires_review"]
        )
    else:
        review = _review("none", "none", [])
    return label, confidence, review


def _subject(sid: str, observations: list[dict[str, Any]]) -> dict[str, Any]:
    observations = sorted(observations, key=_order)
    label, confidence, review = _decide(observations)
    latest = observations[-1]
    summary = defaultdict(list)
    for observation in observations:
        summary[(observation["evidence_basis"], observation["utility_label"])].append(observation)
    direction = DIRECTIONS.get(label, 0)
    return {
        "subject_id": sid,
        "attribution_level": latest["attribution_level"],
        "memory_ref_digests": latest["memory_ref_digests"],
        "utility_estimate": round(direction * confidence, 6) + 0.0,
        "utility_bounds": {"min": -1.0, "max": 1.0},
        "effective_utility_label": label,
        "effective_evidence_basis": max(
            (o["evidence_basis"] for o in observations), key=RANK.__getitem__
        ),
        "confidence": confidence,
        "uncertainty": round(1.0 - confidence, 6),
        "support": {
            label_name: sum(o["utility_label"] == label_name for o in observations)
            for label_name in u.UTILITY_LABELS
        },
        "evidence_strength": {
            basis: sum(o["evidence_basis"] == basis for o in observations)
            for basis in u.EVIDENCE_BASES
        },
        "evidence_label_summary": [
            {
                "evidence_basis": basis,
                "utility_label": label_name,
                "observation_count": len(group),
                "combined_confidence": _combined(group),
            }
            for (basis, label_name), group in sorted(
                summary.items(), key=lambda kv: (RANK[kv[0][0]], LABEL_ORDER[kv[0][1]])
            )
        ],
        "observation_count": len(observations),
        "last_observed_at": latest["created_at"],
        "last_observation_id": latest["observation_id"],
        "review": review,
        "read_only": True,
        "automatic_deletion": False,
        "action_authority_granted": False,
    }


def _history_entry(observation: dict[str, Any], fingerprint: str, sid: str) -> dict[str, Any]:
    return {
        "observation_id": observation["observation_id"],
        "observation_fingerprint": fingerprint,
        "subject_id": sid,
        "application_receipt_id": observation["application_receipt_id"],
        "outcome_ref": observation["outcome_ref"],
        "memory_ref_digests": observation["memory_ref_digests"],
        "attribution_level": observation["attribution_level"],
        "utility_label": observation["utility_label"],
        "evidence_basis": observation["evidence_basis"],
        "confidence": observation["confidence"],
        "reason_codes": observation["reason_codes"],
        "evidence_refs": observation["evidence_refs"],
        "evaluator_ref": observation["evaluator_ref"],
        "evaluation_version": observation["evaluation_version"],
        "created_at": observation["created_at"],
    }


def _base(context: dict[str, Any], identity: str) -> dict[str, Any]:
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "status": "empty",
        "projection_ready": False,
        "reducer_version": context["reducer_version"],
        "reducer_identity": identity,
        "scope": context["scope"],
        "retrieval_snapshot_ref": context["retrieval_snapshot_ref"],
        "policy_snapshot_ref": context["policy_snapshot_ref"],
        "accepted_observation_count": 0,
        "duplicate_observation_count": 0,
        "conflicting_observation_count": 0,
        "rejected_observation_count": 0,
        "lineage_observation_count": 0,
        "subject_count": 0,
        "item_subject_count": 0,
        "set_subject_count": 0,
        "unresolved_lineage_count": 0,
        "last_observed_at": None,
        "last_observation_id": None,
        "subjects": [],
        "observation_history": [],
        "observation_history_truncated": False,
        "rejections": [],
        "review_proposals": [],
        **BOUNDARIES,
    }


def _rejected(context: dict[str, Any], identity: str, reason_code: str) -> dict[str, Any]:
    projection = _base(context, identity)
    projection.update(
        ok=False,
        status="rejected",
        rejected_observation_count=1,
        rejections=[{"reason_codes": [reason_code]}],
    )
    return projection


PLACEHOLDER = "rejected"
MALFORMED = "observation_malformed"


def _context(document: dict[str, Any]) -> dict[str, Any]:
    return {
        "scope": u.scope(document["scope"], MALFORMED),
        "retrieval_snapshot_ref": u.opaque_ref(
            document["retrieval_snapshot_ref"], MALFORMED, "retrieval_snapshot_ref"
        ),
        "policy_snapshot_ref": u.opaque_ref(
            document["policy_snapshot_ref"], MALFORMED, "policy_snapshot_ref"
        ),
        "reducer_version": u.opaque_ref(
            document.get("reducer_version", REDUCER_VERSION), MALFORMED, "reducer_version"
        ),
    }


def _identity_of(context: dict[str, Any]) -> str:
    return reducer_identity(
        context["scope"],
        context["retrieval_snapshot_ref"],
        context["policy_snapshot_ref"],
        context["reducer_version"],
    )


def _input(document: object) -> dict[str, Any]:
    """The projection input's shape; a typed ``invalid_request`` error otherwise."""
    if not isinstance(document, dict):
        v.fail("input", "must be one JSON object")
    unknown = sorted(set(document) - INPUT_FIELDS - OPTIONAL_INPUT)
    if unknown:
        v.fail(f"input.{unknown[0]}", "is not an allowed key", "unknown_key")
    missing = sorted(INPUT_FIELDS - set(document))
    if missing:
        v.fail(f"input.{missing[0]}", "is required", "missing_key")
    if not isinstance(document["observations"], list):
        v.fail("input.observations", "must be a list")
    return document


def _previous_identity(previous: object) -> str:
    if (
        not isinstance(previous, dict)
        or previous.get("schema_version") != SCHEMA
        or not isinstance(previous.get("reducer_identity"), str)
        or not _REDUCER_ID.match(previous["reducer_identity"])
    ):
        u.fail(MALFORMED, "previous_projection is not a projection")
    return str(previous["reducer_identity"])


def project(document: object) -> dict[str, Any]:
    """Reduce one projection input (§15).

    A malformed input shape raises the typed ``invalid_request`` error; everything
    else (bad context, bad or foreign observations) is a ``rejected`` projection.
    """
    document = _input(document)
    try:
        context = _context(document)
    except u.UtilityError as exc:
        unreadable = {
            "scope": dict.fromkeys(u.SCOPE_FIELDS, PLACEHOLDER),
            "retrieval_snapshot_ref": PLACEHOLDER,
            "policy_snapshot_ref": PLACEHOLDER,
            "reducer_version": REDUCER_VERSION,
        }
        return _rejected(unreadable, _identity_of(unreadable), exc.reason_code)
    identity = _identity_of(context)
    raw = document["observations"]
    try:
        if document.get("previous_projection") is not None:
            if _previous_identity(document["previous_projection"]) != identity:
                return _rejected(context, identity, "reducer_identity_mismatch")
        if len(raw) > MAX_OBSERVATIONS:
            u.fail(MALFORMED, f"at most {MAX_OBSERVATIONS} observations")
        observations = [u.validate_observation(item) for item in raw]
    except u.UtilityError as exc:
        return _rejected(context, identity, exc.reason_code)
    for observation in observations:
        for key, code in (
            ("scope", "scope_mismatch"),
            ("retrieval_snapshot_ref", "retrieval_snapshot_mismatch"),
            ("policy_snapshot_ref", "policy_snapshot_mismatch"),
        ):
            if observation[key] != context[key]:
                return _rejected(context, identity, code)
    return _reduce(context, identity, observations)


def _reduce(
    context: dict[str, Any], identity: str, observations: list[dict[str, Any]]
) -> dict[str, Any]:
    deliveries: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for observation in observations:
        deliveries[observation["observation_id"]].append(observation)
    accepted, rejections = [], []
    fingerprint_of: dict[str, str] = {}
    duplicates = conflicting = rejected_deliveries = 0
    for oid in sorted(deliveries):
        group = deliveries[oid]
        fingerprints = sorted({u.delivery_fingerprint(o) for o in group})
        if len(fingerprints) == 1:
            fingerprint_of[oid] = fingerprints[0]
            accepted.append(min(group, key=_order))
            duplicates += len(group) - 1
            continue
        conflicting += 1
        rejected_deliveries += len(group)
        rejections.append(
            {
                "observation_id": oid,
                "reason_codes": ["conflicting_observation_delivery"],
                "delivery_count": len(group),
                "delivery_fingerprints": fingerprints[:MAX_FINGERPRINTS],
                "delivery_fingerprints_truncated": len(fingerprints) > MAX_FINGERPRINTS,
                "quarantine_proposed": True,
                "automatic_deletion": False,
                "action_authority_granted": False,
            }
        )
    by_subject: dict[str, list[dict[str, Any]]] = defaultdict(list)
    subject_of: dict[str, str] = {}
    for observation in accepted:
        sid = subject_of[observation["observation_id"]] = subject_id(observation)
        by_subject[sid].append(observation)
    if len(by_subject) > MAX_SUBJECTS:
        rejected = _rejected(context, identity, "projection_subject_limit_exceeded")
        rejected["rejected_observation_count"] = len(accepted)
        return rejected
    subjects = [_subject(sid, group) for sid, group in sorted(by_subject.items())]
    projection = _base(context, identity)
    conflicted = [s for s in subjects if s["review"]["state"] == "conflict"]
    if not accepted and not rejections:
        status = "empty"
    elif rejections or conflicted:
        status = "review_required"
    else:
        status = "ready"
    latest = max(accepted, key=_order) if accepted else None
    history, truncated = _history(subjects, by_subject, fingerprint_of, subject_of)
    projection.update(
        status=status,
        projection_ready=bool(accepted) and not rejections and not conflicted,
        accepted_observation_count=len(accepted),
        duplicate_observation_count=duplicates,
        conflicting_observation_count=conflicting,
        rejected_observation_count=rejected_deliveries,
        lineage_observation_count=len(accepted),
        subject_count=len(subjects),
        item_subject_count=sum(s["attribution_level"] == "item" for s in subjects),
        set_subject_count=sum(s["attribution_level"] == "set" for s in subjects),
        unresolved_lineage_count=sum(s["attribution_level"] == "none" for s in subjects),
        last_observed_at=latest["created_at"] if latest else None,
        last_observation_id=latest["observation_id"] if latest else None,
        subjects=subjects,
        observation_history=history,
        observation_history_truncated=truncated,
        rejections=rejections[:MAX_REJECTIONS],
        review_proposals=[
            {
                "subject_id": s["subject_id"],
                "attribution_level": s["attribution_level"],
                "memory_ref_digests": s["memory_ref_digests"],
                **s["review"],
            }
            for s in subjects
            if s["review"]["state"] != "none"
        ],
    )
    return projection


def _history(
    subjects: list[dict[str, Any]],
    by_subject: dict[str, list[dict[str, Any]]],
    fingerprint_of: dict[str, str],
    subject_of: dict[str, str],
) -> tuple[list[dict[str, Any]], bool]:
    """At most 256 entries, oldest first: every subject's latest, then the newest."""
    latest_ids = {s["last_observation_id"] for s in subjects}
    everything = sorted(
        (o for group in by_subject.values() for o in group), key=_order, reverse=True
    )
    kept = [o for o in everything if o["observation_id"] in latest_ids]
    rest = [o for o in everything if o["observation_id"] not in latest_ids]
    kept += rest[: max(0, MAX_HISTORY - len(kept))]
    entries = [
        _history_entry(o, fingerprint_of[o["observation_id"]], subject_of[o["observation_id"]])
        for o in sorted(kept, key=_order)
    ]
    return entries, len(everything) > len(kept)
