"""Projection of stored contributions to the host (turn-lifecycle.md §3, last paragraph)."""

from __future__ import annotations

import copy

from turn_hooks import (
    ContextItem,
    ContextRegistration,
    call_pre_turn,
    hookimpl,
    project_contributions,
)


def plugin(hook_id, slot, context_fields, result_fields=None, items=()):
    class Plugin:
        registrations = {
            "pre_turn": ContextRegistration(
                hook_id=hook_id, capability_id="cap", readback_slots=(slot,)
            )
        }

        @hookimpl
        def pre_turn(self):
            return {
                "readback": {slot: {"status": "applied"}},
                "context_fields": context_fields,
                "instructions": [f"instruction of {hook_id}"],
                "result_fields": result_fields or {},
                "context_items": list(items),
            }

    return Plugin()


def test_surviving_contributions_are_flattened_in_order(pm, turn):
    pm.register(
        plugin("a.ctx", "a_slot", {"a_field": 1}, {"a_answer": {"type": "string", "maxLength": 9}}),
        name="a",
    )
    pm.register(plugin("b.ctx", "b_slot", {"b_field": 2}), name="b")
    projection = project_contributions(call_pre_turn(pm, turn).payload)
    assert projection.context_fields == {"a_field": 1, "b_field": 2}
    assert projection.capability_context_fields == ["a_field", "b_field"]
    assert projection.capability_instructions == ["instruction of a.ctx", "instruction of b.ctx"]
    assert projection.capability_result_fields == {"a_answer": {"type": "string", "maxLength": 9}}
    assert projection.dropped_hook_ids == []


def test_colliding_field_names_drop_the_later_contribution(pm, turn):
    pm.register(plugin("a.ctx", "a_slot", {"shared_field": 1}), name="a")
    pm.register(plugin("b.ctx", "b_slot", {"shared_field": 2}), name="b")
    projection = project_contributions(call_pre_turn(pm, turn).payload)
    assert projection.context_fields == {"shared_field": 1}
    assert projection.dropped_hook_ids == ["b.ctx"]


def test_a_changed_readback_or_envelope_drops_the_contribution(pm, turn):
    pm.register(plugin("a.ctx", "a_slot", {"a_field": 1}), name="a")
    payload = call_pre_turn(pm, turn).payload

    tampered = copy.deepcopy(payload)
    tampered["a_slot"] = {"status": "forged"}
    assert project_contributions(tampered).dropped_hook_ids == ["a.ctx"]

    reenvelope = copy.deepcopy(payload)
    reenvelope["turn_envelope"]["agent_id"] = "someone-else"
    assert project_contributions(reenvelope).context_fields == {}


def test_garbage_in_the_stored_list_is_dropped_not_repaired(pm, turn):
    pm.register(plugin("a.ctx", "a_slot", {"a_field": 1}), name="a")
    payload = call_pre_turn(pm, turn).payload
    payload["turn_context_contributions"] = [
        "garbage",
        {"hook_id": "x"},
        *payload["turn_context_contributions"],
    ]
    projection = project_contributions(payload)
    assert projection.dropped_hook_ids == ["", "x"]
    assert projection.context_fields == {"a_field": 1}


def test_no_contributions_project_to_nothing():
    projection = project_contributions({})
    assert projection.to_json() == {
        "context_fields": {},
        "capability_context_fields": [],
        "capability_instructions": [],
        "capability_result_fields": {},
        "context_items": [],
        "dropped_hook_ids": [],
    }


def item(ref):
    return ContextItem(ref=ref, text=f"text of {ref}")


def test_items_are_projected_in_plugin_name_order(pm, turn):
    pm.register(plugin("b.ctx", "b_slot", {"b_field": 2}, items=[item("b:1")]), name="b")
    pm.register(
        plugin("a.ctx", "a_slot", {"a_field": 1}, items=[item("a:1"), item("a:2")]), name="a"
    )
    projection = project_contributions(call_pre_turn(pm, turn).payload)
    assert projection.context_items == [item("a:1"), item("a:2"), item("b:1")]


def test_a_colliding_item_ref_drops_the_later_contribution_with_its_items(pm, turn):
    pm.register(plugin("a.ctx", "a_slot", {"a_field": 1}, items=[item("same")]), name="a")
    pm.register(
        plugin("b.ctx", "b_slot", {"b_field": 2}, items=[item("b:1"), item("same")]), name="b"
    )
    projection = project_contributions(call_pre_turn(pm, turn).payload)
    assert projection.context_items == [item("same")]
    assert (projection.context_fields, projection.dropped_hook_ids) == ({"a_field": 1}, ["b.ctx"])


def test_items_go_whenever_their_contribution_is_dropped(pm, turn):
    pm.register(plugin("a.ctx", "a_slot", {"a_field": 1}, items=[item("a:1")]), name="a")
    payload = call_pre_turn(pm, turn).payload
    assert payload["turn_context_contributions"][0]["context_items"] == [item("a:1").to_json()]

    tampered = copy.deepcopy(payload)
    tampered["a_slot"] = {"status": "forged"}
    assert project_contributions(tampered).context_items == []

    broken = copy.deepcopy(payload)
    broken["turn_context_contributions"][0]["context_items"] = [{"ref": ""}]
    assert project_contributions(broken).dropped_hook_ids == ["a.ctx"]

    older = copy.deepcopy(payload)
    del older["turn_context_contributions"][0]["context_items"]
    assert project_contributions(older).context_fields == {"a_field": 1}, "no items is no items"
