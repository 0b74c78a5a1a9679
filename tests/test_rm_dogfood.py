"""Dogfood receipts and batch readiness (`turn-hooks reward-memory dogfood-evaluate`)."""

from __future__ import annotations

import json

import pytest
from test_host_generic import run_cli
from utility_cases import DOGFOOD_ERRORS, dogfood_cases, settled

from capabilities.reward_memory.contract.values import RewardMemoryInputError
from capabilities.reward_memory.reports.dogfood import build_receipt, evaluate_batch
from capabilities.reward_memory.reports.evaluation import evaluate
from conformance.public_safety import public_safety_violations


def batch_cli(tmp_path, document):
    source = tmp_path / "batch.json"
    source.write_text(json.dumps(document))
    result = run_cli("reward-memory", "dogfood-evaluate", "--input", str(source), stdin="")
    return result.returncode, json.loads(result.stdout)


def test_a_complete_batch_is_ready_for_the_bounded_pilot(tmp_path):
    code, batch = batch_cli(tmp_path, dogfood_cases()["ready"])
    assert (code, batch["status"], batch["reason_codes"]) == (
        0,
        "ready_for_bounded_issue_fix_pilot",
        [],
    )
    assert batch["application_dispositions"] == ["applied", "not_applied", "refuted"]
    assert batch["metrics"]["utility_helpful_count"] == 1
    assert all(value is False for value in batch["boundaries"].values())
    assert not public_safety_violations(batch)


@pytest.mark.parametrize(
    ("name", "missing"),
    [
        ("no_issue_fix", ["issue_fix_outcome_missing", "application_disposition_missing:applied"]),
        ("no_controls", ["operator_control_missing:edit", "operator_control_missing:retire"]),
    ],
)
def test_each_missing_piece_holds_the_batch(tmp_path, name, missing):
    code, batch = batch_cli(tmp_path, dogfood_cases()[name])
    assert (code, batch["status"], batch["reason_codes"]) == (2, "hold", missing)


def test_a_closed_stage4_gate_holds_even_a_complete_batch():
    closed = {**evaluate(), "status": "failed"}
    batch = evaluate_batch(dogfood_cases()["ready"], stage4=lambda: closed)
    assert batch["reason_codes"] == ["stage4_release_gate_not_ready"]
    assert batch["stage4_gate_verified"] is False


def test_utility_never_changes_readiness():
    with_utility = evaluate_batch(dogfood_cases()["ready"], stage4=evaluate)
    without = dogfood_cases()["ready"]
    without["observations"][0].pop("utility_attribution")
    assert evaluate_batch(without, stage4=evaluate)["status"] == with_utility["status"]


def test_dispositions_are_coverage_not_utility():
    assert build_receipt(settled(outcome="ignored"))["application_disposition"] == "not_applied"
    assert build_receipt(settled(outcome="refuted"))["application_disposition"] == "refuted"
    assert build_receipt(settled())["receipt_id"] == "dogfood:d117d58a9aa2ddee84bb"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("duplicate_receipt", "duplicate_receipt_id"),
        ("duplicate_control_ref", "duplicate_control_ref"),
        ("bad_family_prefix", "invalid_request"),
        ("applied_without_readback", "dogfood_verification_missing"),
        ("control_action_invalid", "invalid_request"),
        ("unverified_outcome", "invalid_request"),
        ("raw_content", "raw_content_rejected"),
        ("unverified_control", "operator_checkpoint_unverified"),
    ],
)
def test_every_dogfood_rejection_has_its_reason_code(tmp_path, name, reason):
    code, error = batch_cli(tmp_path, DOGFOOD_ERRORS[name])
    assert (code, error["status"], error["reason_code"]) == (2, "invalid_request", reason)


@pytest.mark.parametrize("flag", ["absent", None, 0, "false"])
def test_an_observation_needs_its_raw_content_flag_as_a_boolean(flag):
    # LoopX requires the flag (issue 19): a missing one is not read as false.
    observation = settled()
    if flag == "absent":
        del observation["raw_content_captured"]
    else:
        observation["raw_content_captured"] = flag
    with pytest.raises(RewardMemoryInputError) as caught:
        build_receipt(observation)
    public = caught.value.to_public()
    assert (public["field"], public["reason_code"]) == (
        "observation.raw_content_captured",
        "invalid_request",
    )


@pytest.mark.parametrize("kind", [300, None, "recall"])
def test_an_application_receipt_names_a_recall_query_kind(kind):
    # LoopX refuses any other query kind (issue 19).
    observation = settled()
    observation["application_receipt"]["query_kind"] = kind
    with pytest.raises(RewardMemoryInputError) as caught:
        build_receipt(observation)
    assert "query_kind" in str(caught.value)


def test_an_application_receipt_surface_id_is_an_opaque_ref():
    # As its corpus_id: LoopX refuses control characters there (issue 19).
    observation = settled()
    observation["application_receipt"]["surface_id"] = "\x00\x85r"
    with pytest.raises(RewardMemoryInputError) as caught:
        build_receipt(observation)
    assert "surface_id" in str(caught.value)
