"""The differential fuzzer: generated inputs through both CLIs, compared whole.

``make oracle`` runs a bounded budget per family: at most ``TURN_HOOKS_DIFF_EXAMPLES``
draws (default 40) and ``TURN_HOOKS_DIFF_SECONDS`` (default 45) per phase, so the
whole job stays within a few minutes. Each divergence
class (the first JSON path that differs after the named excuses, or the exit code)
is then looked for again on its own, so Hypothesis shrinks every class separately;
the smallest input seen per class is written, with both answers, to
``$TURN_HOOKS_DIFF_OUT`` (default: a temp directory printed in the report), beside
``summary-<family>.json`` (each class's count) and ``stats-<family>.json`` (draws run,
draws that matched, and how often each excuse rule was needed). A case
worth keeping is copied into ``regressions/`` once fixed or excused, where the default
test run replays it against the recorded upstream answer without the oracle.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from oracle.differential import Tool, divergences, materialise, start_ours
from oracle.driver import ORACLE_PYTHON, oracle_env
from oracle.strategies import FAMILIES

pytestmark = pytest.mark.oracle

BUDGET = int(os.environ.get("TURN_HOOKS_DIFF_EXAMPLES", "40"))
# Wall-clock bound per family and phase: draws after it are skipped, so a slow
# machine runs fewer draws rather than a longer job.
SECONDS = float(os.environ.get("TURN_HOOKS_DIFF_SECONDS", "45"))
OUT = Path(os.environ.get("TURN_HOOKS_DIFF_OUT") or tempfile.mkdtemp(prefix="diff-found-"))


class Divergence(AssertionError):
    """One divergence class found again while shrinking."""


class OracleTool(Tool):
    """LoopX's CLI: global options before the sub-command, JSON asked for."""

    def run(self, argv: list[str], cwd: Path) -> dict[str, Any]:
        """Move ``--registry PATH`` in front of the sub-command, as LoopX parses it."""
        if "--registry" in argv:
            at = argv.index("--registry")
            argv = [*argv[at : at + 2], *argv[:at], *argv[at + 2 :]]
        return super().run(argv, cwd)


@pytest.fixture(scope="module")
def tools():
    ours = start_ours()
    theirs = OracleTool(
        ORACLE_PYTHON,
        "upstream_shims:main",  # upstream's CLI, and its review function for candidate-review
        oracle_env(),
        ["--format", "json"],
        memoised=("loopx.cli:build_parser",),
    )
    yield ours, theirs
    ours.close()
    theirs.close()


def answer_both(case: dict[str, Any], tools) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both tools' answers to ``case``, each on its own copy of the files."""
    answers = []
    for tool in tools:
        root = Path(tempfile.mkdtemp(prefix="diff-case-"))
        answers.append(tool.run(materialise(case, root), root))
    return answers[0], answers[1]


def _keep(name: str, case: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    size = len(json.dumps(case))
    target = OUT / f"{abs(hash(name)) % 10**10}.json"
    if target.exists() and json.loads(target.read_text())["size"] <= size:
        return
    record = {"class": name, "size": size, "case": case, "ours": ours, "upstream": theirs}
    target.write_text(json.dumps(record, indent=1, ensure_ascii=False))


SETTINGS = settings(
    deadline=None,
    database=None,
    derandomize=True,  # a fixed seed: the same budget finds the same cases
    suppress_health_check=list(HealthCheck),
)


def _shrinker(family: str, target: str, tools):
    """A search that fails only on ``target``, so Hypothesis shrinks that class."""
    until = time.monotonic() + SECONDS

    @settings(SETTINGS, max_examples=BUDGET)
    @given(FAMILIES[family])
    def shrink(case):
        if time.monotonic() > until:
            return
        ours, theirs = answer_both(case, tools)
        classes, _used = divergences(family, ours, theirs, case)
        if target in classes:
            _keep(target, case, ours, theirs)
            raise Divergence(target)

    return shrink


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_both_tools_agree(family, tools):
    """Explore the budget, then shrink each divergence class on its own."""
    seen: dict[str, int] = {}
    # Draws answered, those that matched, and how often each excuse rule was needed:
    # the match figures an issue reports.
    stats: dict[str, Any] = {"draws": 0, "matched": 0, "excuses": {}}
    until = time.monotonic() + SECONDS

    @settings(SETTINGS, max_examples=BUDGET, phases=[Phase.generate])
    @given(FAMILIES[family])
    def explore(case):
        if time.monotonic() > until:
            return
        ours, theirs = answer_both(case, tools)
        classes, used = divergences(family, ours, theirs, case)
        stats["draws"] += 1
        stats["matched"] += not classes
        for name in used:
            stats["excuses"][name] = stats["excuses"].get(name, 0) + 1
        for name in classes:
            seen[name] = seen.get(name, 0) + 1
            _keep(name, case, ours, theirs)

    explore()
    for target in sorted(seen):
        with contextlib.suppress(Divergence):
            _shrinker(family, target, tools)()
    (OUT / f"summary-{family}.json").write_text(json.dumps(seen, indent=1, sort_keys=True))
    (OUT / f"stats-{family}.json").write_text(json.dumps(stats, indent=1, sort_keys=True))
    assert not seen, f"{len(seen)} divergence classes, smallest cases in {OUT}: {sorted(seen)}"
