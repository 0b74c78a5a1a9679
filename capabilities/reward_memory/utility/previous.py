"""A previous projection handed back to the reducer: intact, or ``observation_malformed``.

A caller may pass the projection it got last time (``previous_projection``); the
reducer answers ``reducer_identity_mismatch`` when it belongs to another context.
Before that, it must be a projection the reducer wrote and nobody altered since, as
LoopX 2.1.1 checks it: an altered one is ``observation_malformed`` whatever context
it claims.
"""

from __future__ import annotations

import json
from typing import Any

from capabilities.reward_memory.utility import observation as u

_MALFORMED = "observation_malformed"


def _reducer() -> Any:
    # The reducer imports this module; its helpers are reached at call time.
    from capabilities.reward_memory.utility import reducer

    return reducer


STATUSES = ("empty", "ready", "review_required", "rejected")
# What a projection's observation history alone determines: re-reducing the history
# must give these back exactly. Deliveries that conflicted or repeated leave no
# history, so their counts and rejections are not re-derived (as LoopX 2.1.1).
LINEAGE_FIELDS = (
    "accepted_observation_count",
    "lineage_observation_count",
    "subject_count",
    "item_subject_count",
    "set_subject_count",
    "unresolved_lineage_count",
    "last_observed_at",
    "last_observation_id",
    "subjects",
    "observation_history",
    "observation_history_truncated",
    "review_proposals",
)


def intact_identity(previous: object) -> str:
    """The reducer identity of an intact previous projection; ``observation_malformed``
    for one that is not a projection or was altered after the reducer wrote it.

    Intact means: exactly a projection's keys; its identity is the one its own
    context gives; its boundaries, ``ok``, status and count types agree; and, unless
    its history was truncated, reducing its own history gives its lineage back. This
    runs before the identity is compared with the current context, so a tampered
    projection is malformed whatever context it claims.
    """
    r = _reducer()
    if not isinstance(previous, dict) or previous.get("schema_version") != r.SCHEMA:
        u.fail(_MALFORMED, "previous_projection is not a projection")
    identity = previous.get("reducer_identity")
    if set(previous) != set(r.projection_base(_PLACEHOLDER_CONTEXT, "")) or not (
        isinstance(identity, str) and r.REDUCER_ID.match(identity)
    ):
        u.fail(_MALFORMED, "previous_projection is not a projection")
    context = r.projection_context(previous)
    status = previous["status"]
    rejections = previous["rejections"]
    if (
        r.identity_of(context) != identity
        or status not in STATUSES
        or previous["ok"] is not (status != "rejected")
        or any(previous[key] is not value for key, value in r.BOUNDARIES.items())
        or not isinstance(rejections, list)
        or (status == "rejected" and not rejections)
        or not all(_is_count(previous[key]) for key in _DELIVERY_COUNTS)
        or not isinstance(previous["observation_history_truncated"], bool)
    ):
        u.fail(_MALFORMED, "previous_projection was altered")
    if previous["observation_history_truncated"] is not True:
        _check_lineage(previous, context, identity)
    return identity


_DELIVERY_COUNTS = (
    "duplicate_observation_count",
    "conflicting_observation_count",
    "rejected_observation_count",
)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_lineage(previous: dict[str, Any], context: dict[str, Any], identity: str) -> None:
    """Reduce the previous projection's own history; its lineage must come back."""
    history = previous["observation_history"]
    if not isinstance(history, list):
        u.fail(_MALFORMED, "previous_projection.observation_history is not a list")
    observations = []
    for entry in history:
        if not isinstance(entry, dict):
            u.fail(_MALFORMED, "previous_projection.observation_history holds a non-object")
        fields = {k: val for k, val in entry.items() if k not in _HISTORY_ONLY}
        try:
            observation = u.validate_observation(
                {
                    "schema_version": u.OBSERVATION_SCHEMA,
                    "scope": context["scope"],
                    "retrieval_snapshot_ref": context["retrieval_snapshot_ref"],
                    "policy_snapshot_ref": context["policy_snapshot_ref"],
                    **fields,
                    **dict.fromkeys(u.BOUNDARY_FIELDS, False),
                }
            )
        except u.UtilityError:
            # Whatever is wrong with a history entry, the projection is what was altered.
            u.fail(_MALFORMED, "previous_projection.observation_history was altered")
        if entry.get("observation_fingerprint") != u.delivery_fingerprint(observation):
            u.fail(_MALFORMED, "previous_projection.observation_history was altered")
        observations.append(observation)
    derived = _reducer().reduce_observations(context, identity, observations)
    compared: tuple[str, ...] = LINEAGE_FIELDS
    # A rejected projection is never ready; a clean one's status follows from its
    # history; one with rejected deliveries owes its state to deliveries not kept.
    if previous["status"] == "rejected":
        compared = (*compared, "projection_ready")
    elif not previous["rejections"]:
        compared = (*compared, "status", "projection_ready")
    if any(not _same(previous[key], derived[key]) for key in compared):
        u.fail(_MALFORMED, "previous_projection does not follow from its history")


def _same(a: object, b: object) -> bool:
    """JSON equality that tells types apart (``1`` is not ``1.0``, nor ``True``)."""
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)


_HISTORY_ONLY = frozenset({"observation_fingerprint", "subject_id"})
_PLACEHOLDER_CONTEXT = {
    "scope": {},
    "retrieval_snapshot_ref": "",
    "policy_snapshot_ref": "",
    "reducer_version": "",
}
