"""Turns that never reached the spool are still settled (issue 37).

A Stop hook's first durable write is its queue marker, and the marker carries the
whole spool entry. A spool entry whose lock is held past its timeout, an entry that
cannot be read, a kill between the marker and the entry: a later ``turn-hooks settle
--pending`` spools the marker's copy and learns the Turn, once.
"""

from __future__ import annotations

import json
import os
import sys

import filelock
import pytest
from fixtures import f1
from test_settlement_faults import (
    journal_states,
    logged,
    private_dirs,
    queue,
    queue_path,
    settle_pending,
    stored_records,
)
from turn_support import bound_goal, hook_argv, hook_turn
from turn_support import reflection_message as message
from turn_support import run_process as run

from hosts.settlement import SPOOL_SCHEMA, carried_entry, settlement_store, spool_path
from sidecars import lock_path


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
        carried = carried_entry(store, marker)
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
    private_dirs(path.parent)
    if content == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.write_bytes(content)
        path.chmod(0o600)
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
        if content == "fifo":
            os.mkfifo(path, 0o600)
        else:
            path.write_bytes(content)
            path.chmod(0o600)
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


def test_the_marker_copy_is_what_the_stop_hook_spools(tmp_path):
    """Same bytes in both: a rebuilt entry is the entry the hook would have written."""
    registry = bound_goal(tmp_path)
    store, path = spool_of(registry)
    private_dirs(path.parent)
    event = stop_event(tmp_path)
    with filelock.FileLock(str(lock_path(path)), mode=0o600):
        run(hook_argv(registry), json.dumps(event))
        [marker] = queue(registry)
        carried = carried_entry(store, marker)
    assert carried is not None
    for key in ("turn_key", "host_result", "turn", "validation_declaration"):
        assert carried[key], key
    assert carried["validation_declaration"]["argv"][0] == sys.executable
