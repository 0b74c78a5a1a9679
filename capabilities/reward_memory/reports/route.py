"""The pilot/meta delegation check: a deterministic route for a proposed change.

From the architecture document's "Pilot/meta delegation": the pilot may take a fix
only for a confirmed bug on one bounded surface that changes no semantic contract,
puts no product policy in a generic boundary, has named reproduction and validation,
low or medium edge-case complexity, and every relevant piece of evidence. A meta
trigger (by-design or uncertain semantics, a semantic-contract change, several
surfaces, generic-boundary leakage, high complexity) sends it to the design gate.
Evidence is relevance-gated: effect always; UX for a user-visible change;
performance for a hot-path or storage change; a benchmark only for a retrieval or
memory-quality claim. Missing evidence without a meta trigger holds the change.

A prior memory hit is recorded and never moves the route: memory is advisory and
cannot authorise a change past the design gate.
"""

from __future__ import annotations

import copy
from typing import Any

from capabilities.reward_memory.contract import values as v

INPUT_SCHEMA = "reward_memory_route_check_input_v0"
SCHEMA = "reward_memory_route_check_v0"
PILOT, META, HOLD = "pilot_fix", "meta_design_gate", "hold_for_evidence"
BEHAVIOURS = ("confirmed_bug", "by_design", "uncertain")
COMPLEXITY = ("low", "medium", "high")
EVIDENCE = ("effect", "ux", "performance", "benchmark")
CHANGE_FLAGS = ("user_visible", "hot_path_or_storage", "retrieval_quality_claim")
_KEYS = frozenset(
    {
        "behavior",
        "surfaces_touched",
        "semantic_contract_change",
        "generic_boundary_leakage",
        "edge_case_complexity",
        "reproduction_named",
        "validation_named",
        "change",
        "evidence",
    }
)
_OPTIONAL = frozenset({"schema_version", "case_id", "prior_memory_hit"})

BUILTIN_CASES: dict[str, dict[str, Any]] = {
    # The document's generic-layer regression: a listing change, by design upstream,
    # that crossed backend and UI surfaces on a storage path, with no product-effect,
    # UX or performance evidence (and no quality claim, so no benchmark is needed).
    "pr-3237": {
        "schema_version": INPUT_SCHEMA,
        "case_id": "pr-3237",
        "behavior": "by_design",
        "surfaces_touched": ["backend", "web_studio"],
        "semantic_contract_change": True,
        "generic_boundary_leakage": True,
        "edge_case_complexity": "high",
        "reproduction_named": True,
        "validation_named": False,
        "change": {
            "user_visible": True,
            "hot_path_or_storage": True,
            "retrieval_quality_claim": False,
        },
        "evidence": {"effect": False, "ux": False, "performance": False, "benchmark": False},
        "prior_memory_hit": {"recommended_route": PILOT},
    },
}


def _flags(value: object, field: str, names: tuple[str, ...]) -> dict[str, bool]:
    document = v.exact_keys(value, field, frozenset(names))
    return {name: v.boolean(document[name], f"{field}.{name}") for name in names}


def normalise_route_input(value: object) -> dict[str, Any]:
    """The validated change description; a typed error names the first bad field."""
    document = v.exact_keys(value, "input", _KEYS, _OPTIONAL)
    if "schema_version" in document and document["schema_version"] != INPUT_SCHEMA:
        v.fail("input.schema_version", f"must be {INPUT_SCHEMA}", "schema_version_unsupported")
    surfaces = v.listing(document["surfaces_touched"], "input.surfaces_touched", 1, 20)
    surfaces = v.unique(
        [v.token(s, "input.surfaces_touched[]") for s in surfaces], "input.surfaces_touched"
    )
    hit = document.get("prior_memory_hit")
    recommended = None
    if hit is not None:
        hit = v.exact_keys(hit, "input.prior_memory_hit", frozenset({"recommended_route"}))
        recommended = v.enum(
            hit["recommended_route"],
            (PILOT, META, HOLD),
            "input.prior_memory_hit.recommended_route",
        )
    return {
        "case_id": v.optional_token(document.get("case_id"), "input.case_id"),
        "behavior": v.enum(document["behavior"], BEHAVIOURS, "input.behavior"),
        "surfaces_touched": sorted(surfaces),
        "semantic_contract_change": v.boolean(
            document["semantic_contract_change"], "input.semantic_contract_change"
        ),
        "generic_boundary_leakage": v.boolean(
            document["generic_boundary_leakage"], "input.generic_boundary_leakage"
        ),
        "edge_case_complexity": v.enum(
            document["edge_case_complexity"], COMPLEXITY, "input.edge_case_complexity"
        ),
        "reproduction_named": v.boolean(document["reproduction_named"], "input.reproduction_named"),
        "validation_named": v.boolean(document["validation_named"], "input.validation_named"),
        "change": _flags(document["change"], "input.change", CHANGE_FLAGS),
        "evidence": _flags(document["evidence"], "input.evidence", EVIDENCE),
        "prior_memory_recommended_route": recommended,
    }


def _meta_triggers(change: dict[str, Any]) -> list[str]:
    triggers = []
    if change["behavior"] != "confirmed_bug":
        triggers.append(f"behavior_{change['behavior']}")
    if change["semantic_contract_change"]:
        triggers.append("semantic_contract_change")
    if len(change["surfaces_touched"]) > 1:
        triggers.append("cross_surface_change")
    if change["generic_boundary_leakage"]:
        triggers.append("generic_boundary_leakage")
    if change["edge_case_complexity"] == "high":
        triggers.append("high_edge_case_complexity")
    return triggers


def required_evidence(change: dict[str, Any]) -> list[str]:
    """The evidence this change needs, by relevance."""
    flags = change["change"]
    needed = ["effect"]
    if flags["user_visible"]:
        needed.append("ux")
    if flags["hot_path_or_storage"]:
        needed.append("performance")
    if flags["retrieval_quality_claim"]:
        needed.append("benchmark")
    return needed


def route_check(value: object) -> dict[str, Any]:
    """``reward_memory_route_check_v0`` for one change description."""
    change = normalise_route_input(value)
    triggers = _meta_triggers(change)
    needed = required_evidence(change)
    missing = [name for name in needed if not change["evidence"][name]]
    unnamed = [
        f"{name}_not_named"
        for name in ("reproduction", "validation")
        if not change[f"{name}_named"]
    ]
    if triggers:
        route = META
    elif missing or unnamed:
        route = HOLD
    else:
        route = PILOT
    reasons = [*triggers, *(f"missing_{name}_evidence" for name in missing), *unnamed]
    recommended = change["prior_memory_recommended_route"]
    memory_overridden = recommended is not None and recommended != route
    if memory_overridden:
        reasons.append("prior_memory_hit_cannot_change_route")
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "case_id": change["case_id"],
        "route": route,
        "reason_codes": reasons or ["pilot_guards_satisfied"],
        "meta_triggers": triggers,
        "required_evidence": needed,
        "missing_evidence": missing,
        "surfaces_touched_count": len(change["surfaces_touched"]),
        "prior_memory_hit": {
            "present": recommended is not None,
            "recommended_route": recommended,
            "applied_to_route": False,
        },
        v.NEW_ACTION_AUTHORITY: False,
        v.EXTERNAL_WRITES: False,
    }


def builtin_case(case_id: str) -> dict[str, Any]:
    """A built-in change description by id (a copy)."""
    if case_id not in BUILTIN_CASES:
        v.fail(
            "case", f"is not a built-in case ({', '.join(sorted(BUILTIN_CASES))})", "case_unknown"
        )
    return copy.deepcopy(BUILTIN_CASES[case_id])
