"""The typed documents describe what the code really produces.

A TypedDict is only a promise to mypy; these tests hold real documents, made by the
real code on the embedded store, to it: every required key is there and no key is
outside the declared ones. A key added to a document without its type (or a type
that names a key the code never writes as required) fails here.
"""

from __future__ import annotations

import json

import pytest
from fixtures import f1
from turn_support import RAW, bound_goal, evidence, resolution, store_provider, turn

from capabilities.reward_memory.contract import documents
from capabilities.reward_memory.reports.evaluation_fixture import Fixture
from capabilities.reward_memory.turn.journal import journal_files_of
from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open
from capabilities.reward_memory.turn.pre_turn import turn_recall


def assert_shape(shape, document):
    keys = set(document)
    missing = shape.__required_keys__ - keys
    unknown = keys - shape.__required_keys__ - shape.__optional_keys__
    assert not missing, f"{shape.__name__} lacks required {sorted(missing)}"
    assert not unknown, f"{shape.__name__} does not declare {sorted(unknown)}"


def learn(registry):
    return run_turn_ingest_fail_open(
        resolution(registry),
        turn_key=f1.TURN_KEY,
        host_result={"reward_memory_reflection_json": RAW},
        evidence=evidence(),
        provider_for=lambda binding: store_provider(registry),
        observed_at=f1.OBSERVED_AT,
    )


def test_an_available_status_and_a_stale_one_are_experiment_statuses(tmp_path):
    registry = bound_goal(tmp_path)
    available = resolution(registry).status
    assert available["status"] == "available"
    assert_shape(documents.ExperimentStatus, available)
    config = tmp_path / "repo" / f1.CONFIG_PATH
    config.write_bytes(config.read_bytes() + b"\n")
    stale = resolution(registry).status
    assert (stale["status"], "repair" in stale) == ("enablement_stale", True)
    assert_shape(documents.ExperimentStatus, stale)


@pytest.mark.parametrize("learned", [False, True], ids=["first-turn", "after-a-lesson"])
def test_turn_recall_packets_and_their_attempts_have_their_shapes(tmp_path, learned):
    registry = bound_goal(tmp_path)
    if learned:
        assert learn(registry)["status"] == "activated"
    packet = turn_recall(
        turn(registry, "turn-2", prompt="a change touches one module"),
        resolution(registry),
        provider_for=lambda binding: store_provider(registry),
    )
    assert packet["status"] == ("applied" if learned else "not_available")
    assert_shape(documents.TurnRecallPacket, packet)
    assert packet["recall_attempts"], "the packet carries the corpus recall it made"
    for attempt in packet["recall_attempts"]:
        assert_shape(documents.RecallPacket, attempt)


def test_an_ingest_receipt_and_its_readback_have_their_shapes(tmp_path):
    fixture = Fixture(tmp_path)
    receipt = fixture.learn("a focused fix keeps the module tests green")
    assert receipt["status"] == "activated"
    assert_shape(documents.IngestReceipt, receipt)
    assert_shape(documents.RecallPacket, receipt["readback"])
    assert_shape(documents.RecallPacket, fixture.recall().packet)


def test_a_journal_entry_has_its_shape(tmp_path):
    registry = bound_goal(tmp_path)
    assert learn(registry)["status"] == "activated"
    [path] = journal_files_of(tmp_path / "repo")
    entry = json.loads(path.read_text(encoding="utf-8"))
    assert (entry["status"], "public_receipt" in entry) == ("completed", True)
    assert_shape(documents.JournalEntry, entry)
