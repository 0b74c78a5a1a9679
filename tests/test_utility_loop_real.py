"""Issue 39's loop closed in the real Codex CLI and the real Claude Code, offline.

Turn 1 learns a memory; Turn 2 recalls it with an equally relevant twin, the fake
model says it applied the first, and the validator passes; the application receipt
and its observation are readable with ``memory show``; ``memory rate REF harmful``
(with ``--ranking utility``) moves that memory below its twin in Turn 3; an unrelated
memory is never lifted into Turn 3. Proved from the requests the models received.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from fixtures import f1
from test_claude_real import CLAUDE, ask, settings
from test_codex_real import CODEX, REFLECTED, CodexRun
from turn_support import UNRELATED, ingest_memory, resolution, settled_spools

from capabilities.reward_memory.turn.settings import set_ranking
from conformance.fakes import FakeMessages, FakeResponses

ROOT = Path(__file__).parent.parent
PROMPT = "a change touches one module: which tests first?"
MEMORY = re.compile(r"\[memory (\d)\] (candidate:[0-9a-f]+)")


def _cli(registry: Path, *argv: str) -> tuple[int, dict]:
    binding = ["--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *argv, *binding],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return result.returncode, json.loads(result.stdout)


def _order(request: dict) -> list[str]:
    """The candidate refs of the memories a request delivered, in rank order."""
    found = dict(MEMORY.findall(json.dumps(request)))
    return [found[str(n)] for n in range(1, len(found) + 1)]


def _applied(ref_hint: str) -> str:
    answer = {"outcome": "applied", "memory_refs": [ref_hint], "reasoning_summary": "it fit"}
    return (
        "Ran the module tests first.\n<reward_memory_application_json>"
        + json.dumps(answer)
        + "</reward_memory_application_json>"
    )


def _close_the_loop(registry: Path, repo: Path, turn, requests: list) -> None:
    """Turns 2 and 3 after Turn 1 learned F1's memory: ``turn(reply, prompt)`` runs one."""
    ingest_memory(registry, "twin", "evidence:ci-run-18")
    ingest_memory(registry, "unrelated", "evidence:ci-run-19", unrelated=True)
    turn(_applied("[memory 1]"), PROMPT)
    settled_spools(repo)
    first, twin = _order(requests[-1])
    assert UNRELATED not in json.dumps(requests[-1])

    # The application receipt and its observation, through `memory show`.
    code, shown = _cli(registry, "memory", "show", first)
    assert code == 0, shown
    utility = shown["utility"]
    assert utility["application_count"] == 1
    [lineage] = utility["sets"]
    assert (lineage["label"], lineage["evidence_basis"]) == ("unknown", "insufficient")

    code, rated = _cli(
        registry,
        "memory",
        "rate",
        shown["record"]["memory_ref"],
        "harmful",
        "--reason",
        "it sent the fix the wrong way",
    )
    assert (code, rated["exact_readback_verified"]) == (0, True), rated
    assert set_ranking(resolution(registry).sidecars, f1.GOAL, f1.AGENT, "utility")

    turn("Ran the module tests first.", PROMPT)
    assert _order(requests[-1]) == [twin, first], "the harmful one now ranks second"
    assert UNRELATED not in json.dumps(requests[-1]), "an unrelated memory is never lifted"


def test_the_loop_closes_in_real_claude_code(tmp_path):
    assert CLAUDE.exists(), f"claude is not installed at {CLAUDE}: run `make test`"
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    (tmp_path / "settings.json").write_text(json.dumps(settings(registry)))
    with FakeMessages() as fake:

        def turn(reply: str, prompt: str) -> None:
            fake.reply(reply)
            done = ask(CLAUDE, tmp_path, fake, prompt)
            assert done.returncode == 0, done.stderr[-2000:]

        turn(
            "Fixed.\n<reward_memory_reflection_json>"
            + json.dumps(f1.REFLECTION)
            + "</reward_memory_reflection_json>",
            "fix the flaky parser test",
        )
        settled_spools(tmp_path / "repo")
        _close_the_loop(registry, tmp_path / "repo", turn, fake.requests)


def test_the_loop_closes_in_real_codex_cli(tmp_path):
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)

        def turn(reply: str, prompt: str) -> None:
            fake.reply(reply)
            done = run.exec(prompt)
            assert done.returncode == 0, done.stderr[-2000:]

        turn(REFLECTED, "fix the flaky parser test")
        [journal] = run.journals()
        assert journal["public_receipt"]["status"] == "activated"
        _close_the_loop(run.registry, tmp_path / "repo", turn, fake.requests)
