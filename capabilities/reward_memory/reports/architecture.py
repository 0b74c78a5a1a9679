"""``turn-hooks reward-memory architecture``: the contract as data, written in our words.

Classes (with the authority each may and may not carry), the guarded precedence
order, the evidence precedence the utility reducer applies, the delegation routes,
and the stages with what this package implements of each. The document is derived
from the same constants the code uses, so it cannot drift from them.
"""

from __future__ import annotations

from typing import Any

from capabilities.reward_memory.contract.corpus import DURABLE_CLASSES
from capabilities.reward_memory.contract.values import EXTERNAL_WRITES, NEW_ACTION_AUTHORITY
from capabilities.reward_memory.reports.corpora import HEALTH_STATES
from capabilities.reward_memory.reports.route import EVIDENCE, HOLD, META, PILOT
from capabilities.reward_memory.utility.observation import (
    ATTRIBUTION_LEVELS,
    EVIDENCE_BASES,
    UTILITY_LABELS,
)

SCHEMA = "reward_memory_architecture_v0"

CLASSES = [
    {
        "class_id": "run_bound_reward",
        "use": "evidence_about_one_judged_run",
        "grants_action_authority": False,
        "lifecycle": "append_only_overlay",
    },
    {
        "class_id": "hard_policy",
        "use": "constraint_or_veto_inside_a_verified_authority_scope",
        "grants_action_authority": False,
        "authority_source": "independently_verified_actor_and_action_scope",
        "lifecycle": "active_until_superseded_revoked_expired_or_retired",
    },
    {
        "class_id": "soft_preference",
        "use": "advisory_ranking_or_rewrite",
        "grants_action_authority": False,
        "lifecycle": "durable_after_review_editable_retireable",
    },
    {
        "class_id": "procedural_experience",
        "use": "advisory_guidance_after_current_artifact_verification",
        "grants_action_authority": False,
        "qualification": "typed_experience_contract_with_evidence_refs",
        "lifecycle": "stale_harmful_refuted_superseded_or_retired_by_new_evidence",
    },
    {
        "class_id": "working_context",
        "use": "current_execution_or_session_continuation_only",
        "grants_action_authority": False,
        "lifecycle": "bound_to_its_execution_or_session_revision",
    },
]

GUARDED_PRECEDENCE = [
    "explicit_action_authority_and_privacy_boundaries",
    "active_in_scope_hard_policy",
    "fresh_working_context_and_current_source_of_truth",
    "current_artifact_verified_procedural_experience",
    "active_in_scope_soft_preference",
    "run_bound_reward_as_evidence_only",
]

STAGES = [
    {"stage": "0", "name": "classes_precedence_and_delegation", "implemented": True},
    {"stage": "1", "name": "corpus_registry_and_health_read_model", "implemented": True},
    {"stage": "2", "name": "stateless_candidate_and_review_seam", "implemented": True},
    {"stage": "3", "name": "explicit_recall_and_application_receipts", "implemented": True},
    {"stage": "4", "name": "evaluation_harness_and_release_gate", "implemented": True},
    {"stage": "5", "name": "bounded_dogfood_and_operator_controls", "implemented": False},
    {"stage": "utility_1", "name": "utility_observations", "implemented": True},
    {"stage": "utility_2", "name": "utility_reducer_and_projection", "implemented": True},
]


def architecture() -> dict[str, Any]:
    """The machine-readable contract."""
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "classes": [
            {**entry, "durable_recall_and_ingest": entry["class_id"] in DURABLE_CLASSES}
            for entry in CLASSES
        ],
        "guarded_precedence": GUARDED_PRECEDENCE,
        "utility_precedence": {
            "evidence_bases_weakest_first": list(EVIDENCE_BASES),
            "strong_bases_need_evidence_refs": list(EVIDENCE_BASES[2:]),
            "labels": list(UTILITY_LABELS),
            "directions": {"helpful": 1, "harmful": -1, "neutral": 0},
            "attribution_levels": list(ATTRIBUTION_LEVELS),
            "strongest_tier_unknown_blocks_weaker_direction": True,
        },
        "health_states": list(HEALTH_STATES),
        "delegation": {
            "routes": [PILOT, META, HOLD],
            "evidence": list(EVIDENCE),
            "prior_memory_hit_can_change_route": False,
        },
        "stages": STAGES,
        NEW_ACTION_AUTHORITY: False,
        EXTERNAL_WRITES: False,
    }
