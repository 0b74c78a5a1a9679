"""Models: defaults, immutability and strict JSON validation through pydantic."""

from __future__ import annotations

import dataclasses

import pytest

from turn_hooks import (
    HOSTS,
    ContextItem,
    ContextRegistration,
    InvalidInputError,
    Settlement,
    SettlementEvidence,
    TurnContext,
    TurnHooksError,
)
from turn_hooks.models import Host
from turn_hooks.schema import parse_model

TURN = {"host": "codex_cli", "host_turn_id": "t-1", "observed_at": "2026-08-15T00:00:00Z"}


def test_turn_key_defaults_to_the_host_turn_id_unless_given():
    assert TurnContext(**TURN).turn_key == "t-1"
    assert TurnContext(**TURN, turn_key="own").turn_key == "own"


def test_models_are_frozen():
    turn = TurnContext(**TURN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.host = "dsh"  # type: ignore[misc]


def test_hosts_list_matches_the_literal():
    assert HOSTS == Host.__args__


def test_parse_model_round_trips_nested_models():
    settlement = parse_model(Settlement, {"evidence": {"writeback": {"ok": True}}})
    assert isinstance(settlement.evidence, SettlementEvidence)
    assert settlement.evidence.schema_version == "turn_post_settlement_evidence_v0"
    assert parse_model(Settlement, settlement.to_json()) == settlement


@pytest.mark.parametrize(
    ("data", "field"),
    [
        pytest.param({**TURN, "host": "vim"}, "host", id="unknown-host"),
        pytest.param({**TURN, "surprise": 1}, "surprise", id="unknown-key"),
        pytest.param({**TURN, "host_turn_id": 7}, "host_turn_id", id="int-for-string"),
        pytest.param(
            {k: v for k, v in TURN.items() if k != "observed_at"}, "observed_at", id="missing"
        ),
        pytest.param({**TURN, "schema_version": 2}, "schema_version", id="wrong-version"),
    ],
)
def test_parse_model_is_strict_and_names_the_field(data, field):
    with pytest.raises(InvalidInputError) as info:
        parse_model(TurnContext, data)
    assert info.value.field == field
    assert info.value.reason_code == "schema_validation_failed"
    assert isinstance(info.value, ValueError)


def test_parse_model_rejects_non_json():
    with pytest.raises(InvalidInputError) as info:
        parse_model(TurnContext, {"x": object()})
    assert info.value.reason_code == "input_not_json"


def test_errors_are_public_safe_by_construction():
    error = TurnHooksError("plain message", reason_code="custom")
    assert error.to_public() == {
        "ok": False,
        "schema_version": "turn_hooks_error_v0",
        "error": "TurnHooksError",
        "reason_code": "custom",
        "message": "plain message",
    }
    assert TurnHooksError("").message == ""


def test_provider_errors_carry_a_status_code():
    from turn_hooks import ProviderRejected, ProviderUnavailable

    error = ProviderUnavailable("down", status_code=503)
    assert (error.status_code, error.reason_code) == (503, "provider_unavailable")
    assert (
        ProviderRejected("no", reason_code="provider_conflict").reason_code == "provider_conflict"
    )


def test_to_json_is_exactly_asdict_with_new_containers():
    # to_json converts without asdict's deepcopy of every string (hook-path cost);
    # the result must stay what asdict gives: equal, same types, nothing shared.
    from collections import namedtuple

    from turn_hooks import Contribution, HookFailure, PreTurnOutcome

    class Label(str):
        pass

    pair = namedtuple("pair", "left right")
    nested = {
        "list": [1, 2.5, True, None, {"deep": ["x", Label("y")]}],
        "tuple": ("a", ("b", 3)),
        "set": {1, 2},
        "pair": pair([1], {"k": "v"}),
        7: "an int key",
    }
    outcome = PreTurnOutcome(
        payload=nested,
        contributions=(
            Contribution(
                hook_id="h",
                capability_id="c",
                readback_slots=["s"],
                context_fields={"s": nested},
                instructions=["i"],
                result_fields={},
                basis_digest="d",
                context_items=[ContextItem(ref="r", text="t")],
            ),
        ),
        failures=(HookFailure(hook_id="h", reason_code="x", plugin="p"),),
    )
    document = outcome.to_json()
    expected = dataclasses.asdict(outcome)
    assert document == expected

    def shapes(value):
        if isinstance(value, dict):
            return ("dict", sorted((repr(k), shapes(v)) for k, v in value.items()))
        if isinstance(value, list | tuple | set):
            return (type(value).__name__, [shapes(v) for v in value])
        return type(value).__name__

    assert shapes(document) == shapes(expected)
    assert type(document["payload"]["pair"]) is pair
    for original, copied in (
        (nested, document["payload"]),
        (nested["list"], document["payload"]["list"]),
        (nested["set"], document["payload"]["set"]),
        (nested["list"][4]["deep"], document["payload"]["list"][4]["deep"]),
    ):
        assert copied == original and copied is not original
    assert document["contributions"][0]["context_items"] == [{"ref": "r", "text": "t"}]


def _generated(model: type) -> type:
    """The model as plain ``@dataclass`` would build it: the methods it generates."""
    fields = [(f.name, f.type, f) for f in dataclasses.fields(model)]
    namespace = {"__post_init__": model.__post_init__} if hasattr(model, "__post_init__") else {}
    return dataclasses.make_dataclass(
        model.__name__, fields, namespace=namespace, frozen=True, kw_only=True
    )


@pytest.mark.parametrize(
    ("model", "values", "other"),
    [
        pytest.param(
            ContextItem,
            {"ref": "r", "text": "t"},
            {"ref": "r", "text": "u"},
            id="context-item",
        ),
        pytest.param(
            ContextRegistration,
            {"hook_id": "h", "capability_id": "c", "readback_slots": ("s",)},
            {"hook_id": "h", "capability_id": "c"},
            id="registration",
        ),
        pytest.param(TurnContext, TURN, {**TURN, "turn_key": "k"}, id="turn-context"),
    ],
)
def test_equality_hash_and_repr_are_what_dataclass_generates(model, values, other):
    # The models share one __eq__, __hash__ and __repr__ instead of compiling three
    # per model at import (hook-path cost); they must behave as the generated ones.
    reference = _generated(model)
    first, second, third = model(**values), model(**values), model(**other)
    assert first == second and first is not second
    assert (first == third) is (reference(**values) == reference(**other)) is False
    assert first.__eq__(reference(**values)) is NotImplemented
    assert first != reference(**values)
    assert repr(first) == repr(reference(**values))
    try:
        expected = hash(reference(**values))
    except TypeError:  # a dict field: unhashable, as the generated __hash__ is
        with pytest.raises(TypeError):
            hash(first)
    else:
        assert hash(first) == expected == hash(second)
