"""Two source trees side by side: the hook processes and the core, before and after.

    python benchmarks/bench_ab.py BEFORE_DIR AFTER_DIR [pairs]

Each directory is a checkout of turn-hooks (``git worktree add DIR COMMIT``). Both
run on this interpreter and its installed dependencies, with ``PYTHONPATH`` pointing
at the checkout, so the only difference is the code. Runs alternate A B A B after a
warm-up, so both sides see the same machine noise; the table gives medians and the
after/before ratio, which is the number to read on a shared machine.

Measured per pair:

- the PreTurn hook process (``host generic pre-turn``) on an embedded store with
  10,000 records;
- the Stop hook process without a reflection (``host generic post-settlement``);
- recall and ingest + readback inside one process (``bench_core`` on 10,000 records),
  run once per side in the same alternation.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import seed
from fixtures import f1

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider

CORE = """
import json, sys
sys.path.insert(0, sys.argv[1] + "/benchmarks")
sys.path.insert(0, sys.argv[1] + "/tests")
import bench_core
print(json.dumps(bench_core.measure(int(sys.argv[2]), recalls=60, ingests=20)))
"""


def environment(tree: Path) -> dict[str, str]:
    """This process's environment with ``tree`` first on the import path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURN_HOOKS_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users run from compiled bytecode
    env["PYTHONPATH"] = str(tree)
    return env


def timed(argv: list[str], env: dict[str, str], stdin: str = "") -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started


def main(before: Path, after: Path, pairs: int = 15) -> None:
    trees = {"before": before.resolve(), "after": after.resolve()}
    envs = {side: environment(tree) for side, tree in trees.items()}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        registry = f1.write_goal(root, f1.config("embedded_sqlite"))
        store = EmbeddedSqliteProvider(root / "repo" / ".local" / "turn-hooks" / "memory.sqlite3")
        seed(store, 10_000)
        hook = [sys.executable, "-m", "hosts.cli", "host", "generic"]
        binding = ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
        cases = {
            "PreTurn hook process": lambda i: (
                [*hook, "pre-turn", *binding],
                json.dumps({"turn_id": f"t{i}", "prompt": "module tests"}),
            ),
            "Stop hook process, no reflection": lambda i: (
                [*hook, "post-settlement", *binding],
                json.dumps({"turn_id": f"n{i}", "last_assistant_message": "done"}),
            ),
        }
        samples: dict[str, dict[str, list[float]]] = {
            name: {side: [] for side in trees} for name in cases
        }
        core: dict[str, list[dict[str, float]]] = {side: [] for side in trees}
        for i in range(-1, pairs):  # pair -1 is the warm-up, not recorded
            for name, make in cases.items():
                for side in trees:
                    argv, stdin = make(f"{side}{i}")
                    seconds = timed(argv, envs[side], stdin)
                    if i >= 0:
                        samples[name][side].append(seconds)
            if i % 5 == 0:
                for side, tree in trees.items():
                    done = subprocess.run(
                        [sys.executable, "-c", CORE, str(tree), "10000"],
                        env=envs[side],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    core[side].append(json.loads(done.stdout.splitlines()[-1]))
            print(f"pair {i + 1}/{pairs}", file=sys.stderr)
    print("| measure (median) | before ms | after ms | after / before |")
    print("|---|---:|---:|---:|")
    for name, sides in samples.items():
        b, a = (statistics.median(sides[side]) * 1000 for side in trees)
        print(f"| {name} | {b:.1f} | {a:.1f} | {a / b:.2f} |")
    for key, label in (
        ("recall_p50", "recall p50, 10k records"),
        ("ingest_p50", "ingest + readback p50"),
    ):
        b, a = (statistics.median(run[key] for run in core[side]) for side in trees)
        print(f"| {label} | {b:.2f} | {a:.2f} | {a / b:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]), *(int(arg) for arg in sys.argv[3:]))
