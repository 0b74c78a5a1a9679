"""``turn-hooks reward-memory evaluate``: the Stage 4 contract suite and release gate.

Eight cases from the architecture document, each run through the real core (event
normalisation, candidate guards, standing-policy ingest with exact readback, recall
guards and qualification, application receipts, the route check) against a real
embedded SQLite store in a scratch directory that the run creates and deletes. The
gate opens (``ready_for_bounded_dogfood``) only when every case passed and no case
wrote to a declared provider, applied memory falsely, interrupted a maintainer or
gated a user. Writes to the scratch store are the fixture's and counted apart.
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
from capabilities.reward_memory.contract.values import EXTERNAL_WRITES, NEW_ACTION_AUTHORITY
from capabilities.reward_memory.memory.hook import apply_recall
from capabilities.reward_memory.reports.evaluation_fixture import PROJECT, Fixture, scoped_event
from capabilities.reward_memory.reports.route import builtin_case, route_check

SCHEMA = "reward_memory_evaluation_v0"
GATE_SCHEMA = "reward_memory_release_gate_v0"
LESSON = "Prefer the focused fix and run the touched module's tests first."
BASE_DECISION = {"candidates": ["broad_refactor", "focused_fix"], "gate": "maintainer_approval"}
ZERO_COUNTERS = (
    "provider_write_count",
    "external_write_count",
    "false_application_count",
    "maintainer_interruption_count",
    "user_gate_count",
)


Case = Callable[[Fixture], tuple[list[bool], dict[str, Any], dict[str, int]]]


def _compact_restart(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    learned = fx.learn(LESSON)
    restarted = EmbeddedSqliteProvider(fx.path)  # a new process would open the same file
    session = fx.recall(provider=restarted)
    packet = session.packet
    checks = [
        learned["status"] == "activated",
        packet["status"] == "completed",
        packet["result_count"] == 1,
        packet["result_readback_verified"] is True,
    ]
    return checks, {"recall_status": packet["status"], "readback_verified": checks[3]}, {}


def _scope_isolation(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    fx.learn(LESSON)
    project = fx.recall(project_ref="project:elsewhere").packet
    surface = fx.recall(surface_id="other_module.planning").packet
    calls = project["provider_call_count"] + surface["provider_call_count"]
    checks = [
        project["status"] == "guard_blocked",
        surface["status"] == "guard_blocked",
        calls == 0,
        project["result_count"] == 0,
        surface["result_count"] == 0,
    ]
    evidence = {
        "project_status": project["status"],
        "surface_status": surface["status"],
        "provider_call_count": calls,
    }
    return checks, evidence, {}


def _supersede_revoke(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    fx.learn(LESSON)
    retired = copy.deepcopy(fx.entry["corpus"])
    retired["lifecycle"] = {
        "state": "superseded",
        "supersedes": [],
        "superseded_by": "experience-v2",
        "retirement_reason": None,
    }
    packet = fx.recall(corpus=retired).packet
    checks = [
        packet["status"] == "guard_blocked",
        packet["result_count"] == 0,
        not session_items(fx, retired),
    ]
    return checks, {"recall_status": packet["status"], "accepted_result_count": 0}, {}


def session_items(fx: Fixture, corpus: dict[str, Any]) -> list[Any]:
    """What a recall over ``corpus`` would hand an applier."""
    return list(fx.recall(corpus=corpus).items)


def _stale_source(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    fx.learn(LESSON)
    session = fx.recall(freshness_context={"source_truth_current": False})
    packet = session.packet
    checks = [
        packet["status"] == "guard_blocked",
        packet["provider_call_count"] == 0,
        packet["result_count"] == 0,
        not session.items,
    ]
    return checks, {"recall_status": packet["status"], "provider_call_count": 0}, {}


def _authority(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    policy = scoped_event("Never force-push the release branch.")
    policy["target_class"] = "hard_policy"
    policy.pop("experience")
    policy["requested_action_scopes"] = ["git.push"]
    policy["source"]["actor_role"] = "verified_project_owner_or_operator"
    policy["source"]["actor_ref"] = "person:maintainer-a"
    event = normalise_event(policy)
    checkpoint = {
        "verified": True,
        "source_ref": "registry:owners",
        "actor_ref": "person:maintainer-a",
        "actor_role": "verified_project_owner_or_operator",
        "project_ref": PROJECT,
        "action_scopes": ["git.push"],
    }
    matching = build_candidate(event, checkpoint=checkpoint)["guard"]["reason_codes"]
    other_checkpoint = {**checkpoint, "actor_ref": "person:maintainer-b"}
    other = build_candidate(event, checkpoint=other_checkpoint)["guard"]["reason_codes"]
    checks = [not matching, bool(other), "authority_actor_mismatch" in other]
    evidence = {
        "matching_actor_guard": not matching,
        "mismatched_actor_guard": not other,
        "reason_codes": other,
    }
    return checks, evidence, {}


def _cite_all(base: Any, items: Any) -> dict[str, Any]:
    """A deterministic applier: candidates the recalled actions name move to the front."""
    actions = " ".join(item.record["experience"]["future_behavior"]["action"] for item in items)
    ranked = sorted(base["candidates"], key=lambda c: c.replace("_", " ") not in actions)
    return {
        "outcome": "applied",
        "output": {**base, "candidates": ranked},
        "memory_refs": [item.uri for item in items],
        "current_artifact_verified": True,
        "reasoning_summary": "the recalled experience fits this single-module change",
    }


def _apply(fx: Fixture, application_id: str, **recall: Any) -> dict[str, Any]:
    """The deterministic applier over one recall, on the shared base decision."""
    return apply_recall(
        BASE_DECISION,
        fx.recall(**recall),
        application_id=application_id,
        artifact_ref="artifact:stage4",
        apply_memory=_cite_all,
    )


def _gate_non_override(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    fx.learn(LESSON)
    applied = _apply(fx, "stage4-gate")
    receipt = applied["receipt"]
    checks = [
        applied["status"] == "applied",
        receipt[NEW_ACTION_AUTHORITY] is False,
        receipt["current_artifact_verified"] is True,
        applied["output"]["gate"] == "maintainer_approval",
    ]
    evidence = {
        "application_status": applied["status"],
        NEW_ACTION_AUTHORITY: False,
        "current_artifact_verified": receipt["current_artifact_verified"],
    }
    return checks, evidence, {}


def _ranking(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    fx.learn(LESSON)
    applied = _apply(fx, "stage4-rank")
    empty = _apply(fx, "stage4-none", project_ref="project:elsewhere")
    top = applied["output"]["candidates"][0]
    checks = [
        applied["status"] == "applied",
        top == "focused_fix",
        empty["output"] is BASE_DECISION,
        empty["status"] == "not_available",
    ]
    return checks, {"top_candidate": top, "application_status": applied["status"]}, {}


def _large_patch(fx: Fixture) -> tuple[list[bool], dict[str, Any], dict[str, int]]:
    decision = route_check(builtin_case("pr-3237"))
    checks = [
        decision["decision"] == "meta_design_gate",
        decision["pilot_authorized"] is False,
        decision["missing_required_evidence"] == ["effect", "ux", "performance"],
        decision["memory_patch_authority"] is False,
    ]
    evidence = {
        "decision": decision["decision"],
        "pilot_authorized": decision["pilot_authorized"],
        "missing_required_evidence": decision["missing_required_evidence"],
    }
    return checks, evidence, {}


CASES: dict[str, Case] = {
    "compact_restart_survival": _compact_restart,
    "project_module_scope_isolation": _scope_isolation,
    "supersede_revoke_rejection": _supersede_revoke,
    "stale_source_rejection": _stale_source,
    "multi_person_authority_conditions": _authority,
    "gate_non_override": _gate_non_override,
    "candidate_ranking_influence": _ranking,
    "large_edge_case_patch_protection": _large_patch,
}


def _run_case(case_id: str, case: Case) -> dict[str, Any]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="turn-hooks-eval-") as directory:
        fixture = Fixture(Path(directory))
        try:
            checks, evidence, counters = case(fixture)
            failure = None if all(checks) else "assertion_failed"
        except Exception as exc:  # a broken case is a failed case, with its kind
            checks, evidence, counters, failure = [False], {}, {}, type(exc).__name__
    return {
        "case_id": case_id,
        "passed": failure is None,
        "assertion_count": len(checks),
        "failure_kind": failure,
        "latency_ms": int((time.monotonic() - started) * 1000),
        "scratch_store_write_count": fixture.scratch_writes,
        **{name: counters.get(name, 0) for name in ZERO_COUNTERS},
        "evidence": evidence,
    }


def evaluate() -> dict[str, Any]:
    """Run every case; the ``reward_memory_evaluation_v0`` packet with its release gate."""
    cases = [_run_case(case_id, case) for case_id, case in CASES.items()]
    failed = [c["case_id"] for c in cases if not c["passed"]]
    totals = {name: sum(c[name] for c in cases) for name in ZERO_COUNTERS}
    reasons = [f"case_failed:{case_id}" for case_id in failed]
    reasons += [f"{name}_not_zero" for name, total in totals.items() if total]
    return {
        "ok": not reasons,
        "schema_version": SCHEMA,
        "status": "passed" if not reasons else "failed",
        "suite": "stage4_provider_neutral_contract",
        "runner": "turn_hooks_reward_memory_evaluation",
        "executes_real_core": True,
        "uses_surrogate_evaluator": False,
        "cases": cases,
        "metrics": {
            "case_count": len(cases),
            "passed_case_count": len(cases) - len(failed),
            "failed_case_count": len(failed),
            "assertion_count": sum(c["assertion_count"] for c in cases),
            "latency_ms": sum(c["latency_ms"] for c in cases),
            "scratch_store_write_count": sum(c["scratch_store_write_count"] for c in cases),
            **totals,
        },
        "release_gate": {
            "schema_version": GATE_SCHEMA,
            "status": "ready_for_bounded_dogfood" if not reasons else "blocked",
            "decision": "advance_stage_5" if not reasons else "hold_stage_4",
            "reason_codes": reasons,
            "claim_scope": "core_contract_invariants_only",
            "semantic_uplift_claim_allowed": False,
            "production_rollout_allowed": False,
        },
        "boundaries": {
            "provider_writes_performed": False,
            EXTERNAL_WRITES: False,
            "raw_memory_captured": False,
            "model_reasoning_replaced": False,
            "new_store_provider_or_scheduler_added": False,
        },
    }
