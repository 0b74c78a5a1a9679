"""Issue 40: turn-hooks as a Codex plugin, from the same marketplace as Claude Code's.

The real Codex 0.147 reads the repository's ``.claude-plugin/marketplace.json`` and,
from the listed plugin directory, its own manifest (``.codex-plugin/plugin.json``,
``codex-hooks.json``). Its plugin hooks start untrusted, as every hook in Codex: the
test trusts them as ``/hooks`` does (app-server ``hooks/list``, then the stored hash),
and then two real ``codex exec`` Turns against a fake Responses API learn and recall.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from test_claude_plugin_real import bound_repository
from test_codex_real import CODEX, REFLECTED, developer_texts
from test_install_hosts import codex_home
from test_validator_deadline import OUR_BIN, turn_hooks
from turn_support import journals_after_settlement

from conformance.drivers import run_host
from conformance.fakes import FakeResponses
from hosts.facts.codex_rpc import AppServer

ROOT = Path(__file__).parent.parent


def app_server(env: dict[str, str], method: str, params: dict) -> dict:
    """One request to the real Codex app-server, after its handshake."""
    server = AppServer(str(CODEX), env)
    try:
        server.request("initialize", {"clientInfo": {"name": "test", "version": "0"}})
        server.notify("initialized")
        return server.request(method, params)
    finally:
        server.close()


def plugin_hooks(env: dict[str, str], cwd: Path) -> list[dict]:
    listed = app_server(env, "hooks/list", {"cwds": [str(cwd)]})
    hooks = [hook for entry in listed.get("data", []) for hook in entry.get("hooks", [])]
    return [hook for hook in hooks if hook.get("source") == "plugin"]


def trust(env: dict[str, str], hooks: list[dict]) -> None:
    """What a person's ``/hooks`` approval stores: each hook's current hash."""
    value = {hook["key"]: {"trusted_hash": hook["currentHash"]} for hook in hooks}
    edit = {"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": value}
    app_server(env, "config/batchWrite", {"edits": [edit]})


def codex_with_plugin(tmp_path: Path, fake: FakeResponses, first: Any = None) -> dict[str, str]:
    """A Codex home on the fake server, our venv's bin on PATH, and the plugin added
    from this repository's marketplace with `codex plugin` (after ``first(env)``): its
    environment."""
    home = codex_home(tmp_path, fake)
    env = {
        **os.environ,
        "PATH": f"{OUR_BIN}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "CODEX_HOME": str(home),
        "FAKE_API_KEY": "dummy",
    }
    if first is not None:
        first(env)
    for argv in (["marketplace", "add", str(ROOT)], ["add", "turn-hooks@turn-hooks"]):
        done = subprocess.run(
            [str(CODEX), "plugin", *argv], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return env


def test_a_codex_plugin_install_learns_then_recalls(tmp_path):
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    repo = bound_repository(tmp_path, "--validate-with", "true")
    with FakeResponses() as fake:
        env = codex_with_plugin(tmp_path, fake)
        hooks = plugin_hooks(env, repo)
        # Codex's own manifest wins: its hooks, never Claude Code's hooks/hooks.json.
        assert sorted(hook["key"].split(":")[1:3] for hook in hooks) == [
            ["codex-hooks.json", "stop"],
            ["codex-hooks.json", "user_prompt_submit"],
        ]
        assert {hook["trustStatus"] for hook in hooks} == {"untrusted"}
        assert all("host codex-cli" in hook["command"] for hook in hooks)
        trust(env, hooks)
        assert {hook["trustStatus"] for hook in plugin_hooks(env, repo)} == {"trusted"}

        codex = [str(CODEX), "exec", "--skip-git-repo-check"]
        fake.reply(REFLECTED)
        first = run_host([*codex, "fix the flaky parser test"], cwd=repo, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        [journal] = journals_after_settlement(repo)
        assert journal["public_receipt"]["status"] == "activated"
        fake.reply("Module tests first.")
        prompt = "a change touches one module: which tests first?"
        second = run_host([*codex, prompt], cwd=repo, env=env)
        assert second.returncode == 0, second.stderr[-2000:]
        texts = developer_texts(fake.requests[-1])
        assert sum(text.count("[memory 1]") for text in texts) == 1, "one recall, once"
    assert journal["public_receipt"]["exact_readback_verified"] is True


def install_codex(repo: Path, env: dict[str, str]) -> dict:
    install = ["install", "codex", "--codex-home", env["CODEX_HOME"], "--codex-bin", str(CODEX)]
    code, report = turn_hooks(repo, *install, "--validate-with", "true")
    assert code == 0, report
    return report


def test_the_codex_plugin_stands_aside_where_install_codex_wired_the_goal(tmp_path):
    """`install codex`, then the plugin added, in one home, both trusted: one recall
    per Turn and one settlement, from the installed hooks."""
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    repo = bound_repository(tmp_path)
    with FakeResponses() as fake:
        env = codex_with_plugin(tmp_path, fake, first=lambda env: install_codex(repo, env))
        trust(env, plugin_hooks(env, repo))
        codex = [str(CODEX), "exec", "--skip-git-repo-check"]
        fake.reply(REFLECTED)
        first = run_host([*codex, "fix the flaky parser test"], cwd=repo, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        asked = [t for t in developer_texts(fake.requests[0]) if "reward_memory_reflection" in t]
        assert len(asked) == 1, "one recall hook added its context"
        assert [j["public_receipt"]["status"] for j in journals_after_settlement(repo)] == [
            "activated"
        ]


def test_install_codex_where_the_plugin_is_enabled_installs_nothing_twice(tmp_path):
    """`install codex` after `codex plugin add`: the plugin route, as for Claude Code.
    It records the validator, writes none of our hooks into hooks.json and trusts the
    plugin's hooks instead (no `/hooks` approval needed); the next Turn learns."""
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    repo = bound_repository(tmp_path)
    with FakeResponses() as fake:
        env = codex_with_plugin(tmp_path, fake)
        report = install_codex(repo, env)
        assert (report["route"], report["host"], report["ok"]) == ("plugin", "codex_cli", True)
        assert report["changed"] is True and report["validator_recorded"] is True
        assert report["trust_statuses"] == ["trusted", "trusted"]
        hooks = Path(env["CODEX_HOME"]) / "hooks.json"
        assert not hooks.exists() or "turn-hooks" not in hooks.read_text()
        assert {hook["trustStatus"] for hook in plugin_hooks(env, repo)} == {"trusted"}
        again = install_codex(repo, env)
        assert (again["route"], again["changed"]) == ("plugin", False), "idempotent"
        fake.reply(REFLECTED)
        codex = [str(CODEX), "exec", "--skip-git-repo-check"]
        first = run_host([*codex, "fix the flaky parser test"], cwd=repo, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        [journal] = journals_after_settlement(repo)
        assert journal["public_receipt"]["status"] == "activated"
