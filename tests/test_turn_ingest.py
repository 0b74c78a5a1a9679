"""PostSettlement ingest, the write-ahead journal and reconciliation (turn-lifecycle §7)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest
from fixtures import f1
from rm_support import UNAVAILABLE
from turn_support import RAW, bound_goal, evidence, journal_files, resolution, store_provider

from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open
from capabilities.reward_memory.turn.reconcile import reconcile
from conformance.public_safety import public_safety_violations


def ingest(registry, provider, raw=RAW, proof=None, turn_key="turn-0001"):
    return run_turn_ingest_fail_open(
        resolution(registry),
        turn_key=turn_key,
        host_result={"reward_memory_reflection_json": raw},
        evidence=evidence(raw) if proof is None else proof,
        provider_for=lambda binding: provider,
        observed_at=f1.OBSERVED_AT,
    )


@pytest.fixture
def goal(tmp_path):
    return bound_goal(tmp_path)


def assert_public(receipt):
    assert not public_safety_violations(receipt, raw_texts=(f1.REFLECTION["content_summary"],))


def test_validated_reflection_is_activated_and_journalled(goal):
    provider = store_provider(goal)
    receipt = ingest(goal, provider)
    assert (
        receipt["status"],
        receipt["exact_readback_verified"],
        receipt["reconciliation_state"],
    ) == ("activated", True, "completed")
    assert receipt["source_event_id"] == "ccacaaa758c25c7958af"
    [path] = journal_files(goal)
    assert path.name == "ccacaaa758c25c7958af-9b78205f96a6.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.with_name(path.name + ".lock").exists(), "the journal is written under its lock"
    journal = json.loads(path.read_text())
    assert (journal["status"], journal["attempt_count"], journal["observed_at"]) == (
        "completed",
        1,
        f1.OBSERVED_AT,
    )
    assert journal["settlement_validation"] == {
        "writeback": {"ok": True, "appended": True},
        "quota_spend": {},
    }
    assert_public(receipt)

    provider.calls.clear()
    replay = ingest(goal, provider)
    assert (
        replay["status"],
        replay["sidecar_receipt_reused"],
        replay["provider_sync_count"],
        replay["deduplicated"],
    ) == ("activated", True, 0, True)
    assert provider.calls == []


def test_the_attestation_is_also_read_under_its_older_key(goal):
    """The Codex App path and spools written before hosts kept the validator's output
    under a generic key still attest there."""
    proof = evidence()
    validation = proof["task_validation"]
    validation["reward_memory_reflection_validation"] = validation.pop("attestation")
    receipt = ingest(goal, store_provider(goal), proof=proof)
    assert (receipt["status"], receipt["reconciliation_state"]) == ("activated", "completed")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (None, "validated_turn_declared_no_reward_evidence"),
        ("   ", "validated_turn_declared_no_reward_evidence"),
        (
            json.dumps(
                {"schema_version": "turn_reward_memory_reflection_v1", "status": "no_evidence"}
            ),
            "validated_turn_declared_no_reward_evidence",
        ),
        (
            json.dumps(
                {
                    **{k: v for k, v in f1.REFLECTION.items() if k != "experience"},
                    "schema_version": "turn_reward_memory_reflection_v0",
                }
            ),
            "legacy_reflection_requires_transferable_experience",
        ),
    ],
)
def test_no_evidence_makes_no_call_and_no_journal(goal, raw, reason):
    provider = store_provider(goal)
    receipt = ingest(goal, provider, raw=raw, proof=evidence())
    assert (receipt["status"], receipt["reason_code"]) == ("no_eligible_evidence", reason)
    assert provider.calls == [] and journal_files(goal) == []


def unattested():
    return evidence(attested=False)


def wrong_digest():
    return evidence(raw=json.dumps({**f1.REFLECTION, "confidence": "high"}))


def wrong_refs():
    proof = evidence()
    proof["task_validation"]["attestation"]["evidence_refs"] = ["x:y"]
    return proof


def failed_validator():
    proof = evidence()
    proof["task_validation"].update(ok=False, status="failed", exit_code=1)
    return proof


def no_writeback():
    proof = evidence()
    proof["writeback"] = {"ok": False, "appended": False}
    return proof


def quota_not_ok():
    return evidence(quota={"ok": False, "appended": False})


@pytest.mark.parametrize(
    "make", [unattested, wrong_digest, wrong_refs, failed_validator, no_writeback, quota_not_ok]
)
def test_unvalidated_reflection_needs_evidence_and_writes_nothing(goal, make):
    provider = store_provider(goal)
    receipt = ingest(goal, provider, proof=make())
    assert (receipt["status"], receipt["reason_code"], receipt["candidate_state"]) == (
        "evidence_validation_required",
        "reflection_not_bound_to_independent_validation",
        "awaiting_evidence_validation",
    )
    assert provider.calls == [] and journal_files(goal) == []


def test_quota_evidence_is_required_only_where_a_quota_owner_exists(goal):
    provider = store_provider(goal)
    assert (
        ingest(goal, provider, proof=evidence(quota={"ok": True, "appended": True}))["status"]
        == "activated"
    )
    journal = json.loads(journal_files(goal)[0].read_text())
    assert journal["settlement_validation"]["quota_spend"] == {"ok": True, "appended": True}


def test_explicit_disable_makes_zero_calls_and_no_reconciliation(tmp_path):
    goal = bound_goal(tmp_path, automatic_ingest=False)
    provider = store_provider(goal)
    receipt = ingest(goal, provider)
    assert (receipt["status"], receipt["reason_code"]) == (
        "explicitly_disabled",
        "automatic_ingest_explicitly_disabled",
    )
    result = reconcile(resolution(goal), provider_for=lambda b: provider)
    assert result["status"] == "explicitly_disabled" and result["attempted_count"] == 0
    assert provider.calls == [] and journal_files(goal) == []


def test_failed_write_is_pending_then_reconciled_on_the_next_turn(goal):
    provider = store_provider(goal)
    provider.fail["write"] = UNAVAILABLE
    first = ingest(goal, provider)
    assert (first["status"], first["reason_code"], first["reconciliation_state"]) == (
        "provider_unavailable",
        "provider_sync_write_failed_absent",
        "pending",
    )
    journal = json.loads(journal_files(goal)[0].read_text())
    assert (journal["status"], journal["attempt_count"]) == ("pending", 1)
    provider.fail.clear()
    result = reconcile(
        resolution(goal), provider_for=lambda b: provider, observed_at="2026-08-16T00:00:00+00:00"
    )
    assert (result["pending_count"], result["attempted_count"], result["completed_count"]) == (
        1,
        1,
        1,
    )
    assert result["receipts"][0]["status"] == "activated"
    journal = json.loads(journal_files(goal)[0].read_text())
    assert (journal["status"], journal["attempt_count"], journal["observed_at"]) == (
        "completed",
        2,
        f1.OBSERVED_AT,
    ), "observed_at is immutable"
    again = reconcile(resolution(goal), provider_for=lambda b: provider)
    assert (again["status"], again["pending_count"]) == ("empty", 0)


def test_a_commit_whose_readback_mismatches_then_matches(goal):
    provider = store_provider(goal)
    real_write = provider.write

    def write_then_read_stale(*args, **kwargs):
        real_write(*args, **kwargs)
        provider.readback_text = '{"schema_version":"stale copy"}'  # an eventually consistent read

    provider.write = write_then_read_stale
    first = ingest(goal, provider)
    assert (first["status"], first["reconciliation_state"]) == ("committed_pending", "pending")
    provider.readback_text = None
    result = reconcile(resolution(goal), provider_for=lambda b: provider)
    receipt = result["receipts"][0]
    assert (receipt["status"], receipt["deduplicated"]) == ("activated", True), (
        "the write had landed: replay finds it equal and does not write again"
    )
    assert provider.calls.count("write") == 1


def test_journal_identity_and_payload_are_checked(goal):
    provider = store_provider(goal)
    provider.fail["write"] = UNAVAILABLE
    ingest(goal, provider)
    [path] = journal_files(goal)
    journal = json.loads(path.read_text())
    path.write_text(json.dumps({**journal, "turn_key": "other"}))
    assert ingest(goal, provider)["reason_code"] == "outcome_sidecar_identity_mismatch"
    path.write_text(
        json.dumps({**journal, "reflection": {**journal["reflection"], "confidence": "low"}})
    )
    assert ingest(goal, provider)["reason_code"] == "outcome_sidecar_payload_mismatch"
    path.write_text(json.dumps({k: v for k, v in journal.items() if k != "observed_at"}))
    assert ingest(goal, provider)["reason_code"] == "outcome_sidecar_observation_missing"


def test_a_corrupt_journal_is_never_overwritten(goal):
    provider = store_provider(goal)
    provider.fail["write"] = UNAVAILABLE
    ingest(goal, provider)
    [path] = journal_files(goal)
    path.write_text("{torn")
    provider.fail.clear()
    receipt = ingest(goal, provider)
    assert (receipt["status"], receipt["reason_code"]) == (
        "runtime_state_unavailable",
        "sidecar_corrupt",
    )
    assert path.read_text() == "{torn"


def test_journals_of_other_bindings_are_untouched(goal):
    provider = store_provider(goal)
    provider.fail["write"] = UNAVAILABLE
    ingest(goal, provider)
    [path] = journal_files(goal)
    journal = json.loads(path.read_text())
    path.write_text(json.dumps({**journal, "binding_revision": "sha256:" + "9" * 64}))
    os.chmod(path, 0o600)
    provider.fail.clear()
    provider.calls.clear()
    result = reconcile(resolution(goal), provider_for=lambda b: provider)
    assert (result["pending_count"], result["attempted_count"], result["status"]) == (1, 0, "empty")
    assert provider.calls == []


def test_a_pending_legacy_journal_is_terminalised(goal):
    provider = store_provider(goal)
    provider.fail["write"] = UNAVAILABLE
    ingest(goal, provider)
    [path] = journal_files(goal)
    journal = json.loads(path.read_text())
    journal["reflection"]["schema_version"] = "turn_reward_memory_reflection_v0"
    path.write_text(json.dumps(journal))
    provider.calls.clear()
    result = reconcile(
        resolution(goal), provider_for=lambda b: provider, observed_at="2026-08-17T00:00:00+00:00"
    )
    assert result["receipts"][0]["reason_code"] == (
        "legacy_reflection_requires_transferable_experience"
    )
    migrated = json.loads(path.read_text())
    assert migrated["status"] == "rejected"
    assert migrated["legacy_pending_migration"]["provider_write_state"] == (
        "unknown_may_have_committed"
    )
    assert provider.calls == []


def test_reconcile_limit_is_checked(goal):
    from capabilities.reward_memory.contract.values import RewardMemoryInputError

    with pytest.raises(RewardMemoryInputError):
        reconcile(resolution(goal), provider_for=lambda b: None, limit=4)


def _tests_dir():
    return os.path.dirname(__file__)


CRASH = textwrap.dedent(
    """
    import json, os, signal, sys
    sys.path.insert(0, sys.argv[2])
    from pathlib import Path
    from capabilities.reward_memory.turn.post_settlement import run_turn_ingest
    from turn_support import RAW, evidence, resolution

    class Crash:
        provider_id = "embedded_sqlite"
        def preflight(self, *, timeout):
            os.kill(os.getpid(), signal.SIGKILL)  # between the journal and the provider

        def read_exact(self, uri, **options):  # the first call: is the lesson forgotten?
            os.kill(os.getpid(), signal.SIGKILL)

    run_turn_ingest(resolution(Path(sys.argv[1])), turn_key="turn-0001",
                    host_result={"reward_memory_reflection_json": RAW}, evidence=evidence(),
                    provider_for=lambda binding: Crash(), observed_at="2026-08-15T00:00:00+00:00")
    """
)


@pytest.mark.slow
def test_kill_9_between_journal_and_provider_is_reconciled(goal):
    result = subprocess.run(
        [sys.executable, "-c", CRASH, str(goal), _tests_dir()], capture_output=True, check=False
    )
    assert result.returncode == -signal.SIGKILL
    [path] = journal_files(goal)
    journal = json.loads(path.read_text())
    assert (journal["status"], journal["attempt_count"]) == ("pending", 1)
    provider = store_provider(goal)
    assert provider.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER) == []
    result = reconcile(resolution(goal), provider_for=lambda b: provider)
    assert result["receipts"][0]["status"] == "activated"
    assert json.loads(path.read_text())["status"] == "completed"


RACER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from pathlib import Path
    from capabilities.reward_memory.turn.reconcile import reconcile
    from turn_support import resolution, store_provider

    registry = Path(sys.argv[1])
    provider = store_provider(registry)
    real_write = provider.inner.write

    def slow_write(uri, text, **kwargs):
        with open(sys.argv[3], "a") as log:
            log.write("write\\n")
        time.sleep(0.5)  # widen the window in which the other process races
        real_write(uri, text, **kwargs)

    provider.inner.write = slow_write
    reconcile(resolution(registry), provider_for=lambda binding: provider)
    """
)


@pytest.mark.slow
def test_two_processes_reconciling_one_journal_write_at_most_once(goal, tmp_path):
    provider = store_provider(goal)
    provider.fail["write"] = UNAVAILABLE
    ingest(goal, provider)
    log = tmp_path / "writes.log"
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(goal), _tests_dir(), str(log)])
        for _ in range(2)
    ]
    assert [racer.wait(timeout=120) for racer in racers] == [0, 0]
    assert log.read_text().count("write") == 1
    [path] = journal_files(goal)
    journal = json.loads(path.read_text())
    assert (journal["status"], journal["attempt_count"]) == ("completed", 2)


@pytest.mark.slow
def test_concurrent_deliveries_of_one_turn_report_one_write(tmp_path):
    """Issue 37: eight Stop hooks deliver one Turn at once. One record is stored; one
    receipt reports the activation, and the seven others that they wrote nothing."""
    from turn_support import ROOT, hook_argv, reflection_message

    registry = bound_goal(tmp_path)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env = {**os.environ, "TURN_HOOKS_STATE_DIR": str(state)}
    event = {
        "turn_id": "t1",
        "cwd": str(tmp_path / "repo"),
        "last_assistant_message": reflection_message(),
    }
    hooks = [
        subprocess.Popen(
            hook_argv(registry),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for _ in range(8)
    ]
    receipts = []
    for hook in hooks:
        out, _ = hook.communicate(json.dumps(event), timeout=120)
        receipts.append(json.loads(out)["results"]["reward-memory.outcome-ingest"])
    assert [r["status"] for r in receipts] == ["activated"] * 8
    assert sorted(r["deduplicated"] for r in receipts) == [False] + [True] * 7
    assert sum(r["external_writes_performed"] for r in receipts) == 1
    import sqlite3

    with contextlib.closing(
        sqlite3.connect(tmp_path / "repo/.local/turn-hooks/memory.sqlite3")
    ) as db:
        assert db.execute("SELECT count(*) FROM records").fetchone() == (1,)
