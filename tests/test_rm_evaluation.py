"""The Stage 4 evaluation suite and its release gate (`turn-hooks reward-memory evaluate`)."""

from __future__ import annotations

import json

from test_host_generic import run_cli

from capabilities.reward_memory.reports import evaluation
from conformance.public_safety import public_safety_violations

CASE_IDS = [
    "compact_restart_survival",
    "project_module_scope_isolation",
    "supersede_revoke_rejection",
    "stale_source_rejection",
    "multi_person_authority_conditions",
    "gate_non_override",
    "candidate_ranking_influence",
    "large_edge_case_patch_protection",
]


def test_the_eight_cases_pass_and_open_the_gate():
    result = run_cli("reward-memory", "evaluate", stdin="")
    document = json.loads(result.stdout)
    assert result.returncode == 0
    assert [case["case_id"] for case in document["cases"]] == CASE_IDS
    assert all(case["passed"] for case in document["cases"])
    gate = document["release_gate"]
    assert (gate["status"], gate["decision"], gate["reason_codes"]) == (
        "ready_for_bounded_dogfood",
        "advance_stage_5",
        [],
    )
    assert document["metrics"]["provider_write_count"] == 0
    assert document["metrics"]["scratch_store_write_count"] >= 1, "the core really wrote"
    assert not public_safety_violations(document)


def test_one_failing_case_or_one_write_closes_the_gate(monkeypatch):
    def broken(fixture):
        return [True, False], {}, {}

    def writes(fixture):
        return [True], {}, {"provider_write_count": 1}

    monkeypatch.setattr(evaluation, "CASES", {**evaluation.CASES, "broken": broken})
    failed = evaluation.evaluate()
    assert (failed["ok"], failed["release_gate"]["status"]) == (False, "blocked")
    assert failed["release_gate"]["reason_codes"] == ["case_failed:broken"]
    monkeypatch.setattr(evaluation, "CASES", {"writes": writes})
    wrote = evaluation.evaluate()
    assert wrote["release_gate"]["reason_codes"] == ["provider_write_count_not_zero"]


def test_a_crashing_case_is_a_failed_case_with_its_kind(monkeypatch):
    def crash(fixture):
        raise KeyError("x")

    monkeypatch.setattr(evaluation, "CASES", {"crash": crash})
    [case] = evaluation.evaluate()["cases"]
    assert (case["passed"], case["failure_kind"]) == (False, "KeyError")
