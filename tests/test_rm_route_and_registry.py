"""The pilot/meta route check and the corpus registry read model (issue 9)."""

from __future__ import annotations

import json

import pytest
from fixtures import f1
from test_host_generic import run_cli
from turn_support import bound_goal

from capabilities.reward_memory.contract.values import RewardMemoryInputError
from capabilities.reward_memory.reports.route import BUILTIN_CASES, builtin_case, route_check
from conformance.public_safety import public_safety_violations

# A bounded confirmed bug with its reproduction, validation and effect evidence.
PILOT_FLAGS = ("--named-reproduction", "--named-validation", "--effect-evidence")
PILOT_READY = {
    "behavior_status": "bug_confirmed",
    "surface_count": 1,
    "edge_case_complexity": "medium",
    **{
        name: False
        for name in (
            "semantic_contract_change",
            "generic_boundary_for_specific_policy",
            "user_visible_behavior_change",
            "hot_path_or_storage_change",
            "retrieval_or_memory_quality_claim",
            "ux_evidence",
            "benchmark_evidence",
            "performance_evidence",
        )
    },
    "named_reproduction": True,
    "named_validation": True,
    "effect_evidence": True,
}
# LoopX 2.1.1's bytes for `reward-memory route-check --case pr-3237 --format json`,
# recorded from the oracle: the packet's fields, values and key order all match.
PR_3237_UPSTREAM = (
    '{"ok":true,"schema_version":"reward_memory_pilot_meta_route_v0",'
    '"case_ref":"https://github.com/volcengine/OpenViking/pull/3237",'
    '"decision":"meta_design_gate","reason_codes":["semantics_by_design",'
    '"semantic_contract_change","cross_surface_change",'
    '"generic_boundary_for_specific_policy","high_edge_case_complexity",'
    '"missing_effect_evidence","missing_ux_evidence","missing_performance_evidence"],'
    '"required_evidence":["effect","ux","performance"],'
    '"missing_required_evidence":["effect","ux","performance"],'
    '"pilot_authorized":false,"meta_review_required":true,'
    '"route_check_role":"deterministic_guard_fixture_not_live_reasoner",'
    '"live_reasoning_required":true,"memory_patch_authority":false,'
    '"external_write_authorized":false,"raw_issue_or_memory_captured":false}'
)


def changed(**fields):
    return {**PILOT_READY, **fields}


def cli(*args, stdin=""):
    result = run_cli(*args, stdin=stdin)
    return result.returncode, json.loads(result.stdout)


def test_the_built_in_generic_layer_regression_is_upstreams_packet_byte_for_byte():
    result = run_cli("reward-memory", "route-check", "--case", "pr-3237", stdin="")
    assert (result.returncode, result.stdout.strip()) == (0, PR_3237_UPSTREAM)
    # As upstream, the built-in case is the whole observation: other flags are unread.
    again = run_cli("reward-memory", "route-check", "--case", "pr-3237", *PILOT_FLAGS, stdin="")
    assert again.stdout.strip() == PR_3237_UPSTREAM


def test_flags_left_out_describe_an_unevidenced_confirmed_bug_on_one_surface():
    code, document = cli("reward-memory", "route-check")
    assert (code, document["case_ref"], document["decision"]) == (
        0,
        "manual_observation",
        "hold_for_evidence",
    )
    assert document["reason_codes"] == [
        "missing_effect_evidence",
        "missing_named_reproduction",
        "missing_named_validation",
    ]
    assert list(document)[:4] == ["ok", "schema_version", "case_ref", "decision"]


def test_a_bounded_confirmed_bug_with_its_evidence_is_a_pilot_fix():
    code, document = cli("reward-memory", "route-check", *PILOT_FLAGS)
    assert (code, document["decision"], document["pilot_authorized"]) == (0, "pilot_fix", True)
    assert document["reason_codes"][4] == "edge_case_complexity_low"
    assert route_check(PILOT_READY)["reason_codes"] == [
        "confirmed_bug_semantics",
        "single_bounded_surface",
        "no_semantic_contract_change",
        "no_generic_boundary_for_specific_policy",
        "edge_case_complexity_medium",
        "reproduction_validation_and_relevant_evidence_present",
    ]


@pytest.mark.parametrize(
    ("change", "needed", "missing"),
    [
        ({"user_visible_behavior_change": True}, ["effect", "ux"], ["ux"]),
        ({"hot_path_or_storage_change": True}, ["effect", "performance"], ["performance"]),
        ({"retrieval_or_memory_quality_claim": True}, ["effect", "benchmark"], ["benchmark"]),
    ],
)
def test_evidence_is_required_only_where_it_is_relevant(change, needed, missing):
    document = route_check(changed(**change))
    assert (document["decision"], document["required_evidence"]) == ("hold_for_evidence", needed)
    assert document["missing_required_evidence"] == missing
    assert document["reason_codes"] == [f"missing_{missing[0]}_evidence"]


def test_the_benchmark_is_listed_before_performance_as_upstream_orders_them():
    every = changed(
        user_visible_behavior_change=True,
        hot_path_or_storage_change=True,
        retrieval_or_memory_quality_claim=True,
    )
    assert route_check(every)["required_evidence"] == ["effect", "ux", "benchmark", "performance"]


def test_missing_effect_evidence_or_an_unnamed_validation_holds_the_change():
    held = route_check(changed(effect_evidence=False, named_reproduction=False))
    assert (held["decision"], held["reason_codes"]) == (
        "hold_for_evidence",
        ["missing_effect_evidence", "missing_named_reproduction"],
    )
    held = route_check(changed(named_validation=False))
    assert held["reason_codes"] == ["missing_named_validation"]


@pytest.mark.parametrize(
    ("fields", "trigger"),
    [
        ({"behavior_status": "by_design"}, "semantics_by_design"),
        ({"behavior_status": "uncertain"}, "semantics_uncertain"),
        ({"semantic_contract_change": True}, "semantic_contract_change"),
        ({"surface_count": 2}, "cross_surface_change"),
        ({"generic_boundary_for_specific_policy": True}, "generic_boundary_for_specific_policy"),
        ({"edge_case_complexity": "high"}, "high_edge_case_complexity"),
    ],
)
def test_each_meta_trigger_alone_sends_the_change_to_the_design_gate(fields, trigger):
    document = route_check(changed(**fields, named_validation=False))
    # At the design gate an unnamed validation is not a reason; missing evidence is.
    assert (document["decision"], document["reason_codes"]) == ("meta_design_gate", [trigger])
    assert document["meta_review_required"] is True


@pytest.mark.parametrize("count", ["0", "21", "-1"])
def test_a_surface_count_outside_1_to_20_is_a_typed_error_with_exit_2(count):
    code, error = cli("reward-memory", "route-check", "--surface-count", count)
    assert (code, error["ok"], error["status"], error["field"]) == (
        2,
        False,
        "invalid_request",
        "surface_count",
    )


@pytest.mark.parametrize(
    "args",
    [("--surface-count", "x"), ("--behavior-status", "confirmed_bug"), ("--case", "nope")],
)
def test_route_check_usage_errors(args):
    code, error = cli("reward-memory", "route-check", *args)
    assert (code, error["reason_code"]) == (2, "usage_invalid")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"behavior_status": "probably"}, "behavior_status"),
        ({"edge_case_complexity": 1}, "edge_case_complexity"),
        ({"surface_count": True}, "surface_count"),
        ({"surface_count": 1.0}, "surface_count"),
        ({"named_validation": 1}, "named_validation"),
    ],
)
def test_an_ill_typed_observation_from_inside_the_package_is_a_typed_error(fields, field):
    with pytest.raises(RewardMemoryInputError) as raised:
        route_check(changed(**fields))
    assert raised.value.field == field


def test_the_built_in_cases_are_copies_and_an_unknown_one_is_refused():
    assert set(BUILTIN_CASES) == {"pr-3237"}
    builtin_case("pr-3237")["surface_count"] = 9
    assert BUILTIN_CASES["pr-3237"]["surface_count"] == 2
    with pytest.raises(RewardMemoryInputError) as raised:
        builtin_case("nope")
    assert raised.value.reason_code == "case_unknown"


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
