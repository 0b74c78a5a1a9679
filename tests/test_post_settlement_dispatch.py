"""PostSettlement and post_writeback dispatch (turn-lifecycle.md §7.1)."""

from __future__ import annotations

import pytest

from turn_hooks import (
    RETRYABLE_STATUSES,
    Settlement,
    SettlementEvidence,
    SettlementRegistration,
    WritebackEvent,
    WritebackRegistration,
    _calling,
    call_post_settlement,
    call_post_writeback,
    hookimpl,
    settlement_is_final,
    settlement_is_taken,
    settlement_result_fields,
    settlement_result_tools,
)


def effect_plugin(hook_id, receipt, calls=None, capability_id="cap", **declared):
    class Plugin:
        registrations = {
            "post_settlement": SettlementRegistration(
                hook_id=hook_id, capability_id=capability_id, **declared
            )
        }

        @hookimpl
        def post_settlement(self, turn, settlement):
            if calls is not None:
                calls.append(settlement)
            return receipt(settlement) if callable(receipt) else receipt

    return Plugin()


def settled(previous=None):
    return Settlement(
        host_result={"demo_answer": ""},
        evidence=SettlementEvidence(
            task_validation={"ok": True},
            writeback={"ok": True, "appended": True},
            previous_post_settlement=previous,
        ),
    )


def test_receipts_are_aggregated_by_hook_id(pm, turn):
    pm.register(
        effect_plugin("a.ingest", {"status": "activated", "external_writes_performed": True}),
        name="a",
    )
    pm.register(
        effect_plugin(
            "b.ingest",
            {"status": "observed", "external_writes_performed": False},
            capability_id="other",
        ),
        name="b",
    )
    receipt = call_post_settlement(pm, turn, settled())
    assert receipt["status"] == "observed"
    assert receipt["results"]["a.ingest"]["status"] == "activated"
    assert receipt["capability_ids"] == {"a.ingest": "cap", "b.ingest": "other"}
    assert receipt["fail_open"] is True
    assert receipt["external_writes_performed"] is True


@pytest.mark.parametrize("status", sorted(RETRYABLE_STATUSES))
def test_any_retryable_result_makes_the_dispatch_retryable(pm, turn, status):
    pm.register(
        effect_plugin("a.ingest", {"status": status, "external_writes_performed": False}), name="a"
    )
    assert call_post_settlement(pm, turn, settled())["status"] == "runtime_unavailable"


def test_an_exception_becomes_a_retryable_fail_open_receipt(pm, turn):
    def explode(_settlement):
        raise OSError("disk gone")

    pm.register(effect_plugin("a.ingest", explode), name="a")
    pm.register(effect_plugin("b.ingest", {"status": "observed"}), name="b")
    receipt = call_post_settlement(pm, turn, settled())
    assert receipt["results"]["a.ingest"] == {
        "status": "runtime_unavailable",
        "reason_code": "hook_raised",
        "fail_open": True,
        "external_writes_performed": None,
    }
    assert receipt["results"]["b.ingest"] == {"status": "observed"}
    assert receipt["status"] == "runtime_unavailable"
    assert receipt["external_writes_performed"] is None


@pytest.mark.parametrize(
    "bad_receipt",
    [
        pytest.param(["x"], id="not-object"),
        pytest.param({"ok": True}, id="no-status"),
        pytest.param({"status": "observed", "x": object()}, id="not-json"),
    ],
)
def test_an_invalid_receipt_is_recorded_as_runtime_unavailable(pm, turn, bad_receipt):
    pm.register(effect_plugin("a.ingest", bad_receipt), name="a")
    result = call_post_settlement(pm, turn, settled())["results"]["a.ingest"]
    assert result["status"] == "runtime_unavailable"


def test_a_plugin_without_registration_is_recorded_under_its_name(pm, turn):
    class Bare:
        @hookimpl
        def post_settlement(self):
            return {"status": "observed"}

    pm.register(Bare(), name="bare")
    receipt = call_post_settlement(pm, turn, settled())
    assert receipt["results"]["bare"]["reason_code"] == "registration_missing"


def test_the_declared_result_fields_of_all_plugins_in_plugin_name_order(pm, turn):
    observed = {"status": "observed"}
    pm.register(effect_plugin("b.ingest", observed, result_fields=("b_answer", "shared")), name="b")
    pm.register(
        effect_plugin(
            "a.ingest",
            observed,
            result_fields=("shared", "a_answer"),
            result_fault_prefixes={"shared": "shared_block"},
        ),
        name="a",
    )
    pm.register(effect_plugin("c.ingest", observed, result_fields=("goal_id",)), name="c")
    assert settlement_result_fields(pm) == {
        "shared": "shared_block",
        "a_answer": "result_block",
        "b_answer": "result_block",
    }, "an invalid declaration declares nothing"


@pytest.mark.parametrize(
    ("declared", "reason"),
    [
        pytest.param({"result_fields": ("goal_id",)}, "field_name_reserved", id="reserved"),
        pytest.param({"result_fields": ("Bad",)}, "field_name_invalid", id="invalid-name"),
        pytest.param({"result_fields": "demo_answer"}, "registration_invalid", id="not-a-list"),
        pytest.param(
            {"result_fields": tuple(f"answer_{i}" for i in range(9))},
            "registration_invalid",
            id="nine-fields",
        ),
        pytest.param(
            {"result_fields": ("demo_answer", "demo_answer")}, "registration_invalid", id="twice"
        ),
        pytest.param(
            {"result_fields": ("demo_answer",), "result_fault_prefixes": {"other": "x_block"}},
            "registration_invalid",
            id="prefix-for-undeclared-field",
        ),
        pytest.param(
            {"result_fields": ("demo_answer",), "result_fault_prefixes": {"demo_answer": "X"}},
            "registration_invalid",
            id="prefix-not-a-code",
        ),
        pytest.param(
            {"result_fields": ("demo_answer",), "result_fault_prefixes": ["demo_answer"]},
            "registration_invalid",
            id="prefixes-not-a-mapping",
        ),
    ],
)
def test_an_invalid_result_field_declaration_is_isolated(pm, turn, declared, reason):
    calls = []
    pm.register(effect_plugin("a.ingest", {"status": "observed"}, calls, **declared), name="a")
    result = call_post_settlement(pm, turn, settled())["results"]["a.ingest"]
    assert (result["status"], result["reason_code"], calls) == ("runtime_unavailable", reason, [])
    assert settlement_result_fields(pm) == {}
    assert settlement_result_tools(pm) == {}


TOOL = {"name": "record_answer", "description": "d", "input_schema": {"type": "object"}}


def test_the_declared_result_tools_by_name_first_plugin_wins(pm):
    observed = {"status": "observed"}
    for name in ("b", "a"):
        pm.register(
            effect_plugin(
                f"{name}.ingest",
                observed,
                result_fields=(f"{name}_answer",),
                result_tools={f"{name}_answer": {**TOOL, "max_chars": 100}},
            ),
            name=name,
        )
    assert settlement_result_tools(pm) == {
        "record_answer": {**TOOL, "max_chars": 100, "field": "a_answer"}
    }


@pytest.mark.parametrize(
    "tools",
    [
        {"other": {**TOOL, "max_chars": 1}},
        {"demo_answer": {**TOOL, "max_chars": 16385}},
        {"demo_answer": {**TOOL, "description": "", "max_chars": 1}},
        {"demo_answer": {**TOOL, "name": 7, "max_chars": 1}},
    ],
)
def test_an_invalid_result_tool_declaration_is_isolated(pm, turn, tools):
    declared = {"result_fields": ("demo_answer",), "result_tools": tools}
    pm.register(effect_plugin("a.ingest", {"status": "observed"}, **declared), name="a")
    result = call_post_settlement(pm, turn, settled())["results"]["a.ingest"]
    assert (result["status"], result["reason_code"]) == (
        "runtime_unavailable",
        "registration_invalid",
    )
    assert settlement_result_tools(pm) == {}


def test_none_means_nothing_to_do(pm, turn):
    pm.register(effect_plugin("a.ingest", None), name="a")
    receipt = call_post_settlement(pm, turn, settled())
    assert receipt["results"] == {} and receipt["status"] == "observed"
    assert receipt["external_writes_performed"] is False


def test_a_final_previous_result_is_replayed_without_a_call(pm, turn):
    calls = []
    pm.register(effect_plugin("a.ingest", {"status": "activated"}, calls), name="a")
    pm.register(effect_plugin("b.ingest", {"status": "activated"}, calls), name="b")
    previous = {
        "status": "runtime_unavailable",
        "results": {
            "a.ingest": {"status": "activated", "n": 1},
            "b.ingest": {"status": "provider_unavailable"},
        },
        "capability_ids": {"a.ingest": "cap", "b.ingest": "cap"},
    }
    receipt = call_post_settlement(pm, turn, settled(previous))
    assert len(calls) == 1, "only the retryable hook is called again"
    assert receipt["results"]["a.ingest"] == {
        "status": "activated",
        "n": 1,
        "deduplicated": True,  # this delivery wrote nothing (issue 37)
        "external_writes_performed": False,
    }
    assert receipt["skipped_hook_ids"] == ["a.ingest"]
    assert receipt["status"] == "observed"


def test_a_previous_result_of_another_capability_is_not_trusted(pm, turn):
    calls = []
    pm.register(effect_plugin("a.ingest", {"status": "activated"}, calls), name="a")
    previous = {
        "status": "runtime_unavailable",
        "results": {"a.ingest": {"status": "activated"}},
        "capability_ids": {"a.ingest": "someone-else"},
    }
    call_post_settlement(pm, turn, settled(previous))
    assert len(calls) == 1


@pytest.mark.parametrize(
    "previous",
    [
        pytest.param({"status": "runtime_unavailable"}, id="no-results"),
        pytest.param(
            {"status": "runtime_unavailable", "results": [], "capability_ids": {}},
            id="results-not-object",
        ),
    ],
)
def test_a_malformed_previous_receipt_means_call_again(pm, turn, previous):
    calls = []
    pm.register(effect_plugin("a.ingest", {"status": "activated"}, calls), name="a")
    call_post_settlement(pm, turn, settled(previous))
    assert len(calls) == 1


def test_a_final_stored_receipt_skips_the_whole_dispatch(pm, turn):
    calls = []
    pm.register(effect_plugin("a.ingest", {"status": "activated"}, calls), name="a")
    stored = {"status": "observed", "results": {}, "capability_ids": {}}
    assert call_post_settlement(pm, turn, settled(stored)) == {
        **stored,
        "external_writes_performed": False,
        "skipped_hook_ids": [],
    }
    assert calls == []


def test_a_delivery_after_a_final_one_says_it_wrote_nothing(pm, turn):
    """Issue 37: of concurrent deliveries of one Turn, only the first reports its write."""
    calls = []
    pm.register(effect_plugin("a.ingest", {"status": "activated"}, calls), name="a")
    first = {
        "status": "observed",
        "results": {"a.ingest": {"status": "activated", "deduplicated": False, "n": 1}},
        "capability_ids": {"a.ingest": "cap"},
        "external_writes_performed": True,
        "skipped_hook_ids": [],
    }
    receipt = call_post_settlement(pm, turn, settled(first))
    assert calls == []
    assert receipt["results"]["a.ingest"] == {
        "status": "activated",
        "deduplicated": True,
        "n": 1,
        "external_writes_performed": False,
    }
    assert receipt["external_writes_performed"] is False
    assert receipt["skipped_hook_ids"] == ["a.ingest"]


def test_an_observed_receipt_with_an_open_journal_is_dispatched_again(pm, turn):
    """Issue 13 item 13: replaying a settlement after its journal completed elsewhere
    must report the journal's current state, not the stale pending receipt."""
    calls = []
    pm.register(effect_plugin("a.ingest", {"status": "activated"}, calls), name="a")
    stale = {
        "status": "observed",
        "results": {"a.ingest": {"status": "unavailable", "reconciliation_state": "pending"}},
        "capability_ids": {"a.ingest": "cap"},
    }
    receipt = call_post_settlement(pm, turn, settled(stale))
    assert len(calls) == 1
    assert receipt["results"]["a.ingest"] == {"status": "activated"}


@pytest.mark.parametrize(
    ("receipt", "final"),
    [
        pytest.param(None, False, id="never-dispatched"),
        pytest.param({"status": "runtime_unavailable", "results": {}}, False, id="retryable"),
        pytest.param({"status": "observed"}, False, id="no-results"),
        pytest.param({"status": "observed", "results": {"a": "x"}}, False, id="result-not-object"),
        pytest.param(
            {"status": "observed", "results": {"a": {"status": "runtime_state_unavailable"}}},
            False,
            id="state-unavailable",
        ),
        pytest.param(
            {
                "status": "observed",
                "results": {"a": {"status": "x", "reconciliation_state": "pending"}},
            },
            False,
            id="journal-open",
        ),
        pytest.param(
            {"status": "observed", "results": {"a": {"status": "activated"}}}, True, id="final"
        ),
    ],
)
def test_settlement_is_final(receipt, final):
    assert settlement_is_final(receipt) is final


@pytest.mark.parametrize(
    ("receipt", "taken"),
    [
        pytest.param(None, False, id="never-dispatched"),
        pytest.param({"status": "observed"}, False, id="no-results"),
        pytest.param({"status": "observed", "results": {"a": "x"}}, False, id="not-object"),
        pytest.param(
            {"status": "runtime_unavailable", "results": {"a": {"status": "runtime_unavailable"}}},
            False,
            id="not-journalled",
        ),
        pytest.param(
            {
                "status": "runtime_unavailable",
                "results": {
                    "a": {"status": "provider_unavailable", "reconciliation_state": "pending"}
                },
            },
            True,
            id="journalled",
        ),
        pytest.param(
            {"status": "observed", "results": {"a": {"status": "activated"}}}, True, id="final"
        ),
    ],
)
def test_settlement_is_taken(receipt, taken):
    assert settlement_is_taken(receipt) is taken


def test_a_failing_dispatcher_becomes_the_observer_failed_receipt(pm, turn, monkeypatch):
    def broken(*_args):
        raise RuntimeError("dispatcher bug")

    monkeypatch.setattr(_calling, "_dispatch_post_settlement", broken)
    receipt = call_post_settlement(pm, turn, settled())
    assert receipt == {
        "ok": True,
        "schema_version": "turn_post_settlement_observer_v0",
        "status": "runtime_unavailable",
        "reason_code": "post_settlement_observer_failed",
        "fail_open": True,
        "external_writes_performed": None,
    }


# --- post_writeback observers --------------------------------------------------------------


def observer(hook_id, observation, *, kinds=("turn_settled",), write_scope=(), max_input=65536):
    class Observer:
        registrations = {
            "post_writeback": WritebackRegistration(
                hook_id=hook_id,
                capability_id="obs",
                event_kinds=kinds,
                requested_write_scope=write_scope,
                max_input_bytes=max_input,
            )
        }

        @hookimpl
        def post_writeback(self, writeback):
            return observation(writeback) if callable(observation) else observation

    return Observer()


def event(spool=None):
    return WritebackEvent(turn_key="turn-1", host="generic_cli", spool=spool or {"n": 1})


def test_observers_registered_for_the_kind_are_collected(pm, turn):
    pm.register(observer("a.obs", {"seen": True}), name="a")
    pm.register(observer("b.obs", {"seen": True}, kinds=("other_kind",)), name="b")
    pm.register(observer("c.obs", None), name="c")
    outcome = call_post_writeback(pm, turn, event())
    assert outcome.observations == {"a.obs": {"seen": True}}
    assert outcome.failures == ()


def raise_(_event):
    raise ValueError("observer bug")


@pytest.mark.parametrize(
    ("plugin", "reason"),
    [
        pytest.param(
            observer("a.obs", {}, write_scope=("viking",)),
            "registration_invalid",
            id="asks-for-write-scope",
        ),
        pytest.param(
            observer("a.obs", {"x": "y" * 17000}), "result_over_budget", id="observation-over-16k"
        ),
        pytest.param(observer("a.obs", ["list"]), "plugin_contract_violated", id="not-object"),
        pytest.param(observer("a.obs", raise_), "hook_raised", id="raises"),
        pytest.param(
            observer("a.obs", {}, max_input=10), "input_over_budget", id="event-over-input-budget"
        ),
    ],
)
def test_a_failing_observer_is_isolated(pm, turn, plugin, reason):
    pm.register(plugin, name="a")
    pm.register(observer("b.obs", {"ok": 1}), name="b")
    outcome = call_post_writeback(pm, turn, event())
    [failure] = outcome.failures
    assert (failure.hook_id, failure.error_code, failure.reason_code) == (
        "a.obs",
        "writeback_observer_failed",
        reason,
    )
    assert outcome.observations == {"b.obs": {"ok": 1}}
