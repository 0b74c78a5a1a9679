"""The utility reducer: observations in, ``memory_utility_projection_v0`` out (§15).

Pure and read-only. A semantic retry (same id, same delivery) counts once; two
different deliveries of one id are a conflict, kept out of every subject and
proposed for quarantine at rejection level. Per subject the strongest evidence tier
decides (:mod:`.subjects`). Item, set and unattributed subjects never share credit.
Any observation outside the projection's scope or snapshots rejects the whole
projection.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility import previous
from capabilities.reward_memory.utility.subjects import (
    observation_order,
    subject_id,
    subject_projection,
)
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
REDUCER_ID = re.compile(r"^mur_[0-9a-f]{64}$")
BOUNDARIES = {
    "read_only": True,
    v.NEW_ACTION_AUTHORITY: False,
    "provider_write_performed": False,
    v.EXTERNAL_WRITES: False,
    v.RAW_CONTENT: False,
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


def projection_base(context: dict[str, Any], identity: str) -> dict[str, Any]:
    """An empty projection of ``context``: every key, in LoopX's order."""
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


def _rejected(context: dict[str, Any], identity: str, *reason_codes: str) -> dict[str, Any]:
    projection = projection_base(context, identity)
    projection.update(
        ok=False,
        status="rejected",
        rejected_observation_count=1,
        rejections=[{"reason_codes": list(reason_codes)}],
    )
    return projection


PLACEHOLDER = "rejected"
MALFORMED = "observation_malformed"


def projection_context(document: dict[str, Any]) -> dict[str, Any]:
    """The context a projection input (or a projection) names; ``observation_malformed``
    when it is unreadable."""
    return {
        # A read projection's scope prints its keys sorted, as LoopX's does (its
        # unreadable placeholder keeps the field order); issue 19's key-order check.
        "scope": dict(sorted(u.scope(document["scope"], MALFORMED).items())),
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


def identity_of(context: dict[str, Any]) -> str:
    """The reducer identity of a read context."""
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
    # Upstream refuses these as a bad request, not as a rejected projection: the
    # context's shape (a scope object, string snapshot refs), then the options.
    if not isinstance(document["scope"], dict):
        v.fail("input.scope", "must be an object")
    for key in ("retrieval_snapshot_ref", "policy_snapshot_ref"):
        if not isinstance(document[key], str):
            v.fail(f"input.{key}", "must be a string")
    version = document.get("reducer_version", REDUCER_VERSION)
    if not isinstance(version, str) or not version.strip():
        v.fail("input.reducer_version", "must be a non-empty string when given")
    previous = document.get("previous_projection")
    if previous is not None and not isinstance(previous, dict):
        v.fail("input.previous_projection", "must be a projection object when given")
    return document


def _by_subject(item: tuple[str, list[dict[str, Any]]]) -> tuple[str, tuple[str, ...]]:
    """Upstream's subject order: attribution level, then the digests (unattributed: id)."""
    sid, group = item
    level = group[0]["attribution_level"]
    return level, tuple(group[0]["memory_ref_digests"]) if level != "none" else (sid,)


def project(document: object) -> dict[str, Any]:
    """Reduce one projection input (§15).

    A malformed input shape raises the typed ``invalid_request`` error; everything
    else (bad context, bad or foreign observations) is a ``rejected`` projection.
    """
    document = _input(document)
    try:
        context = projection_context(document)
    except u.UtilityError as exc:
        unreadable = {
            "scope": dict.fromkeys(u.SCOPE_FIELDS, PLACEHOLDER),
            "retrieval_snapshot_ref": PLACEHOLDER,
            "policy_snapshot_ref": PLACEHOLDER,
            "reducer_version": REDUCER_VERSION,
        }
        return _rejected(unreadable, identity_of(unreadable), exc.reason_code)
    identity = identity_of(context)
    raw = document["observations"]
    try:
        if document.get("previous_projection") is not None:
            if previous.intact_identity(document["previous_projection"]) != identity:
                return _rejected(context, identity, "reducer_identity_mismatch")
        if len(raw) > MAX_OBSERVATIONS:
            u.fail(MALFORMED, f"at most {MAX_OBSERVATIONS} observations")
        observations = []
        # One observation at a time, as upstream: the first that is malformed or
        # foreign to the context names the rejection.
        for item in raw:
            observation = u.validate_observation(item, item_binding=False)
            # Every way the observation is foreign to the context, sorted (as LoopX).
            foreign = sorted(
                code
                for key, code in (
                    ("scope", "scope_mismatch"),
                    ("retrieval_snapshot_ref", "retrieval_snapshot_mismatch"),
                    ("policy_snapshot_ref", "policy_snapshot_mismatch"),
                )
                if observation[key] != context[key]
            )
            if foreign:
                return _rejected(context, identity, *foreign)
            observations.append(observation)
        for observation in observations:
            u.check_item_binding(observation)
    except u.UtilityError as exc:
        return _rejected(context, identity, exc.reason_code)
    return reduce_observations(context, identity, observations)


def reduce_observations(
    context: dict[str, Any], identity: str, observations: list[dict[str, Any]]
) -> dict[str, Any]:
    """The projection of validated observations, all of ``context``."""
    deliveries: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for observation in observations:
        deliveries[observation["observation_id"]].append(observation)
    accepted, rejections = [], []
    fingerprint_of: dict[str, str] = {}
    duplicates = conflicting = rejected_deliveries = 0
    for oid in sorted(deliveries):
        group = deliveries[oid]
        fingerprints = sorted({u.delivery_fingerprint(o) for o in group})
        # Repeated deliveries of one content are duplicates, inside a conflict too.
        duplicates += len(group) - len(fingerprints)
        if len(fingerprints) == 1:
            fingerprint_of[oid] = fingerprints[0]
            accepted.append(min(group, key=observation_order))
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
    subjects = [
        subject_projection(sid, group) for sid, group in sorted(by_subject.items(), key=_by_subject)
    ]
    projection = projection_base(context, identity)
    conflicted = [s for s in subjects if s["review"]["state"] == "conflict"]
    if not accepted and not rejections:
        status = "empty"
    elif rejections or conflicted:
        status = "review_required"
    else:
        status = "ready"
    latest = max(accepted, key=observation_order) if accepted else None
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
        (o for group in by_subject.values() for o in group), key=observation_order, reverse=True
    )
    kept = [o for o in everything if o["observation_id"] in latest_ids]
    rest = [o for o in everything if o["observation_id"] not in latest_ids]
    kept += rest[: max(0, MAX_HISTORY - len(kept))]
    entries = [
        _history_entry(o, fingerprint_of[o["observation_id"]], subject_of[o["observation_id"]])
        for o in sorted(kept, key=observation_order)
    ]
    return entries, len(everything) > len(kept)
