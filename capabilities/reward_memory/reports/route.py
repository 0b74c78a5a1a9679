"""The pilot/meta delegation check: a deterministic route for a proposed change.

From the architecture document's "Pilot/meta delegation": the pilot may take a fix
only for a confirmed bug on one bounded surface that changes no semantic contract,
puts no product policy in a generic boundary, has named reproduction and validation,
low or medium edge-case complexity, and every relevant piece of evidence. A meta
trigger (by-design or uncertain semantics, a semantic-contract change, several
surfaces, a generic boundary carrying specific policy, high complexity) sends it to
the design gate. Evidence is relevance-gated: effect always; UX for a user-visible
change; a benchmark for a retrieval or memory-quality claim; performance for a
hot-path or storage change. Missing evidence without a meta trigger holds the change.

The answer is LoopX 2.1.1's ``reward_memory_pilot_meta_route_v0`` packet, field for
field and in its key order, so either tool's route packet reads the same (the
differential fuzzer's ``route-check`` family compares them). The packet is a guard
fixture, not a reasoner: it says live reasoning is still required and grants no
authority to patch memory or write anywhere.
"""

from __future__ import annotations

import copy
from typing import Any

from capabilities.reward_memory.contract import values as v

SCHEMA = "reward_memory_pilot_meta_route_v0"
PILOT, META, HOLD = "pilot_fix", "meta_design_gate", "hold_for_evidence"
BEHAVIOURS = ("bug_confirmed", "by_design", "uncertain")
COMPLEXITY = ("low", "medium", "high")
# Upstream's order, which its required and missing lists follow.
EVIDENCE = ("effect", "ux", "benchmark", "performance")
MANUAL_CASE_REF = "manual_observation"
MAX_SURFACES = 20
# The change's yes/no facts, each a real boolean.
FLAGS = (
    "semantic_contract_change",
    "generic_boundary_for_specific_policy",
    "user_visible_behavior_change",
    "hot_path_or_storage_change",
    "retrieval_or_memory_quality_claim",
    "named_reproduction",
    "named_validation",
    *(f"{name}_evidence" for name in EVIDENCE),
)
# Which change flag makes each piece of evidence relevant (effect: every change).
RELEVANT_WHEN = {
    "ux": "user_visible_behavior_change",
    "benchmark": "retrieval_or_memory_quality_claim",
    "performance": "hot_path_or_storage_change",
}

BUILTIN_CASES: dict[str, dict[str, Any]] = {
    # The document's generic-layer regression: a listing change, by design upstream,
    # that crossed two surfaces on a storage path, with no product-effect, UX or
    # performance evidence (and no quality claim, so no benchmark is needed).
    "pr-3237": {
        "case_ref": "https://github.com/volcengine/OpenViking/pull/3237",
        "behavior_status": "by_design",
        "surface_count": 2,
        "semantic_contract_change": True,
        "generic_boundary_for_specific_policy": True,
        "user_visible_behavior_change": True,
        "hot_path_or_storage_change": True,
        "retrieval_or_memory_quality_claim": False,
        "edge_case_complexity": "high",
        "named_reproduction": True,
        "named_validation": True,
        "effect_evidence": False,
        "ux_evidence": False,
        "benchmark_evidence": False,
        "performance_evidence": False,
    },
}


def _validated(observation: dict[str, Any]) -> dict[str, Any]:
    # The command line can only produce well-typed values; the surface count's range
    # is the one check a user reaches. The rest guards callers inside the package.
    behaviour = v.enum(observation.get("behavior_status"), BEHAVIOURS, "behavior_status")
    complexity = v.enum(observation.get("edge_case_complexity"), COMPLEXITY, "edge_case_complexity")
    count = observation.get("surface_count")
    if isinstance(count, bool) or not isinstance(count, int):
        v.fail("surface_count", "must be an integer")
    if not 1 <= count <= MAX_SURFACES:
        v.fail("surface_count", f"is outside 1..{MAX_SURFACES}")
    flags = {name: v.boolean(observation.get(name), name) for name in FLAGS}
    return {"behavior_status": behaviour, "edge_case_complexity": complexity, **flags}


def _meta_reasons(change: dict[str, Any], surface_count: int) -> list[str]:
    reasons = []
    if change["behavior_status"] != "bug_confirmed":
        reasons.append(f"semantics_{change['behavior_status']}")
    if change["semantic_contract_change"]:
        reasons.append("semantic_contract_change")
    if surface_count > 1:
        reasons.append("cross_surface_change")
    if change["generic_boundary_for_specific_policy"]:
        reasons.append("generic_boundary_for_specific_policy")
    if change["edge_case_complexity"] == "high":
        reasons.append("high_edge_case_complexity")
    return reasons


def required_evidence(change: dict[str, Any]) -> list[str]:
    """The evidence this change needs, by relevance, in :data:`EVIDENCE` order."""
    return [name for name in EVIDENCE if name == "effect" or change[RELEVANT_WHEN[name]]]


def route_check(observation: dict[str, Any]) -> dict[str, Any]:
    """``reward_memory_pilot_meta_route_v0`` for one change; a typed error names the
    first bad field."""
    change = _validated(observation)
    count = observation["surface_count"]
    meta = _meta_reasons(change, count)
    needed = required_evidence(change)
    missing = [name for name in needed if not change[f"{name}_evidence"]]
    unnamed = [name for name in ("named_reproduction", "named_validation") if not change[name]]
    if meta:
        decision = META
        # At the design gate the unnamed reproduction or validation is not the reason.
        reasons = [*meta, *(f"missing_{name}_evidence" for name in missing)]
    elif missing or unnamed:
        decision = HOLD
        reasons = [*(f"missing_{name}_evidence" for name in missing)]
        reasons += [f"missing_{name}" for name in unnamed]
    else:
        decision = PILOT
        reasons = [
            "confirmed_bug_semantics",
            "single_bounded_surface",
            "no_semantic_contract_change",
            "no_generic_boundary_for_specific_policy",
            f"edge_case_complexity_{change['edge_case_complexity']}",
            "reproduction_validation_and_relevant_evidence_present",
        ]
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "case_ref": observation.get("case_ref", MANUAL_CASE_REF),
        "decision": decision,
        "reason_codes": reasons,
        "required_evidence": needed,
        "missing_required_evidence": missing,
        "pilot_authorized": decision == PILOT,
        "meta_review_required": decision == META,
        "route_check_role": "deterministic_guard_fixture_not_live_reasoner",
        "live_reasoning_required": True,
        "memory_patch_authority": False,
        "external_write_authorized": False,
        "raw_issue_or_memory_captured": False,
    }


def builtin_case(case_id: str) -> dict[str, Any]:
    """A built-in change observation by id (a copy)."""
    if case_id not in BUILTIN_CASES:
        v.fail(
            "case", f"is not a built-in case ({', '.join(sorted(BUILTIN_CASES))})", "case_unknown"
        )
    return copy.deepcopy(BUILTIN_CASES[case_id])
