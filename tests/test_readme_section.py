"""The README's "Use it in your repository" section, run as written.

Each command of its repository block runs in order in a scratch git repository of
that name: the `turn-hooks` lines through the installed console script, the `codex`
lines through the real Codex CLI against a fake Responses server (the one thing a
test cannot have is a real model). The validator it installs is the README's own,
`make test`, so the repository gets a Makefile whose tests pass. The one thing a
person reads off the screen and types back, the `memory_ref` that `memory list`
printed, stands in the README as a placeholder ref; the test types the real one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from test_codex_real import CODEX, REFLECTED, developer_texts
from turn_support import journals_after_settlement

from conformance.drivers import run_host
from conformance.fakes import FakeResponses

ROOT = Path(__file__).parent.parent
TURN_HOOKS = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))


def sh_blocks() -> list[str]:
    """The section's ``sh`` blocks: the install, its venv alternative, the repository."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Use it in your repository\n(.*?)(?=^## )", readme, re.S | re.M)
    assert section, "README needs its 'Use it in your repository' section"
    blocks = re.findall(r"```sh\n(.*?)```", section.group(1), re.S)
    assert len(blocks) == 3, "one block to install, its venv alternative, one to use it"
    return blocks


def section_commands() -> tuple[list[str], list[list[str]]]:
    """The stable-install block's lines, and the repository block's commands."""
    blocks = sh_blocks()
    commands = []
    for line in blocks[-1].replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(words)
    return blocks[0].strip().splitlines(), commands


def test_the_install_block_installs_the_cli_the_ecosystems_way():
    # pipx (or uv tool) puts only the console script on PATH: the project's python3
    # stays the project's. The venv route stays, as an alternative.
    install, _ = section_commands()
    assert install[0].startswith("pipx install ") and "uv tool install" in install[0]
    venv = sh_blocks()[1].strip().splitlines()
    assert "python3 -m venv" in venv[0] and "pip install" in venv[0]
    assert all(" -e " not in line for line in [*install, *venv]), "never editable"


def test_the_section_runs_as_written(tmp_path):
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    assert TURN_HOOKS
    _, commands = section_commands()
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CODEX_HOME": str(codex_home),
        "FAKE_API_KEY": "dummy",
        "PATH": f"{Path(TURN_HOOKS).parent}:{CODEX.parent}:{os.environ['PATH']}",
    }
    cwd = tmp_path
    replies = [REFLECTED, "Module tests first.", "Run the module's tests."]
    placeholder = re.compile(r"provider-[0-9a-f]{12,}")
    with FakeResponses() as fake:
        (codex_home / "config.toml").write_text(
            'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "http://127.0.0.1:{fake.port}/v1"\n'
            'wire_api = "responses"\nenv_key = "FAKE_API_KEY"\nrequest_max_retries = 0\n'
            "stream_max_retries = 0\n"
        )
        for words in commands:
            if words[0] == "cd":
                cwd = tmp_path / Path(words[1]).name
                cwd.mkdir()
                subprocess.run(["git", "init", "-q", str(cwd)], check=True)
                (cwd / "Makefile").write_text("test:\n\t@echo 3 passed\n")
                continue
            if words[0] == "codex":
                # A person types the next prompt later: what the last Turn's detached
                # settlement was doing has finished by then.
                journals_after_settlement(cwd)
                fake.reply(replies.pop(0))
                result = run_host(
                    [str(CODEX), *words[1:2], "--skip-git-repo-check", *words[2:]], cwd=cwd, env=env
                )
            else:
                assert words[0] == "turn-hooks", words
                if words[1:3] == ["memory", "forget"]:
                    listed = subprocess.run(
                        [TURN_HOOKS, "memory", "list"], cwd=cwd, env=env, capture_output=True
                    )
                    [record] = json.loads(listed.stdout)["records"]
                    words = [
                        record["memory_ref"][:16] if placeholder.fullmatch(w) else w for w in words
                    ]
                result = subprocess.run(
                    [TURN_HOOKS, *words[1:]], cwd=cwd, env=env, capture_output=True, text=True
                )
                if "markdown" in words:
                    assert result.stdout.startswith("## "), (words, result.stdout)
                else:
                    assert json.loads(result.stdout)["ok"] is True, (words, result.stdout)
                if words[1:3] == ["memory", "forget"]:
                    assert json.loads(result.stdout)["retired_count"] == 1, result.stdout
            assert result.returncode == 0, (words, result.stdout, result.stderr[-2000:])
        assert replies == [], "the three Turns ran"
        [journal] = journals_after_settlement(cwd)
        assert journal["public_receipt"]["status"] == "activated"
        first, second, third = fake.requests  # one model request per `codex exec`
        assert not any("[memory 1]" in text for text in developer_texts(first))
        # Turn 2 received the memory; Turn 3, after `memory forget`, did not.
        assert any("[memory 1]" in text for text in developer_texts(second))
        assert not any("[memory 1]" in text for text in developer_texts(third))
