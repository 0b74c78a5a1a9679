"""Turns that never reached the spool are still settled (issue 37).

A Stop hook's first durable write is its queue marker, and the marker carries the
whole spool entry. A spool entry whose lock is held past its timeout, an entry that
cannot be read, a kill between the marker and the entry: a later ``turn-hooks settle
--pending`` spools the marker's copy and learns the Turn, once.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import filelock
import pytest
from fixtures import f1
from test_settlement_faults import (
    block,
    files_below,
    journal_states,
    logged,
    plant,
    private_dirs,
    queue,
    queue_path,
    settle_pending,
    stored_records,
)
from turn_support import bound_goal, hook_argv, hook_turn
from turn_support import reflection_message as message
from turn_support import run_process as run

from hosts.settlement.settlement import (
    MAX_SPOOL_BYTES,
    PARK_DIR,
    QUEUE_DIR,
    SPOOL_SCHEMA,
    carried_entry,
    parked,
    settlement_store,
    spool_path,
)
from hosts.setup.status import settlements
from sidecars import lock_path
from turn_hooks import make_plugin_manager


def spool_of(registry, turn_id="t1"):
    store = settlement_store(str(registry), f1.GOAL)
    return store, spool_path(store, hook_turn(registry, None, turn_id))


def stop_event(tmp_path, turn_id="t1"):
    return {"turn_id": turn_id, "cwd": str(tmp_path / "repo"), "last_assistant_message": message()}


@pytest.mark.parametrize("dialect", ["plain", "claude-code"], ids=["inline", "detached"])
def test_a_spool_lock_held_past_its_timeout_still_queues_the_turn(tmp_path, dialect):
    registry = bound_goal(tmp_path)
    store, path = spool_of(registry)
    private_dirs(path.parent)
    event = stop_event(tmp_path)
    with filelock.FileLock(str(lock_path(path)), mode=0o600):
        result = run([*hook_argv(registry), "--dialect", dialect], json.dumps(event))
        assert result.returncode == 0
        assert not path.exists(), "the entry could not be spooled"
        [marker] = queue(registry)
        carried = carried_entry(make_plugin_manager(), store, marker)
        assert carried is not None and carried["schema_version"] == SPOOL_SCHEMA
        assert carried["host_result"], "the marker carries the Turn's result"
        assert os.stat(marker).st_mode & 0o777 == 0o600
    assert ("adapter", "settlement_spool_busy") in logged()
    assert journal_states(registry) == [], "nothing learned yet"
    summary = settle_pending(registry)
    assert (summary["settled_count"], summary["dropped_count"]) == (1, 0)
    assert len(stored_records(registry)) == 1, "a later worker learned it"
    assert queue(registry) == []
    assert ("adapter", "settlement_rebuilt_from_queue") in logged()
    assert settle_pending(registry)["queued_count"] == 0, "settled once"


@pytest.mark.parametrize("content", [b"{not json", "fifo"])
def test_a_corrupt_spool_entry_met_by_the_stop_hook_is_set_aside_and_replaced(tmp_path, content):
    registry = bound_goal(tmp_path)
    _, path = spool_of(registry)
    plant(path, content)
    result = run(hook_argv(registry), json.dumps(stop_event(tmp_path)))
    assert result.returncode == 0
    assert len(stored_records(registry)) == 1, "settled at once"
    assert path.with_name(path.name + ".unreadable").exists(), "kept aside for a person"
    assert json.loads(path.read_text())["task_validation"]["status"] == "passed"
    assert ("adapter", "settlement_spool_unreadable") in logged()
    assert queue(registry) == []


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", "fifo"])
def test_a_corrupt_spool_entry_met_by_the_worker_is_settled_from_the_marker(tmp_path, content):
    """The Stop hook queued the Turn but never spooled it (its lock was held); the file
    found there later cannot be read: the marker's copy is settled instead."""
    registry = bound_goal(tmp_path)
    _, path = spool_of(registry)
    private_dirs(path.parent)
    with filelock.FileLock(str(lock_path(path)), mode=0o600):
        assert run(hook_argv(registry), json.dumps(stop_event(tmp_path))).returncode == 0
        plant(path, content)
    summary = settle_pending(registry)
    assert (summary["settled_count"], summary["terminal_count"]) == (1, 0)
    assert len(stored_records(registry)) == 1
    assert path.with_name(path.name + ".unreadable").exists(), "kept aside for a person"
    assert json.loads(path.read_text())["turn_key"], "spooled again from the marker"
    assert queue(registry) == []


def test_a_marker_without_an_entry_and_no_spool_is_still_dropped(tmp_path):
    """Markers written before they carried entries keep their meaning."""
    registry = bound_goal(tmp_path)
    store, path = spool_of(registry)
    store.write(queue_path(store, path), {"schema_version": "x", "spool": path.name})
    summary = settle_pending(registry)
    assert (summary["dropped_count"], summary["settled_count"]) == (1, 0)
    assert queue(registry) == []


def test_a_marker_whose_copy_is_not_a_turn_ends_terminal_not_retried(tmp_path):
    registry = bound_goal(tmp_path)
    store, path = spool_of(registry)
    marker = queue_path(store, path)
    store.write(marker, {"spool": path.name, "entry": {"schema_version": SPOOL_SCHEMA}})
    summary = settle_pending(registry)
    assert summary["terminal_count"] == 1
    assert ("adapter", "settlement_spool_incomplete") in logged()
    assert settle_pending(registry)["queued_count"] == 0, "never retried"


def test_the_entry_built_from_the_marker_is_the_one_the_stop_hook_spools(tmp_path):
    """The hook writes its Turn, message and declaration ahead; what a worker builds
    from them is what the hook itself spools for the same message."""
    registry = bound_goal(tmp_path)
    assert run(hook_argv(registry), json.dumps(stop_event(tmp_path, "t1"))).returncode == 0
    store, spooled = spool_of(registry, "t1")
    spooled_entry = json.loads(spooled.read_text())
    _, path = spool_of(registry, "t2")
    private_dirs(path.parent)
    with filelock.FileLock(str(lock_path(path)), mode=0o600):
        run(hook_argv(registry), json.dumps(stop_event(tmp_path, "t2")))
        [marker] = queue(registry)
    assert "event" in json.loads(marker.read_text()), "written ahead, before the plugins"
    carried = carried_entry(make_plugin_manager(), store, marker)
    assert carried is not None
    for key in ("host_result", "validation_declaration", "last_message_sha256", "host"):
        assert carried[key] == spooled_entry[key], key
    assert carried["turn"]["host_turn_id"] == "t2"


def test_a_message_kept_ahead_but_too_large_to_spool_leaves_no_marker(tmp_path):
    """Under the bound as a message, over it as an entry: refused, and its record goes."""
    registry = bound_goal(tmp_path)
    event = stop_event(tmp_path)
    event["last_assistant_message"] = message("x" * (MAX_SPOOL_BYTES - 200))
    result = run(hook_argv(registry), json.dumps(event))
    assert (result.returncode, json.loads(result.stdout)) == (0, {})
    assert ("adapter", "settlement_spool_too_large") in logged()
    assert queue(registry) == []


def test_a_staged_reflection_is_carried_by_the_marker_once_taken(tmp_path):
    """A value the model staged through the tool is gone from its sidecar once taken:
    the marker then carries the built entry, so the worker learns that value."""
    from hosts.settlement import staged

    registry = bound_goal(tmp_path)
    store, path = spool_of(registry)
    private_dirs(path.parent)
    reflection = json.dumps(f1.REFLECTION, separators=(",", ":"))
    staged.stage(
        store,
        goal_id=f1.GOAL,
        agent_id=f1.AGENT,
        session_id="s1",
        turn_id="t1",
        field="reward_memory_reflection_json",
        value=reflection,
    )
    event = {"turn_id": "t1", "session_id": "s1", "last_assistant_message": "The test is fixed."}
    event["cwd"] = str(tmp_path / "repo")
    with filelock.FileLock(str(lock_path(path)), mode=0o600):
        assert run(hook_argv(registry), json.dumps(event)).returncode == 0
        [marker] = queue(registry)
        assert json.loads(marker.read_text())["entry"]["host_result"], "the built entry"
    assert not staged.staged_path(store, f1.GOAL, f1.AGENT, "s1").exists(), "taken"
    assert settle_pending(registry)["settled_count"] == 1
    assert len(stored_records(registry)) == 1


# --- a sidecar root that cannot be written --------------------------------------------


def read_only(root):
    """An argv prefix that runs a command while ``root`` is read-only. Root ignores
    modes, so it gets a read-only bind mount of ``root`` in a mount namespace of the
    command's own (the fault a read-only mount gives a user); anyone else gets 0500."""
    if os.geteuid() != 0:
        root.chmod(0o500)
        return []
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root with no mount namespace: the root cannot be read-only")
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, "sh", str(root)]


def test_a_turn_settled_while_the_root_is_read_only_is_stored_once_it_is_writable(tmp_path):
    registry = bound_goal(tmp_path)
    root = tmp_path / "repo" / ".local" / "turn-hooks"
    private_dirs(root)
    before = files_below(root)
    prefix = read_only(root)
    try:
        result = run([*prefix, *hook_argv(registry)], json.dumps(stop_event(tmp_path)))
    finally:
        root.chmod(0o700)
    assert result.returncode == 0
    assert files_below(root) == before, "nothing could be written there"
    assert logged().count(("adapter", "settlement_parked")) == 1, "said once, by name"
    [waiting] = (Path(os.environ["TURN_HOOKS_STATE_DIR"]) / PARK_DIR).rglob("*.json")
    assert os.stat(waiting).st_mode & 0o777 == 0o600
    assert settlements(str(registry), f1.GOAL, f1.AGENT)["parked_settlement_count"] == 1
    # The root is writable again: the next PreTurn queues the Turn, a worker settles it.
    pre_turn = {"turn_id": "t2", "cwd": str(tmp_path / "repo"), "prompt": "next"}
    assert run(hook_argv(registry, "pre-turn"), json.dumps(pre_turn)).returncode == 0
    assert parked(f1.GOAL, f1.AGENT) == 0
    deadline = time.monotonic() + 60
    while queue(registry) and time.monotonic() < deadline:
        settle_pending(registry)  # beside the PreTurn's own worker: one of them holds it
        time.sleep(0.1)
    assert queue(registry) == []
    assert len(stored_records(registry)) == 1


def test_parked_turns_are_bounded_and_the_loss_past_the_bound_is_named(tmp_path):
    from hosts.settlement.settlement import MAX_PARKED, write_ahead

    registry = bound_goal(tmp_path)
    block(registry, QUEUE_DIR)  # the queue cannot be written: the Turns are parked
    for index in range(MAX_PARKED + 1):
        turn = hook_turn(registry, tmp_path, f"t{index}")
        assert not write_ahead(
            turn, final_message=message(), validation_argv=None, validation_timeout=None
        )
    assert parked(f1.GOAL, f1.AGENT) == MAX_PARKED
    assert logged().count(("adapter", "settlement_not_kept")) == 1


def test_a_record_no_entry_can_be_built_from_ends_terminal_not_retried(tmp_path, monkeypatch):
    """A plugin's reader that fails on the record (a bug) must not stop the worker on
    every Turn: the entry ends incomplete, its marker goes."""
    from hosts.settlement import settlement

    registry = bound_goal(tmp_path)
    store, _ = spool_of(registry)
    turn = hook_turn(registry, tmp_path)
    assert settlement.write_ahead(
        turn, final_message=message(), validation_argv=None, validation_timeout=None
    )

    def broken(pm, result):
        raise RuntimeError("a reader's bug")

    monkeypatch.setattr(settlement, "read_results", broken)
    pm = make_plugin_manager()
    summary = settlement.replay_pending(pm, store, goal_id=f1.GOAL, agent_id=f1.AGENT)
    assert summary["terminal_count"] == 1
    assert queue(registry) == []
