"""Validated reflections are never starved or stuck (issue 13, items 1 and 12).

Each test here reproduces a loss the adversarial run found: the readback that only
looked at its first hits, the reconciliation that always retried the same three
journals, the journal that stayed ``pending`` for ever, and the secret-like
reflection reported as a retryable failure.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import time

from fixtures import f1
from rm_support import UNAVAILABLE
from turn_support import RAW, bound_goal, evidence, journal_files, resolution, store_provider

from capabilities.reward_memory.turn.journal import LOOKED_FLAG, PENDING_DIR
from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open
from capabilities.reward_memory.turn.reconcile import MAX_RECONCILE, MAX_VERIFY_ATTEMPTS, reconcile
from turn_hooks import settlement_is_final


def ingest(goal, provider, turn_key, raw=RAW):
    return run_turn_ingest_fail_open(
        resolution(goal),
        turn_key=turn_key,
        host_result={"reward_memory_reflection_json": raw},
        evidence=evidence(raw),
        provider_for=lambda binding: provider,
        observed_at=f1.OBSERVED_AT,
    )


def goal_with_history(tmp_path, settled, *pending):
    """A bound Goal with ``settled`` learned Turns, then one pending journal per key
    (their provider writes failed)."""
    goal = bound_goal(tmp_path)
    provider = store_provider(goal)
    for n in range(settled):
        ingest(goal, provider, f"turn-{n:04d}")
    provider.fail["write"] = UNAVAILABLE
    for key in pending:
        ingest(goal, provider, key)
    provider.fail.clear()
    return goal, provider


def journals_by_state(goal):
    states = {}
    for path in journal_files(goal):
        document = json.loads(path.read_text())
        states[document["turn_key"]] = document["status"]
    return states


def test_the_same_reflection_learned_on_many_turns_is_read_back_every_time(tmp_path):
    """The readback recall sees 8 hits; a 9th record with the same text used to fall
    outside them and stay ``readback_unverified`` for ever. It is now read at its
    deterministic target (30 Turns: the old code passes them all with p < 1e-9)."""
    goal = bound_goal(tmp_path)
    provider = store_provider(goal)
    receipts = [ingest(goal, provider, f"turn-{n:04d}") for n in range(30)]
    assert [(r["status"], r["exact_readback_verified"]) for r in receipts] == [
        ("activated", True)
    ] * 30
    assert set(journals_by_state(goal).values()) == {"completed"}


class StuckFor:
    """A real store whose writes fail for the records of some Turns, for ever."""

    def __init__(self, provider, stuck_turns):
        self.provider = provider
        self.stuck = set(stuck_turns)

    def __getattr__(self, name):
        return getattr(self.provider, name)

    def write(self, uri, text, **kwargs):
        if any(f'"revision_ref":"{turn}"' in text for turn in self.stuck):
            raise UNAVAILABLE
        return self.provider.write(uri, text, **kwargs)


def test_reconciliation_rotates_so_stuck_journals_never_starve_the_rest(tmp_path):
    """Upstream retries the first three pending journals by file name: three that can
    never succeed and sort first starve every other one. Oldest attempt first, every
    pending journal is retried within ceil(N / 3) reconciliations."""
    goal = bound_goal(tmp_path)
    real = store_provider(goal)
    turns = [f"turn-{n:04d}" for n in range(7)]
    down = StuckFor(real, turns)
    for turn in turns:
        assert ingest(goal, down, turn)["reconciliation_state"] == "pending"
    by_name = [json.loads(p.read_text())["turn_key"] for p in journal_files(goal)]
    stuck = by_name[:3]  # the three that upstream would retry on every Turn
    flaky = StuckFor(real, stuck)
    rounds = math.ceil(len(turns) / MAX_RECONCILE)
    for _ in range(rounds):
        reconcile(resolution(goal), provider_for=lambda binding: flaky)
    states = journals_by_state(goal)
    assert {turn for turn, state in states.items() if state == "completed"} == set(by_name[3:])
    assert {turn for turn, state in states.items() if state == "pending"} == set(stuck)


def test_a_journal_that_is_never_read_back_ends_in_a_typed_terminal_state(tmp_path):
    goal = bound_goal(tmp_path)
    provider = store_provider(goal)
    provider.readback_text = '{"schema_version":"never the record"}'
    first = ingest(goal, provider, "turn-0001")
    assert first["reconciliation_state"] == "pending"
    for _ in range(MAX_VERIFY_ATTEMPTS - 2):
        result = reconcile(resolution(goal), provider_for=lambda binding: provider)
        assert result["receipts"][0]["reconciliation_state"] == "pending"
    last = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert last["receipts"][0]["reconciliation_state"] == "rejected"
    [path] = journal_files(goal)
    journal = json.loads(path.read_text())
    assert journal["status"] == "rejected"
    assert journal["reflection"]["content_summary"], "the reflection is kept, not lost"
    assert journal["terminal_failure"] == {
        "schema_version": "turn_reward_memory_terminal_failure_v0",
        "reason_code": "reconcile_verification_attempts_exhausted",
        "last_status": journal["public_receipt"]["status"],
        "attempt_count": MAX_VERIFY_ATTEMPTS,
        "ended_at": journal["terminal_failure"]["ended_at"],
    }
    assert reconcile(resolution(goal), provider_for=lambda binding: provider)["status"] == "empty"


def test_an_unreachable_provider_never_ends_a_journal(tmp_path):
    goal = bound_goal(tmp_path)
    provider = store_provider(goal)
    provider.fail["write"] = UNAVAILABLE
    ingest(goal, provider, "turn-0001")
    for _ in range(MAX_VERIFY_ATTEMPTS + 3):
        reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert journals_by_state(goal) == {"turn-0001": "pending"}
    provider.fail.clear()
    assert (
        reconcile(resolution(goal), provider_for=lambda binding: provider)["completed_count"] == 1
    )


def test_a_secret_like_reflection_is_a_typed_final_rejection(tmp_path):
    goal = bound_goal(tmp_path)
    provider = store_provider(goal)
    reflection = copy.deepcopy(f1.REFLECTION)
    reflection["content_summary"] = "deploy with api_key=sk-abcdefghijklmnop1234567890"
    raw = json.dumps(reflection)
    receipt = ingest(goal, provider, "turn-0001", raw=raw)
    assert (receipt["status"], receipt["reason_code"]) == (
        "reflection_rejected",
        "text_not_public_safe",
    )
    assert provider.calls == [] and journal_files(goal) == []
    dispatched = {
        "status": "observed",
        "results": {"reward-memory.outcome-ingest": receipt},
        "capability_ids": {"reward-memory.outcome-ingest": "reward-memory"},
    }
    assert settlement_is_final(dispatched), "a refused reflection is not retried"
    assert "sk-abcdef" not in json.dumps(receipt)


def test_a_pre_turn_parses_only_the_journals_that_can_be_pending(tmp_path, monkeypatch):
    """Every learned Turn keeps its journal, and every PreTurn looks for the pending
    ones: parsing each journal made a Turn's cost grow with the Agent's history. The
    others are now passed over from their bytes. A pending journal whose status is
    spelled with JSON escapes is still found: only the bytes decide what is skipped."""
    from sidecars import SidecarStore

    goal, provider = goal_with_history(tmp_path, 5, "turn-pending")
    [pending] = [p for p in journal_files(goal) if '"pending"' in p.read_text()]
    pending.write_text(pending.read_text().replace('"pending"', '"\\u0070ending"'))
    journals = {path.name for path in journal_files(goal)}
    assert len(journals) == 6
    reads = []
    real_read = SidecarStore.read

    def counting(self, path):
        reads.append(path.name)
        return real_read(self, path)

    monkeypatch.setattr(SidecarStore, "read", counting)
    result = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert (result["pending_count"], result["completed_count"]) == (1, 1)
    assert {name for name in reads if name in journals} == {pending.name}
    assert set(journals_by_state(goal).values()) == {"completed"}


def test_what_the_quick_look_cannot_settle_is_left_to_the_checked_read(tmp_path):
    from capabilities.reward_memory.turn.journal import PEEK_LIMIT, may_be_pending

    settled = tmp_path / "settled.json"
    settled.write_text('{"status": "completed"}')
    assert not may_be_pending(settled)
    escaped = tmp_path / "escaped.json"
    escaped.write_text('{"status": "\\u0070ending"}')
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(PEEK_LIMIT + 1)
    link = tmp_path / "link.json"
    link.symlink_to(settled)
    directory = tmp_path / "directory.json"
    directory.mkdir()
    for path in (escaped, big, link, directory, tmp_path / "gone.json"):
        assert may_be_pending(path), path.name


def pending_flags(goal):
    root = goal.parent / "repo" / ".local" / "turn-hooks" / PENDING_DIR
    return sorted(
        path.name.removesuffix(".pending") for path in root.rglob("*.pending") if path.is_file()
    )


def looked_flag(goal):
    [flag] = (goal.parent / "repo" / ".local" / "turn-hooks" / PENDING_DIR).rglob(LOOKED_FLAG)
    return flag


def test_a_pending_journal_is_flagged_until_it_settles(tmp_path):
    """The flag is made before the journal is first written pending and goes once it
    is not, so a PreTurn finds the pending journals without looking at the others."""
    goal, provider = goal_with_history(tmp_path, 1)
    assert pending_flags(goal) == [], "a Turn learned at once leaves no flag"
    provider.fail["write"] = UNAVAILABLE
    ingest(goal, provider, "turn-pending")
    provider.fail.clear()
    [pending] = [p for p in journal_files(goal) if '"pending"' in p.read_text()]
    assert pending_flags(goal) == [pending.stem]
    result = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert (result["pending_count"], result["completed_count"]) == (1, 1)
    assert pending_flags(goal) == [], "completed: its flag is gone"


def test_after_one_full_look_a_pre_turn_looks_at_no_settled_journal(tmp_path, monkeypatch):
    """A store from before the flags is looked over once: its pending journal is found
    and flagged. Later PreTurns open no settled journal, however long the history; a
    journal pending without a flag (an older version's write) waits at most a day."""
    from capabilities.reward_memory.turn import journal

    goal, provider = goal_with_history(tmp_path, 4, "turn-old", "turn-unflagged")
    flags = goal.parent / "repo" / ".local" / "turn-hooks" / PENDING_DIR
    shutil.rmtree(flags)  # as a store written before the flags
    peeks = []
    real_peek = journal.may_be_pending
    monkeypatch.setattr(
        journal, "may_be_pending", lambda path: peeks.append(path) or real_peek(path)
    )
    names = {p.name: p for p in journal_files(goal)}
    unflagged = next(p for p in names.values() if '"turn-unflagged"' in p.read_text())
    unflagged_text = unflagged.read_text()
    unflagged.write_text(unflagged_text.replace('"pending"', '"completed"'))
    first = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert len(peeks) == 6 and first["completed_count"] == 1
    assert pending_flags(goal) == []
    unflagged.write_text(unflagged_text)  # pending again, never flagged
    peeks.clear()
    for _ in range(2):
        again = reconcile(resolution(goal), provider_for=lambda binding: provider)
        assert peeks == [] and again["status"] == "empty"
    day = time.time() - journal.FULL_LOOK_SECONDS - 60
    os.utime(looked_flag(goal), (day, day))
    late = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert len(peeks) == 6 and (late["pending_count"], late["completed_count"]) == (1, 1)
    assert set(journals_by_state(goal).values()) == {"completed"}


def test_a_flag_left_by_a_kill_after_the_last_write_is_removed_not_replayed(tmp_path):
    goal = bound_goal(tmp_path)
    provider = store_provider(goal)
    ingest(goal, provider, "turn-done")
    [done] = journal_files(goal)
    reconcile(resolution(goal), provider_for=lambda binding: provider)
    flag = looked_flag(goal).parent / (done.stem + ".pending")
    flag.touch(mode=0o600)  # the journal completed, the kill came before the flag went
    calls = len(provider.calls)
    result = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert result["status"] == "empty" and result["pending_count"] == 0
    assert len(provider.calls) == calls and not flag.exists()


def test_a_flag_directory_that_cannot_be_used_fails_reconciliation_open(tmp_path):
    goal = bound_goal(tmp_path)
    provider = store_provider(goal)
    ingest(goal, provider, "turn-done")
    reconcile(resolution(goal), provider_for=lambda binding: provider)
    looked_flag(goal).parent.chmod(0o755)  # widened by someone: refused, not used
    result = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert result["fail_open"] is True
    assert (result["status"], result["reason_code"]) == (
        "runtime_unavailable",
        "automatic_ingest_reconciliation_failed",
    )


def test_a_journal_that_cannot_be_flagged_does_not_stop_the_full_look(tmp_path):
    goal, provider = goal_with_history(tmp_path, 1, "turn-a", "turn-b")
    shutil.rmtree(goal.parent / "repo" / ".local" / "turn-hooks" / PENDING_DIR)
    [blocked, _free] = sorted(p for p in journal_files(goal) if '"pending"' in p.read_text())
    flags = goal.parent / "repo" / ".local" / "turn-hooks" / PENDING_DIR
    flag_dir = flags.joinpath(blocked.parent.parent.name, blocked.parent.name)
    flag_dir.mkdir(parents=True)
    for directory in (flags, flag_dir.parent, flag_dir):
        directory.chmod(0o700)
    os.mkfifo(flag_dir / (blocked.stem + ".pending"))  # never opened: it would block
    (blocked.parent / ".hidden.json").write_text('{"status": "pending"}')
    result = reconcile(resolution(goal), provider_for=lambda binding: provider)
    assert (result["pending_count"], result["completed_count"]) == (1, 1), "the other one"
    assert pending_flags(goal) == [] and (flag_dir / (blocked.stem + ".pending")).exists()
