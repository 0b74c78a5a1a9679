"""read_result and its dispatcher: a plugin reads its own result field before the host
keeps it (issue 36: a tolerant reader at the model boundary, a strict contract behind)."""

from __future__ import annotations

import pytest

from turn_hooks import SettlementRegistration, hookimpl, read_results


def reader(hook_id, answer, fields=("demo_answer",), calls=None):
    class Plugin:
        registrations = {
            "post_settlement": SettlementRegistration(
                hook_id=hook_id, capability_id="cap", result_fields=fields
            )
        }

        @hookimpl
        def post_settlement(self, turn, settlement):
            return None

        @hookimpl
        def read_result(self, field, value):
            if calls is not None:
                calls.append((field, value))
            return answer(value) if callable(answer) else answer

    return Plugin()


def test_a_plugin_s_canonical_value_replaces_what_the_model_gave(pm):
    calls = []
    pm.register(reader("a.ingest", lambda value: {"value": value.strip("` ")}, calls=calls), "a")
    values, notes = read_results(pm, {"demo_answer": "``` 42 ```", "other": "kept"})
    assert values == {"demo_answer": "42", "other": "kept"}
    assert notes == []
    assert calls == [("demo_answer", "``` 42 ```")], "only the declared field is read"


def test_an_empty_value_is_not_read(pm):
    calls = []
    pm.register(reader("a.ingest", {"value": "x"}, calls=calls), "a")
    assert read_results(pm, {"demo_answer": "  "}) == ({"demo_answer": "  "}, [])
    assert calls == []


def test_none_keeps_the_value(pm):
    pm.register(reader("a.ingest", None), "a")
    assert read_results(pm, {"demo_answer": "v"}) == ({"demo_answer": "v"}, [])


def test_a_refusal_keeps_the_value_and_says_field_and_rule(pm):
    refusal = {"reason_code": "demo_refused", "field": "a.b[0]", "rule": "must be short"}
    pm.register(reader("a.ingest", {"refusal": refusal}), "a")
    values, notes = read_results(pm, {"demo_answer": "v"})
    assert values == {"demo_answer": "v"}
    assert notes == [
        {
            "field": "demo_answer",
            "hook_id": "a",
            "reason_code": "demo_refused",
            "detail": "a.b[0]: must be short",
        }
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "not a mapping",
        {"value": "x", "refusal": {}},
        {"other": "x"},
        {"value": 5},
        {"value": "x" * 65537},
        {"refusal": "no"},
        {"refusal": {"reason_code": "Bad Code", "field": "f", "rule": "r"}},
        {"refusal": {"reason_code": "ok", "field": "f g", "rule": "r"}},
        {"refusal": {"reason_code": "ok", "field": "f", "rule": "caf\u00e9"}},
        {"refusal": {"reason_code": "ok", "field": "f"}},
    ],
)
def test_an_invalid_answer_keeps_the_value(pm, answer):
    pm.register(reader("a.ingest", answer), "a")
    values, notes = read_results(pm, {"demo_answer": "v"})
    assert values == {"demo_answer": "v"}
    assert notes == [
        {"field": "demo_answer", "hook_id": "a", "reason_code": "result_reader_invalid"}
    ]


def test_a_failing_reader_is_isolated(pm):
    def boom(value):
        raise RuntimeError(value)

    pm.register(reader("a.ingest", boom), "a")
    values, notes = read_results(pm, {"demo_answer": "secret text"})
    assert values == {"demo_answer": "secret text"}
    assert notes == [
        {"field": "demo_answer", "hook_id": "a", "reason_code": "result_reader_failed"}
    ]
    assert "secret" not in repr(notes)


def test_the_first_plugin_declaring_a_field_reads_it(pm):
    pm.register(reader("b.ingest", {"value": "from b"}), "b")
    pm.register(reader("a.ingest", {"value": "from a"}), "a")
    assert read_results(pm, {"demo_answer": "v"})[0] == {"demo_answer": "from a"}


def test_a_field_whose_first_declarer_reads_nothing_is_kept(pm):
    class Declares:
        registrations = {
            "post_settlement": SettlementRegistration(
                hook_id="a.ingest", capability_id="cap", result_fields=("demo_answer",)
            )
        }

        @hookimpl
        def post_settlement(self, turn, settlement):
            return None

    pm.register(Declares(), "a")
    pm.register(reader("b.ingest", {"value": "from b"}), "b")
    assert read_results(pm, {"demo_answer": "v"}) == ({"demo_answer": "v"}, [])


def test_a_plugin_without_a_valid_registration_reads_nothing(pm):
    class Broken:
        registrations = {"post_settlement": "not a registration"}

        @hookimpl
        def post_settlement(self, turn, settlement):
            return None

        @hookimpl
        def read_result(self, field, value):
            return {"value": "changed"}

    pm.register(Broken(), "a")
    assert read_results(pm, {"demo_answer": "v"}) == ({"demo_answer": "v"}, [])
