"""The fuzzer of issue 37 (benchmarks/fuzz_entry_points.py), a few hundred inputs deep.

The full run (9,000 inputs and more, as real processes too) is a benchmark recorded in
benchmarks/RESULTS.md. This test keeps the fuzzer honest between runs: its entry points
are every command of the real parser (a new command is fuzzed without a change to the
fuzzer, or this test fails), and a small in-process sample of every entry point ends
without an ``internal_error``, a traceback or a hang.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import fuzz_entry_points as fuzz

PER_ENTRY_POINT = 5


def test_the_entry_points_cover_every_command_the_parser_has():
    points = fuzz.entry_points()
    assert fuzz.covered_commands(points) == set(fuzz.command_parsers())
    names = {point.name for point in points}
    assert "mcp serve (JSON-RPC over stdio)" in names
    assert "cli codex-app refresh-state --reward-memory-reflection-json" in names
    assert {f"api turn_hooks.{name}" for name in fuzz.API_FUNCTIONS} <= names
    hooks = {name for name in names if name.startswith("hook ")}
    assert len(hooks) == 10  # generic in three dialects, codex-cli, dsh: two events each


def test_generation_is_deterministic():
    first, second = fuzz.Generator(7, subprocess_every=0), fuzz.Generator(7, subprocess_every=0)
    for point in fuzz.entry_points():
        a, b = first.case(point, 3), second.case(point, 3)
        assert (a.argv, a.stdin, a.files, a.how) == (b.argv, b.stdin, b.files, b.how)


@pytest.mark.slow
def test_a_sample_of_every_entry_point_ends_typed(tmp_path):
    points = fuzz.entry_points()
    generator = fuzz.Generator(37, subprocess_every=0)
    runner = fuzz.Runner(tmp_path, timeout=60)
    generator.registry_base = runner.registry_document()
    environment, cwd, temporary = dict(os.environ), os.getcwd(), tempfile.tempdir
    try:
        records = [
            runner.run(generator.case(point, index))
            for point in points
            for index in range(PER_ENTRY_POINT)
        ]
    finally:
        runner.close()
        os.environ.clear()
        os.environ.update(environment)
        os.chdir(cwd)
        tempfile.tempdir = temporary
    failures = [
        (r["outcome"], r["case"], r["detail"]) for r in records if r["outcome"] in fuzz.FAILURES
    ]
    assert failures == []
    assert len(records) == PER_ENTRY_POINT * len(points) > 300
    reached = {r["outcome"] for r in records}
    assert {"ok", "refusal", "hook_logged"} <= reached  # bodies ran, refusals were typed
