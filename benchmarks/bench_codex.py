"""Added wall time per Turn of our hooks inside the real Codex CLI (offline).

The same two-Turn run (learn, then recall) with and without our hooks installed,
alternated in one loop against a fake Responses server on loopback. Needs the
cached codex binary (`make codex`).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from test_codex_real import REFLECTED, CodexRun  # noqa: E402

from conformance.fakes import FakeResponses  # noqa: E402


def two_turns(root: Path, hooks: bool) -> float:
    with FakeResponses() as fake:
        run = CodexRun(root, fake, None if hooks else {"hooks": {}})
        fake.reply(REFLECTED, "Module tests first.")
        started = time.perf_counter()
        for prompt in ("fix the flaky parser test", "a change touches one module"):
            result = run.exec(prompt)
            assert result.returncode == 0, result.stderr[-500:]
        return (time.perf_counter() - started) / 2


def main(rounds: int = 5) -> None:
    with_hooks, without = [], []
    for index in range(rounds):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            without.append(two_turns(Path(a), hooks=False))
            with_hooks.append(two_turns(Path(b), hooks=True))
        print(
            f"round {index + 1}: without {without[-1]:.2f} s, with {with_hooks[-1]:.2f} s",
            file=sys.stderr,
        )
    base, ours = statistics.median(without), statistics.median(with_hooks)
    print(
        json.dumps(
            {
                "rounds": rounds,
                "median_turn_without_hooks_s": round(base, 3),
                "median_turn_with_hooks_s": round(ours, 3),
                "added_per_turn_s": round(ours - base, 3),
            }
        )
    )


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:]))
