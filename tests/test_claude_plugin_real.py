"""Issue 40: turn-hooks as a Claude Code plugin, installed the host's way.

The real Claude Code 2.1.332 (and 2.1.285, where a test takes ``any_claude``) adds
this repository as a marketplace and installs the plugin from it (``claude plugin
marketplace add`` / ``claude plugin install``), in a home of its own and offline;
then two real Turns against a fake Messages API on loopback: the first learns, the
second recalls. The plugin's hooks carry no binding:
the repository ``turn-hooks init`` bound names it, and its validator.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import test_claude_real
from fixtures import f1
from test_claude_real import PREFIX, assert_recalled_next_turn
from test_validator_deadline import OUR_BIN, turn_hooks
from turn_support import journals_after_settlement

from conformance.drivers import run_host
from conformance.fakes import FakeMessages

ROOT = Path(__file__).parent.parent
MARKETPLACE = "turn-hooks"
TOOL = "mcp__plugin_turn-hooks_turn_hooks__record_reflection"
RULE = "mcp__plugin_turn-hooks_turn_hooks"


claude = test_claude_real.claude  # the fixture: the real binary, or a failed run
any_claude = test_claude_real.any_claude  # each end of the Claude Code matrix


def host_env(tmp_path: Path, *, path: str | None = None) -> dict[str, str]:
    """A Claude Code of its own: home, config directory, our venv's bin on PATH."""
    return {
        **os.environ,
        "PATH": path if path is not None else f"{OUR_BIN}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"),
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def claude_plugin(claude: Path, env: dict[str, str], *argv: str) -> str:
    done = subprocess.run(
        [str(claude), "plugin", *argv], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def install_plugin(claude: Path, env: dict[str, str]) -> None:
    claude_plugin(claude, env, "marketplace", "add", str(ROOT))
    claude_plugin(claude, env, "install", f"turn-hooks@{MARKETPLACE}")


def bound_repository(tmp_path: Path, *init: str) -> Path:
    repo = tmp_path / "shop-api"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code, done = turn_hooks(repo, "init", *init)
    assert code == 0, done
    return repo


def test_the_repository_marketplace_and_plugin_validate(any_claude, tmp_path):
    claude = any_claude
    env = host_env(tmp_path)
    for target in (ROOT, ROOT / "hosts" / "plugin"):
        done = subprocess.run(
            [str(claude), "plugin", "validate", "--json", str(target)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["success"] is True


def reflected_block() -> str:
    block = json.dumps(f1.REFLECTION)
    return f"Fixed.\n<reward_memory_reflection_json>{block}</reward_memory_reflection_json>"


def claude_argv(claude: Path) -> list[str]:
    return [str(claude), "-p", "--model", "fake-model", "--output-format", "json"]


def test_a_plugin_install_learns_then_recalls(any_claude, tmp_path):
    """The plugin alone: installed with `claude plugin`, no `turn-hooks install`, at
    each end of the matrix. The plugin cannot grant its own tool in `claude -p`, so
    the reflection comes in the answer's block, which settlement takes; Turn 2
    recalls it once."""
    claude = any_claude
    repo = bound_repository(tmp_path, "--validate-with", "true")
    env = host_env(tmp_path)
    install_plugin(claude, env)
    settings = json.loads((tmp_path / "cfg" / "settings.json").read_text())
    assert settings["enabledPlugins"] == {f"turn-hooks@{MARKETPLACE}": True}
    assert "hooks" not in settings, "the plugin route writes no hooks of ours"
    work = repo / "src"  # the hooks name the Goal whose repository holds the directory
    work.mkdir()
    with FakeMessages() as fake:
        env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{fake.port}"
        fake.reply(reflected_block())
        first = run_host([*claude_argv(claude), "fix the flaky parser test"], cwd=work, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        assert json.dumps(fake.requests[0]).count(PREFIX) == 1, "one recall hook ran"
        assert TOOL in {t["name"] for t in fake.requests[0]["tools"]}, "the plugin's server"
        [journal] = journals_after_settlement(repo)
        assert journal["public_receipt"]["status"] == "activated"
        assert_recalled_next_turn(fake, claude_argv(claude), work, env)


def test_install_where_the_plugin_is_enabled_adds_only_the_tool_rule(claude, tmp_path):
    """`turn-hooks install claude-code` with the plugin enabled installs nothing twice:
    it records the validator in the repository and allows the plugin's tool, so the
    reflection travels through the tool, out of the answer; doctor names the route."""
    repo = bound_repository(tmp_path)
    env = host_env(tmp_path)
    install_plugin(claude, env)
    config = tmp_path / "cfg"
    code, report = turn_hooks(
        repo, "install", "claude-code", "--home", str(config), "--validate-with", "true"
    )
    assert code == 0, report
    assert report["route"] == "plugin" and report["validator_recorded"] is True
    settings = json.loads((config / "settings.json").read_text())
    assert "hooks" not in settings and settings["permissions"]["allow"] == [RULE]
    assert not (config / ".claude.json").exists() or "turn_hooks" not in json.dumps(
        json.loads((config / ".claude.json").read_text()).get("mcpServers", {})
    )
    code, again = turn_hooks(
        repo, "install", "claude-code", "--home", str(config), "--validate-with", "true"
    )
    assert (code, again["changed"]) == (0, False), "installing twice changes nothing"
    code, doctor = turn_hooks(repo, "doctor", "claude-code", "--home", str(config))
    assert code == 0, doctor
    rows = {row["check"]: row for row in doctor["checks"]}
    assert rows["route"]["message"].startswith("the turn-hooks plugin serves")
    assert rows["tool_channel"]["reason_code"] is None
    with FakeMessages() as fake:
        env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{fake.port}"
        fake.reply({"tool": TOOL, "arguments": f1.REFLECTION}, "The flaky test is fixed.")
        first = run_host([*claude_argv(claude), "fix the flaky parser test"], cwd=repo, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        assert json.loads(first.stdout)["result"] == "The flaky test is fixed."
        [journal] = journals_after_settlement(repo)
        assert journal["public_receipt"]["status"] == "activated"
        assert_recalled_next_turn(fake, claude_argv(claude), repo, env)


def test_the_plugin_stands_aside_where_install_wired_the_same_repository(claude, tmp_path):
    """Hooks `install` wrote before the plugin came serve their Goal; the plugin's
    stand aside: one recall per Turn, one settlement, and doctor says both are there."""
    repo = bound_repository(tmp_path)
    config = tmp_path / "cfg"
    code, report = turn_hooks(
        repo, "install", "claude-code", "--home", str(config), "--validate-with", "true"
    )
    assert code == 0 and "route" not in report, report
    env = host_env(tmp_path)
    install_plugin(claude, env)
    with FakeMessages() as fake:
        env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{fake.port}"
        fake.reply(
            {"tool": "mcp__turn_hooks__record_reflection", "arguments": f1.REFLECTION},
            "The flaky test is fixed.",
        )
        first = run_host([*claude_argv(claude), "fix the flaky parser test"], cwd=repo, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        assert json.dumps(fake.requests[0]).count(PREFIX) == 1, "one recall hook ran"
        journals = journals_after_settlement(repo)
        assert [j["public_receipt"]["status"] for j in journals] == ["activated"]
        assert_recalled_next_turn(fake, claude_argv(claude), repo, env)
    assert len(list((repo / ".local" / "turn-hooks" / "settlements").glob("*.json"))) <= 1
    code, doctor = turn_hooks(repo, "doctor", "claude-code", "--home", str(config))
    route = next(row for row in doctor["checks"] if row["check"] == "route")
    assert route["reason_code"] == "routes_both" and route["warning"] is True


def test_without_the_turn_hooks_command_the_plugin_adds_nothing_and_blocks_nothing(
    claude, tmp_path
):
    """A user who installed the plugin but not the command: the Turn runs as if there
    were no plugin (exit 0 everywhere), and doctor says what to do."""
    repo = bound_repository(tmp_path, "--validate-with", "true")
    env = host_env(tmp_path)
    install_plugin(claude, env)
    env["PATH"] = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "turn-hooks").exists()
    )
    with FakeMessages() as fake:
        env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{fake.port}"
        fake.reply(reflected_block())
        first = run_host([*claude_argv(claude), "fix the flaky parser test"], cwd=repo, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        assert PREFIX not in json.dumps(fake.requests[0])
    assert journals_after_settlement(repo, timeout=2) == []
    doctor = subprocess.run(
        [str(OUR_BIN / "turn-hooks"), "doctor", "claude-code", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=repo,
        env=env,
    )
    rows = {row["check"]: row for row in json.loads(doctor.stdout)["checks"]}
    assert rows["plugin_command"]["reason_code"] == "plugin_command_missing"
    assert "pipx install turn-hooks" in rows["plugin_command"]["message"]
