"""Utility observations and the reducer (contracts.md §14-§15, identities.md §13-§14)."""

from __future__ import annotations

import copy
import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_host_generic import run_cli
from utility_cases import (
    CONTEXT,
    CREATED_AT,
    PROPOSAL,
    RECEIPT,
    SCOPE,
    SHAPE_ERRORS,
    VERIFIED,
    cases,
    obs,
    projection_input,
)

from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility.proposal import build_observation
from capabilities.reward_memory.utility.reducer import project, reducer_identity
from capabilities.reward_memory.utility.subjects import subject_id


def test_u1_identities_match_the_pinned_vectors():
    assert u.application_receipt_id(RECEIPT) == (
        "rma_61d297802ba37ac4fa8186e6485c87a994a73dd609f5d3ad2227852d465da8ef"
    )
    observation = build_observation(RECEIPT, VERIFIED, CONTEXT, PROPOSAL, created_at=CREATED_AT)
    assert observation == obs()
    assert observation["observation_id"] == (
        "muo_d15c6ea9bdda846106ba06a8c641449b7896b0ee3192d10fd5d6bf72b6d8cfb3"
    )
    assert u.delivery_fingerprint(observation) == (
        "muof_0ead0593e93dbc82b57c6669d3584b3472dfd7fd37639ad9bdf53cb97e111659"
    )
    assert reducer_identity(SCOPE, "snapshot:r1", "policy:p1", "memory_utility_reducer_v0") == (
        "mur_2ee97147a9ab0a49c40bbd03153d3f208faf7d603580727bff9b9e09f7fddd71"
    )
    assert subject_id(observation).startswith("mui_d759c2f0b2a6219ea950b0674d1b4a78")
    assert subject_id({**observation, "attribution_level": "set"}) == (
        "mus_8f060eccc7ca5a4754371c9957a7a4d6e3f4c0af0ea8f76e57be89c46aed4183"
    )
    assert subject_id({**observation, "attribution_level": "none"}) == (
        "mul_7dd95037af4d2f00a52f911f4548a7a80f80101edee09490649579b1951a3f73"
    )


def test_the_judgement_is_not_part_of_the_observation_id():
    assert obs(utility_label="harmful", confidence=0.1)["observation_id"] == obs()["observation_id"]
    assert obs(evaluator_ref="ev:other")["observation_id"] != obs()["observation_id"]


def test_a_replayed_u1_is_one_helpful_item():
    projection = project(projection_input(obs(), obs()))
    assert (projection["status"], projection["duplicate_observation_count"]) == ("ready", 1)
    [subject] = projection["subjects"]
    assert (subject["effective_utility_label"], subject["utility_estimate"]) == ("helpful", 0.8)
    assert (subject["confidence"], subject["uncertainty"]) == (0.8, 0.2)


REJECTIONS = {
    "scope_mismatch": "scope_mismatch",
    "retrieval_snapshot_mismatch": "retrieval_snapshot_mismatch",
    "policy_snapshot_mismatch": "policy_snapshot_mismatch",
    "identity_invalid": "observation_identity_invalid",
    "write_boundary": "observation_write_boundary_violation",
    "schema_mismatch": "observation_schema_mismatch",
    "missing_key": "observation_malformed",
    "bool_confidence": "observation_malformed",
    "confidence_above_one": "observation_malformed",
    "url_ref": "observation_malformed",
    "path_ref": "observation_malformed",
    "slash_ref": "observation_malformed",
    "bad_digest": "observation_malformed",
    "unsorted_digests": "observation_malformed",
    "item_with_two_digests": "observation_malformed",
    "duplicate_reason_codes": "observation_malformed",
    "timestamp_without_offset": "observation_malformed",
    "insufficient_but_helpful": "observation_malformed",
    "none_but_helpful": "observation_malformed",
    "strong_basis_without_evidence": "observation_malformed",
    "label_without_evidence": "observation_malformed",
    "observation_not_an_object": "observation_malformed",
    "bad_observation_scope": "observation_malformed_scope",
    "bad_observation_snapshot": "observation_malformed_snapshot",
    "too_many_observations": "observation_malformed",
    "too_many_subjects": "projection_subject_limit_exceeded",
    "previous_projection_not_a_projection": "observation_malformed",
    "bad_context_scope": "observation_malformed",
    "bad_context_snapshot": "observation_malformed",
}


@pytest.mark.parametrize(("name", "reason"), sorted(REJECTIONS.items()))
def test_every_rejection_path_has_its_reason_code_and_exit_2(tmp_path, name, reason):
    source = tmp_path / "input.json"
    source.write_text(json.dumps(cases()[name]))
    result = run_cli("reward-memory", "utility-project", "--input", str(source), stdin="")
    projection = json.loads(result.stdout)
    assert (result.returncode, projection["status"], projection["ok"]) == (2, "rejected", False)
    assert projection["rejections"][0]["reason_codes"] == [reason]
    assert projection["subjects"] == [] and projection["read_only"] is True


def test_an_unreadable_context_uses_the_placeholder():
    projection = project(cases()["bad_context_scope"])
    assert projection["scope"] == dict.fromkeys(u.SCOPE_FIELDS, "rejected")
    assert projection["retrieval_snapshot_ref"] == "rejected"


def test_a_previous_projection_of_another_context_is_refused():
    other = project(
        projection_input(
            obs(retrieval_snapshot_ref="snapshot:r9"), retrieval_snapshot_ref="snapshot:r9"
        )
    )
    refused = project(projection_input(obs(), previous_projection=other))
    assert refused["rejections"][0]["reason_codes"] == ["reducer_identity_mismatch"]
    same = project(projection_input(obs()))
    assert project(projection_input(obs(), previous_projection=same))["status"] == "ready"


@pytest.mark.parametrize("name", sorted(SHAPE_ERRORS))
def test_a_malformed_input_shape_is_an_invalid_request(tmp_path, name):
    source = tmp_path / "input.json"
    source.write_text(json.dumps(SHAPE_ERRORS[name]))
    result = run_cli("reward-memory", "utility-project", "--input", str(source), stdin="")
    error = json.loads(result.stdout)
    assert (result.returncode, error["schema_version"], error["status"]) == (
        2,
        "reward_memory_error_v0",
        "invalid_request",
    )


def test_conflicting_deliveries_are_quarantined_and_kept_out_of_subjects():
    projection = project(cases()["conflict_beside_a_good_subject"])
    assert projection["status"] == "review_required" and not projection["projection_ready"]
    [rejection] = projection["rejections"]
    assert rejection["reason_codes"] == ["conflicting_observation_delivery"]
    assert (rejection["quarantine_proposed"], rejection["automatic_deletion"]) == (True, False)
    assert (
        projection["conflicting_observation_count"],
        projection["rejected_observation_count"],
    ) == (1, 2)
    [subject] = projection["subjects"]
    assert subject["observation_count"] == 1, "only the other evaluator's observation counts"


@pytest.mark.parametrize(
    ("name", "label", "state", "reasons"),
    [
        ("harmful", "harmful", "attenuation_proposed", ["negative_utility_requires_review"]),
        ("same_tier_conflict", "unknown", "conflict", ["same_evidence_tier_conflict"]),
        ("strongest_unknown_blocks_weaker", "unknown", "conflict", ["strongest_evidence_unknown"]),
        ("strong_neutral_over_weaker_helpful", "neutral", "none", []),
        (
            "harmful_over_weaker_helpful",
            "harmful",
            "attenuation_proposed",
            ["negative_utility_requires_review"],
        ),
    ],
)
def test_the_precedence_table(name, label, state, reasons):
    [subject] = project(cases()[name])["subjects"]
    assert subject["effective_utility_label"] == label
    assert (subject["review"]["state"], subject["review"]["reason_codes"]) == (state, reasons)


def test_a_tier_combines_its_confidences():
    [subject] = project(cases()["weak_tier_combines"])["subjects"]
    assert (subject["confidence"], subject["utility_estimate"]) == (0.75, 0.75)


def test_item_set_and_none_subjects_stay_apart():
    projection = project(cases()["three_kinds_of_subject"])
    levels = sorted(s["attribution_level"] for s in projection["subjects"])
    assert levels == ["item", "none", "set"]
    [item] = [s for s in projection["subjects"] if s["attribution_level"] == "item"]
    assert item["observation_count"] == 1, "set credit is never copied onto items"
    assert projection["unresolved_lineage_count"] == 1


def test_history_is_bounded_oldest_first():
    projection = project(cases()["history_bounded"])
    history = projection["observation_history"]
    assert (len(history), projection["observation_history_truncated"]) == (256, True)
    stamps = [u.instant(e["created_at"]) for e in history]
    assert stamps == sorted(stamps)


RECEIPT_MUTATIONS = [
    ("boundary", {"raw_content_captured": True}, None, None, "application_receipt_invalid"),
    ("unverified", {}, {"verified": False}, None, "utility_binding_mismatch"),
    ("artifact", {}, {"artifact_ref": "artifact:x"}, None, "utility_binding_mismatch"),
    ("echo", {}, {}, {"outcome_status": "failed"}, "utility_binding_mismatch"),
    (
        "item digest",
        {},
        {},
        {"memory_ref_digests": ["1111111111111111"]},
        "utility_binding_mismatch",
    ),
    ("extra field", {}, {}, {"x": 1}, "observation_malformed"),
    ("snapshot", {"retrieval_snapshot_ref": "snapshot:zz"}, {}, None, "utility_binding_mismatch"),
]


@pytest.mark.parametrize(("name", "receipt", "outcome", "proposal", "reason"), RECEIPT_MUTATIONS)
def test_the_builder_binds_the_proposal_to_the_trusted_facts(
    name, receipt, outcome, proposal, reason
):
    with pytest.raises(u.UtilityError) as raised:
        build_observation(
            {**RECEIPT, **receipt},
            {**VERIFIED, **(outcome or {})},
            CONTEXT,
            {**PROPOSAL, **(proposal or {})},
            created_at=CREATED_AT,
        )
    assert raised.value.reason_code == reason


def observe(tmp_path, evaluator=None, proposal=None):
    facts = {
        "application_receipt": RECEIPT,
        "verified_outcome": VERIFIED,
        "attribution_context": CONTEXT,
        "created_at": CREATED_AT,
    }
    if proposal is not None:
        facts["evaluator_proposal"] = proposal
    source = tmp_path / "facts.json"
    source.write_text(json.dumps(facts))
    # -S: the evaluators are test programs, and without site (so without a measuring
    # coverage start-up) they answer well inside the one-second timeout under load.
    evaluator = [evaluator[0], "-S", *evaluator[1:]] if evaluator else evaluator
    extra = (
        ["--evaluator-command-json", json.dumps(evaluator), "--evaluator-timeout-seconds", "1"]
        if evaluator
        else []
    )
    result = run_cli("reward-memory", "utility-observe", "--input", str(source), *extra, stdin="")
    return result.returncode, json.loads(result.stdout)


def test_an_evaluator_proposal_becomes_one_observation(tmp_path):
    script = tmp_path / "evaluator.py"
    script.write_text(f"import json, sys\njson.load(sys.stdin)\nprint(json.dumps({PROPOSAL!r}))\n")
    code, result = observe(tmp_path, [sys.executable, str(script)])
    assert (code, result["status"], result["observation"]) == (0, "observed", obs())
    code, result = observe(tmp_path, proposal=PROPOSAL)
    assert result["observation"] == obs()


@pytest.mark.parametrize(
    ("program", "reason"),
    [
        ("import time; time.sleep(5)", "utility_evaluator_timeout"),
        ("import sys; sys.exit(3)", "utility_evaluator_failed"),
        ("pass", "utility_evaluator_absent"),
        ("print('not json')", "utility_evaluator_malformed"),
        ("print('{}')", "observation_malformed"),
    ],
)
def test_a_bad_evaluator_fails_open_and_changes_nothing(tmp_path, program, reason):
    code, result = observe(tmp_path, [sys.executable, "-c", program])
    assert (code, result["status"], result["reason_code"]) == (0, "not_observed", reason)
    assert result["observation"] is None and result["provider_write_performed"] is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["facts.json"]


def test_no_evaluator_at_all_is_not_observed(tmp_path):
    code, result = observe(tmp_path)
    assert (code, result["reason_code"]) == (0, "utility_evaluator_absent")


LABELS = ("helpful", "harmful", "neutral", "unknown")


@st.composite
def observations(draw):
    basis = draw(st.sampled_from(u.EVIDENCE_BASES))
    label = "unknown" if basis == "insufficient" else draw(st.sampled_from(LABELS))
    level = draw(st.sampled_from(("item", "set", "none")))
    if level == "none":
        label = "unknown"
    return obs(
        utility_label=label,
        evidence_basis=basis,
        attribution_level=level,
        memory_ref_digests=[draw(st.sampled_from(["1111111111111111", "34e0a8c2c217e248"]))],
        confidence=draw(st.floats(min_value=0, max_value=1, allow_nan=False)),
        evaluator_ref=f"ev:{draw(st.integers(0, 5))}",
        created_at=f"2026-08-{draw(st.integers(10, 20))}T00:00:00Z",
    )


def _subjects(projection):
    return {s["subject_id"]: s for s in projection["subjects"]}


@settings(max_examples=60, deadline=None)
@given(st.lists(observations(), max_size=12), st.randoms(use_true_random=False))
def test_reducer_properties(stream, rnd):
    projection = project(projection_input(*stream))
    for subject in projection["subjects"]:
        assert -1.0 <= subject["utility_estimate"] <= 1.0
        assert 0.0 <= subject["confidence"] <= 1.0
        assert abs(subject["confidence"] + subject["uncertainty"] - 1.0) < 1e-9
    # replay is idempotent: every delivery again changes nothing but the duplicate count
    replayed = project(projection_input(*stream, *copy.deepcopy(stream)))
    assert replayed["subjects"] == projection["subjects"]
    assert replayed["status"] == projection["status"]
    # the order of delivery does not matter
    shuffled = list(stream)
    rnd.shuffle(shuffled)
    assert project(projection_input(*shuffled)) == projection


@settings(max_examples=60, deadline=None)
@given(st.lists(observations(), min_size=1, max_size=8), st.lists(observations(), max_size=6))
def test_weaker_evidence_never_overrides_stronger(strong, weak):
    base = project(projection_input(*strong))
    if base["status"] == "rejected":
        return
    subjects = _subjects(base)
    for subject_key, subject in subjects.items():
        top = u.EVIDENCE_BASES.index(subject["effective_evidence_basis"])
        weaker = [
            o
            for o in weak
            if subject_id(o) == subject_key
            and u.EVIDENCE_BASES.index(o["evidence_basis"]) < top
            and o["observation_id"] not in {x["observation_id"] for x in strong}
        ]
        after = _subjects(project(projection_input(*strong, *weaker)))[subject_key]
        assert after["effective_utility_label"] == subject["effective_utility_label"]
        assert after["utility_estimate"] == subject["utility_estimate"]
