"""A memory's utility as its owner sees it, and the owner's own correction.

``turn-hooks memory rate REF helpful|harmful|neutral --reason TEXT`` is the strongest
evidence tier (``owner_correction``, RFC §4.2): an item-level observation bound to the
latest application of that memory whose Turn had a verified outcome, appended to the
ledger and read back exactly from the stored projection. ``memory show`` prints the
memory's utility state (:func:`utility_state`); ``memory list`` and ``status`` the
review proposals (:func:`review_proposals`). A negative utility proposes review and
never deletes or retires anything.
"""

from __future__ import annotations

from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.identities import memory_ref_digest
from capabilities.reward_memory.turn.application import APPLICATION_DIR, APPLICATION_RECORD_SCHEMA
from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility.ledger import OWNER_REF, Ledger, ledgers_of
from capabilities.reward_memory.utility.lineage import trusted_echo
from capabilities.reward_memory.utility.proposal import build_observation
from capabilities.reward_memory.utility.reducer import REDUCER_VERSION
from sidecars import SidecarStore, goal_agent_parts
from turn_hooks import SidecarError
from turn_hooks.canonical import s1, sha256_hex

RATE_SCHEMA = "turn_hooks_memory_rating_v0"
LABELS = ("helpful", "harmful", "neutral")
OWNER_VERSION = "owner_rating_v0"


def _applications(store: SidecarStore, goal_id: str, agent_id: str) -> list[dict[str, Any]]:
    found = []
    for path in store.iter_documents(*goal_agent_parts(APPLICATION_DIR, goal_id, agent_id)):
        try:
            record = store.read(path)
        except SidecarError:
            continue
        if isinstance(record, dict) and record.get("schema_version") == APPLICATION_RECORD_SCHEMA:
            found.append(record)
    return found


def latest_application(
    store: SidecarStore, goal_id: str, agent_id: str, digest: str
) -> dict[str, Any] | None:
    """The latest application that cited the memory and has a verified outcome."""
    cited = [
        record
        for record in _applications(store, goal_id, agent_id)
        if digest in record["receipt"]["memory_ref_digests"] and record.get("verified_outcome")
    ]
    return max(cited, key=lambda r: (u.instant(r["observed_at"]), r["observed_at"]), default=None)


def rate(
    store: SidecarStore,
    *,
    goal_id: str,
    agent_id: str,
    stored: Any,
    label: str,
    reason: str,
    created_at: str,
) -> dict[str, Any]:
    """Record the owner's rating of one memory and read it back; a typed error when no
    Turn applied the memory yet (nothing to bind the rating to)."""
    reason = v.compact(reason, 500, "reason")
    digest = memory_ref_digest(stored.uri)
    record = latest_application(store, goal_id, agent_id, digest)
    if record is None:
        v.fail(
            "ref",
            "was never applied in a Turn with a verified outcome, so there is nothing to "
            "rate yet: a memory can be rated once a Turn that recalled it says it applied "
            "it (reward_memory_application_json, or the record_memory_use tool) and the "
            "validator gave its verdict; `memory show REF` counts its applications",
            "memory_application_unknown",
        )
    receipt, verified = record["receipt"], record["verified_outcome"]
    context = record["attribution_context"]
    proposal = {
        **trusted_echo(record),
        "memory_ref_digests": [digest],
        "utility_label": label,
        "attribution_level": "item",
        "evidence_basis": "owner_correction",
        "confidence": 1.0,
        "reason_codes": [f"owner_rated_{label}"],
        # The rating itself is the evidence: its digest (the reason's text stays out).
        "evidence_refs": ["owner_rating:" + sha256_hex(s1([label, reason, created_at]))[:20]],
        "evaluator_ref": OWNER_REF,
        "evaluation_version": OWNER_VERSION,
    }
    observation = build_observation(receipt, verified, context, proposal, created_at=created_at)
    ledger = Ledger(store, goal_id, agent_id, {**context, "reducer_version": REDUCER_VERSION})
    recorded = ledger.record(observation)
    projection = ledger.projection() or {}
    readback = any(
        entry["observation_id"] == observation["observation_id"] and entry["utility_label"] == label
        for entry in projection.get("observation_history", [])
    ) and any(o == observation for o in ledger.observations())
    return {
        "ok": readback,
        "schema_version": RATE_SCHEMA,
        "status": "recorded" if recorded else "already_recorded",
        "memory_ref": stored.memory_ref,
        "memory_ref_digest": digest,
        "utility_label": label,
        "evidence_basis": "owner_correction",
        "application_receipt_id": record["application_receipt_id"],
        "observation_id": observation["observation_id"],
        "exact_readback_verified": readback,
        "utility": utility_state(store, goal_id, agent_id, digest),
        "automatic_deletion": False,
        v.NEW_ACTION_AUTHORITY: False,
    }


def _projections(store: SidecarStore, goal_id: str, agent_id: str) -> list[dict[str, Any]]:
    found = []
    for path in ledgers_of(store, goal_id, agent_id):
        try:
            projection = store.read(path)
        except SidecarError:
            continue
        if isinstance(projection, dict):
            found.append(projection)
    return found


def utility_state(store: SidecarStore, goal_id: str, agent_id: str, digest: str) -> dict[str, Any]:
    """One memory's utility: its own (item) state, and the sets it was applied in."""
    item, sets, proposals = None, [], []
    for projection in _projections(store, goal_id, agent_id):
        for subject in projection.get("subjects", []):
            if digest not in subject.get("memory_ref_digests", []):
                continue
            summary = {
                "estimate": subject["utility_estimate"],
                "label": subject["effective_utility_label"],
                "evidence_basis": subject["effective_evidence_basis"],
                "support": subject["support"],
                "support_by_tier": subject["evidence_label_summary"],
                "observation_count": subject["observation_count"],
                "last_observed_at": subject["last_observed_at"],
                "review": subject["review"]["state"],
            }
            if subject["attribution_level"] == "item":
                item = summary
            else:
                sets.append(summary)
            if subject["review"]["state"] != "none":
                proposals.append(
                    {
                        "attribution_level": subject["attribution_level"],
                        "proposed_action": subject["review"]["proposed_action"],
                        "reason_codes": subject["review"]["reason_codes"],
                    }
                )
    applications = [
        r
        for r in _applications(store, goal_id, agent_id)
        if digest in r["receipt"]["memory_ref_digests"]
    ]
    return {
        "memory_ref_digest": digest,
        "item": item,
        "sets": sets,
        "application_count": len(applications),
        "review_proposals": proposals,
    }


def review_proposals(store: SidecarStore, goal_id: str, agent_id: str) -> dict[str, list[str]]:
    """Per memory ref digest, the review actions its subjects propose (never a deletion)."""
    proposals: dict[str, list[str]] = {}
    for projection in _projections(store, goal_id, agent_id):
        for proposal in projection.get("review_proposals", []):
            for digest in proposal.get("memory_ref_digests", []):
                proposals.setdefault(digest, []).append(proposal["proposed_action"])
    return {digest: sorted(set(actions)) for digest, actions in sorted(proposals.items())}
