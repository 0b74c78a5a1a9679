"""Detached settlement (issue 15): Codex CLI's and Claude Code's Stop hooks spool and return.

The Stop hook process writes the queue marker and the spool entry, reads the entry
back, and hands it to a forked child in its own session; it returns once the child
holds the entry's lock. The child validates, dispatches and completes the journal.
A child killed at any point leaves the marker, so the next PreTurn's worker carries
the entry on; a PreTurn that comes while a child still settles waits for it, within
a bound, so a quick next Turn recalls what the last one learned.

The validators here wait on a gate file, so "the hook returned while its validator
was still running" is a fact the test observes, never a timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import filelock
import pytest
from fixtures import f1
from test_settlement_faults import gated_validator, journal_states, queue, stored_records
from turn_support import ROOT, bound_goal, hook_turn
from turn_support import reflection_message as message
from turn_support import run_process as run

from hosts.settlement.settlement import await_in_flight, settlement_store, spool_path
from sidecars import SidecarStore, lock_path
from turn_hooks import SidecarLockTimeout

HOSTS = {
    "claude-code": ["host", "generic", "post-settlement", "--dialect", "claude-code"],
    "codex-cli": ["host", "codex-cli", "post-settlement"],
}


def stop_argv(registry, host, validator):
    return [
        *(sys.executable, "-m", "hosts.cli", *HOSTS[host]),
        *("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)),
        *("--validation-command-json", json.dumps(validator)),
    ]


def pre_turn_argv(registry):
    return [
        *(sys.executable, "-m", "hosts.cli", "host", "codex-cli", "pre-turn"),
        *("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)),
    ]


def stop_event(tmp_path, turn_id="t1"):
    return json.dumps(
        {"turn_id": turn_id, "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    )


def wait_for(condition, what, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_stop_hook_returns_while_its_validator_still_runs(tmp_path, host):
    registry = bound_goal(tmp_path)
    validator = gated_validator(tmp_path)
    result = run(stop_argv(registry, host, validator), stop_event(tmp_path))
    assert result.returncode == 0
    assert result.stdout.strip() in ("", "{}")
    wait_for(lambda: (tmp_path / "started").exists(), "the child never started the validator")
    assert journal_states(registry) == [], "the validator is still held at its gate"
    assert len(queue(registry)) == 1, "and the entry stays queued until it is settled"
    (tmp_path / "gate").unlink()
    wait_for(lambda: queue(registry) == [], "the child did not settle the entry")
    assert journal_states(registry) == ["completed"]
    assert len(stored_records(registry)) == 1


def test_a_killed_settling_child_is_carried_on_by_the_next_pre_turn(tmp_path):
    registry = bound_goal(tmp_path)
    validator = gated_validator(tmp_path)
    assert run(stop_argv(registry, "codex-cli", validator), stop_event(tmp_path)).returncode == 0
    wait_for(lambda: (tmp_path / "started").exists(), "the child never started the validator")
    child = _lock_holder(registry, tmp_path)
    os.kill(child, signal.SIGKILL)  # kill -9 while it validates
    wait_for(lambda: _lock_holder(registry, tmp_path) is None, "the killed child kept its lock")
    assert journal_states(registry) == [] and len(queue(registry)) == 1
    (tmp_path / "gate").unlink()
    # The orphaned validator holds the Goal's validator lock until it ends (issue 36).
    wait_for(lambda: slot_free(registry), "the orphaned validator did not end")
    next_turn = run(
        pre_turn_argv(registry),
        json.dumps({"turn_id": "t2", "prompt": "next", "cwd": str(tmp_path / "repo")}),
    )
    assert next_turn.returncode == 0
    wait_for(lambda: queue(registry) == [], "the worker did not carry the entry on")
    assert journal_states(registry) == ["completed"]
    assert len(stored_records(registry)) == 1, "exactly once"


def test_inline_settlement_can_still_be_asked_for(tmp_path, monkeypatch):
    registry = bound_goal(tmp_path)
    monkeypatch.setenv("TURN_HOOKS_SETTLE", "inline")
    validator = gated_validator(tmp_path)
    (tmp_path / "gate").unlink()
    result = run(stop_argv(registry, "claude-code", validator), stop_event(tmp_path))
    assert result.returncode == 0
    # Inline, the Turn is settled when the hook process ends: nothing left to wait for.
    assert journal_states(registry) == ["completed"] and queue(registry) == []


def test_a_pre_turn_waits_for_the_settlement_in_flight(tmp_path):
    """The lock holder here is a separate process that marks when it lets go; the wait
    must not end before that mark (a fact, not a timing)."""
    registry = bound_goal(tmp_path)
    store, spool = _queued_entry(registry, tmp_path)
    released = tmp_path / "released"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import filelock, pathlib, sys, time\n"
            "lock = filelock.FileLock(sys.argv[1]); lock.acquire()\n"
            "pathlib.Path(sys.argv[2], 'held').touch(); time.sleep(0.5)\n"
            "pathlib.Path(sys.argv[2], 'released').touch(); lock.release()\n",
            str(lock_path(spool)),
            str(tmp_path),
        ],
        cwd=ROOT,
    )
    wait_for(lambda: (tmp_path / "held").exists(), "the holder never took the lock")
    await_in_flight(store, goal_id=f1.GOAL, agent_id=f1.AGENT, budget=30)
    assert released.exists()
    holder.wait(timeout=30)


def test_the_wait_for_a_settlement_in_flight_is_bounded(tmp_path):
    registry = bound_goal(tmp_path)
    store, spool = _queued_entry(registry, tmp_path)
    with filelock.FileLock(str(lock_path(spool))):  # held for longer than the wait
        await_in_flight(store, goal_id=f1.GOAL, agent_id=f1.AGENT, budget=0.1)
        await_in_flight(store, goal_id=f1.GOAL, agent_id=f1.AGENT, budget=0)
    assert [marker.name for marker in queue(registry)] == [spool.name], "nothing consumed"


def _queued_entry(registry, tmp_path):
    """A queued spool entry, as a Stop hook leaves it, without settling it."""
    store = settlement_store(str(registry), f1.GOAL)
    turn = hook_turn(registry, tmp_path, host="codex_cli")
    spool = spool_path(store, turn)
    store.write(spool, {"schema_version": "turn_hooks_settlement_v0"})
    marker = store.path("settlement-queue", spool.parent.parent.name, spool.parent.name, spool.name)
    store.write(marker, {"schema_version": "turn_hooks_settlement_queue_v0", "spool": spool.name})
    return store, spool


def slot_free(registry):
    """Whether the Goal's validator lock (one validator at a time) can be taken now."""
    from hosts.settlement import settlement

    store = settlement_store(str(registry), f1.GOAL)
    try:
        with SidecarStore(store.root, lock_timeout=0).lock(settlement._slot_path(store, f1.GOAL)):
            return True
    except SidecarLockTimeout:
        return False


def _lock_holder(registry, tmp_path):
    """The pid holding the (only) spool entry's lock, from /proc, or ``None``."""
    [marker] = queue(registry) or [None]
    if marker is None:
        return None
    spool = Path(str(marker).replace("settlement-queue", "settlements"))
    target = os.path.realpath(lock_path(spool))
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    with open(f"/proc/{pid}/cmdline", "rb") as handle:
                        if b"hosts.cli" in handle.read():
                            return int(pid)
            except OSError:
                continue
    return None


def _parent_of(pid: int) -> int:
    # /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so split
    # after its closing parenthesis.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def test_one_fork_settles_in_its_own_session_holding_the_lock_and_is_reaped(tmp_path, monkeypatch):
    """The hook forks once and waits for nothing; the settler is in a session of its own
    (the host's signal to the hook's group misses it) and holds the entry's lock it
    inherited, and a caller that lives on reaps each settler it started at its next
    hand-off, so none stays a zombie."""
    from hosts.settlement import settlement
    from turn_hooks import make_plugin_manager

    monkeypatch.delenv(settlement.ENV_SETTLE, raising=False)
    monkeypatch.setattr(settlement, "_settlers", [])
    registry = bound_goal(tmp_path)
    pm = make_plugin_manager()
    validator = gated_validator(tmp_path)

    def stop(turn_id: str) -> int:
        turn = hook_turn(registry, tmp_path / "repo", turn_id=turn_id, host="codex_cli")
        receipt = settlement.settle(
            pm, turn, final_message=message(), validation_argv=validator, detach=True
        )
        assert receipt is None, "detached: the hook returns before anything is settled"
        return settlement._settlers[-1]

    first = stop("t1")
    assert _parent_of(first) == os.getpid(), "one fork: the settler is the hook's own child"
    # The child calls setsid itself, after the fork returns here: wait, don't race it.
    wait_for(lambda: os.getsid(first) == first, "the settler is not in a session of its own")
    store = settlement_store(str(registry), f1.GOAL)
    spooled = spool_path(store, hook_turn(registry, tmp_path / "repo", "t1", host="codex_cli"))
    assert spooled.exists()
    with pytest.raises(SidecarLockTimeout):  # held from the fork on, the hook's copy closed
        with SidecarStore(store.root, lock_timeout=0).lock(spooled):
            pass
    (tmp_path / "gate").unlink()
    wait_for(lambda: queue(registry) == [], "the settler did not settle the entry")
    wait_for(
        lambda: Path(f"/proc/{first}/stat").read_text().split(")")[1].split()[0] == "Z",
        "the settler did not end once it had settled",
    )
    assert settlement._settlers == [first], "ended but not reaped yet: nobody waited for it"
    (tmp_path / "gate").touch()
    second = stop("t2")
    assert first not in settlement._settlers
    assert not Path(f"/proc/{first}").exists(), "the next hand-off reaped the ended settler"
    (tmp_path / "gate").unlink()
    wait_for(lambda: queue(registry) == [], "the second settler did not settle its entry")
    wait_for(lambda: os.waitpid(second, os.WNOHANG)[0] == second, "the second settler ran on")
    assert journal_states(registry) == ["completed", "completed"]


def test_the_stop_hook_leaves_the_spools_sweep_to_its_settler(tmp_path, monkeypatch):
    """The spool directory gains an entry a Turn, and sweeping it for temp files a
    killed writer left lists all of it: the hook, on the Turn's critical path, does
    not; the settler it hands the entry to does, before it writes the entry again."""
    from hosts.settlement import settlement
    from turn_hooks import make_plugin_manager

    monkeypatch.delenv(settlement.ENV_SETTLE, raising=False)
    monkeypatch.setattr(settlement, "_settlers", [])
    registry = bound_goal(tmp_path)
    validator = gated_validator(tmp_path)
    turn = hook_turn(registry, tmp_path / "repo", turn_id="t1", host="codex_cli")
    spooled = spool_path(settlement_store(str(registry), f1.GOAL), turn)
    spooled.parent.mkdir(parents=True, mode=0o700)
    for directory in (spooled.parent, *spooled.parent.parents[:3]):
        directory.chmod(0o700)
    stale = spooled.parent / "t0-000000000000.json.abcd1234"  # a killed writer's temp file
    stale.write_text("{")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    settlement.settle(
        make_plugin_manager(), turn, final_message=message(), validation_argv=validator, detach=True
    )
    assert stale.exists(), "the hook did not list the spool directory"
    (tmp_path / "gate").unlink()
    wait_for(lambda: queue(registry) == [], "the settler did not settle the entry")
    assert not stale.exists(), "the settler swept it"
    os.waitpid(settlement._settlers[-1], 0)


def _settle_counting_parses(tmp_path, monkeypatch):
    """Settle one Turn detached, every parse of a spooled Turn leaving a marker file
    (seen from here even when a forked settler parses); (registry, receipt, marker)."""
    from hosts.settlement import settlement
    from turn_hooks import make_plugin_manager

    monkeypatch.delenv(settlement.ENV_SETTLE, raising=False)
    marker = tmp_path / "parsed"
    real = settlement._spooled_turn

    def spooled_turn(entry):
        marker.touch()
        return real(entry)

    monkeypatch.setattr(settlement, "_spooled_turn", spooled_turn)
    registry = bound_goal(tmp_path)
    validator = gated_validator(tmp_path)
    (tmp_path / "gate").unlink()
    turn = hook_turn(registry, tmp_path / "repo", turn_id="t1", host="codex_cli")
    receipt = settlement.settle(
        make_plugin_manager(), turn, final_message=message(), validation_argv=validator, detach=True
    )
    return registry, receipt, marker


def test_the_settler_takes_the_turn_it_spooled_without_parsing_it_again(tmp_path, monkeypatch):
    """Parsing a spooled Turn back imports pydantic and builds its validator, about
    130 ms of CPU at the end of every Turn, while the host goes on: the Stop's own
    settler holds that Turn already, so it never parses it."""
    from hosts.settlement import settlement

    monkeypatch.setattr(settlement, "_settlers", [])
    registry, receipt, parsed = _settle_counting_parses(tmp_path, monkeypatch)
    assert receipt is None, "handed to a forked settler"
    wait_for(lambda: queue(registry) == [], "the settler did not settle the entry")
    os.waitpid(settlement._settlers[-1], 0)
    assert journal_states(registry) == ["completed"]
    assert len(stored_records(registry)) == 1
    assert not parsed.exists(), "the settler parsed the Turn it was handed"


@pytest.mark.parametrize("edited", [False, True])
def test_an_entry_that_no_longer_holds_the_callers_turn_is_parsed(tmp_path, monkeypatch, edited):
    """Where no settler could be forked the hook settles its entry itself, under the
    same lock, with the Turn it holds; an entry that holds another Turn by then (here
    changed in place) is parsed, and its own Turn is the one delivered."""
    from hosts.settlement import settlement

    delivered = []
    deliver = settlement._deliver

    def recording_deliver(pm, turn, *args, **kwargs):
        delivered.append(turn.prompt)
        return deliver(pm, turn, *args, **kwargs)

    def no_fork(pm, store, spool, reasons, turn, **_options):
        if edited:
            entry = spool.read()
            entry["turn"]["prompt"] = "changed since"
            spool.write(entry)
        return False

    monkeypatch.setattr(settlement, "_deliver", recording_deliver)
    monkeypatch.setattr(settlement, "_hand_off", no_fork)
    registry, receipt, parsed = _settle_counting_parses(tmp_path, monkeypatch)
    assert receipt is not None and journal_states(registry) == ["completed"]
    assert queue(registry) == []
    assert parsed.exists() is edited
    assert len(delivered) == 1
    assert (delivered[0] == "changed since") is edited


@pytest.fixture
def replying(monkeypatch):
    """This process as a resident server's child: it may answer before it settles."""
    from hosts.settlement import after_reply, settlement

    monkeypatch.delenv(settlement.ENV_SETTLE, raising=False)
    after_reply.accept()
    yield after_reply
    after_reply._queue = None


def test_a_stop_that_can_answer_first_settles_after_its_reply_holding_the_lock(tmp_path, replying):
    """No fork: the Stop returns with its settlement queued (:mod:`hosts.settlement.after_reply`),
    the entry's lock still held by the descriptor kept for it, and the queued work
    settles the entry and lets the lock go."""
    from hosts.settlement import settlement
    from turn_hooks import make_plugin_manager

    registry = bound_goal(tmp_path)
    validator = gated_validator(tmp_path)
    (tmp_path / "gate").unlink()
    turn = hook_turn(registry, tmp_path / "repo", turn_id="t1", host="codex_cli")
    settlers = list(settlement._settlers)
    receipt = settlement.settle(
        make_plugin_manager(), turn, final_message=message(), validation_argv=validator, detach=True
    )
    assert receipt is None and replying.pending(), "queued, not settled"
    assert settlement._settlers == settlers, "nothing was forked"
    store = settlement_store(str(registry), f1.GOAL)
    spooled = spool_path(store, turn)
    with pytest.raises(SidecarLockTimeout):  # the transaction ended; its lock did not
        with SidecarStore(store.root, lock_timeout=0).lock(spooled):
            pass
    assert journal_states(registry) == [] and len(queue(registry)) == 1
    replying.run()
    assert journal_states(registry) == ["completed"] and queue(registry) == []
    with SidecarStore(store.root, lock_timeout=0).lock(spooled):
        pass  # let go once settled


def test_a_stop_with_no_descriptor_left_for_its_lock_settles_before_it_returns(
    tmp_path, replying, monkeypatch
):
    """Out of descriptors, the lock cannot be kept for after the reply: the Stop settles
    its entry itself, under the same lock, as when no settler could be forked."""
    from hosts.settlement import settlement
    from turn_hooks import make_plugin_manager

    def no_descriptor(fd):
        raise OSError(24, "Too many open files")

    registry = bound_goal(tmp_path)
    validator = gated_validator(tmp_path)
    (tmp_path / "gate").unlink()
    turn = hook_turn(registry, tmp_path / "repo", turn_id="t1", host="codex_cli")
    monkeypatch.setattr(settlement.os, "dup", no_descriptor)
    receipt = settlement.settle(
        make_plugin_manager(), turn, final_message=message(), validation_argv=validator, detach=True
    )
    monkeypatch.undo()
    assert receipt is not None and not replying.pending()
    assert journal_states(registry) == ["completed"] and queue(registry) == []
