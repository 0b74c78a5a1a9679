"""kill -9 at random points of a real Stop hook: nothing validated is lost or doubled.

Issue 13's acceptance run: the post-settlement hook process is killed with SIGKILL
after a random delay drawn over its whole run (before the spool, during the
validator, between journal and provider, after the write). Then the queue is worked
and the journals reconciled, as later Turns would. Every Turn whose reflection the
validator attested ends as exactly one record; no Turn ends with two.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import textwrap
import time

import pytest
from fixtures import f1
from turn_support import ROOT, bound_goal, hook_argv, reflection_message, resolution, start_hook

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.turn.reconcile import reconcile
from hosts.settlement import queued, replay_pending, settlement_store
from turn_hooks import make_plugin_manager

EVIDENCE = ROOT / "scripts" / "demo" / "evidence.json"
RUNS = 24
MAX_DELAY = 0.9
"""Seconds; longer than a whole Stop hook here, so kills land at every stage."""
UNMEASURED = {key: value for key, value in os.environ.items() if key != "COVERAGE_PROCESS_CONFIG"}
"""The hook processes run unmeasured: the delays are drawn over an ordinary hook's
run, and coverage's start-up in each child would move every kill before the spool."""


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
    for run in range(RUNS):
        event = {"turn_id": f"turn-{run:03d}", "last_assistant_message": reflection_message()}
        argv = [*hook_argv(registry, validator=validator), "--dialect", dialect]
        process = start_hook(argv, event, env=UNMEASURED)
        time.sleep(draw.uniform(0, MAX_DELAY))
        kill_all_with(str(registry))
        process.wait(timeout=30)

    time.sleep(1)  # let validators orphaned by a kill finish their output
    store = settlement_store(str(registry), f1.GOAL)
    pm = make_plugin_manager()
    assert queued(store, f1.GOAL, f1.AGENT), "some kills interrupted a settlement"
    for _ in range(10):  # later Turns: the queue, then the journals
        replay_pending(pm, store, goal_id=f1.GOAL, agent_id=f1.AGENT, limit=None)
        while reconcile(resolution(registry), provider_for=_provider(registry))["attempted_count"]:
            pass
        if not queued(store, f1.GOAL, f1.AGENT):
            break
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


def _provider(registry):
    store = EmbeddedSqliteProvider(
        registry.parent / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"
    )
    return lambda binding: store
