"""Issue 40: the Claude Code plugin's files, its flagless hooks and the repository's
validator, without the host binary (``test_claude_plugin_real`` drives the real one).

Real subprocesses throughout: the ``turn-hooks`` console script, and the plugin's
hook commands run through ``sh`` exactly as Claude Code runs them.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from test_claude_plugin_real import bound_repository
from test_install_hosts import TURN_HOOKS, turn_hooks

from hosts.setup import plugin_route
from hosts.setup._hook_line import handler_words
from sidecars import read_validator, record_validator, validator_document
from turn_hooks.errors import InvalidInputError

ROOT = Path(__file__).parent.parent
PLUGIN = ROOT / "hosts" / "plugin"
EVENT = {"session_id": "s1", "prompt_id": "p1", "prompt": "fix the parser test"}


def plugin_hooks() -> dict[str, str]:
    document = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    return {
        event: group["hooks"][0]["command"]
        for event, [group] in document["hooks"].items()
        if len(group["hooks"]) == 1
    }


def run_plugin_hook(
    event: str, cwd: Path, path: str, *, host: str = "claude", **fields: str
) -> subprocess.CompletedProcess:
    """One plugin hook command through ``sh -c``, as Claude Code runs it (naming the
    project in ``$CLAUDE_PROJECT_DIR``), or as Codex does (``host="codex"``: not)."""
    env = {**os.environ, "PATH": path, "CLAUDE_PROJECT_DIR": str(cwd)}
    if host == "codex":
        del env["CLAUDE_PROJECT_DIR"]
    return subprocess.run(
        ["sh", "-c", plugin_hooks()[event]],
        input=json.dumps({**EVENT, "cwd": str(cwd), **fields}),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def our_path() -> str:
    return f"{Path(TURN_HOOKS).parent}:{os.environ['PATH']}"


def without_turn_hooks() -> str:
    return os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "turn-hooks").exists()
    )


def logged() -> list[tuple[str, str]]:
    log = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    entries = json.loads(log.read_text())["entries"] if log.exists() else []
    return [(entry["source"], entry["reason_code"]) for entry in entries]


@pytest.fixture
def repo(tmp_path):
    """A git repository `turn-hooks init` bound (Goal ``shop-api``)."""
    return bound_repository(tmp_path)


# --- the plugin's files ---------------------------------------------------------------


def test_the_marketplace_lists_the_plugin_directory_under_its_own_name():
    marketplace = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    [entry] = marketplace["plugins"]
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert (ROOT / entry["source"]).resolve() == PLUGIN == plugin_route.PLUGIN_DIR
    assert entry["name"] == manifest["name"] == plugin_route.PLUGIN
    # Claude Code caches an installed plugin by version: a release bumps both.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (manifest["version"], manifest["license"]) == (project["version"], project["license"])


def test_the_plugin_hooks_are_ours_and_carry_no_binding():
    hooks = plugin_hooks()
    assert set(hooks) == {"UserPromptSubmit", "Stop"}  # the events install wires
    for event, verb in (("UserPromptSubmit", "pre-turn"), ("Stop", "post-settlement")):
        ours = hooks[event].split("exec ", 1)[1].split(" ||")[0]
        parts, at = handler_words(ours) or ([], 0)
        assert parts[at:] == ["host", "generic", verb, "--dialect", "claude-code"]
    document = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    assert {g["hooks"][0]["timeout"] for gs in document["hooks"].values() for g in gs} == {30}


def test_codex_reads_its_own_manifest_and_hooks_from_the_same_directory():
    manifest = json.loads((PLUGIN / ".codex-plugin" / "plugin.json").read_text())
    claude = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert {k: manifest[k] for k in ("name", "version")} == {
        k: claude[k] for k in ("name", "version")
    }
    assert "mcpServers" not in manifest, "codex exec cancels a server's tools without approval"
    hooks = json.loads((PLUGIN / manifest["hooks"]).read_text())["hooks"]
    for event, verb in (("UserPromptSubmit", "pre-turn"), ("Stop", "post-settlement")):
        [group] = hooks[event]
        command = group["hooks"][0]["command"]
        parts, at = handler_words(command.split("exec ", 1)[1].split(" ||")[0]) or ([], 0)
        assert parts[at:] == ["host", "codex-cli", verb]


def test_the_plugin_server_is_ours_loaded_up_front():
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["turn_hooks"]
    assert (server["command"], server["args"]) == ("turn-hooks", ["mcp", "serve"])
    assert server["alwaysLoad"] is True  # as install writes it: never behind ToolSearch


# --- the hooks without turn-hooks, and outside a bound repository ---------------------


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop"])
def test_without_the_command_a_plugin_hook_exits_0_and_says_nothing(tmp_path, event):
    done = run_plugin_hook(event, tmp_path, without_turn_hooks(), last_assistant_message="x")
    assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop"])
def test_outside_every_bound_repository_a_plugin_hook_does_nothing_quietly(tmp_path, event):
    done = run_plugin_hook(event, tmp_path, our_path(), last_assistant_message="x")
    assert (done.returncode, done.stdout) == (0, "")
    assert logged() == [], "a plugin runs in every directory: no log entry for each"


def test_a_plugin_hook_in_a_bound_repository_recalls(repo):
    done = run_plugin_hook("UserPromptSubmit", repo / ".", our_path())
    assert done.returncode == 0, done.stderr
    # The recall ran for the Goal init bound here, found nothing learned yet, and
    # asked for the reflection in Claude Code's shape.
    assert logged() == [("reward_memory_recall", "provider_returned_no_items")]
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "reward_memory_reflection_json" in context


def test_run_by_another_host_the_plugin_hook_does_nothing_and_says_why(repo):
    # Codex 0.147 installs this repository's Claude Code plugin from its marketplace;
    # should its hooks ever be trusted there, they must not act in Claude's dialect.
    done = run_plugin_hook("UserPromptSubmit", repo, our_path(), host="codex")
    assert (done.returncode, done.stdout) == (0, "")
    assert logged() == [("adapter", "plugin_host_not_claude_code")]


# --- the repository's validator -------------------------------------------------------


def test_a_recorded_validator_reads_back_exactly_with_mode_0600(tmp_path):
    declared = validator_document(validate_with="make test", timeout_seconds=90)
    assert record_validator(tmp_path, declared) is True
    assert record_validator(tmp_path, declared) is False, "the same declaration: no write"
    path = tmp_path / ".local" / "turn-hooks" / "validator.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_validator(tmp_path) == declared
    assert read_validator(tmp_path / "none") is None


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"validate_with": "make test", "recall_only": True}, {"validation_command": []}],
    ids=["none", "two", "empty-argv"],
)
def test_a_declaration_names_exactly_one_validator(kwargs):
    with pytest.raises(InvalidInputError) as caught:
        validator_document(**kwargs)
    assert caught.value.reason_code == "validation_declaration_invalid"


def test_a_hand_edited_declaration_is_refused_by_name(tmp_path):
    record_validator(tmp_path, validator_document(recall_only=True))
    path = tmp_path / ".local" / "turn-hooks" / "validator.json"
    path.write_text(json.dumps({"schema_version": "turn_hooks_repository_validator_v1"}))
    with pytest.raises(InvalidInputError) as caught:
        read_validator(tmp_path)
    assert caught.value.reason_code == "validator_record_invalid"


def test_init_validate_with_records_what_the_plugin_hooks_run(repo):
    code, done = turn_hooks(repo, "init", "--validate-with", "make test")
    assert (code, done["changed"][-1]) == (0, "validator"), done
    assert done["validator_config"] == ".local/turn-hooks/validator.json"
    assert "--validate-with" not in done["next_step"], "install takes the recorded check"
    registry = Path(os.environ["XDG_CONFIG_HOME"]) / "turn-hooks" / "registry.json"
    argv = plugin_route.repository_validation(str(registry), "shop-api")
    assert argv is not None and argv[-3:] == ["--", "make", "test"]
    assert argv[:5] == [sys.executable, "-m", "hosts._entry", "validate", "command"]
    code, again = turn_hooks(repo, "init", "--validate-with", "make test")
    assert (code, again["status"], again["changed"]) == (0, "unchanged", [])
    code, done = turn_hooks(repo, "init", "--recall-only")
    assert (code, done["changed"]) == (0, ["validator"])
    assert plugin_route.repository_validation(str(registry), "shop-api") is None


def test_init_refuses_a_validator_that_is_no_command_and_writes_nothing(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    subprocess.run(["git", "init", "-q", str(fresh)], check=True)
    code, refused = turn_hooks(fresh, "init", "--validate-with", "'unclosed")
    assert (code, refused["reason_code"]) == (2, "validation_declaration_invalid")
    assert not (fresh / ".local").exists()


# --- the two routes -------------------------------------------------------------------


def enable_plugin(settings: Path, enabled: bool = True) -> None:
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"enabledPlugins": {"turn-hooks@turn-hooks": enabled}}))


def test_the_project_can_switch_the_plugin_off_for_itself(tmp_path):
    home, project = tmp_path / "cfg", tmp_path / "project"
    assert plugin_route.plugin_enabled(home, project) is False
    enable_plugin(home / "settings.json")
    assert plugin_route.plugin_enabled(home, project) is True
    enable_plugin(project / ".claude" / "settings.local.json", enabled=False)
    assert plugin_route.plugin_enabled(home, project) is False


def test_install_where_the_plugin_is_enabled_writes_no_hooks(repo, tmp_path):
    home = tmp_path / "cfg"
    enable_plugin(home / "settings.json")
    argv = ["install", "claude-code", "--home", str(home), "--skip-validator-run"]
    code, report = turn_hooks(repo, *argv, "--validate-with", "make test")
    assert code == 0, report
    assert (report["route"], report["validator_recorded"]) == ("plugin", True)
    settings = json.loads((home / "settings.json").read_text())
    assert settings == {
        "enabledPlugins": {"turn-hooks@turn-hooks": True},
        "permissions": {"allow": [plugin_route.RULE]},
    }
    assert not (home / ".claude.json").exists(), "no server of ours beside the plugin's"
    assert read_validator(repo)["validate_with"] == "make test"


def test_install_without_the_plugin_records_the_validator_too(repo, tmp_path):
    home = tmp_path / "cfg"
    argv = ["install", "claude-code", "--home", str(home), "--skip-validator-run"]
    code, report = turn_hooks(repo, *argv, "--validate-with", "make test")
    assert code == 0 and "route" not in report, report
    stop = json.loads((home / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert "--goal-id shop-api" in stop["command"]
    assert read_validator(repo)["validate_with"] == "make test", "ready for the plugin"
    assert plugin_route.installed_goals(home) == {"shop-api"}
    assert plugin_route.route(home, repo, "shop-api") == "install"
    settings = json.loads((home / "settings.json").read_text())
    settings["enabledPlugins"] = {"turn-hooks@turn-hooks": True}
    (home / "settings.json").write_text(json.dumps(settings))
    assert plugin_route.route(home, repo, "shop-api") == "both"
    assert plugin_route.route(home, repo, "another") == "plugin"


def test_the_plugin_hook_stands_aside_where_install_wired_its_goal(repo, tmp_path, monkeypatch):
    home = tmp_path / "cfg"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    assert plugin_route.serve_here("generic", "claude-code", "shop-api") is True
    argv = ["install", "claude-code", "--home", str(home), "--skip-validator-run"]
    assert turn_hooks(repo, *argv, "--recall-only")[0] == 0
    assert plugin_route.serve_here("generic", "claude-code", "shop-api") is False
    assert plugin_route.serve_here("generic", "claude-code", "another-goal") is True
    assert plugin_route.serve_here("generic", "gemini", "shop-api") is True


def test_doctor_says_what_to_do_where_the_command_is_missing(repo, tmp_path):
    home = tmp_path / "cfg"
    enable_plugin(home / "settings.json")
    env = {**os.environ, "PATH": without_turn_hooks(), "CLAUDE_CONFIG_DIR": str(home)}
    done = subprocess.run(
        [TURN_HOOKS, "doctor", "claude-code", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=repo,
        env=env,
        check=False,
    )
    document = json.loads(done.stdout)
    rows = {row["check"]: row for row in document["checks"]}
    assert (done.returncode, document["reason_code"]) == (2, "plugin_command_missing")
    assert "pipx install turn-hooks" in rows["plugin_command"]["message"]
    assert rows["validator"]["reason_code"] == "validator_not_declared"
    assert rows["route"]["message"].startswith("the turn-hooks plugin serves")


def test_uninstall_takes_the_plugin_rule_away_and_status_names_the_route(repo, tmp_path):
    home = tmp_path / "cfg"
    enable_plugin(home / "settings.json")
    argv = ["install", "claude-code", "--home", str(home), "--skip-validator-run"]
    assert turn_hooks(repo, *argv, "--recall-only")[0] == 0
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(home)}
    done = subprocess.run(
        [TURN_HOOKS, "status", "--format", "json"], capture_output=True, text=True, cwd=repo,
        env=env, check=False,
    )  # fmt: skip
    [claude] = [h for h in json.loads(done.stdout)["hosts"] if h["host"] == "claude_code"]
    assert (claude["route"], claude["installed"]) == ("plugin", True), claude  # by the plugin
    code, removed = turn_hooks(repo, "install", "claude-code", "--uninstall", "--all",
                               "--home", str(home))  # fmt: skip
    assert code == 0 and removed["mcp_removed"]["plugin_permission_rule"] is True, removed
    assert json.loads((home / "settings.json").read_text()) == {
        "enabledPlugins": {"turn-hooks@turn-hooks": True}
    }


def test_a_validator_record_the_store_refuses_is_a_typed_error_and_one_that_does_not_read_back_too(
    tmp_path, monkeypatch
):
    """The repository's validator declaration is written and read back exactly, or
    refused with validator_record_failed (nothing a hook reads is half-written)."""
    from sidecars import record_validator, validator_document
    from sidecars.store import SidecarStore
    from turn_hooks import InvalidInputError

    repo = tmp_path / "repo"
    (repo / ".local").mkdir(parents=True)
    (repo / ".local" / "turn-hooks").symlink_to(tmp_path)
    declared = validator_document(validate_with="make test")
    with pytest.raises(InvalidInputError) as raised:
        record_validator(repo, declared)
    assert raised.value.reason_code == "validator_record_failed"

    (repo / ".local" / "turn-hooks").unlink()
    real_read = SidecarStore.read
    calls = []

    def read_changed(self, path):  # the second read is the readback
        calls.append(path)
        document = real_read(self, path)
        return {**document, "changed": True} if len(calls) > 1 and document else document

    monkeypatch.setattr(SidecarStore, "read", read_changed)
    with pytest.raises(InvalidInputError) as raised:
        record_validator(repo, declared)
    assert raised.value.reason_code == "validator_record_failed"
