"""Learning yield (issue 36): how many good-faith reflections are learned, how many
must-refuse ones are refused, through the real Stop hook.

Every case of ``learning_yield_corpus.py`` is one Turn: a fresh bound Goal on the
embedded store (its repository a git directory, so the validator keeps its private
record), then ``turn-hooks host generic post-settlement`` as a host runs it (a new
process, the event on stdin) with the final reply, and the built-in validator
``turn-hooks validate command -- true`` (``-- false`` for the failing-validator case).
A case is *learned* when the ingest receipt is ``activated`` with an exact readback.

    python benchmarks/bench_learning_yield.py [--tree PATH] [--json]

``--tree`` runs another checkout's code (its root first on ``PYTHONPATH``), to compare
with the tree before the reader. Not timed: the yield is the result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))

from fixtures import f1  # noqa: E402
from learning_yield_corpus import cases  # noqa: E402

INGEST = "reward-memory.outcome-ingest"


def validator(outcome: str) -> list[str]:
    """The built-in validator, its check passing (``true``) or failing (``false``)."""
    check = "true" if outcome == "pass" else "false"
    return [sys.executable, "-m", "hosts.cli", "validate", "command", "--", check]


def run_case(case: dict[str, str], root: Path, tree: Path = ROOT) -> dict[str, Any]:
    """One Turn through the real Stop hook; what it learned and what the log says."""
    registry = f1.write_goal(root, f1.config("embedded_sqlite"))
    repo = registry.parent / "repo"
    (repo / ".git").mkdir(exist_ok=True)
    state = root / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
        "TURN_HOOKS_STATE_DIR": str(state),
        "TURN_HOOKS_SETTLE": "inline",
    }
    event = {"turn_id": "t1", "last_assistant_message": case["reply"], "cwd": str(repo)}
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", "post-settlement"]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    argv += ["--validation-command-json", json.dumps(validator(case["validator"]))]
    result = subprocess.run(
        argv, input=json.dumps(event), capture_output=True, text=True, env=env, cwd=tree
    )
    receipt = json.loads(result.stdout or "{}")
    ingest = (receipt.get("results") or {}).get(INGEST) or {}
    log = state / "hook-log.json"
    entries = json.loads(log.read_text())["entries"] if log.exists() else []
    learned = ingest.get("status") == "activated" and ingest.get("exact_readback_verified")
    return {
        "name": case["name"],
        "expect": case["expect"],
        "outcome": "learned" if learned else "refused",
        "exit_code": result.returncode,
        "status": ingest.get("status"),
        "reason_code": ingest.get("reason_code"),
        "logged": [
            entry.get("detail") or f"{entry['source']}:{entry['reason_code']}" for entry in entries
        ],
        "repo": str(repo),
    }


def run_all(tree: Path = ROOT) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        return [
            run_case(case, Path(scratch) / f"case-{index:02d}", tree)
            for index, case in enumerate(cases())
        ]


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    variants = [r for r in results if r["expect"] == "learned"]
    refusals = [r for r in results if r["expect"] == "refused"]
    return {
        "cases": len(results),
        "variants": len(variants),
        "variants_learned": sum(r["outcome"] == "learned" for r in variants),
        "must_refuse": len(refusals),
        "must_refuse_refused": sum(r["outcome"] == "refused" for r in refusals),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code runs")
    parser.add_argument("--json", action="store_true", help="print every case as JSON")
    args = parser.parse_args()
    results = run_all(args.tree.resolve())
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
    totals = summary(results)
    print(f"tree: {args.tree}")
    print(
        f"presentation variants learned: {totals['variants_learned']}/{totals['variants']} "
        f"({100 * totals['variants_learned'] / totals['variants']:.0f} %)"
    )
    print(
        f"must-refuse cases refused: {totals['must_refuse_refused']}/{totals['must_refuse']} "
        f"({100 * totals['must_refuse_refused'] / totals['must_refuse']:.0f} %)"
    )
    for result in results:
        if result["outcome"] != result["expect"]:
            print(
                f"  MISS {result['expect']:8} {result['name']}: {result['status']} "
                f"{result['reason_code']} {result['logged']}"
            )
    for result in results:
        if result["expect"] == "refused":
            said = next((line for line in result["logged"] if ":" in line and " " in line), None)
            print(f"  refused {result['name']}: {result['reason_code']} | {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
