"""The utility reducer: 1,024 observations over 128 subjects (issue 8's target).

In process: p50 of ``project()`` over the stream. As a command: ``turn-hooks
reward-memory utility-project`` against a bare ``python -c pass`` start, alternated,
so the ratio compares runs made side by side.

Run: ``python benchmarks/bench_utility.py`` (from the clone, with the venv).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from utility_cases import obs, projection_input  # noqa: E402

from capabilities.reward_memory.utility.reducer import project  # noqa: E402

LABELS = ("helpful", "harmful", "neutral")


def stream() -> dict:
    """1,024 valid observations: 8 per subject, 128 item subjects, mixed evidence."""
    observations = []
    for index in range(1024):
        subject = index % 128
        basis = ("owner_correction", "controlled_replay", "evaluator_inference")[index % 3]
        observations.append(
            obs(
                memory_ref_digests=[f"{subject:016x}"],
                utility_label=LABELS[(index // 128) % 3],
                evidence_basis=basis,
                confidence=0.1 + (index % 9) / 10,
                evaluator_ref=f"ev:{index}",
                created_at=f"2026-08-{1 + index % 28:02d}T{index % 24:02d}:00:00Z",
            )
        )
    return projection_input(*observations)


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    document = stream()
    assert project(document)["subject_count"] == 128
    in_process = []
    for _ in range(30):
        started = time.perf_counter()
        project(document)
        in_process.append((time.perf_counter() - started) * 1000)
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "input.json"
        source.write_text(json.dumps(document))
        cli = [sys.executable, "-m", "hosts.cli", "reward-memory", "utility-project"]
        cli += ["--input", str(source)]
        bare, command = [], []
        for _ in range(10):
            bare.append(timed([sys.executable, "-c", "pass"]))
            command.append(timed(cli))
    p50 = statistics.median(in_process)
    bare50, cli50 = statistics.median(bare), statistics.median(command)
    budget = 3 * bare50 + p50
    print("| measure | p50 ms |")
    print("|---|---:|")
    print(f"| reduce 1,024 observations / 128 subjects, in process | {p50:.1f} |")
    print(f"| bare interpreter start (`python -c pass`) | {bare50:.1f} |")
    print(f"| `turn-hooks reward-memory utility-project` | {cli50:.1f} |")
    print(f"| target: 3 x bare start + in-process p50 | {budget:.1f} |")
    print(f"| command / bare start | {cli50 / bare50:.2f}x |")


if __name__ == "__main__":
    main()
