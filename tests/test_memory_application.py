"""Application receipts from real Turns and the observations they lead to (issue 39).

Through the plugin's real hooks on the real embedded store: a Turn that recalled
memories is asked which it used; settlement binds the answer to the recall and to the
validator's verdict, and without an evaluator records lineage that moves nothing.
"""

from __future__ import annotations

import json

import pytest
from fixtures import f1
from test_turn_recall import contribution, learn
from turn_support import bound_goal, evidence, resolution, turn

from capabilities.reward_memory.plugin import RewardMemoryPlugin
from capabilities.reward_memory.turn.application import (
    APPLICATION_INSTRUCTION,
    FIELD,
    application_path,
    read_answer,
)
from capabilities.reward_memory.utility.ledger import ledgers_of
from turn_hooks import (
    Settlement,
    SettlementEvidence,
    call_post_settlement,
    call_pre_turn,
)

PROMPT = "a change touches one module"
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
