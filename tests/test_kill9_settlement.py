"""kill -9 at random points of a real Stop hook: nothing validated is lost or doubled.

Issue 13's acceptance run: the post-settlement hook process is killed with SIGKILL
after a random delay drawn over its whole run (before the spool, during the
validator, between journal and provider, after the write). Then the queue is worked
and the journals reconciled, as later Turns would. Every Turn whose reflection the
validator attested ends as exactly one record; no Turn ends with two.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import resident_support
from fixtures import f1
from resident_support import children_of, servers, stop, wait_for
from turn_support import ROOT, bound_goal, hook_argv, reflection_message, resolution, start_hook

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.turn.reconcile import reconcile
from hosts.settlement.settlement import queued, replay_pending, settlement_store
from turn_hooks import make_plugin_manager

EVIDENCE = ROOT / "scripts" / "demo" / "evidence.json"
RUNS = 24
SPREAD = 1.3
"""Kills are drawn over this many times one whole settlement of the same kind, timed
on this machine first (a fixed bound of seconds landed almost every kill after the
settlement on a fast machine, and left nothing to carry on): every stage is hit."""
SCRIPT = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))


def unmeasured() -> dict[str, str]:
    """The environment of the hook processes: this test's (its own state directory,
    where killed hooks leave their spills), unmeasured. The delays are drawn over an
    ordinary hook's run, and coverage's start-up in each child would move every kill
    before the spool."""
    return {key: value for key, value in os.environ.items() if key != "COVERAGE_PROCESS_CONFIG"}


def marking_validator(directory):
    """The demo validator; after it printed its attestation it leaves ``attested-<turn>``."""
    script = directory / "marking_validator.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import io, json, pathlib, sys
            from conformance.validator import main
            text = sys.stdin.read()
            sys.stdin = io.StringIO(text)
            code = main(pathlib.Path({str(EVIDENCE)!r}))
            sys.stdout.flush()
            turn = json.loads(text)["host_turn_id"]
            pathlib.Path({str(directory)!r}, "attested-" + turn).touch()
            sys.exit(code)
            """
        )
    )
    return [sys.executable, str(script)]


def records_by_turn(repo):
    store = EmbeddedSqliteProvider(repo / ".local" / "turn-hooks" / "memory.sqlite3")
    counts: dict[str, int] = {}
    for uri in store.list(f1.SCOPE_REF, limit=1000, actor_peer_id=f1.PEER, timeout=5):
        text = store.read_exact(uri, actor_peer_id=f1.PEER, timeout=5)
        turn = json.loads(text)["scope"]["revision_ref"]
        counts[turn] = counts.get(turn, 0) + 1
    return counts


def kill_all_with(marker: str) -> None:
    """kill -9 every process whose command line holds ``marker``: the hook, and the
    detached child a Stop hook hands its settlement to."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            continue  # gone already


@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["plain", "claude-code"], ids=["inline", "detached"])
def test_kill_9_at_random_points_loses_and_doubles_nothing(tmp_path, dialect):
    """Inline (the generic host) and detached (Claude Code's Stop hook, whose forked
    child settles after the hook returned): kills land before the spool, in the
    hand-off, during the validator and after the write."""
    registry = bound_goal(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    validator = marking_validator(marks)
    draw = random.Random(13)
    argv = [*hook_argv(registry, validator=validator), "--dialect", dialect]
    spread = SPREAD * whole_settlement(registry, argv, marks, env=unmeasured())
    for run in range(RUNS):
        event = {"turn_id": f"turn-{run:03d}", "last_assistant_message": reflection_message()}
        process = start_hook(argv, event, env=unmeasured())
        time.sleep(draw.uniform(0, spread))
        kill_all_with(str(registry))
        process.wait(timeout=30)

    carry_on_and_check(registry, marks)


@pytest.mark.slow
def test_kill_9_of_a_warm_stop_at_random_points_loses_and_doubles_nothing(tmp_path):
    """A Codex Stop served by the resident server: its child answers the host, then
    settles the Turn itself (hosts.settlement.after_reply). The kills (of that child and of the
    hook client) land before the spool, before and after the reply, during the
    validator and after the write."""
    run_dir = Path(tempfile.mkdtemp(dir=resident_support.BASE))
    env = dict(
        unmeasured(),
        TURN_HOOKS_RESIDENT="1",
        TURN_HOOKS_RESIDENT_DIR=str(run_dir),
        TURN_HOOKS_RESIDENT_IDLE_SECONDS="120",
        TURN_HOOKS_RESIDENT_MAX_SERVERS="1000",  # no server elsewhere refuses this one
    )
    registry = bound_goal(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    binding = ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    argv = [SCRIPT, "host", "codex-cli", "post-settlement", *binding]
    argv += ["--validation-command-json", json.dumps(marking_validator(marks))]
    draw = random.Random(17)
    try:
        start_hook([SCRIPT, "host", "codex-cli", "pre-turn", *binding], {}, env=env).wait(30)
        wait_for(lambda: servers(run_dir), what="a server")
        [server] = servers(run_dir)
        spread = SPREAD * whole_settlement(registry, argv, marks, env=env)
        for run in range(RUNS):
            # The spare waiting now is the child that takes the next call.
            child = the_spare(server)
            event = {"turn_id": f"turn-{run:03d}", "last_assistant_message": reflection_message()}
            process = start_hook(argv, event, env=env)
            time.sleep(draw.uniform(0, spread))
            for pid in (child, process.pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            process.wait(timeout=30)
        assert servers(run_dir) == [server], "the kills cost the server nothing"
    finally:
        stop(servers(run_dir))
    carry_on_and_check(registry, marks)


def the_spare(server):
    """The server's one child, read once: a settler that was still ending (one that
    found the Goal's validator busy waits for it up to a second) may be gone between
    two reads of the server's children."""
    found: list[int] = []

    def one() -> bool:
        found[:] = children_of(server)
        return len(found) == 1

    wait_for(one, what="one spare, no call")
    return found[0]


def whole_settlement(registry, argv, marks, env):
    """Seconds from a Stop hook's start to its settlement's end (a Turn of its own,
    not killed: it is checked with the others)."""
    store = settlement_store(str(registry), f1.GOAL)
    started = time.monotonic()
    start_hook(
        argv, {"turn_id": "turn-timed", "last_assistant_message": reflection_message()}, env=env
    ).wait(timeout=60)
    wait_for(lambda: (marks / "attested-turn-timed").exists(), what="the validator", seconds=60)
    wait_for(lambda: not queued(store, f1.GOAL, f1.AGENT), what="the settlement", seconds=60)
    return time.monotonic() - started


def carry_on_and_check(registry, marks):
    """Work the queue and reconcile the journals as later Turns would; then every
    spooled Turn the validator attested is exactly one record."""
    from hosts.settlement import spill

    time.sleep(1)  # let validators orphaned by a kill finish their output
    store = settlement_store(str(registry), f1.GOAL)
    while spill.recover():  # the next PreTurns: Turns of hooks killed before their marker
        pass
    assert queued(store, f1.GOAL, f1.AGENT), "some kills interrupted a settlement"
    later_turns(registry, store)
    assert queued(store, f1.GOAL, f1.AGENT) == [], "every spooled settlement was carried on"

    counts = records_by_turn(registry.parent / "repo")
    attested = {path.name.removeprefix("attested-") for path in marks.glob("attested-*")}
    spool_dir = registry.parent / "repo" / ".local" / "turn-hooks" / "settlements"
    spooled = {json.loads(p.read_text())["turn_key"] for p in spool_dir.rglob("*.json")}
    assert attested, "some runs got as far as the validator"
    assert attested <= spooled, "the validator runs only on spooled evidence"
    lost = sorted(turn for turn in spooled if counts.get(turn, 0) != 1)
    assert lost == [], "a spooled, validated reflection was lost"
    assert all(count == 1 for count in counts.values()), "a reflection was written twice"
    assert set(counts) == spooled


def later_turns(registry, store):
    """Work the queue, then the journals, as later Turns would, until nothing is queued."""
    pm = make_plugin_manager()
    for _ in range(10):  # later Turns: the queue, then the journals
        replay_pending(pm, store, goal_id=f1.GOAL, agent_id=f1.AGENT, limit=None)
        while reconcile(resolution(registry), provider_for=_provider(registry))["attempted_count"]:
            pass
        if not queued(store, f1.GOAL, f1.AGENT):
            break


def _provider(registry):
    store = EmbeddedSqliteProvider(
        registry.parent / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"
    )
    return lambda binding: store


SWEEP = 40
"""Kills of the sweep below: offsets from 0 ms, closest together at the start."""


@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["plain", "claude-code"], ids=["inline", "detached"])
def test_kill_9_swept_from_the_moment_stdin_is_written_loses_nothing_read(tmp_path, dialect):
    """Issue 37: kills from 0 ms after the event is on the hook's stdin, densest in
    the first tenth of a settlement (the interpreter's start, the spill, the parse,
    the marker's fsync). Every Turn whose hook had read its whole stdin is learned
    exactly once, after a PreTurn's recovery of dead hooks' spills and later
    workers; a Turn whose stdin was not all read is not learned (the host has it).

    Whether a hook had read its whole stdin is read back from the offset of the file
    it was handed (it shares the parent's open file), not from a clock."""
    from hosts.settlement import spill

    env = unmeasured()
    registry = bound_goal(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    argv = [*hook_argv(registry, validator=marking_validator(marks)), "--dialect", dialect]
    spread = whole_settlement(registry, argv, marks, env=env)
    store = settlement_store(str(registry), f1.GOAL)
    read, unread = {"turn-timed"}, set()
    for run in range(SWEEP):
        event = {"turn_id": f"turn-{run:03d}", "last_assistant_message": reflection_message()}
        stdin = tmp_path / f"event-{run:03d}.json"
        stdin.write_text(json.dumps(event))
        with open(stdin, "rb") as handle:
            process = subprocess.Popen(
                argv, stdin=handle, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                cwd=ROOT, env=env,
            )  # fmt: skip
            time.sleep(spread * (run / SWEEP) ** 3)
            kill_all_with(str(registry))
            process.wait(timeout=30)
            whole = os.lseek(handle.fileno(), 0, os.SEEK_CUR) == stdin.stat().st_size
            (read if whole else unread).add(event["turn_id"])
    time.sleep(1)  # let validators orphaned by a kill finish their output
    while spill.recover():  # the next PreTurns: dead hooks' spills, queued
        pass
    # A hook killed between making its spill and renaming it once locked leaves a
    # ".part" that holds no stdin; recovery leaves it until PART_GRACE has passed
    # (a live writer may be about to lock it), then removes it. Age them past it.
    parts = list(spill.incoming_dir().glob("*"))
    assert all(path.name.endswith(spill.PART_SUFFIX) for path in parts), "every spill recovered"
    for path in parts:
        old = path.stat().st_mtime - spill.PART_GRACE - 1
        os.utime(path, (old, old))
    spill.recover()
    left = list(spill.incoming_dir().glob("*"))
    assert left == [], "no spill outlives its writer's recovery"
    later_turns(registry, store)
    assert queued(store, f1.GOAL, f1.AGENT) == [], "every queued settlement was carried on"
    counts = records_by_turn(registry.parent / "repo")
    assert unread, "some kills landed before the hook had read its stdin"
    assert len(read) > 1, "some kills landed after it"
    assert sorted(read - set(counts)) == [], "a Turn whose stdin was read was lost"
    assert all(count == 1 for count in counts.values()), "a reflection was written twice"
    assert set(counts) == read, "a Turn whose stdin was not all read was not learned"
