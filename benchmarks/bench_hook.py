"""The per-Turn hook as a host runs it: a new process per event, 10k records in the store.

Each sample starts a process, feeds the event JSON on stdin and waits for the output,
exactly as Codex or Claude Code run a hook command. Bare `python -c pass` runs are
interleaved with the hook runs so both see the same machine noise; the result is the
ratio of medians.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import seed
from fixtures import f1

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider

ROOT = Path(__file__).resolve().parent.parent
VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]


def timed(argv: list[str], stdin: str = "") -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True)
    return time.perf_counter() - started


def main(samples: int = 25, records: int = 10_000) -> None:
    script = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
    assert script, "install the package first (make setup)"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        registry = f1.write_goal(root, f1.config("embedded_sqlite"))
        store = EmbeddedSqliteProvider(root / "repo" / ".local" / "turn-hooks" / "memory.sqlite3")
        seed(store, records)
        binding = ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
        message = (
            "done\n<reward_memory_reflection_json>"
            + json.dumps(f1.REFLECTION)
            + "</reward_memory_reflection_json>"
        )
        cases = {
            "pre-turn": lambda i: (
                [script, "host", "generic", "pre-turn", *binding],
                json.dumps({"turn_id": f"t{i}", "prompt": "module tests"}),
            ),
            "post-settlement (no reflection)": lambda i: (
                [script, "host", "generic", "post-settlement", *binding],
                json.dumps({"turn_id": f"n{i}", "last_assistant_message": "done"}),
            ),
            "Codex CLI Stop, validated reflection (settles detached)": lambda i: (
                [
                    script,
                    "host",
                    "codex-cli",
                    "post-settlement",
                    *binding,
                    "--validation-command-json",
                    json.dumps(VALIDATOR),
                ],
                json.dumps({"turn_id": f"c{i}", "last_assistant_message": message}),
            ),
            "post-settlement (validated ingest)": lambda i: (
                [
                    script,
                    "host",
                    "generic",
                    "post-settlement",
                    *binding,
                    "--validation-command-json",
                    json.dumps(VALIDATOR),
                ],
                json.dumps({"turn_id": f"v{i}", "last_assistant_message": message}),
            ),
        }
        bare: list[float] = []
        results: dict[str, list[float]] = {name: [] for name in cases}
        for i in range(samples):
            for name, make in cases.items():
                bare.append(timed([sys.executable, "-c", "pass"]))
                argv, stdin = make(i)
                results[name].append(timed(argv, stdin))
        base = statistics.median(bare)
        print(f"bare `python -c pass`: median {base * 1000:.1f} ms ({len(bare)} runs)\n")
        print("| hook process | median ms | ratio to bare interpreter |")
        print("|---|---:|---:|")
        for name, values in results.items():
            median = statistics.median(values)
            print(f"| {name} | {median * 1000:.1f} | {median / base:.1f}x |")


if __name__ == "__main__":
    os.environ.pop("TURN_HOOKS_LOAD_PLUGINS", None)
    main(*(int(arg) for arg in sys.argv[1:]))
