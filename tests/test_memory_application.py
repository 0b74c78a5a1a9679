"""Application receipts from real Turns and the observations they lead to (issue 39).

Through the plugin's real hooks on the real embedded store: a Turn that recalled
memories is asked which it used; settlement binds the answer to the recall and to the
validator's verdict, and without an evaluator records lineage that moves nothing.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
from fixtures import f1
from test_turn_recall import contribution, learn
from turn_support import ROOT, bound_goal, evidence, ingest_memory, resolution, turn

from capabilities.reward_memory.plugin import RewardMemoryPlugin
from capabilities.reward_memory.turn.application import (
    APPLICATION_INSTRUCTION,
    FIELD,
    application_path,
    read_answer,
)
from capabilities.reward_memory.utility.ledger import ledgers_of
from conformance.public_safety import public_safety_violations
from turn_hooks import (
    Settlement,
    SettlementEvidence,
    call_post_settlement,
    call_pre_turn,
)

PROMPT = "a change touches one module"
_RAW_TEXTS = (
    f1.REFLECTION["content_summary"],
    f1.REFLECTION["experience"]["future_behavior"]["action"],
    f1.GOAL,
)
HOOK = "reward-memory.outcome-ingest"


@pytest.fixture
def plugin_pm(pm):
    pm.register(RewardMemoryPlugin(), name="reward_memory")
    return pm


def _settle(pm, registry, turn_id, answer, *, status="passed"):
    proof = evidence()
    proof["task_validation"] = {"ok": status == "passed", "status": status}
    settlement = Settlement(
        host_result={"reward_memory_reflection_json": "", FIELD: answer},
        evidence=SettlementEvidence(**{k: v for k, v in proof.items() if k != "schema_version"}),
    )
    receipt = call_post_settlement(pm, turn(registry, turn_id, prompt=PROMPT), settlement)
    return receipt["results"][HOOK]


def _recalled(pm, registry, turn_id="turn-2"):
    outcome = call_pre_turn(pm, turn(registry, turn_id, prompt=PROMPT))
    [guidance] = contribution(outcome).context_fields["reward_memory_recall"]["context"]["guidance"]
    return contribution(outcome), guidance["candidate_ref"]


def test_nothing_is_asked_when_nothing_was_recalled(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    item = contribution(call_pre_turn(plugin_pm, turn(registry, "turn-1", prompt=PROMPT)))
    assert APPLICATION_INSTRUCTION not in item.instructions
    assert FIELD not in item.result_fields
    result = _settle(plugin_pm, registry, "turn-1", "")
    assert "memory_application" not in result


def test_the_question_costs_a_few_hundred_bytes():
    assert len(APPLICATION_INSTRUCTION.encode()) <= 300


def test_an_applied_memory_and_a_passing_validator_give_an_unknown_set_observation(
    tmp_path, plugin_pm
):
    registry = bound_goal(tmp_path)
    learn(registry)
    item, ref = _recalled(plugin_pm, registry)
    assert APPLICATION_INSTRUCTION in item.instructions and FIELD in item.result_fields
    answer = {"outcome": "applied", "memory_refs": [ref], "reasoning_summary": "ran it first"}
    result = _settle(plugin_pm, registry, "turn-2", json.dumps(answer))
    application = result["memory_application"]
    assert application["application_outcome"] == "applied"
    assert application["outcome_status"] == "passed"
    assert application["observation_status"] == "observed"
    # Applied + success does not prove helpful: lineage, no direction.
    assert (application["utility_label"], application["evidence_basis"]) == (
        "unknown",
        "insufficient",
    )
    [digest] = application["memory_ref_digests"]
    assert len(digest) == 16
    text = json.dumps(application)
    assert ref not in text and str(tmp_path) not in text and f1.GOAL not in text
    assert not public_safety_violations(application, raw_texts=_RAW_TEXTS)
    store = resolution(registry).sidecars
    [projection_path] = ledgers_of(store, f1.GOAL, f1.AGENT)
    projection = store.read(projection_path)
    [subject] = projection["subjects"]
    assert subject["utility_estimate"] == 0.0 and subject["attribution_level"] == "set"
    record = store.read(application_path(store, f1.GOAL, f1.AGENT, _application_id(store)))
    assert record["receipt"]["retrieval_snapshot_ref"].startswith("rsnap_")
    assert record["verified_outcome"]["outcome_status"] == "passed"


def _application_id(store):
    [path] = list(store.iter_documents("reward-memory-applications", *_parts()))
    return store.read(path)["receipt"]["application_id"]


def _parts():
    from sidecars import goal_agent_parts

    return goal_agent_parts("", f1.GOAL, f1.AGENT)[1:]


def test_a_silent_model_gives_available_not_applied_and_no_observation(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    learn(registry)
    _recalled(plugin_pm, registry)
    application = _settle(plugin_pm, registry, "turn-2", "")["memory_application"]
    assert application["application_outcome"] == "available_not_applied"
    assert application["observation_status"] == "not_observed"
    assert ledgers_of(resolution(registry).sidecars, f1.GOAL, f1.AGENT) == []


@pytest.mark.parametrize("status", ["inconclusive", "unavailable"])
def test_an_inconclusive_verdict_is_no_outcome(tmp_path, plugin_pm, status):
    registry = bound_goal(tmp_path)
    learn(registry)
    _, ref = _recalled(plugin_pm, registry)
    answer = json.dumps({"outcome": "applied", "memory_refs": [ref]})
    application = _settle(plugin_pm, registry, "turn-2", answer, status=status)[
        "memory_application"
    ]
    assert application["outcome_status"] == "no_outcome"
    assert application["reason_code"] == "no_verified_outcome"
    assert ledgers_of(resolution(registry).sidecars, f1.GOAL, f1.AGENT) == []
    if status == "inconclusive":
        # The validator runs again; its conclusive verdict still makes the observation.
        later = _settle(plugin_pm, registry, "turn-2", answer)["memory_application"]
        assert (later["outcome_status"], later["observation_status"]) == ("passed", "observed")


def test_a_failed_verdict_is_kept_apart_from_a_passed_one(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    learn(registry)
    _recalled(plugin_pm, registry)
    answer = json.dumps({"outcome": "refuted", "memory_refs": ["[memory 1]"]})
    application = _settle(plugin_pm, registry, "turn-2", answer, status="failed")[
        "memory_application"
    ]
    assert (application["application_outcome"], application["outcome_status"]) == (
        "refuted",
        "failed",
    )
    assert application["observation_status"] == "observed"


@pytest.mark.parametrize(
    "answer",
    [
        '{"outcome": "applied", "memory_refs": ["candidate:not-recalled"]}',
        '{"outcome": "used", "memory_refs": ["[memory 1]"]}',
        "not json",
    ],
)
def test_an_answer_that_breaks_the_contract_is_failed(tmp_path, plugin_pm, answer):
    registry = bound_goal(tmp_path)
    learn(registry)
    _recalled(plugin_pm, registry)
    application = _settle(plugin_pm, registry, "turn-2", answer)["memory_application"]
    assert application["application_outcome"] == "failed"
    assert application["memory_ref_digests"] == []


def test_the_reader_is_tolerant_about_presentation():
    read = read_answer('```json\n{"outcome": "Applied", "memory_refs": "candidate:a"}\n```')
    assert read == {"outcome": "applied", "memory_refs": ["candidate:a"], "reasoning_summary": ""}
    assert read_answer("   ") is None


def _order(pm, registry, turn_id):
    outcome = call_pre_turn(pm, turn(registry, turn_id, prompt=PROMPT))
    context = contribution(outcome).context_fields["reward_memory_recall"]["context"]
    return [g["candidate_ref"] for g in context["guidance"]]


def _cli(capsys, *argv):
    from hosts.cli import command as cli

    code = cli.main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_the_loop_closes_an_owner_rating_demotes_a_memory_only_with_utility_ranking(
    tmp_path, plugin_pm, capsys
):
    from capabilities.reward_memory.turn.settings import set_ranking

    registry = bound_goal(tmp_path)
    learn(registry)
    ingest_memory(registry, "turn-0002", "evidence:ci-run-18")
    binding = ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    first, second = _order(plugin_pm, registry, "turn-2")
    answer = {"outcome": "applied", "memory_refs": [first], "reasoning_summary": "it fit"}
    application = _settle(plugin_pm, registry, "turn-2", json.dumps(answer))["memory_application"]
    assert application["observation_status"] == "observed"

    _code, listing = _cli(capsys, "memory", "list", *binding)
    by_candidate = {}
    for row in listing["records"]:
        _c, shown = _cli(capsys, "memory", "show", row["memory_ref"], *binding)
        by_candidate[shown["record"]["candidate_ref"]] = (row["memory_ref"], shown)
    ref, shown = by_candidate[first]
    utility = shown["utility"]
    assert utility["application_count"] == 1 and utility["item"] is None
    [lineage] = utility["sets"]
    assert (lineage["label"], lineage["evidence_basis"]) == ("unknown", "insufficient")

    code, rated = _cli(
        capsys, "memory", "rate", ref, "harmful", "--reason", "it misled the fix", *binding
    )
    assert (code, rated["status"], rated["exact_readback_verified"]) == (0, "recorded", True)
    assert "it misled" not in json.dumps(rated)
    assert not public_safety_violations(rated, raw_texts=_RAW_TEXTS)
    item = rated["utility"]["item"]
    assert (item["label"], item["evidence_basis"], item["estimate"]) == (
        "harmful",
        "owner_correction",
        -1.0,
    )
    assert rated["utility"]["review_proposals"][0]["proposed_action"] == "attenuate_or_review"
    # A retry of the same rating at the same instant is the same observation.
    _code, listing = _cli(capsys, "memory", "list", *binding)
    assert listing["utility_review_count"] == 1
    assert [r["utility_review"] for r in listing["records"] if r["memory_ref"] == ref] == [
        "attenuate_or_review"
    ]
    assert all(r["state"] == "active" for r in listing["records"]), "never a deletion"

    # Relevance alone (the default): the rating changes nothing.
    assert _order(plugin_pm, registry, "turn-3") == [first, second]
    store = resolution(registry).sidecars
    assert set_ranking(store, f1.GOAL, f1.AGENT, "utility") is True
    assert _order(plugin_pm, registry, "turn-4") == [second, first]
    receipt = store.read(store.path("agent-turn-recall", *_parts()[:1], _parts()[1] + ".json"))
    assert {"memory_ref_digest": rated["memory_ref_digest"], "modifier": 0.5} in receipt["ranking"][
        "modifiers"
    ]
    _code, status = _cli(capsys, "status", *binding)
    assert status["binding"]["ranking"] == "utility"
    assert status["binding"]["utility_review_count"] == 1


def test_a_memory_no_turn_applied_cannot_be_rated(tmp_path, capsys):
    registry = bound_goal(tmp_path)
    learn(registry)
    binding = ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    _code, listing = _cli(capsys, "memory", "list", *binding)
    [row] = listing["records"]
    code, refused = _cli(
        capsys, "memory", "rate", row["memory_ref"], "helpful", "--reason", "x", *binding
    )
    assert code == 2 and refused["reason_code"] == "memory_application_unknown"


def test_the_re_rank_only_reorders_what_the_search_found():
    from capabilities.providers.base import Hit
    from capabilities.reward_memory.contract.identities import memory_ref_digest
    from capabilities.reward_memory.turn.ranking import UtilityRanked

    class Found:
        provider_id = "fake"

        def search(self, scope_ref, query, **options):
            return [Hit("viking://a", 2.0, "a"), Hit("viking://b", 2.0, "b")]

    factors = {
        memory_ref_digest("viking://a"): 0.5,
        memory_ref_digest("viking://unrelated"): 1.25,  # below the floor: never found
    }
    audit = []
    hits = UtilityRanked(Found(), factors, audit).search("scope", "q", limit=3)
    assert [hit.uri for hit in hits] == ["viking://b", "viking://a"]
    assert audit == [
        {"memory_ref_digest": memory_ref_digest("viking://b"), "modifier": 1.0},
        {"memory_ref_digest": memory_ref_digest("viking://a"), "modifier": 0.5},
    ]
    assert not hasattr(UtilityRanked(Found(), factors, []), "search_read")


REFERENCE = [sys.executable, "-m", "capabilities.reward_memory.utility.reference_evaluator"]


def _declare(registry, argv):
    from capabilities.reward_memory.turn.settings import set_setting

    store = resolution(registry).sidecars
    set_setting(store, f1.GOAL, f1.AGENT, "utility_evaluator", {"argv": argv})


def test_the_reference_evaluator_speaks_the_protocol_through_a_real_settlement(
    tmp_path, plugin_pm, monkeypatch
):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    registry = bound_goal(tmp_path)
    learn(registry)
    _declare(registry, REFERENCE)
    _item, ref = _recalled(plugin_pm, registry)
    answer = json.dumps({"outcome": "applied", "memory_refs": [ref]})
    application = _settle(plugin_pm, registry, "turn-2", answer)["memory_application"]
    assert application["observation_status"] == "observed" and application["reason_code"] is None
    assert (application["utility_label"], application["evidence_basis"]) == (
        "helpful",
        "evaluator_inference",
    )
    # A retry of the settlement adds nothing: the Turn's recall was read once.
    again = _settle(plugin_pm, registry, "turn-2", answer)
    assert "memory_application" not in again
    store = resolution(registry).sidecars
    [path] = ledgers_of(store, f1.GOAL, f1.AGENT)
    assert store.read(path)["accepted_observation_count"] == 1


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["sh", "-c", "exit 3"], "utility_evaluator_failed"),
        (["sh", "-c", "echo not-json"], "utility_evaluator_malformed"),
        (["sh", "-c", "cat >/dev/null; echo '{}'"], "observation_malformed"),
        (["/nonexistent/evaluator"], "utility_evaluator_unavailable"),
    ],
)
def test_a_broken_evaluator_fails_open_to_the_lineage_observation(
    tmp_path, plugin_pm, argv, reason
):
    registry = bound_goal(tmp_path)
    learn(registry)
    _declare(registry, argv)
    _item, ref = _recalled(plugin_pm, registry)
    answer = json.dumps({"outcome": "applied", "memory_refs": [ref]})
    application = _settle(plugin_pm, registry, "turn-2", answer)["memory_application"]
    assert application["reason_code"] == reason
    assert (application["observation_status"], application["utility_label"]) == (
        "observed",
        "unknown",
    )


def test_the_reference_evaluator_keeps_several_memories_at_set_level():
    from capabilities.reward_memory.utility.reference_evaluator import propose

    facts = {
        "application_receipt": {
            "application_id": "a",
            "artifact_ref": "r",
            "outcome": "applied",
            "memory_ref_digests": ["bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa"],
        },
        "verified_outcome": {"outcome_ref": "o", "outcome_status": "passed"},
        "attribution_context": {
            "scope": {},
            "retrieval_snapshot_ref": "s",
            "policy_snapshot_ref": "p",
        },
    }
    proposal = propose(facts)
    assert (proposal["utility_label"], proposal["attribution_level"]) == ("unknown", "set")
    assert proposal["memory_ref_digests"] == ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"]


def test_a_host_that_does_not_settle_keeps_no_recall_behind(tmp_path, plugin_pm):
    from capabilities.reward_memory.turn.application import RECALL_DIR

    registry = bound_goal(tmp_path)
    learn(registry)
    outcome = call_pre_turn(plugin_pm, turn(registry, "turn-2", prompt=PROMPT, ingest=False))
    assert FIELD not in contribution(outcome).result_fields
    store = resolution(registry).sidecars
    assert list(store.iter_documents(RECALL_DIR, *_parts())) == []


@pytest.mark.parametrize(
    ("reason", "why"),
    [
        pytest.param(" ", "it is empty", id="blank"),
        pytest.param("see /etc/passwd", "local path", id="path"),
        pytest.param("key sk-ant-api03-" + "a" * 40, "secret", id="secret"),
    ],
)
def test_a_refused_reason_says_which_rule_it_broke(reason, why):
    from capabilities.reward_memory.contract import values as v

    with pytest.raises(v.RewardMemoryInputError) as raised:
        v.compact(reason, 500, "reason")
    assert raised.value.reason_code == "text_not_public_safe"
    assert why in str(raised.value)


UTILITY = "capabilities.reward_memory.utility"
SETTLEMENT_SIDE = (f"{UTILITY}.lineage", f"{UTILITY}.proposal", f"{UTILITY}.evaluator")
"""What only a settlement that observes imports: a PreTurn never needs it."""


def _hook_modules(registry, event, stdin):
    """The modules of the utility package one real cold hook process imported."""
    code = (
        "import sys; from hosts.cli.command import main; status = main(sys.argv[1:]); "
        f"print(sorted(m for m in sys.modules if m.startswith({UTILITY!r})), file=sys.stderr); "
        "sys.exit(status)"
    )
    binding = ("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry))
    result = subprocess.run(
        [sys.executable, "-c", code, "host", "generic", event, *binding],
        input=json.dumps({"cwd": str(registry.parent / "repo"), **stdin}),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("TURN_HOOKS_")},
    )
    return result.stdout, ast.literal_eval(result.stderr.strip().splitlines()[-1])


def test_the_loop_costs_a_turn_that_ranks_by_relevance_no_utility_import(tmp_path):
    # Issue 39, "Cost": the ledger, reducer and rank prior are import time a default
    # binding would pay on every Turn for nothing. PreTurn reads the ranking setting
    # and asks the question from modules that import none of them; a Stop imports
    # them only for a Turn whose recall it settles.
    registry = bound_goal(tmp_path)
    learn(registry)
    out, modules = _hook_modules(registry, "pre-turn", {"turn_id": "t1", "prompt": PROMPT})
    assert FIELD in out, "memories were recalled and the question asked"
    assert modules == []
    _, modules = _hook_modules(
        registry, "post-settlement", {"turn_id": "t9", "last_assistant_message": "done"}
    )
    assert modules == [], "a Turn that recalled nothing settles without the loop"


def test_utility_ranking_imports_the_rank_prior_and_not_the_settlement_side(tmp_path):
    from capabilities.reward_memory.turn.settings import set_ranking

    registry = bound_goal(tmp_path)
    learn(registry)
    set_ranking(resolution(registry).sidecars, f1.GOAL, f1.AGENT, "utility")
    out, modules = _hook_modules(registry, "pre-turn", {"turn_id": "t1", "prompt": PROMPT})
    assert FIELD in out
    assert f"{UTILITY}.rank_prior" in modules and f"{UTILITY}.ledger" in modules
    assert not set(SETTLEMENT_SIDE) & set(modules)
