"""The Codex App hands over the application answer at refresh; finalize settles it.

The App's Turn recalled memories through its UserPromptSubmit hook, under the App's
turn id; its refresh passes the model's answer with ``--reward-memory-application-json``
and the spend's readback settles it, with the Turn's verdict, like every other host.
"""

from __future__ import annotations

import json
import sys

import pytest
from fixtures import f1
from test_codex_app import app
from test_turn_recall import contribution, learn
from turn_support import bound_goal, resolution, turn

from capabilities.reward_memory.turn.app_application import APPLICATION_STAGE_DIR
from capabilities.reward_memory.utility.ledger import ledgers_of
from turn_hooks import call_pre_turn, make_plugin_manager

PROMPT = "a change touches one module"
APP_TURN = "turn-2026-01"
PASSING = json.dumps([sys.executable, "-c", "pass"])
FAILING = json.dumps([sys.executable, "-c", "import sys; sys.exit(1)"])


def recalled_ref(registry):
    """PreTurn of the App's turn, as its UserPromptSubmit hook runs it."""
    pm = make_plugin_manager()  # the installed plugins, reward memory among them
    outcome = call_pre_turn(pm, turn(registry, APP_TURN, prompt=PROMPT))
    [guidance] = contribution(outcome).context_fields["reward_memory_recall"]["context"]["guidance"]
    return guidance["candidate_ref"]


def answer(ref, outcome="applied"):
    return json.dumps({"outcome": outcome, "memory_refs": [ref], "reasoning_summary": "used it"})


def staged_answers(registry):
    root = registry.parent / "repo" / ".local" / "turn-hooks" / APPLICATION_STAGE_DIR
    return sorted(root.rglob("*.json"))


def test_an_applied_memory_without_a_reflection_is_settled_at_the_spend(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    learn(registry)
    ref = recalled_ref(registry)
    code, refreshed = app(
        capsys,
        registry,
        "refresh-state",
        "--reward-memory-application-json",
        answer(ref),
        reflection=None,
        validator=PASSING,
    )
    assert code == 0 and refreshed["stage"]["status"] == "no_eligible_evidence"
    [sidecar] = staged_answers(registry)
    assert sidecar.stat().st_mode & 0o777 == 0o600
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    settled = spent["finalize"]["memory_application"]
    assert (settled["application_outcome"], settled["outcome_status"]) == ("applied", "passed")
    assert settled["observation_status"] == "observed"
    assert ref not in json.dumps(spent), "the public receipt holds digests only"
    store = resolution(registry).sidecars
    [projection] = ledgers_of(store, f1.GOAL, f1.AGENT)
    [subject] = store.read(projection)["subjects"]
    assert subject["attribution_level"] == "set"


def test_the_answer_beside_a_reflection_takes_the_reflections_verdict(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    learn(registry)
    ref = recalled_ref(registry)
    app(capsys, registry, "refresh-state", "--reward-memory-application-json", answer(ref))
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    final = spent["finalize"]
    assert final["status"] == "activated"
    assert final["memory_application"]["outcome_status"] == "passed"


def test_a_failing_validator_is_a_failed_outcome(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    learn(registry)
    ref = recalled_ref(registry)
    app(
        capsys,
        registry,
        "refresh-state",
        "--reward-memory-application-json",
        answer(ref),
        reflection=None,
        validator=FAILING,
    )
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    assert spent["finalize"]["memory_application"]["outcome_status"] == "failed"


def test_a_silent_model_beside_a_reflection_is_available_not_applied(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    learn(registry)
    recalled_ref(registry)
    app(capsys, registry, "refresh-state")
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    settled = spent["finalize"]["memory_application"]
    assert settled["application_outcome"] == "available_not_applied"


@pytest.mark.parametrize("extra", [["--reward-memory-application-json", "x" * 601]])
def test_an_answer_over_its_bound_is_a_typed_error_that_writes_nothing(capsys, tmp_path, extra):
    registry = bound_goal(tmp_path)
    code, document = app(capsys, registry, "refresh-state", *extra)
    assert code == 2 and document["reason_code"] == "application_answer_too_large"
    assert not staged_answers(registry)
    assert not (
        registry.parent / "repo" / ".local" / "turn-hooks" / "codex-app-settlements"
    ).exists()
