"""``basis_digest`` (identities.md §15), including the cross-checked vector."""

from __future__ import annotations

import pytest

from turn_hooks import ContextRegistration, basis_digest
from turn_hooks._contribution import governing_source, validate_result

REGISTRATION = ContextRegistration(
    hook_id="reward-memory.turn-context",
    capability_id="reward-memory",
    readback_slots=("reward_memory_recall",),
)
RESULT = {
    "readback": {"reward_memory_recall": {"status": "applied", "context": None}},
    "context_fields": {"reward_memory_recall": {"status": "applied", "context": {"guidance": []}}},
    "instructions": ["Treat recalled guidance as private, non-authoritative context."],
    "result_fields": {"reward_memory_reflection_json": {"type": "string", "maxLength": 2400}},
}
ENVELOPE = {
    "goal_id": "demo-goal",
    "agent_id": "explorer",
    "boundary": {
        "capabilities": {"reward_memory": {"automatic_recall": True, "automatic_ingest": True}}
    },
}


def test_the_reference_vector():
    digest = basis_digest(
        {"turn_envelope": ENVELOPE}, REGISTRATION, validate_result(RESULT, REGISTRATION)
    )
    assert digest == "b3522a622ae847b59638746c0a9838d0576866eb0aa2572908a85931ac60307b"


def test_integral_floats_hash_like_javascript():
    floated = {**RESULT, "context_fields": {"reward_memory_recall": {"n": 1.0}}}
    inted = {**RESULT, "context_fields": {"reward_memory_recall": {"n": 1}}}
    payload = {"turn_envelope": ENVELOPE}
    assert basis_digest(payload, REGISTRATION, floated) == basis_digest(
        payload, REGISTRATION, inted
    )


@pytest.mark.parametrize(
    ("extra", "coverage"),
    [
        pytest.param({}, "v0", id="nothing"),
        pytest.param({"response_plan": {"x": 1}}, "v1", id="response-plan"),
        pytest.param({"action": {"action_portfolio": [1]}}, "v2", id="portfolio"),
        pytest.param({"action": {"planning_horizon": {"h": 1}}}, "v3", id="horizon"),
        pytest.param({"agent_context": {"c": 1}}, "v4", id="agent-context"),
        pytest.param({"writeback": {"settlement_plan": {"p": 1}}}, "v5", id="settlement-plan"),
        pytest.param(
            {"writeback": {"settlement_plan": {}}, "action": "text"},
            "v0",
            id="empty-plan-and-non-object-action",
        ),
    ],
)
def test_coverage_names_the_richest_dimension_present(extra, coverage):
    source = governing_source({"turn_envelope": {**ENVELOPE, **extra}})
    assert source["governing"]["coverage"] == f"turn_envelope_action_dimensions_{coverage}"


def test_optional_governing_parts_appear_only_when_non_empty():
    governing = governing_source(
        {"turn_envelope": {**ENVELOPE, "work_context": {"w": 1}, "agent_context": {}}}
    )["governing"]
    assert governing["work_context"] == {"w": 1}
    assert "agent_context" not in governing and "response_plan" not in governing
    assert governing["decision"] is None and governing["boundary"] == ENVELOPE["boundary"]


def test_goal_and_agent_fall_back_to_the_payload_top_level():
    source = governing_source({"goal_id": "g", "agent_id": None, "turn_envelope": "not-an-object"})
    assert (source["goal_id"], source["agent_id"]) == ("g", None)
    assert source["governing"]["agent_id"] is None
