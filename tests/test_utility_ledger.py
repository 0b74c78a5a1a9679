"""The utility ledger: append-only, idempotent, and its projection replayable byte for byte."""

from __future__ import annotations

import copy
import stat

import pytest
from utility_cases import CONTEXT, obs

from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility.ledger import (
    OWNER_REF,
    Ledger,
    counted_observations,
    ledgers_of,
    same_bytes,
    utility_context,
)
from capabilities.reward_memory.utility.reducer import REDUCER_VERSION, project
from sidecars import SidecarStore, dumps
from turn_hooks import SidecarError


@pytest.fixture
def ledger(tmp_path):
    store = SidecarStore(tmp_path / ".local" / "turn-hooks")
    return Ledger(
        store, "goal-a", "agent-a", {**copy.deepcopy(CONTEXT), "reducer_version": REDUCER_VERSION}
    )


def _series():
    """Five deliveries: two subjects, two tiers, a retry with a later created_at."""
    return [
        obs(
            utility_label="unknown",
            evidence_basis="insufficient",
            confidence=0.0,
            evidence_refs=[],
            reason_codes=["no_utility_evaluator"],
            attribution_level="item",
        ),
        obs(),
        obs(
            memory_ref_digests=["aaaaaaaaaaaaaaaa"],
            utility_label="neutral",
            created_at="2026-08-17T00:00:00Z",
        ),
        obs(
            utility_label="harmful",
            evaluation_version="evaluation_v1",
            created_at="2026-08-18T00:00:00Z",
        ),
        obs(
            utility_label="harmful",
            evaluation_version="evaluation_v1",
            created_at="2026-08-19T00:00:00Z",
        ),
    ]


def test_the_stored_projection_is_byte_identical_to_a_replay_of_every_observation(ledger):
    for observation in _series():
        ledger.record(observation)
        # After every step, not only at the end: the incremental state never drifts.
        stored = ledger.projection_path.read_bytes()
        assert stored == dumps(ledger.rebuild()).encode()
        assert (
            stored
            == dumps(
                project(
                    {
                        **CONTEXT,
                        "reducer_version": REDUCER_VERSION,
                        "observations": counted_observations(ledger.observations()),
                    }
                )
            ).encode()
        )
    assert same_bytes(ledger.projection(), ledger.rebuild())
    projection = ledger.projection()
    assert projection["accepted_observation_count"] == 4
    assert projection["subject_count"] == 2


def test_a_retry_is_a_no_op_and_writes_nothing(ledger):
    first = obs()
    assert ledger.record(first) is True
    before = ledger.observations_path.read_bytes(), ledger.projection_path.read_bytes()
    assert ledger.record(copy.deepcopy(first)) is False
    assert (ledger.observations_path.read_bytes(), ledger.projection_path.read_bytes()) == before
    assert len(ledger.observations()) == 1


def test_a_changed_evaluator_version_is_a_new_observation_never_a_replacement(ledger):
    ledger.record(obs())
    assert ledger.record(obs(evaluation_version="evaluation_v2")) is True
    ids = [o["observation_id"] for o in ledger.observations()]
    assert len(set(ids)) == 2
    assert ledger.observations()[0] == u.validate_observation(obs())


def test_a_conflicting_delivery_is_kept_and_proposed_for_quarantine(ledger):
    ledger.record(obs())
    assert ledger.record(obs(confidence=0.3)) is True  # same id, other judgement
    projection = ledger.projection()
    assert projection["status"] == "review_required"
    assert projection["rejections"][0]["quarantine_proposed"] is True
    assert len(ledger.observations()) == 2  # append-only: nothing was dropped


def test_an_observation_of_another_scope_is_refused_and_nothing_written(ledger):
    foreign = obs(scope={**CONTEXT["scope"], "agent_id": "someone-else"})
    with pytest.raises(u.UtilityError) as raised:
        ledger.record(foreign)
    assert raised.value.reason_code == "observation_out_of_scope"
    assert not ledger.observations_path.exists()


def test_the_sidecars_are_private(ledger):
    ledger.record(obs())
    for path in (ledger.observations_path, ledger.projection_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(ledger.projection_path.parent.stat().st_mode) == 0o700
    assert ledgers_of(ledger.store, "goal-a", "agent-a") == [ledger.projection_path]


def test_the_turn_context_holds_digests_of_the_users_ids_and_separates_agents():
    one = utility_context(
        goal_id="my goal",
        agent_id="codex",
        corpus_id="exp",
        surface_id="s",
        retrieval_snapshot_ref="r",
        policy_snapshot_ref="p",
    )
    other = utility_context(
        goal_id="my goal",
        agent_id="claude",
        corpus_id="exp",
        surface_id="s",
        retrieval_snapshot_ref="r",
        policy_snapshot_ref="p",
    )
    assert one["scope"]["project_id"] == other["scope"]["project_id"]
    assert one["scope"]["agent_id"] != other["scope"]["agent_id"]
    assert "my goal" not in str(one) and "codex" not in str(one)
    assert all(u.is_opaque_ref(value) for value in one["scope"].values())


def test_an_observation_past_the_subject_bound_is_refused_and_the_projection_kept(ledger):
    for index in range(128):
        ledger.record(obs(memory_ref_digests=[f"{index:016x}"]))
    before = ledger.projection_path.read_bytes()
    with pytest.raises(u.UtilityError) as raised:
        ledger.record(obs(memory_ref_digests=[f"{999:016x}"]))
    assert raised.value.reason_code == "utility_ledger_full"
    assert ledger.projection_path.read_bytes() == before
    assert ledger.projection()["ok"] is True and len(ledger.observations()) == 128


def test_the_owners_latest_rating_of_a_memory_is_the_one_counted(ledger):
    """A changed mind replaces an earlier rating (the ledger keeps both): no same-tier
    conflict, no manual review, and a fourth rating is not a fourth vote."""

    def rate(label, day):
        when = f"2026-08-{day}T00:00:00Z"
        return ledger.record(obs(utility_label=label, created_at=when, evaluator_ref=OWNER_REF))

    def counted():
        [subject] = ledger.projection()["subjects"]
        assert subject["review"]["state"] != "manual_review"
        return subject["effective_utility_label"], subject["observation_count"]

    assert (rate("helpful", 16), rate("harmful", 17)) == (True, True)
    assert counted() == ("harmful", 1)
    assert rate("harmful", 18) is False, "the same word again is a retry"
    assert rate("helpful", 19) is True, "back to an earlier word is a new one"
    assert counted() == ("helpful", 1)
    assert len(ledger.observations()) == 3
    assert same_bytes(ledger.projection(), ledger.rebuild())


def test_a_sidecar_the_store_refuses_fails_the_record_before_anything_is_written(ledger):
    import os

    ledger.record(obs())
    before = ledger.observations_path.read_bytes()
    ledger.projection_path.unlink()
    os.mkfifo(ledger.projection_path)
    with pytest.raises(SidecarError):
        ledger.record(obs(utility_label="harmful", created_at="2026-08-17T00:00:00Z"))
    assert ledger.observations_path.read_bytes() == before


def test_a_retry_replays_a_projection_left_behind(ledger):
    first = obs()
    ledger.record(first)
    ledger.projection_path.unlink()  # a crash between the two writes
    assert ledger.record(copy.deepcopy(first)) is False
    assert same_bytes(ledger.projection(), ledger.rebuild())
