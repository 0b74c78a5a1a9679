"""The pilot/meta route check and the corpus registry read model (issue 9)."""

from __future__ import annotations

import copy
import json

import pytest
from fixtures import f1
from test_host_generic import run_cli
from turn_support import bound_goal

from capabilities.reward_memory.reports.route import BUILTIN_CASES, route_check
from conformance.public_safety import public_safety_violations

PILOT_READY = {
    "behavior": "confirmed_bug",
    "surfaces_touched": ["backend"],
    "semantic_contract_change": False,
    "generic_boundary_leakage": False,
    "edge_case_complexity": "medium",
    "reproduction_named": True,
    "validation_named": True,
    "change": {
        "user_visible": False,
        "hot_path_or_storage": False,
        "retrieval_quality_claim": False,
    },
    "evidence": {"effect": True, "ux": False, "performance": False, "benchmark": False},
}


def changed(**fields):
    document = copy.deepcopy(PILOT_READY)
    for key, value in fields.items():
        if isinstance(value, dict):
            document[key] = {**document[key], **value}
        else:
            document[key] = value
    return document


def cli(*args, stdin=""):
    result = run_cli(*args, stdin=stdin)
    return result.returncode, json.loads(result.stdout)


def test_the_built_in_generic_layer_regression_is_a_meta_design_gate():
    code, document = cli("reward-memory", "route-check", "--case", "pr-3237")
    assert (code, document["route"]) == (0, "meta_design_gate")
    assert set(document["meta_triggers"]) == {
        "behavior_by_design",
        "semantic_contract_change",
        "cross_surface_change",
        "generic_boundary_leakage",
        "high_edge_case_complexity",
    }
    # no retrieval or memory-quality claim, so no benchmark is asked for
    assert document["required_evidence"] == ["effect", "ux", "performance"]
    assert document["prior_memory_hit"] == {
        "present": True,
        "recommended_route": "pilot_fix",
        "applied_to_route": False,
    }
    assert "prior_memory_hit_cannot_change_route" in document["reason_codes"]


def test_a_bounded_confirmed_bug_with_its_evidence_is_a_pilot_fix():
    document = route_check(PILOT_READY)
    assert (document["route"], document["reason_codes"]) == (
        "pilot_fix",
        ["pilot_guards_satisfied"],
    )


@pytest.mark.parametrize(
    ("change", "needed", "missing"),
    [
        ({"user_visible": True}, ["effect", "ux"], ["ux"]),
        ({"hot_path_or_storage": True}, ["effect", "performance"], ["performance"]),
        ({"retrieval_quality_claim": True}, ["effect", "benchmark"], ["benchmark"]),
    ],
)
def test_evidence_is_required_only_where_it_is_relevant(change, needed, missing):
    document = route_check(changed(change=change))
    assert (document["route"], document["required_evidence"]) == ("hold_for_evidence", needed)
    assert document["missing_evidence"] == missing
    assert f"missing_{missing[0]}_evidence" in document["reason_codes"]


def test_missing_effect_evidence_or_an_unnamed_validation_holds_the_change():
    assert route_check(changed(evidence={"effect": False}))["route"] == "hold_for_evidence"
    held = route_check(changed(validation_named=False))
    assert (held["route"], held["reason_codes"]) == ("hold_for_evidence", ["validation_not_named"])


@pytest.mark.parametrize(
    ("fields", "trigger"),
    [
        ({"behavior": "by_design"}, "behavior_by_design"),
        ({"behavior": "uncertain"}, "behavior_uncertain"),
        ({"semantic_contract_change": True}, "semantic_contract_change"),
        ({"surfaces_touched": ["backend", "ui"]}, "cross_surface_change"),
        ({"generic_boundary_leakage": True}, "generic_boundary_leakage"),
        ({"edge_case_complexity": "high"}, "high_edge_case_complexity"),
    ],
)
def test_each_meta_trigger_alone_sends_the_change_to_the_design_gate(fields, trigger):
    document = route_check(changed(**fields))
    assert (document["route"], document["meta_triggers"]) == ("meta_design_gate", [trigger])


@pytest.mark.parametrize("recommended", ["pilot_fix", "hold_for_evidence", "meta_design_gate"])
def test_a_prior_memory_hit_never_moves_the_route(recommended):
    for base in (PILOT_READY, changed(behavior="by_design"), changed(validation_named=False)):
        document = route_check({**base, "prior_memory_hit": {"recommended_route": recommended}})
        assert document["route"] == route_check(base)["route"]
        assert document["prior_memory_hit"]["applied_to_route"] is False


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({**PILOT_READY, "extra": 1}, "unknown_key"),
        ({k: v for k, v in PILOT_READY.items() if k != "behavior"}, "missing_key"),
        (changed(behavior="probably"), "invalid_request"),
        (changed(surfaces_touched=[]), "invalid_request"),
        (changed(change={"user_visible": "yes"}), "invalid_request"),
        ({**PILOT_READY, "schema_version": "v9"}, "schema_version_unsupported"),
        ([], "invalid_request"),
    ],
)
def test_malformed_route_input_is_a_typed_error_with_exit_2(tmp_path, document, reason):
    source = tmp_path / "change.json"
    source.write_text(json.dumps(document))
    code, error = cli("reward-memory", "route-check", "--input", str(source))
    assert (code, error["ok"], error["reason_code"]) == (2, False, reason)


def test_route_check_usage_errors(tmp_path):
    source = tmp_path / "bad.json"
    source.write_text("{not json")
    assert cli("reward-memory", "route-check", "--input", str(source))[1]["reason_code"] == (
        "input_not_json"
    )
    assert cli("reward-memory", "route-check")[1]["reason_code"] == "usage_invalid"
    both = cli("reward-memory", "route-check", "--case", "pr-3237", "--input", str(source))
    assert both[1]["reason_code"] == "usage_invalid"
    assert cli("reward-memory", "route-check", "--case", "nope")[1]["reason_code"] == "case_unknown"
    assert set(BUILTIN_CASES) == {"pr-3237"}


def test_the_corpus_registry_is_public_safe_and_complete(tmp_path):
    registry = bound_goal(tmp_path)
    args = ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    code, document = cli("reward-memory", "corpus-registry", *args)
    assert code == 0 and not public_safety_violations(document)
    [row] = document["corpora"]
    assert row == {
        "corpus_id": "experience",
        "class_id": "procedural_experience",
        "owner_ref": "owner:demo",
        "source_of_truth": "validated_turn_outcomes",
        "read_authority": "actor_scoped",
        "write_authority": "provider_managed",
        "freshness_mode": "source_truth_bound",
        "lifecycle_state": "active",
        "retirement_authority": "owner:demo",
        "scope_isolation": "private_peer",
        "visibility": "private",
        "provider_id": "embedded_sqlite",
        "provider_scope_ref_digest": f1.corpus()["provider_scope_ref_digest"],
        "recall_surfaces": [f1.SURFACE],
        "ingest_surfaces": [f1.SURFACE],
        "automatic_recall": True,
        "automatic_ingest": True,
    }
    assert not (tmp_path / "repo" / ".local").exists(), "a read model writes nothing"
    markdown = run_cli("reward-memory", "corpus-registry", *args, "--format", "markdown", stdin="")
    # Seventeen fields are a key/value section per corpus, not a one-row table.
    assert "### corpora: experience\n" in markdown.stdout
    assert "| class_id | procedural_experience |\n| owner_ref | owner:demo |" in markdown.stdout


@pytest.mark.parametrize("command", ["corpus-registry", "health-check"])
def test_read_models_on_a_bad_binding_are_typed_errors(tmp_path, command):
    registry = bound_goal(tmp_path)
    code, error = cli(
        "reward-memory",
        command,
        "--registry",
        str(registry),
        "--goal-id",
        "other",
        "--agent-id",
        f1.AGENT,
    )
    assert (code, error["reason_code"]) == (2, "goal_not_found")
    code, error = cli("reward-memory", command, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    assert (code, error["reason_code"]) == (2, "registry_missing")


def test_a_disabled_binding_lists_no_corpora_and_says_why(tmp_path):
    registry = bound_goal(tmp_path)
    document = json.loads(registry.read_text())
    document["goals"][0]["control_plane"]["reward_memory"]["enabled"] = False
    registry.write_text(json.dumps(document))
    args = ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    for command in ("corpus-registry", "health-check"):
        code, report = cli("reward-memory", command, *args)
        assert (code, report["binding_status"], report["corpora"]) == (0, "disabled", [])


def test_architecture_is_derived_from_the_code_and_public_safe():
    from capabilities.reward_memory.contract.corpus import CLASS_IDS

    code, document = cli("reward-memory", "architecture")
    assert code == 0 and not public_safety_violations(document)
    assert [c["class_id"] for c in document["classes"]] == list(CLASS_IDS)
    assert all(c["grants_action_authority"] is False for c in document["classes"])
    assert document["utility_precedence"]["evidence_bases_weakest_first"][-1] == "owner_correction"
    assert document["delegation"]["prior_memory_hit_can_change_route"] is False
    assert {s["stage"] for s in document["stages"] if not s["implemented"]} == {"5"}
    durable = [c["class_id"] for c in document["classes"] if c["durable_recall_and_ingest"]]
    assert durable == ["hard_policy", "soft_preference", "procedural_experience"]
