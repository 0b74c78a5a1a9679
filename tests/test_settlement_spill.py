"""A Stop hook's stdin lands in a spill file before anything else (issue 37).

The hook moves its stdin into ``<state>/incoming/<name>.spill`` (splice or sendfile:
the bytes leave stdin only by landing in the file), holding an exclusive flock for
its life, and removes the spill once the Turn's queue marker (or its park) exists,
or the hook ends. A spill left behind with its lock free is a dead writer's: the next
PreTurn rebuilds the Turn from it, exactly as the Stop hook would have, and queues it.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from resident_support import wait_for
from test_settlement_faults import logged, queue, settle_pending, stored_records
from turn_support import (
    DEMO_VALIDATOR,
    ROOT,
    bound_goal,
    hook_argv,
    journals_after_settlement,
    settled_spools,
)
from turn_support import reflection_message as message
from turn_support import run_process as run

from hosts.adapters.generic import MAX_EVENT_CHARS
from hosts.settlement import spill


def incoming() -> Path:
    return Path(os.environ["TURN_HOOKS_STATE_DIR"]) / spill.INCOMING_DIR


def spills() -> list[str]:
    directory = incoming()
    return sorted(os.listdir(directory)) if directory.is_dir() else []


def private_incoming() -> Path:
    directory = incoming()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    return directory


def plant(name: str, content: bytes) -> Path:
    path = private_incoming() / name
    path.write_bytes(content)
    path.chmod(0o600)
    return path


def stop_argv(registry, host="generic", dialect=None):
    argv = hook_argv(registry)
    argv[argv.index("generic")] = host
    return argv + (["--dialect", dialect] if dialect else [])


def event(turn_id="t1"):
    return {"turn_id": turn_id, "last_assistant_message": message()}


HOSTS = [("generic", None), ("generic", "claude-code"), ("codex-cli", None)]


@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
@pytest.mark.parametrize(("host", "dialect"), HOSTS, ids=["generic", "claude-code", "codex"])
def test_a_stop_keeps_its_turn_and_leaves_no_spill(tmp_path, host, dialect, stdin_kind):
    registry = bound_goal(tmp_path)
    argv = stop_argv(registry, host, dialect)
    if stdin_kind == "pipe":
        result = run(argv, json.dumps(event()))
    else:
        source = tmp_path / "event.json"
        source.write_text(json.dumps(event()))
        with source.open("rb") as handle:
            result = subprocess.run(
                argv, stdin=handle, capture_output=True, text=True, cwd=ROOT, timeout=60
            )
    assert result.returncode == 0 and "Traceback" not in result.stderr
    journals = journals_after_settlement(registry.parent / "repo")
    assert [journal["status"] for journal in journals] == ["completed"]
    assert len(stored_records(registry)) == 1
    assert spills() == [], "a hook that ended leaves no spill"
    assert os.stat(incoming()).st_mode & 0o777 == 0o700
    assert logged() == []


@pytest.mark.parametrize(
    "payload",
    [b"{not json", b"[1, 2]", b" " * (MAX_EVENT_CHARS + 1)],
    ids=["bad-json", "not-object", "too-large"],
)
def test_a_refused_event_leaves_no_spill_and_exits_0(tmp_path, payload):
    registry = bound_goal(tmp_path)
    result = subprocess.run(
        stop_argv(registry), input=payload, capture_output=True, cwd=ROOT, timeout=60
    )
    assert (result.returncode, json.loads(result.stdout)) == (0, {})
    assert spills() == []
    [(source, reason)] = logged()
    assert source == "adapter" and reason.startswith("hook_input_")
    assert queue(registry) == []


def dead_writer(tmp_path, registry, turn_id="t1"):
    """A Stop hook that consumed its whole event (it still waits for the end of its
    stdin) is found alive, then killed: its spill stays, with its lock free."""
    process = subprocess.Popen(
        stop_argv(registry),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert process.stdin is not None
    data = json.dumps(event(turn_id)).encode()
    process.stdin.write(data)
    process.stdin.flush()

    def consumed() -> bool:
        return any((incoming() / name).read_bytes().endswith(data) for name in spills())

    wait_for(consumed, what="the hook to take its stdin")
    [name] = spills()
    assert spill.recover() == 0, "a live writer's spill is not taken"
    assert spills() == [name] and queue(registry) == []
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    process.stdin.close()
    return name


def test_a_dead_writers_spill_is_recovered_once(tmp_path):
    registry = bound_goal(tmp_path)
    dead_writer(tmp_path, registry)
    assert spill.recover() == 1
    assert spills() == []
    assert len(queue(registry)) == 1, "the Turn is queued as the hook would have"
    assert spill.recover() == 0
    summary = settle_pending(registry)
    assert summary["settled_count"] == 1
    assert len(stored_records(registry)) == 1
    assert logged() == [
        ("adapter", "settlement_rebuilt_from_spill"),
        ("adapter", "settlement_rebuilt_from_queue"),  # the worker built the entry
    ]


def test_the_next_pre_turn_recovers_a_dead_writers_spill_and_settles_it(tmp_path):
    registry = bound_goal(tmp_path)
    dead_writer(tmp_path, registry)
    pre_turn = run(hook_argv(registry, "pre-turn"), json.dumps({"turn_id": "t2"}))
    assert pre_turn.returncode == 0
    assert spills() == []
    wait_for(lambda: len(stored_records(registry)) == 1, what="the worker to settle it")
    wait_for(lambda: queue(registry) == [], what="the queue to empty")


def header(**fields):
    document = {"schema_version": spill.SPILL_SCHEMA, "host_name": "generic", **fields}
    return json.dumps(document).encode() + b"\n"


@pytest.mark.parametrize(
    "content",
    [
        b"garbage",
        header() + b"{not json",
        header(goal_id=f1.GOAL) + json.dumps(event()).encode(),  # no registry, no agent
        b"[]\n" + json.dumps(event()).encode(),
        b"\xff" * 70000,
    ],
    ids=["no-header", "bad-event", "incomplete-header", "header-not-object", "header-too-long"],
)
def test_an_unreadable_spill_is_removed_and_logged_once(tmp_path, content):
    path = plant("x.spill", content)
    assert spill.recover() == 0
    assert not path.exists()
    assert logged() == [("adapter", "settlement_spill_unreadable")]
    assert spill.recover() == 0
    assert logged() == [("adapter", "settlement_spill_unreadable")], "never retried"


def test_a_spill_with_no_event_is_removed_quietly(tmp_path):
    path = plant("x.spill", header())
    assert spill.recover() == 0
    assert not path.exists() and logged() == []


def test_links_and_fifos_in_incoming_are_refused_never_followed(tmp_path):
    registry = bound_goal(tmp_path)
    target = tmp_path / "target"
    content = (
        header(goal_id=f1.GOAL, agent_id=f1.AGENT, registry=str(registry), event="post-settlement")
        + json.dumps(event()).encode()
    )
    target.write_bytes(content)
    directory = private_incoming()
    (directory / "a.spill").symlink_to(target)
    os.mkfifo(directory / "b.spill", 0o600)
    assert spill.recover() == 0
    assert spills() == []
    assert target.read_bytes() == content, "a link's target is never touched"
    assert queue(registry) == []
    assert logged() == [("adapter", "settlement_spill_unreadable")] * 2


def test_an_incoming_directory_that_is_a_link_is_never_written_through(tmp_path):
    registry = bound_goal(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    incoming().parent.mkdir(parents=True, exist_ok=True)
    incoming().symlink_to(elsewhere)
    assert run(stop_argv(registry), json.dumps(event())).returncode == 0
    assert os.listdir(elsewhere) == []
    assert len(stored_records(registry)) == 1, "the Turn is settled all the same"
    assert ("adapter", "settlement_spill_unavailable") in logged()
    assert spill.recover() == 0
    assert os.listdir(elsewhere) == []


def test_past_the_bound_a_stop_goes_without_a_spill_and_says_so(tmp_path):
    registry = bound_goal(tmp_path)
    for index in range(spill.MAX_SPILLS):
        plant(f"{index:03d}.spill", b"garbage")
    assert run(stop_argv(registry), json.dumps(event())).returncode == 0
    assert len(stored_records(registry)) == 1
    assert len(spills()) == spill.MAX_SPILLS
    assert logged() == [("adapter", "settlement_spill_full")]
    taken = 0
    while spills():
        spill.recover()
        taken += 1
    assert taken == -(-spill.MAX_SPILLS // spill.RECOVER_PER_CALL), "bounded per call"


def test_a_fresh_part_is_left_and_an_old_dead_one_removed(tmp_path):
    fresh = plant("fresh.part", b"")
    old = plant("old.part", b"")
    os.utime(old, (0, 0))
    held = plant("held.part", b"")
    os.utime(held, (0, 0))
    with held.open("rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert spill.recover() == 0
    assert fresh.exists() and held.exists() and not old.exists()
    assert logged() == []


def test_a_spill_for_a_goal_whose_root_cannot_be_written_is_parked(tmp_path):
    from test_settlement_faults import block

    from hosts.settlement.settlement import QUEUE_DIR, parked

    registry = bound_goal(tmp_path)
    block(registry, QUEUE_DIR)  # the queue cannot be written: the Turn is parked
    content = (
        header(
            host_name="generic",
            event="post-settlement",
            goal_id=f1.GOAL,
            agent_id=f1.AGENT,
            registry=str(registry),
            validation_argv=[sys.executable, "-c", "pass"],
        )
        + json.dumps(event()).encode()
    )
    plant("x.spill", content)
    assert spill.recover() == 1
    assert spills() == []
    assert parked(f1.GOAL, f1.AGENT) == 1
    assert ("adapter", "settlement_parked") in logged()


def test_a_spill_whose_goal_is_gone_is_removed_with_the_bindings_reason(tmp_path):
    content = (
        header(
            event="post-settlement",
            goal_id=f1.GOAL,
            agent_id=f1.AGENT,
            registry=str(tmp_path / "absent.json"),
        )
        + json.dumps(event()).encode()
    )
    path = plant("x.spill", content)
    assert spill.recover() == 0
    assert not path.exists()
    assert logged() == [("adapter", "registry_unreadable")]


def test_a_relative_registry_is_read_from_the_hooks_directory(tmp_path):
    registry = bound_goal(tmp_path)
    content = (
        header(
            event="post-settlement",
            goal_id=f1.GOAL,
            agent_id=f1.AGENT,
            registry=registry.name,
            cwd=str(registry.parent),
            dialect="plain",
        )
        + json.dumps(event()).encode()
    )
    plant("x.spill", content)
    assert spill.recover() == 1
    assert len(queue(registry)) == 1
    assert logged() == [("adapter", "settlement_rebuilt_from_spill")]


def test_a_dead_gemini_stop_is_settled_under_its_own_turn_not_the_next(tmp_path):
    """Gemini has no turn id: BeforeAgent mints one that AfterAgent reads back. The
    next BeforeAgent recovers the dead AfterAgent's spill before it mints its own."""
    registry = bound_goal(tmp_path)
    repo = str(registry.parent / "repo")
    before = ["--dialect", "gemini"]
    first = {"session_id": "s", "hook_event_name": "BeforeAgent", "cwd": repo}
    first.update(timestamp="2026-12-01T10:00:00Z", prompt="p")
    assert run([*hook_argv(registry, "pre-turn"), *before], json.dumps(first)).returncode == 0
    content = header(
        event="post-settlement",
        dialect="gemini",
        goal_id=f1.GOAL,
        agent_id=f1.AGENT,
        registry=str(registry),
        validation_argv=DEMO_VALIDATOR,
    )
    stop = {"session_id": "s", "hook_event_name": "AfterAgent", "cwd": repo}
    plant("x.spill", content + json.dumps({**stop, "prompt_response": message()}).encode())
    second = {**first, "timestamp": "2026-12-01T10:05:00Z"}
    assert run([*hook_argv(registry, "pre-turn"), *before], json.dumps(second)).returncode == 0
    assert spills() == []
    wait_for(lambda: queue(registry) == [], what="the PreTurn's worker")
    entries = settled_spools(registry.parent / "repo")
    assert [entry["turn"]["host_turn_id"] for entry in entries] == ["s:2026-12-01T10:00:00Z"]
    assert len(stored_records(registry)) == 1


def test_status_counts_a_dead_writers_spill_of_its_binding_only(tmp_path):
    from hosts.setup.status import settlements

    registry = bound_goal(tmp_path)
    dead_writer(tmp_path, registry)
    header = {"schema_version": spill.SPILL_SCHEMA, "goal_id": "other-goal", "agent_id": f1.AGENT}
    plant("9-other.spill", json.dumps(header).encode() + b"\n{}")
    live = plant("9-live.spill", json.dumps({**header, "goal_id": f1.GOAL}).encode() + b"\n{}")
    with open(live, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # its writer lives: not waiting yet
        view = settlements(str(registry), f1.GOAL, f1.AGENT)
    assert view["spilled_settlement_count"] == 1
    assert len(spills()) == 3, "counting takes, changes and removes nothing"
    live.unlink()
    spill.recover()
    assert settlements(str(registry), f1.GOAL, f1.AGENT)["spilled_settlement_count"] == 0
