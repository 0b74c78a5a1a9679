"""Two source trees inside the real Codex CLI or Claude Code, interleaved round by round.

    python benchmarks/bench_host_ab.py codex|claude BEFORE_DIR [AFTER_DIR] [rounds] [--hook-times]

Each directory is a checkout of turn-hooks (``git worktree add DIR COMMIT``; AFTER_DIR
defaults to this one, rounds to 16). ``bench_codex.py`` and ``bench_claude.py`` time
one tree, five rounds, all in one process; on a 2-core machine their spread is as
large as a change worth measuring. Here every round runs each variant once on each
tree, the trees' order alternating round by round, each run in a process of its own
(the tree first on ``PYTHONPATH``, so its hooks, its validator and its bench are its
own), and each tree keeps its own resident server for the whole run (stopped at the
end). The run without our hooks is the same for both trees and runs once a round.

Besides the seconds per Turn it reports the CPU the machine spent on one run (its
busy time in ``/proc/stat``: the untimed first Turn and the two timed ones, the host
and every process ours started, detached settlers included) over the run without
hooks: the wall time hides work that a settler does while the host is idle, the CPU
does not. With ``--hook-times`` each round also runs the warm hooks with every
command timed by the host's own shell (``host_turns.timed``) and reports how long
the host waited for our hook processes per timed Turn: the direct part of what the
hooks add, without the spread of the host's own Turn (which the difference of two
medians carries). Both trees need the ``timed`` variant for it. The hosts come
from ``TURN_HOOKS_CODEX_VENV`` and ``TURN_HOOKS_CLAUDE_DIR`` (``make codex``, ``make
claude``), as for the benches it drives.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = {"codex": "bench_codex", "claude": "bench_claude"}
VARIANTS = {
    "codex": ("without", "warm", "installed"),
    "claude": ("without", "warm"),
}
LABELS = {
    "without": "without our hooks",
    "warm": "as installed, warm (resident server)",
    "installed": "the home `install codex` leaves (warm hooks + MCP server)",
    "timed": "as installed, warm, each hook timed by the host's shell",
}


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (``/proc/stat``)."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def one_run(bench: str, variant: str, resident_dir: str) -> dict[str, float]:
    """One learn-then-recall run of ``bench``, imported from the tree in the working
    directory (a tree older than this script has the bench, not the script); seconds
    per Turn and the machine's CPU seconds for the run."""
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    two_turns = __import__(BENCHES[bench]).two_turns
    env = (
        {"TURN_HOOKS_RESIDENT": "0"}
        if variant == "without"
        else {
            "TURN_HOOKS_RESIDENT": "1",
            "TURN_HOOKS_RESIDENT_DIR": resident_dir,
            "TURN_HOOKS_RESIDENT_IDLE_SECONDS": "600",
        }
    )
    with tempfile.TemporaryDirectory() as scratch:
        started = busy_seconds()
        elapsed = two_turns(Path(scratch), variant, env)
        cpu = busy_seconds() - started
        run = {"elapsed": elapsed, "cpu": cpu}
        if variant == "timed":
            from host_turns import HOOK_TIMES, hook_seconds

            run["hooks"] = hook_seconds(Path(scratch) / HOOK_TIMES) / 2  # two timed Turns
    return run


def _run_in(tree: Path, bench: str, variant: str, resident_dir: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--one", bench, variant, resident_dir],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"{tree} {variant}: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def compare(bench: str, trees: dict[str, Path], rounds: int, hook_times: bool = False) -> None:
    """Run the rounds and print a Markdown table of both trees."""
    # Here, not at the top: a ``--one`` run imports the tree's own benches and helpers.
    from host_turns import stop_residents

    variants = VARIANTS[bench] + (("timed",) if hook_times else ())
    residents = {name: tempfile.mkdtemp(prefix="thab-", dir="/tmp") for name in trees}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        for index in range(rounds):
            order = list(trees) if index % 2 == 0 else list(reversed(trees))
            for variant in variants:
                for name in order[:1] if variant == "without" else order:
                    run = _run_in(trees[name], bench, variant, residents[name])
                    runs.setdefault((name if variant != "without" else "", variant), []).append(run)
            print(f"round {index + 1} of {rounds} done", file=sys.stderr)
    finally:
        for directory in residents.values():
            stop_residents(directory)
            shutil.rmtree(directory, ignore_errors=True)
    base = runs[("", "without")]
    turn = statistics.median(run["elapsed"] for run in base)
    cpu = statistics.median(run["cpu"] for run in base)
    names = list(trees)
    print(", ".join(f"{name}: {tree.name}" for name, tree in trees.items()))
    print(f"{rounds} rounds; without our hooks {turn:.3f} s per Turn, {cpu:.2f} s CPU a run")
    if "installed" in variants:
        print("(the `install codex` variant's CPU includes the install command itself)")
    print()
    header = " | ".join(f"added per Turn, {n}" for n in names)
    header += " | " + " | ".join(f"CPU added per run, {n}" for n in names)
    print(f"| variant | {header} |")
    print("|---|" + "---:|" * (2 * len(names)))
    for variant in variants[1:]:
        added = [statistics.median(r["elapsed"] for r in runs[(n, variant)]) - turn for n in names]
        spent = [statistics.median(r["cpu"] for r in runs[(n, variant)]) - cpu for n in names]
        cells = [f"{value:.3f} s" for value in added] + [f"{value:.2f} s" for value in spent]
        print(f"| {LABELS[variant]} | " + " | ".join(cells) + " |")
    if hook_times:
        print()
        print(
            "| the host waited for our hook processes, per timed Turn | " + " | ".join(names) + " |"
        )
        print("|---|" + "---:|" * len(names))
        cells = []
        for name in names:
            waits = sorted(r["hooks"] for r in runs[(name, "timed")])
            cells.append(f"{statistics.median(waits):.3f} s ({waits[0]:.3f} to {waits[-1]:.3f})")
        print("| median (least to most) | " + " | ".join(cells) + " |")


def main(argv: list[str]) -> None:
    """Compare two trees (see the module docstring), or with ``--one`` make one run."""
    if argv[:1] == ["--one"]:
        bench, variant, resident_dir = argv[1:4]
        print(json.dumps(one_run(bench, variant, resident_dir)))
        return
    hook_times = "--hook-times" in argv
    argv = [arg for arg in argv if arg != "--hook-times"]
    if len(argv) < 2 or argv[0] not in BENCHES:
        raise SystemExit(__doc__)
    before = Path(argv[1]).resolve()
    after = Path(argv[2]).resolve() if len(argv) > 2 else HERE.parent
    rounds = int(argv[3]) if len(argv) > 3 else 16
    compare(argv[0], {"before": before, "after": after}, rounds, hook_times)


if __name__ == "__main__":
    os.environ.pop("TURN_HOOKS_LOAD_PLUGINS", None)
    main(sys.argv[1:])
