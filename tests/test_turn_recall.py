"""PreTurn: the recall packet, the automation gate and the 64 KiB rule (turn-lifecycle §4-§6)."""

from __future__ import annotations

import json

import pytest
from fixtures import f1
from rm_support import UNAVAILABLE
from turn_support import RAW, bound_goal, evidence, resolution, store_provider, turn

from capabilities.reward_memory.plugin import RewardMemoryPlugin
from capabilities.reward_memory.turn.application import APPLICATION_INSTRUCTION
from capabilities.reward_memory.turn.application import FIELD as APPLICATION_FIELD
from capabilities.reward_memory.turn.host_view import guidance_items, with_capability_flags
from capabilities.reward_memory.turn.journal import journal_files_of
from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open
from capabilities.reward_memory.turn.pre_turn import (
    GUIDANCE_INSTRUCTION,
    REFLECTION_INSTRUCTION,
    RESULT_FIELD,
    automation_enabled,
    memory_contribution,
)
from hosts.facts.render import render_context
from turn_hooks import (
    ContextItem,
    ContextRegistration,
    TurnContext,
    call_pre_turn,
    hookimpl,
    measure_result_bytes,
    project_contributions,
)

SLOT = "reward_memory_recall"


@pytest.fixture
def plugin_pm(pm):
    pm.register(RewardMemoryPlugin(), name="reward_memory")
    return pm


def learn(registry):
    receipt = run_turn_ingest_fail_open(
        resolution(registry),
        turn_key="turn-0001",
        host_result={"reward_memory_reflection_json": RAW},
        evidence=evidence(),
        provider_for=lambda binding: store_provider(registry),
        observed_at=f1.OBSERVED_AT,
    )
    assert receipt["status"] == "activated"


def contribution(outcome):
    [item] = outcome.contributions
    return item


def test_first_turn_requests_a_reflection_and_recalls_nothing(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    outcome = call_pre_turn(plugin_pm, turn(registry, "turn-1", prompt="fix the tests"))
    item = contribution(outcome)
    assert item.instructions == [REFLECTION_INSTRUCTION]
    assert item.result_fields == {
        "reward_memory_reflection_json": {"type": "string", "maxLength": 2400}
    }
    packet = outcome.payload[SLOT]
    assert (packet["status"], packet["context"]) == ("not_available", None)
    # Why no memory came back, for the hook log: nothing reached the relevance floor.
    assert packet["reason_code"] == "provider_returned_no_items"
    assert packet["provider_call_count"] == 1
    assert packet["grants_new_action_authority"] is False


def test_the_reflection_instruction_names_no_channel():
    # Issue 36: the host asks for the tool or the block (hosts.facts.render), by its wiring;
    # the capability's text only describes the value, so the two never contradict.
    for channel in ("record_reflection", "<reward_memory_reflection_json>", "empty block"):
        assert channel not in REFLECTION_INSTRUCTION


def test_second_turn_delivers_the_memory_once_within_the_budget(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    learn(registry)
    outcome = call_pre_turn(
        plugin_pm, turn(registry, "turn-2", prompt="a change touches one module")
    )
    item = contribution(outcome)
    # Memories were recalled, so the model is asked which it used (issue 39).
    assert item.instructions == [
        GUIDANCE_INSTRUCTION,
        REFLECTION_INSTRUCTION,
        APPLICATION_INSTRUCTION,
    ]
    assert set(item.result_fields) == {RESULT_FIELD, APPLICATION_FIELD}
    [guidance] = item.context_fields[SLOT]["context"]["guidance"]
    assert guidance["candidate_ref"] == "candidate:6916d2a6fb7a59fefa81"
    assert guidance["content_summary"] == f1.REFLECTION["content_summary"]
    assert outcome.payload[SLOT]["context"] is None, "the readback never carries the context"
    assert (
        measure_result_bytes(
            {
                "readback": {SLOT: outcome.payload[SLOT]},
                "context_fields": item.context_fields,
                "instructions": item.instructions,
                "result_fields": item.result_fields,
            }
        )
        <= 65536
    )


def test_same_turn_is_deduplicated_with_zero_provider_calls(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    learn(registry)
    first = call_pre_turn(plugin_pm, turn(registry, "turn-2", prompt="module tests"))
    again = call_pre_turn(plugin_pm, turn(registry, "turn-2", prompt="module tests"))
    packet = again.payload[SLOT]
    assert (
        packet["status"],
        packet["provider_call_count"],
        packet["same_turn_receipt_reused"],
    ) == ("deduplicated", 0, True)
    assert (
        contribution(again).context_fields[SLOT]["context"]
        == (contribution(first).context_fields[SLOT]["context"])
    )


def test_disabled_binding_contributes_nothing_but_its_readback(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    document = json.loads(registry.read_text())
    document["goals"][0]["control_plane"]["reward_memory"]["enabled"] = False
    registry.write_text(json.dumps(document))
    outcome = call_pre_turn(plugin_pm, turn(registry))
    assert outcome.contributions == () and outcome.failures == ()
    assert outcome.payload[SLOT]["status"] == "disabled"


def test_explicit_recall_disable_keeps_the_ingest_request(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path, automatic_recall=False)
    outcome = call_pre_turn(plugin_pm, turn(registry))
    assert outcome.payload[SLOT]["reason_code"] == "automatic_recall_explicitly_disabled"
    assert contribution(outcome).instructions == [REFLECTION_INSTRUCTION]


def test_host_without_settlement_gets_no_reflection_request(tmp_path, plugin_pm):
    registry = bound_goal(tmp_path)
    learn(registry)
    outcome = call_pre_turn(
        plugin_pm, turn(registry, "turn-3", prompt="module tests", ingest=False)
    )
    item = contribution(outcome)
    assert item.instructions == [GUIDANCE_INSTRUCTION] and item.result_fields == {}


def test_provider_failure_leaves_the_turn_going(tmp_path, plugin_pm, monkeypatch):
    registry = bound_goal(tmp_path)
    broken = store_provider(registry)
    broken.fail["search"] = UNAVAILABLE
    monkeypatch.setattr(
        "capabilities.reward_memory.plugin._provider_for", lambda resolution: lambda binding: broken
    )
    outcome = call_pre_turn(plugin_pm, turn(registry))
    assert (outcome.payload[SLOT]["status"], outcome.payload[SLOT]["reason_code"]) == (
        "provider_unavailable",
        "provider_search_failed",
    ), "the failed search's code, for the hook log"
    assert contribution(outcome).instructions == [REFLECTION_INSTRUCTION]


def test_an_unexpected_recall_error_is_runtime_unavailable(tmp_path, plugin_pm, monkeypatch):
    registry = bound_goal(tmp_path)

    def explode(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr("capabilities.reward_memory.turn.pre_turn.turn_recall", explode)
    outcome = call_pre_turn(plugin_pm, turn(registry))
    assert (outcome.payload[SLOT]["status"], outcome.payload[SLOT]["reason_code"]) == (
        "runtime_unavailable",
        "automatic_recall_runtime_failed",
    )


def test_a_turn_without_a_registry_is_left_alone(tmp_path, plugin_pm):
    bare = turn(bound_goal(tmp_path))
    bare = bare.__class__(**{**bare.to_json(), "registry": None})
    assert call_pre_turn(plugin_pm, bare).payload.get(SLOT) is None


def test_reserved_fields_stay_protected_next_to_reward_memory(tmp_path, plugin_pm):
    class Hostile:
        registrations = {
            "pre_turn": ContextRegistration(
                hook_id="hostile.ctx", capability_id="hostile", readback_slots=()
            )
        }

        @hookimpl
        def pre_turn(self):
            return {"context_fields": {"turn_envelope": {"boundary": "anything"}}}

    plugin_pm.register(Hostile(), name="a_hostile")
    outcome = call_pre_turn(plugin_pm, turn(bound_goal(tmp_path)))
    assert [(f.hook_id, f.reason_code) for f in outcome.failures] == [
        ("hostile.ctx", "field_name_reserved")
    ]
    assert [c.hook_id for c in outcome.contributions] == ["reward-memory.turn-context"]
    assert outcome.payload["turn_envelope"]["boundary"] != "anything"


# --- the automation gate and the 64 KiB rule, on the contribution itself -------------

ENVELOPE = {
    "goal_id": "g",
    "agent_id": "a",
    "boundary": {
        "capabilities": {"reward_memory": {"automatic_recall": True, "automatic_ingest": True}}
    },
}
EXPERIMENT = {
    "enabled": True,
    "available": True,
    "configured_for_agent": True,
    "goal_id": "g",
    "agent_id": "a",
    "automatic_recall": True,
    "automatic_ingest": True,
}


def packet(summary=""):
    return {
        "status": "applied",
        "experiment": EXPERIMENT,
        "context": {"guidance": [{"candidate_ref": "candidate:0", "content_summary": summary}]},
    }


@pytest.mark.parametrize(
    ("change", "recall", "ingest"),
    [
        (lambda p, e: None, True, True),
        (
            lambda p, e: e["boundary"]["capabilities"]["reward_memory"].update(
                automatic_recall=False
            ),
            False,
            True,
        ),
        (lambda p, e: p["experiment"].update(available=False), False, False),
        (lambda p, e: p["experiment"].update(goal_id="other"), False, False),
        (lambda p, e: e.update(agent_id=""), False, False),
        (lambda p, e: p["experiment"].update(automatic_ingest=False), True, False),
        (lambda p, e: p.update(experiment=None), False, False),
    ],
)
def test_automation_gate(change, recall, ingest):
    envelope = json.loads(json.dumps(ENVELOPE))
    recall_packet = json.loads(json.dumps(packet()))
    change(recall_packet, envelope)
    payload = {"turn_envelope": envelope, SLOT: recall_packet}
    assert automation_enabled(payload, "automatic_recall") is recall
    assert automation_enabled(payload, "automatic_ingest") is ingest


def edges(pre_turn=True, post_settlement=True, **capabilities):
    boundary = {"host_edges": {"pre_turn": pre_turn, "post_settlement": post_settlement}}
    if capabilities:
        boundary["capabilities"] = capabilities
    return {"goal_id": "g", "agent_id": "a", "boundary": boundary}


@pytest.mark.parametrize(
    ("envelope", "recall", "ingest"),
    [
        (edges(), True, True),
        (edges(post_settlement=False), True, False),
        (edges(pre_turn="yes"), False, True),
        (edges(other={"on": True}), True, True),
        (edges(False, False, reward_memory={"automatic_recall": True}), True, False),
        ({"goal_id": "g", "agent_id": "a", "boundary": {"host_edges": "all"}}, False, False),
        ({"goal_id": "g", "agent_id": "a"}, False, False),
    ],
    ids=["both", "no-settlement", "not-true", "other-capability", "explicit-flags", "bad", "none"],
)
def test_the_gate_derives_its_flags_from_the_host_edges(envelope, recall, ingest):
    payload = with_capability_flags({"turn_envelope": envelope, SLOT: packet()})
    assert automation_enabled(payload, "automatic_recall") is recall
    assert automation_enabled(payload, "automatic_ingest") is ingest
    assert with_capability_flags({"turn_envelope": None}) == {"turn_envelope": None}
    contributed = memory_contribution({"turn_envelope": envelope}, packet())
    assert bool(contributed["result_fields"]) is ingest
    assert bool(contributed["context_items"]) is recall


def test_a_host_envelope_gets_the_contribution_it_got_before():
    """A host envelope with edges only sees exactly what the explicit flags saw."""
    assert memory_contribution({"turn_envelope": edges()}, packet("s")) == memory_contribution(
        {"turn_envelope": ENVELOPE}, packet("s")
    )


GUIDANCE = [
    {
        "candidate_ref": "candidate:a",
        "target_class": "procedural_experience",
        "content_summary": "run the module's tests first",
        "experience": {
            "future_behavior": {
                "trigger": "a change touches one module",
                "action": "run its tests",
                "validation": "",
                "stop_condition": "the tests pass",
            }
        },
    },
    "not an item",
    {"candidate_ref": "candidate:a", "content_summary": "a hand-edited repeat"},
    {"content_summary": "no ref", "experience": {"future_behavior": "not an object"}},
]


def test_guidance_becomes_one_context_item_per_memory_in_the_lines_hosts_showed():
    assert guidance_items({"guidance": GUIDANCE}) == [
        ContextItem(
            ref="candidate:a",
            text="[memory 1] candidate:a\n"
            "  summary: run the module's tests first\n"
            "  trigger: a change touches one module\n"
            "  action: run its tests\n"
            "  stop condition: the tests pass",
        ),
        ContextItem(ref="None", text="[memory 2] None\n  summary: no ref"),
    ]
    assert guidance_items(None) == guidance_items({"guidance": "x"}) == []


def test_the_host_renders_the_items_after_the_instructions(pm):
    recall = {**packet(), "context": {"guidance": GUIDANCE[:1]}}

    class Memory:
        registrations = RewardMemoryPlugin.registrations

        @hookimpl
        def pre_turn(self, turn):
            return memory_contribution(dict(turn.payload), recall)

    pm.register(Memory(), name="reward_memory")
    envelope = edges()
    context = TurnContext(
        host="codex_cli",
        host_turn_id="t",
        observed_at=f1.OBSERVED_AT,
        turn_envelope=envelope,
        payload={"turn_envelope": envelope},
    )
    text = render_context(project_contributions(call_pre_turn(pm, context).payload))
    blocks = text.split("\n\n")
    assert blocks[:4] == [
        GUIDANCE_INSTRUCTION,
        REFLECTION_INSTRUCTION,
        APPLICATION_INSTRUCTION,
        guidance_items({"guidance": GUIDANCE[:1]})[0].text,
    ]
    assert "<reward_memory_reflection_json>…</reward_memory_reflection_json>" in blocks[4]


def overhead():
    return measure_result_bytes(memory_contribution({"turn_envelope": ENVELOPE}, packet("")))


@pytest.mark.parametrize("unit", ["x", "é"])
def test_the_64_kib_flip(unit):
    room = 65536 - overhead()
    width = len(unit.encode())
    exact = unit * (room // width) + "x" * (room % width)
    kept = memory_contribution({"turn_envelope": ENVELOPE}, packet(exact))
    assert measure_result_bytes(kept) == 65536
    assert kept["context_fields"][SLOT]["context"] is not None and len(kept["instructions"]) == 3
    [item] = kept["context_items"]
    assert item.ref == "candidate:0" and item.byte_size < 65536

    omitted = memory_contribution({"turn_envelope": ENVELOPE}, packet(exact + "x"))
    assert omitted["context_fields"][SLOT]["context"] is None
    assert omitted["context_items"] == [], "the items go with the context"
    assert omitted["instructions"] == [REFLECTION_INSTRUCTION]
    assert "reward_memory_reflection_json" in omitted["result_fields"]
    assert measure_result_bytes(omitted) < 65536


def test_a_participation_packet_too_big_even_without_context_fails_the_hook(
    tmp_path, plugin_pm, monkeypatch
):
    registry = bound_goal(tmp_path)
    huge = {"status": "applied", "experiment": EXPERIMENT, "context": None, "padding": "x" * 70000}
    monkeypatch.setattr(
        "capabilities.reward_memory.turn.pre_turn.turn_recall", lambda *a, **k: huge
    )
    outcome = call_pre_turn(plugin_pm, turn(registry))
    assert [(f.hook_id, f.reason_code) for f in outcome.failures] == [
        ("reward-memory.turn-context", "result_over_budget")
    ]
    assert SLOT not in outcome.payload


def _store_rows(registry):
    import sqlite3

    path = registry.parent / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT uri, content FROM records ORDER BY uri").fetchall()


def test_pre_turn_writes_only_what_an_earlier_settlement_validated(tmp_path, plugin_pm):
    """The pre_turn contract (hookspecs): no write of its own; finishing a journalled,
    validated settlement of the same binding is the one write it may do."""
    registry = bound_goal(tmp_path)
    learn(registry)
    before = _store_rows(registry)
    call_pre_turn(plugin_pm, turn(registry, "turn-2", prompt="module tests"))
    assert _store_rows(registry) == before, "a PreTurn with nothing pending wrote"

    down = store_provider(registry)
    down.fail["write"] = UNAVAILABLE
    pending = run_turn_ingest_fail_open(
        resolution(registry),
        turn_key="turn-0002",
        host_result={"reward_memory_reflection_json": RAW},
        evidence=evidence(),
        provider_for=lambda binding: down,
        observed_at=f1.OBSERVED_AT,
    )
    assert pending["reconciliation_state"] == "pending"
    outcome = call_pre_turn(plugin_pm, turn(registry, "turn-3", prompt="module tests"))
    reconciled = outcome.payload[SLOT]["outcome_ingest_reconciliation"]
    assert (reconciled["attempted_count"], reconciled["completed_count"]) == (1, 1)
    added = set(_store_rows(registry)) - set(before)
    assert len(added) == 1, "exactly the journalled record was written"
    [(_uri, content)] = added
    assert '"revision_ref":"turn-0002"' in content
    states = {
        json.loads(p.read_text())["status"] for p in journal_files_of(registry.parent / "repo")
    }
    assert states == {"completed"}
