"""One projection subject: its identity and effective utility (the §15 table).

A subject is what observations speak about: one memory (item), one cited set, or,
unattributed, one application receipt. Per subject the strongest evidence tier
decides; an ``unknown`` there blocks any weaker direction, and two directions there
cancel into a review. Separate from :mod:`.reducer`, which decides which
observations count at all (replays, conflicts, scope) and assembles the projection.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from capabilities.reward_memory.utility import observation as u
from turn_hooks.canonical import s1, sha256_hex

DIRECTIONS = {"helpful": 1, "harmful": -1, "neutral": 0}
RANK = {basis: rank for rank, basis in enumerate(u.EVIDENCE_BASES)}
LABEL_ORDER = {label: index for index, label in enumerate(u.UTILITY_LABELS)}
SUBJECT_PREFIX = {"item": "mui_", "set": "mus_", "none": "mul_"}


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


def observation_order(observation: dict[str, Any]) -> tuple[Any, str, str]:
    """Sort key: oldest first by instant, then by the timestamp text and the id."""
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


def subject_projection(sid: str, observations: list[dict[str, Any]]) -> dict[str, Any]:
    """The projection's entry for one subject from its accepted observations."""
    observations = sorted(observations, key=observation_order)
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
        # A harmful judgement at confidence 0 is -0.0, as upstream writes it.
        "utility_estimate": round(direction * confidence, 6),
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
