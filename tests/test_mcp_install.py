"""What ``install codex|claude-code`` wires for the result tools' MCP server, and exactly
what ``--uninstall`` takes away again (hosts/setup/mcp_install.py)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from hosts.setup import mcp_install
from turn_hooks import InvalidInputError

SERVER = mcp_install.server_command(registry="/r.json")
BASE = 'model = "fake-model"\n[model_providers.fake]\nname = "fake"\n'


def test_the_server_command_is_this_interpreter_running_mcp_serve():
    from hosts.setup._hook_line import entry_argv

    assert SERVER == (sys.executable, [*entry_argv()[1:], "mcp", "serve", "--registry", "/r.json"])


def test_codex_gets_one_table_idempotently_and_loses_exactly_it(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(BASE)
    assert mcp_install.codex_config(config, server=SERVER) is True
    table = tomllib.loads(config.read_text())["mcp_servers"]["turn_hooks"]
    assert table == {
        "command": sys.executable,
        "args": SERVER[1],
        "default_tools_approval_mode": "approve",
        "env_vars": list(mcp_install.CODEX_FORWARDED),
    }
    assert tomllib.loads(config.read_text())["model"] == "fake-model"
    assert mcp_install.codex_config(config, server=SERVER) is False
    other = mcp_install.server_command(registry="/r2.json")
    assert mcp_install.codex_config(config, server=other) is True
    assert config.read_text().count("[mcp_servers.turn_hooks]") == 1
    assert mcp_install.codex_config(config, server=None) is True
    assert config.read_text() == BASE
    assert mcp_install.codex_config(config, server=None) is False


def test_the_table_an_earlier_version_wrote_is_replaced_with_the_variables(tmp_path):
    """Earlier installs wrote no ``env_vars``: installing again adds them, once."""
    config = tmp_path / "config.toml"
    command, args = SERVER
    earlier = f"{BASE}\n[mcp_servers.turn_hooks]\ncommand = {json.dumps(command)}\n"
    earlier += f'args = {json.dumps(args)}\ndefault_tools_approval_mode = "approve"\n'
    config.write_text(earlier)
    assert mcp_install.codex_config(config, server=SERVER) is True
    table = tomllib.loads(config.read_text())["mcp_servers"]["turn_hooks"]
    assert table["env_vars"] == list(mcp_install.CODEX_FORWARDED)
    assert "TURN_HOOKS_DISABLE_PLUGINS" in table["env_vars"]
    assert config.read_text().count("[mcp_servers.turn_hooks]") == 1


def test_a_table_after_ours_is_kept_and_a_missing_file_is_made(tmp_path):
    config = tmp_path / "home" / "config.toml"
    assert mcp_install.codex_config(config, server=SERVER) is True
    config.write_text(config.read_text() + '[mcp_servers.docs]\ncommand = "docs"\n')
    assert mcp_install.codex_config(config, server=None) is True
    assert tomllib.loads(config.read_text()) == {"mcp_servers": {"docs": {"command": "docs"}}}
    empty = tmp_path / "empty.toml"
    assert mcp_install.codex_config(empty, server=SERVER) is True
    assert mcp_install.codex_config(empty, server=None) is True
    assert not empty.exists(), "a file that held only our table goes with it"


@pytest.mark.parametrize(
    "text",
    [
        "not = [toml",
        'mcp_servers = { turn_hooks = { command = "x" } }\n',
        '[mcp_servers.turn_hooks.env]\nA = "1"\n',
    ],
)
def test_a_config_we_cannot_edit_exactly_is_refused_untouched(tmp_path, text):
    config = tmp_path / "config.toml"
    config.write_text(text)
    with pytest.raises(InvalidInputError) as raised:
        mcp_install.codex_config(config, server=SERVER)
    assert raised.value.reason_code == "codex_config_invalid"
    assert config.read_text() == text


def test_claude_code_gets_the_server_and_the_rule_and_loses_exactly_them(tmp_path):
    home = tmp_path / "cfg"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3}))
    settings = {"theme": "dark", "permissions": {"deny": ["Bash"]}}
    installed, changed = mcp_install.claude_code(home, settings, server=SERVER)
    assert changed is True
    assert installed["permissions"] == {"deny": ["Bash"], "allow": ["mcp__turn_hooks"]}
    document = json.loads((home / ".claude.json").read_text())
    # alwaysLoad: Claude Code 2.1.332 neither defers the tool behind ToolSearch nor
    # builds the first prompt before the server is connected.
    ours = {"type": "stdio", "command": SERVER[0], "args": SERVER[1], "env": {}}
    assert document == {
        "numStartups": 3,
        "mcpServers": {"turn_hooks": {**ours, "alwaysLoad": True}},
    }
    again, changed = mcp_install.claude_code(home, installed, server=SERVER)
    assert (again, changed) == (installed, False)
    removed, changed = mcp_install.claude_code(home, installed, server=None)
    assert (removed, changed) == (settings, True)
    assert json.loads((home / ".claude.json").read_text()) == {"numStartups": 3}


def test_an_earlier_install_without_always_load_is_replaced(tmp_path):
    earlier = {"type": "stdio", "command": SERVER[0], "args": SERVER[1], "env": {}}
    (tmp_path / ".claude.json").write_text(json.dumps({"mcpServers": {"turn_hooks": earlier}}))
    _, changed = mcp_install.claude_code(tmp_path, {}, server=SERVER)
    servers = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]
    assert changed is True and servers["turn_hooks"]["alwaysLoad"] is True


def test_claude_code_uninstall_with_nothing_of_ours_changes_nothing(tmp_path):
    settings = {"permissions": {"allow": ["Read"]}}
    assert mcp_install.claude_code(tmp_path, settings, server=None) == (settings, False)
    assert not (tmp_path / ".claude.json").exists()
    installed, _ = mcp_install.claude_code(tmp_path, {}, server=SERVER)
    assert mcp_install.claude_code(tmp_path, installed, server=None) == ({}, True)
    assert not (tmp_path / ".claude.json").exists(), "a file that held only ours goes"
    (tmp_path / ".claude.json").write_text('{"mcpServers": {}}')
    assert mcp_install.claude_code(tmp_path, {}, server=None) == ({}, False)


@pytest.mark.parametrize(
    ("name", "text", "settings", "reason"),
    [
        (".claude.json", "{not json", {}, "claude_json_invalid"),
        (".claude.json", "[]", {}, "claude_json_invalid"),
        (None, None, {"permissions": {"allow": "all"}}, "settings_json_invalid"),
        (None, None, {"permissions": "yes"}, "settings_json_invalid"),
    ],
)
def test_claude_code_files_we_cannot_edit_are_refused(tmp_path, name, text, settings, reason):
    if name:
        (tmp_path / name).write_text(text)
    with pytest.raises(InvalidInputError) as raised:
        mcp_install.claude_code(tmp_path, settings, server=SERVER)
    assert raised.value.reason_code == reason


def test_the_claude_json_sits_beside_the_default_home_and_inside_any_other(tmp_path):
    assert mcp_install.claude_json_path(Path.home() / ".claude") == Path.home() / ".claude.json"
    assert mcp_install.claude_json_path(tmp_path) == tmp_path / ".claude.json"
