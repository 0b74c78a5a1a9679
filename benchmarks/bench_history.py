"""A PreTurn's cost as the Agent's history grows, two source trees alternated.

    python benchmarks/bench_history.py BEFORE_DIR AFTER_DIR [turns ...] [--rounds R]

Every learned Turn leaves sidecars behind: its journal (kept for deduplication) and,
in older trees, the lock files of its queue marker and journal. A PreTurn that looks
at each of them costs more with every Turn the Agent has had. For each history size
(default 0, 1,000 and 4,000 Turns), each round runs one process per tree, before
then after, with ``PYTHONPATH`` at the tree. The process binds a fresh Goal (the F1
fixture, embedded store) and lays down the state an older version leaves after that
many Turns: that many completed journals with their locks, and the lock file of each
queue marker it dequeued, and that many settlement spool entries with theirs. Then
one real Turn settles inline (its validator, ingest and journal: what a tree does to
that state when it settles), and the process times 30 in-process Codex PreTurns
(``host codex-cli pre-turn``, imports warm, after one untimed), each followed by a
Codex Stop with a validated reflection, timed until the hook would return (it hands
the settlement to a forked child, which is waited for before the next sample), and
reports the medians.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import io, json, os, shutil, sys, tempfile, time
sys.path.insert(0, sys.argv[1] + "/tests")
from pathlib import Path
from fixtures import f1
from test_settlement_faults import gated_validator
from turn_support import bound_goal, hook_turn, reflection_message
from hosts.settlement import settlement
from hosts.cli.command import main as cli
from sidecars import goal_agent_parts
import sidecars.store as sidecars_store
from turn_hooks import make_plugin_manager

turns = int(sys.argv[2])
root = Path(tempfile.mkdtemp())
os.environ["TURN_HOOKS_STATE_DIR"] = str(root / "state")
registry = bound_goal(root)
pm = make_plugin_manager()
validator = gated_validator(root)
(root / "gate").unlink()
sidecars = root / "repo" / ".local" / "turn-hooks"

def settle(turn_id):
    turn = hook_turn(registry, root / "repo", turn_id=turn_id, host="codex_cli")
    settlement.settle(pm, turn, final_message=reflection_message(), validation_argv=validator,
                      detach=False)

if turns:
    settle("seed")  # one real journal to copy
    [journal] = (sidecars / "reward-memory-outcomes").rglob("*.json")
    queue = sidecars.joinpath(*goal_agent_parts("settlement-queue", f1.GOAL, f1.AGENT))
    [spooled] = (sidecars / "settlements").rglob("*.json")
    for n in range(turns - 1):
        names = (journal, f"{n:020x}-{n:012x}.json"), (spooled, f"t{n}-{n:012x}.json")
        for original, name in names:
            copy = original.with_name(name)
            shutil.copyfile(original, copy)
            os.chmod(copy, 0o600)
            copy.with_name(name + ".lock").touch(mode=0o600)
        (queue / f"t{n}-{n:012x}.json.lock").touch(mode=0o600)
settle("last")
binding = ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]

def pre_turn(i):
    event = {"turn_id": f"p{i}", "session_id": "s", "prompt": "module tests",
             "cwd": str(root / "repo")}
    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(event).encode()))
    sys.stdout, real = io.StringIO(), sys.stdout
    try:
        cli(["host", "codex-cli", "pre-turn", *binding])
    except SystemExit:
        pass
    finally:
        sys.stdout = real

def stop(i):
    turn = hook_turn(registry, root / "repo", turn_id=f"s{i}", host="codex_cli")
    sidecars_store._swept.clear()  # as in a hook process of its own: no directory swept yet
    started = time.perf_counter()
    settlement.settle(pm, turn, final_message=reflection_message(), validation_argv=validator,
                      detach=True)
    took = time.perf_counter() - started
    for pid in settlement._settlers:  # one settler at a time: none competes with a sample
        os.waitpid(pid, 0)
    settlement._settlers.clear()
    return took

pre_turn(-1)
stop(-1)
walls, stops = [], []
for i in range(30):
    started = time.perf_counter()
    pre_turn(i)
    walls.append(time.perf_counter() - started)
    stops.append(stop(i))
walls.sort()
stops.sort()
middle = len(walls) // 2
print(json.dumps({"p50_ms": walls[middle] * 1000, "stop_ms": stops[middle] * 1000}))
"""


def run(tree: Path, turns: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), str(turns)],
        env=env,
        cwd=tree,  # ``-c`` puts the working directory first on the path
        capture_output=True,
        text=True,
        check=True,
    )
    return {key: float(value) for key, value in json.loads(result.stdout.splitlines()[-1]).items()}


def main(before: Path, after: Path, sizes: list[int], rounds: int) -> None:
    rows: dict[int, dict[str, list[dict[str, float]]]] = {}
    for index in range(rounds):
        for turns in sizes:
            for side, tree in (("before", before), ("after", after)):
                sample = run(tree, turns)
                rows.setdefault(turns, {"before": [], "after": []})[side].append(sample)
                print(f"round {index + 1}, {turns} Turns, {side}: {sample}", file=sys.stderr)
    print(
        "| Turns of history | PreTurn p50 ms, before | after | after / before "
        "| Stop p50 ms, before | after | after / before |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for turns in sizes:
        cells = [f"{turns:,}"]
        for key in ("p50_ms", "stop_ms"):
            old = statistics.median(sample[key] for sample in rows[turns]["before"])
            new = statistics.median(sample[key] for sample in rows[turns]["after"])
            cells += [f"{old:.2f}", f"{new:.2f}", f"{new / old:.2f}x"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    rounds = 3
    if "--rounds" in arguments:
        at = arguments.index("--rounds")
        rounds = int(arguments[at + 1])
        del arguments[at : at + 2]
    if len(arguments) < 2:
        raise SystemExit(__doc__)
    main(
        Path(arguments[0]).resolve(),
        Path(arguments[1]).resolve(),
        [int(arg) for arg in arguments[2:]] or [0, 1000, 4000],
        rounds,
    )
