"""The kernel contains a plugin that exits, prints or hangs (issue 13, later run).

A plugin's ``sys.exit`` used to end the hook process, its ``print`` to land in the
host's stdout protocol, and a sleep to hold the Turn until the host killed the hook.
Each misbehaving plugin (tests/fixtures/misbehaving.py) is loaded into real hook
processes with ``TURN_HOOKS_PLUGINS``, beside reward memory, which must still work.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from fixtures.misbehaving import LEAK
from turn_support import bound_goal, hook_argv, reflection_message, run_process

from turn_hooks import (
    ContextRegistration,
    ContextResult,
    Settlement,
    SettlementEvidence,
    SettlementRegistration,
    call_post_settlement,
    call_pre_turn,
    hookimpl,
)
from turn_hooks._calling import HOOK_DEADLINE_SECONDS, hook_deadline
from turn_hooks._names import ENV_HOOK_DEADLINE as DEADLINE_ENV

TESTS = Path(__file__).parent
INGEST = "reward-memory.outcome-ingest"


def load(monkeypatch, how):
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", f"fixtures.misbehaving:{how}")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )
    if how == "sleeps":
        # Short enough for the test, long enough for reward memory's own cold start.
        monkeypatch.setenv(DEADLINE_ENV, "4")


def logged():
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    entries = json.loads(path.read_text())["entries"] if path.exists() else []
    return [(entry["source"], entry["reason_code"]) for entry in entries]


REASONS = {"exits": "hook_exited", "sleeps": "hook_deadline_exceeded"}


@pytest.mark.parametrize("how", ["exits", "sleeps"])
def test_a_plugin_that_exits_or_hangs_costs_the_turn_only_its_own_contribution(
    tmp_path, monkeypatch, how
):
    load(monkeypatch, how)
    registry = bound_goal(tmp_path)
    event = {"turn_id": "t1", "prompt": "how do I fix the tests?", "cwd": str(tmp_path / "repo")}
    pre = run_process(hook_argv(registry, "pre-turn"), json.dumps(event))
    assert pre.returncode == 0
    assert "additional_context" in json.loads(pre.stdout), "the other plugins still answered"
    assert (f"fixtures.misbehaving:{how}", REASONS[how]) in logged()

    event = {
        "turn_id": "t1",
        "cwd": str(tmp_path / "repo"),
        "last_assistant_message": reflection_message(),
    }
    post = run_process(hook_argv(registry), json.dumps(event))
    receipt = json.loads(post.stdout)
    assert post.returncode == 0
    failed = receipt["results"][f"misbehaving.{how}.settlement"]
    assert (failed["status"], failed["reason_code"]) == ("runtime_unavailable", REASONS[how])
    assert receipt["results"][INGEST]["status"] == "activated", "reward memory still learned"


@pytest.mark.parametrize("event", ["pre-turn", "post-settlement"])
def test_a_plugin_writing_to_stdout_never_reaches_the_host_protocol(tmp_path, monkeypatch, event):
    load(monkeypatch, "prints")
    registry = bound_goal(tmp_path)
    document = {"turn_id": "t1", "prompt": "p", "last_assistant_message": reflection_message()}
    document["cwd"] = str(tmp_path / "repo")
    # Settled in the hook itself: a settler's streams are /dev/null, and this checks
    # where the hook process puts a plugin's stdout.
    monkeypatch.setenv("TURN_HOOKS_SETTLE", "inline")
    result = run_process(hook_argv(registry, event), json.dumps(document))
    assert result.returncode == 0
    assert LEAK not in result.stdout
    json.loads(result.stdout)  # one host JSON document and nothing else
    assert result.stderr.count(LEAK) == 2, "print and the raw descriptor both went to stderr"


class Exiting:
    """In-process: the dispatchers themselves contain ``SystemExit``."""

    registrations = {
        "pre_turn": ContextRegistration(hook_id="test.exiting", capability_id="test"),
        "post_settlement": SettlementRegistration(hook_id="test.exiting.s", capability_id="test"),
    }

    @hookimpl
    def pre_turn(self, turn):
        raise SystemExit(0)

    @hookimpl
    def post_settlement(self, turn, settlement):
        raise GeneratorExit


def test_dispatchers_turn_base_exceptions_into_typed_failures(pm, turn):
    pm.register(Exiting(), name="exiting")
    outcome = call_pre_turn(pm, turn)
    assert [(f.hook_id, f.reason_code) for f in outcome.failures] == [
        ("test.exiting", "hook_exited")
    ]
    settlement = Settlement(
        host_result={},
        evidence=SettlementEvidence(task_validation={}, writeback={}, quota_spend=None),
    )
    receipt = call_post_settlement(pm, turn, settlement)
    result = receipt["results"]["test.exiting.s"]
    assert (result["status"], result["reason_code"]) == ("runtime_unavailable", "hook_raised")


class Interrupted:
    registrations = {
        "pre_turn": ContextRegistration(hook_id="test.interrupted", capability_id="test"),
    }

    @hookimpl
    def pre_turn(self, turn):
        raise KeyboardInterrupt


def test_a_keyboard_interrupt_is_not_swallowed(pm, turn):
    pm.register(Interrupted(), name="interrupted")
    with pytest.raises(KeyboardInterrupt):
        call_pre_turn(pm, turn)


class Raising:
    registrations = {
        "pre_turn": ContextRegistration(hook_id="test.raising", capability_id="test"),
    }

    @hookimpl
    def pre_turn(self, turn):
        raise GeneratorExit


class Hanging:
    registrations = {
        "pre_turn": ContextRegistration(hook_id="test.hanging", capability_id="test"),
    }

    def __init__(self):
        self.release = threading.Event()

    @hookimpl
    def pre_turn(self, turn):
        self.release.wait(60)
        return ContextResult(instructions=["too late"])


def test_other_base_exceptions_and_a_missed_deadline_are_typed(pm, turn, monkeypatch):
    monkeypatch.setenv(DEADLINE_ENV, "0.2")
    hanging = Hanging()
    pm.register(Raising(), name="raising")
    pm.register(hanging, name="hanging")
    try:
        outcome = call_pre_turn(pm, turn)
    finally:
        hanging.release.set()
    assert sorted((f.hook_id, f.reason_code) for f in outcome.failures) == [
        ("test.hanging", "hook_deadline_exceeded"),
        ("test.raising", "hook_raised"),
    ]
    assert outcome.contributions == ()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, HOOK_DEADLINE_SECONDS),
        ("", HOOK_DEADLINE_SECONDS),
        ("0.5", 0.5),
        ("999", HOOK_DEADLINE_SECONDS),
        ("0", HOOK_DEADLINE_SECONDS),
        ("-1", HOOK_DEADLINE_SECONDS),
        ("nan", HOOK_DEADLINE_SECONDS),
        ("soon", HOOK_DEADLINE_SECONDS),
    ],
    ids=["unset", "empty", "shorter", "longer", "zero", "negative", "nan", "not-a-number"],
)
def test_the_deadline_can_only_be_shortened(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(DEADLINE_ENV, raising=False)
    else:
        monkeypatch.setenv(DEADLINE_ENV, value)
    assert hook_deadline() == expected
