"""PreTurn dispatch: validation, isolation, order and the 64 KiB budget (turn-lifecycle §3-4)."""

from __future__ import annotations

import pytest

from turn_hooks import (
    MAX_RESULT_BYTES,
    ContextItem,
    ContextRegistration,
    ContextResult,
    call_pre_turn,
    hookimpl,
    measure_context_items,
    measure_result_bytes,
)


def context_plugin(
    hook_id="demo.turn-context",
    *,
    slots=("demo_slot",),
    result=None,
    budget=MAX_RESULT_BYTES,
    seen=None,
):
    """A pre_turn plugin returning ``result`` (a callable of the turn, or a value)."""

    class Plugin:
        registrations = {
            "pre_turn": ContextRegistration(
                hook_id=hook_id,
                capability_id="demo",
                readback_slots=slots,
                max_result_bytes=budget,
            )
        }

        @hookimpl
        def pre_turn(self, turn):
            if seen is not None:
                seen.append(turn)
            return result(turn) if callable(result) else result

    return Plugin()


def good_result(slot="demo_slot", **overrides):
    fields = {
        "readback": {slot: {"status": "applied"}},
        "context_fields": {slot: {"status": "applied", "items": [1]}},
        "instructions": ["Use it only when it fits."],
        "result_fields": {"demo_answer": {"type": "string", "maxLength": 100}},
    }
    fields.update(overrides)
    return fields


def test_a_valid_contribution_is_kept_and_its_readback_merged(pm, turn):
    pm.register(context_plugin(result=good_result()), name="demo")
    outcome = call_pre_turn(pm, turn)
    assert outcome.failures == ()
    [contribution] = outcome.contributions
    assert contribution.hook_id == "demo.turn-context"
    assert contribution.context_fields == {"demo_slot": {"status": "applied", "items": [1]}}
    assert len(contribution.basis_digest) == 64
    assert outcome.payload["demo_slot"] == {"status": "applied"}
    assert outcome.payload["turn_context_contributions"][0]["hook_id"] == "demo.turn-context"
    assert outcome.payload["turn_context_hook_failures"] == []
    assert "demo_slot" not in turn.payload, "the host's payload is never mutated"


def test_a_context_result_object_is_accepted_like_a_mapping(pm, turn):
    pm.register(context_plugin(result=ContextResult(**good_result())), name="demo")
    assert len(call_pre_turn(pm, turn).contributions) == 1


def test_none_contributes_nothing_and_is_not_a_failure(pm, turn):
    pm.register(context_plugin(result=None), name="demo")
    outcome = call_pre_turn(pm, turn)
    assert outcome.contributions == () and outcome.failures == ()


def test_readback_only_result_merges_but_stores_no_contribution(pm, turn):
    readback_only = {"readback": {"demo_slot": {"status": "skipped"}}}
    pm.register(context_plugin(result=readback_only), name="demo")
    outcome = call_pre_turn(pm, turn)
    assert outcome.contributions == ()
    assert outcome.payload["demo_slot"] == {"status": "skipped"}


def bad(**overrides):
    return good_result(**overrides)


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        pytest.param(
            bad(context_fields={"goal_id": 1}), "field_name_reserved", id="reserved-field"
        ),
        pytest.param(
            bad(context_fields={"summary": 1}), "field_name_reserved", id="reserved-summary"
        ),
        pytest.param(
            bad(result_fields={"turn_key": {"type": "string", "maxLength": 5}}),
            "field_name_reserved",
            id="reserved-result-field",
        ),
        pytest.param(
            bad(context_fields={f"field_{i}": i for i in range(9)}),
            "too_many_fields",
            id="nine-keys",
        ),
        pytest.param(bad(context_fields={"Bad": 1}), "field_name_invalid", id="uppercase-name"),
        pytest.param(bad(context_fields={"ab": 1}), "field_name_invalid", id="short-name"),
        pytest.param(bad(context_fields=[]), "result_shape_invalid", id="fields-not-object"),
        pytest.param(bad(instructions="do it"), "result_shape_invalid", id="instructions-string"),
        pytest.param(bad(instructions=[1]), "result_shape_invalid", id="instruction-not-string"),
        pytest.param(bad(instructions=["x"] * 9), "too_many_instructions", id="nine-instructions"),
        pytest.param(bad(instructions=["x" * 4097]), "instruction_too_long", id="long-instruction"),
        pytest.param(
            bad(result_fields={"demo_answer": {"type": "string"}}),
            "result_field_invalid",
            id="descriptor-missing-maxLength",
        ),
        pytest.param(
            bad(result_fields={"demo_answer": {"type": "number", "maxLength": 3}}),
            "result_field_invalid",
            id="descriptor-not-string",
        ),
        pytest.param(
            bad(result_fields={"demo_answer": {"type": "string", "maxLength": 16385}}),
            "result_field_invalid",
            id="descriptor-too-long",
        ),
        pytest.param(
            bad(result_fields={"demo_answer": {"type": "string", "maxLength": True}}),
            "result_field_invalid",
            id="descriptor-bool-length",
        ),
        pytest.param(bad(readback={}), "readback_slots_mismatch", id="readback-missing-slot"),
        pytest.param(
            bad(readback={"demo_slot": 1, "other_slot": 2}),
            "readback_slots_mismatch",
            id="readback-extra-slot",
        ),
        pytest.param(bad(context_fields={"demo_slot": object()}), "result_not_json", id="not-json"),
        pytest.param({"readback": {}, "extra": 1}, "result_shape_invalid", id="unknown-result-key"),
        pytest.param(["not", "a", "mapping"], "result_shape_invalid", id="not-a-mapping"),
        pytest.param(
            bad(context_fields={"demo_slot": "x" * MAX_RESULT_BYTES}),
            "result_over_budget",
            id="over-budget",
        ),
        pytest.param(bad(context_items="text"), "result_shape_invalid", id="items-not-a-list"),
        pytest.param(
            bad(context_items=[{"ref": f"r{i}", "text": ""} for i in range(65)]),
            "too_many_context_items",
            id="items-65",
        ),
        pytest.param(bad(context_items=["text"]), "context_item_invalid", id="item-not-object"),
        pytest.param(
            bad(context_items=[{"ref": "r", "text": "t", "extra": 1}]),
            "context_item_invalid",
            id="item-extra-key",
        ),
        pytest.param(
            bad(context_items=[{"ref": "", "text": "t"}]),
            "context_item_ref_invalid",
            id="ref-empty",
        ),
        pytest.param(
            bad(context_items=[{"ref": 7, "text": "t"}]),
            "context_item_ref_invalid",
            id="ref-number",
        ),
        pytest.param(
            bad(context_items=[{"ref": "r" * 257, "text": "t"}]),
            "context_item_ref_invalid",
            id="ref-too-long",
        ),
        pytest.param(
            bad(context_items=[{"ref": "\ud800", "text": "t"}]),
            "context_item_ref_invalid",
            id="ref-lone-surrogate",
        ),
        pytest.param(
            bad(context_items=[ContextItem(ref="r", text=None)]),  # type: ignore[arg-type]
            "context_item_text_invalid",
            id="text-none",
        ),
        pytest.param(
            bad(context_items=[{"ref": "r", "text": "\udfff"}]),
            "context_item_text_invalid",
            id="text-lone-surrogate",
        ),
        pytest.param(
            bad(context_items=[{"ref": "r", "text": "a"}, ContextItem(ref="r", text="b")]),
            "context_item_ref_duplicate",
            id="ref-twice",
        ),
        pytest.param(
            bad(context_items=[{"ref": "r", "text": "é" * (MAX_RESULT_BYTES // 2 + 1)}]),
            "context_items_over_budget",
            id="items-over-budget",
        ),
    ],
)
def test_an_invalid_result_is_isolated_and_others_still_contribute(pm, turn, result, reason):
    pm.register(context_plugin(result=result), name="a_bad")
    pm.register(
        context_plugin("good.turn-context", slots=("good_slot",), result=good_result("good_slot")),
        name="b_good",
    )
    outcome = call_pre_turn(pm, turn)
    [failure] = outcome.failures
    assert (failure.hook_id, failure.error_code, failure.reason_code) == (
        "demo.turn-context",
        "context_hook_failed",
        reason,
    )
    assert failure.plugin == "a_bad"
    assert [c.hook_id for c in outcome.contributions] == ["good.turn-context"]
    assert "demo_slot" not in outcome.payload, "nothing from a failed hook is kept"
    assert outcome.payload["turn_context_hook_failures"] == [
        {"hook_id": "demo.turn-context", "error_code": "context_hook_failed"}
    ]


def test_context_items_are_kept_in_order_and_measured_on_their_own(pm, turn):
    items = [ContextItem(ref="demo:1", text="first"), {"ref": "demo:2", "text": "zweite é"}]
    four_keys = good_result()
    pm.register(context_plugin(result={**four_keys, "context_items": items}), name="demo")
    [contribution] = call_pre_turn(pm, turn).contributions
    assert contribution.context_items == [
        ContextItem(ref="demo:1", text="first"),
        ContextItem(ref="demo:2", text="zweite é"),
    ]
    assert measure_context_items(contribution.context_items) == 5 + 9
    assert measure_result_bytes({**four_keys, "context_items": items}) == measure_result_bytes(
        four_keys
    ), "the four-key document is measured without its items"


def test_items_alone_are_a_contribution_and_may_fill_the_budget(pm, turn):
    full = [ContextItem(ref="demo:1", text="x" * 1000), ContextItem(ref="demo:2", text="y" * 24)]
    result = ContextResult(readback={"demo_slot": {"status": "applied"}}, context_items=full)
    pm.register(context_plugin(result=result, budget=1024), name="demo")
    [contribution] = call_pre_turn(pm, turn).contributions
    assert contribution.context_items == full
    assert result.to_json()["context_items"] == [item.to_json() for item in full]


def test_a_raising_hook_is_isolated(pm, turn):
    def explode(_turn):
        raise RuntimeError("provider exploded")

    pm.register(context_plugin(result=explode), name="a_raises")
    pm.register(
        context_plugin("good.turn-context", slots=("good_slot",), result=good_result("good_slot")),
        name="b_good",
    )
    outcome = call_pre_turn(pm, turn)
    assert [(f.hook_id, f.reason_code) for f in outcome.failures] == [
        ("demo.turn-context", "hook_raised")
    ]
    assert len(outcome.contributions) == 1


@pytest.mark.parametrize(
    ("registration", "reason"),
    [
        pytest.param(None, "registration_missing", id="missing"),
        pytest.param(
            ContextRegistration(hook_id="X", capability_id="demo"),
            "registration_invalid",
            id="bad-hook-id",
        ),
        pytest.param(
            ContextRegistration(
                hook_id="demo.x", capability_id="demo", readback_slots=("goal_id",)
            ),
            "field_name_reserved",
            id="reserved-slot",
        ),
        pytest.param(
            ContextRegistration(
                hook_id="demo.x",
                capability_id="demo",
                readback_slots=tuple(f"slot_{i}" for i in range(9)),
            ),
            "registration_invalid",
            id="nine-slots",
        ),
        pytest.param(
            ContextRegistration(
                hook_id="demo.x", capability_id="demo", readback_slots=("same_slot", "same_slot")
            ),
            "registration_invalid",
            id="duplicate-slot",
        ),
        pytest.param(
            ContextRegistration(hook_id="demo.x", capability_id="demo", readback_slots="demo_slot"),  # type: ignore[arg-type]
            "registration_invalid",
            id="slots-not-a-list",
        ),
        pytest.param(
            ContextRegistration(hook_id="demo.x", capability_id="demo", max_result_bytes=65537),
            "registration_invalid",
            id="budget-too-large",
        ),
        pytest.param(
            ContextRegistration(hook_id="demo.x", capability_id="demo", max_result_bytes=1023),
            "registration_invalid",
            id="budget-too-small",
        ),
    ],
)
def test_an_invalid_registration_fails_before_the_plugin_is_called(pm, turn, registration, reason):
    calls = []

    class Plugin:
        registrations = {"pre_turn": registration} if registration else {}

        @hookimpl
        def pre_turn(self, turn):
            calls.append(turn)

    pm.register(Plugin(), name="demo")
    [failure] = call_pre_turn(pm, turn).failures
    assert failure.reason_code == reason
    assert calls == []


def test_duplicate_hook_id_and_claimed_slot_are_rejected_in_order(pm, turn):
    pm.register(context_plugin(result=good_result()), name="a_first")
    pm.register(context_plugin(result=good_result()), name="b_same_hook_id")
    pm.register(context_plugin("other.turn-context", result=good_result()), name="c_same_slot")
    outcome = call_pre_turn(pm, turn)
    assert [c.hook_id for c in outcome.contributions] == ["demo.turn-context"]
    assert [(f.plugin, f.reason_code) for f in outcome.failures] == [
        ("b_same_hook_id", "registration_conflict"),
        ("c_same_slot", "registration_conflict"),
    ]


def test_a_slot_already_in_the_payload_is_rejected(pm, turn):
    pm.register(context_plugin(result=good_result()), name="demo")
    occupied = turn.__class__(**{**turn.to_json(), "payload": {**turn.payload, "demo_slot": 1}})
    [failure] = call_pre_turn(pm, occupied).failures
    assert failure.reason_code == "slot_occupied"


def test_plugins_run_in_name_order_and_see_earlier_readback(pm, turn):
    seen = []
    pm.register(
        context_plugin(
            "zeta.turn-context", slots=("zeta_slot",), result=good_result("zeta_slot"), seen=seen
        ),
        name="zeta",
    )
    pm.register(
        context_plugin(
            "alpha.turn-context", slots=("alpha_slot",), result=good_result("alpha_slot"), seen=seen
        ),
        name="alpha",
    )
    outcome = call_pre_turn(pm, turn)
    assert [c.hook_id for c in outcome.contributions] == ["alpha.turn-context", "zeta.turn-context"]
    assert "alpha_slot" not in seen[0].payload
    assert seen[1].payload["alpha_slot"] == {"status": "applied"}


def test_a_plugin_mutating_its_payload_copy_cannot_affect_others(pm, turn):
    seen = []

    def vandal(turn):
        turn.payload["turn_envelope"]["goal_id"] = "hijacked"
        return None

    pm.register(context_plugin("a.turn-context", slots=("a_slot",), result=vandal), name="a")
    pm.register(
        context_plugin("b.turn-context", slots=("b_slot",), result=None, seen=seen), name="b"
    )
    outcome = call_pre_turn(pm, turn)
    assert seen[0].payload["turn_envelope"]["goal_id"] == "g"
    assert outcome.payload["turn_envelope"]["goal_id"] == "g"
    assert turn.payload["turn_envelope"]["goal_id"] == "g"


def test_a_turn_without_goal_and_agent_cannot_be_contributed_to(pm, turn):
    pm.register(context_plugin(result=good_result()), name="demo")
    anonymous = turn.__class__(**{**turn.to_json(), "payload": {}})
    [failure] = call_pre_turn(pm, anonymous).failures
    assert failure.reason_code == "basis_source_missing"


def test_an_implementation_may_take_no_arguments(pm, turn):
    class NoArgs:
        registrations = {
            "pre_turn": ContextRegistration(
                hook_id="noargs.turn-context", capability_id="noargs", readback_slots=()
            )
        }

        @hookimpl
        def pre_turn(self):
            return {"instructions": ["constant"]}

    pm.register(NoArgs(), name="noargs")
    [contribution] = call_pre_turn(pm, turn).contributions
    assert contribution.instructions == ["constant"]


# --- the 64 KiB budget, measured as compact UTF-8 JSON ------------------------------------


def sized_result(filler: str):
    return {
        "readback": {"demo_slot": {"status": "applied"}},
        "context_fields": {"demo_slot": {"summary_text": filler}},
        "instructions": [],
        "result_fields": {},
    }


def overhead() -> int:
    return measure_result_bytes(sized_result(""))


@pytest.mark.parametrize("unit", [pytest.param("x", id="ascii"), pytest.param("é", id="2-byte")])
def test_exactly_65536_bytes_is_kept_and_65537_is_not(pm, turn, unit):
    room = MAX_RESULT_BYTES - overhead()
    width = len(unit.encode("utf-8"))
    exact = sized_result(unit * (room // width) + "x" * (room % width))
    one_over = sized_result(exact["context_fields"]["demo_slot"]["summary_text"] + "x")
    assert measure_result_bytes(exact) == 65536
    assert measure_result_bytes(one_over) == 65537

    pm.register(context_plugin(result=exact), name="demo")
    assert len(call_pre_turn(pm, turn).contributions) == 1
    pm.unregister(name="demo")
    pm.register(context_plugin(result=one_over), name="demo")
    outcome = call_pre_turn(pm, turn)
    assert outcome.contributions == ()
    assert [f.reason_code for f in outcome.failures] == ["result_over_budget"]


def test_a_smaller_registered_budget_is_enforced(pm, turn):
    pm.register(context_plugin(result=sized_result("x" * 2000), budget=1024), name="demo")
    [failure] = call_pre_turn(pm, turn).failures
    assert failure.reason_code == "result_over_budget"
