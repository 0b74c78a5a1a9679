"""What the host benchmarks share: the three variants, alternated in one loop.

``bench_codex.py`` and ``bench_claude.py`` each time one two-Turn run (learn, then
recall) of their host; :func:`alternate` runs it without our hooks, with them cold
and with them warm (a resident server in a private directory, stopped at the end),
round after round, and prints the median time per Turn and what the hooks add.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

VARIANTS = {
    "without": "without our hooks",
    "cold": "with our hooks, `python -m hosts.cli` (cold)",
    "warm": "with our hooks as installed, `python -S -c <loader>` (warm, resident server)",
}

TwoTurns = Callable[[Path, str, dict[str, str]], float]
"""``two_turns(scratch, variant, env)``: seconds per Turn of one learn-then-recall run."""

HOOK_TIMES = "hook-times.log"
"""Where a ``timed`` run's hooks log their wall time, in the run's scratch directory."""
TIMED_MARK = "timed"
"""The line a ``timed`` run writes to its log before its timed Turns."""


def timed(document: dict, log: Path) -> dict:
    """A hooks document (``{"hooks": {event: [{"hooks": [handler, ...]}]}}``, as Codex
    and Claude Code read it) whose every command logs its own wall time to ``log``.

    ``date +%s%N`` runs before and after the command in the host's own shell (Claude
    Code runs hooks with ``sh``, Codex with ``bash``), so each line is how long the
    host waited for that hook, plus part of the two ``date`` processes' own start and
    exit (``true`` timed the same way took 1.2-1.7 ms). The command's exit status is
    kept.
    """
    wrapped = json.loads(json.dumps(document))
    for event, groups in wrapped["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = (
                    f"s=$(date +%s%N); {handler['command']}; r=$?; "
                    f'echo "{event} $s $(date +%s%N)" >> {shlex.quote(str(log))}; exit $r'
                )
    return wrapped


def mark_timed(log: Path) -> None:
    """Mark the start of a ``timed`` run's timed Turns in its log."""
    with log.open("a") as handle:
        handle.write(TIMED_MARK + "\n")


def hook_seconds(log: Path) -> float:
    """The seconds all hooks logged after the mark took, together."""
    lines = log.read_text().splitlines()
    timed_lines = lines[lines.index(TIMED_MARK) + 1 :]
    total_ns = 0
    for line in timed_lines:
        _event, start, end = line.split()
        total_ns += int(end) - int(start)
    return total_ns / 1e9


def stop_residents(directory: str | Path) -> None:
    """Stop every resident server a bench started in ``directory`` (its pid files name them)."""
    for pid_file in Path(directory).glob("th-*.pid"):
        try:
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        except (OSError, ValueError):  # gone already, or a pid file half written
            pass


def alternate(two_turns: TwoTurns, rounds: int, variants: dict[str, str] = VARIANTS) -> None:
    """Run every variant once a round, ``rounds`` times, then print the report."""
    times: dict[str, list[float]] = {variant: [] for variant in variants}
    with tempfile.TemporaryDirectory(prefix="thb-", dir="/tmp") as run_dir:
        warm = {
            "TURN_HOOKS_RESIDENT": "1",
            "TURN_HOOKS_RESIDENT_DIR": run_dir,
            "TURN_HOOKS_RESIDENT_IDLE_SECONDS": "600",
        }
        cold = {"TURN_HOOKS_RESIDENT": "0"}
        envs = {variant: cold if variant in ("without", "cold") else warm for variant in variants}
        try:
            for index in range(rounds):
                for variant in variants:
                    with tempfile.TemporaryDirectory() as scratch:
                        times[variant].append(two_turns(Path(scratch), variant, envs[variant]))
                print(
                    f"round {index + 1}: "
                    + ", ".join(f"{v} {times[v][-1]:.2f} s" for v in variants),
                    file=sys.stderr,
                )
        finally:
            stop_residents(run_dir)  # the one the warm variant started
    base = statistics.median(times["without"])
    report: dict[str, object] = {"rounds": rounds}
    for variant, label in variants.items():
        median = statistics.median(times[variant])
        report[label] = {
            "median_turn_s": round(median, 3),
            "added_per_turn_s": round(median - base, 3),
        }
    print(json.dumps(report, indent=1))
