"""Wiring ``turn-hooks mcp serve`` into the hosts that run stdio MCP servers.

``install codex`` adds the table ``[mcp_servers.turn_hooks]`` to ``CODEX_HOME/config.toml``
(``command``, ``args``, ``default_tools_approval_mode = "approve"``: the server's
tools only stage a value for the Turn's own settlement, and ``codex exec`` would
otherwise cancel every call; and ``env_vars``, :data:`CODEX_FORWARDED`: Codex hands
an MCP server only a few variables of its own environment, where it hands hooks all
of them). ``install claude-code`` adds ``mcpServers.turn_hooks``
to Claude Code's user-scope ``.claude.json``, with ``alwaysLoad`` (its tools are not
deferred behind ToolSearch, and the first prompt waits for the server), and the
permission rule ``mcp__turn_hooks`` to its ``settings.json`` (``claude -p`` refuses an
unlisted tool). Installing twice
changes nothing; a newer install replaces the server of an older binding (one tool
channel per host home). ``--uninstall`` removes exactly these and nothing else, and a
file it leaves empty (one install created for them) goes too.

Codex's config.toml is edited as text, our table only, and the result is read back
with :mod:`tomllib` before it replaces the file: a file we could not edit exactly is a
typed refusal, never a guess.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from hosts.setup._hook_line import entry_argv
from sidecars import read_bounded
from turn_hooks import InvalidInputError, loads_bounded

SERVER = "turn_hooks"
TABLE = f"[mcp_servers.{SERVER}]"
CLAUDE_RULE = f"mcp__{SERVER}"
"""Claude Code's permission rule for every tool of our server."""
CODEX_FORWARDED = (
    "TURN_HOOKS_LOAD_PLUGINS",
    "TURN_HOOKS_DISABLE_PLUGINS",
    "TURN_HOOKS_PLUGINS",
    "TURN_HOOKS_TRACE_PLUGINS",
    "TURN_HOOKS_DEBUG",
    "TURN_HOOKS_STATE_DIR",
    "TURN_HOOKS_RESIDENT",
    "TURN_HOOKS_RESIDENT_DIR",
    "TURN_HOOKS_RESIDENT_IDLE_SECONDS",
    "TURN_HOOKS_RESIDENT_DEADLINE_SECONDS",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
)
"""The variables Codex passes on to our MCP server from its own environment, when set.

Codex gives an MCP server its short default list (``HOME``, ``PATH``, ``LANG``...)
and the ``env_vars`` named in its table; it gives hooks everything. Without these the
server would offer the tool of a plugin the user's ``TURN_HOOKS_DISABLE_PLUGINS``
blocks for the hooks, write its log where the hooks' log is not, and start a resident
server of its own in another socket directory. The binding's variables
(``TURN_HOOKS_GOAL``, ``_AGENT``, ``_REGISTRY``) stay out: the hooks are installed
with theirs named, and the server names its own from the directory it serves.
Claude Code hands its MCP servers its whole environment.
"""


def server_command(*, registry: str) -> tuple[str, list[str]]:
    """The interpreter that ran ``install`` and the arguments of ``mcp serve``.

    No Goal is named: the host runs one server per home for every repository, so
    the server names its binding from the directory the host starts it in (the
    Goal whose repository encloses it), as the hooks act only there. It starts as
    the hooks do (:func:`hosts.setup._hook_line.entry_argv`): the host waits for this
    server before its first model request, so ``runpy`` is spared here too.
    """
    program, *start = entry_argv()
    return program, [*start, "mcp", "serve", "--registry", registry]


def _replace(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".turn-hooks.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def _without_table(text: str) -> str:
    """``text`` without our table: its header line up to the next table header."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        header = line.strip()
        if header.startswith("["):
            inside = header == TABLE
        if not inside:
            kept.append(line)
    return "".join(kept)


def codex_config(config: Path, *, server: tuple[str, list[str]] | None) -> bool:
    """Put our server table in (``server``) or take it out (``None``); ``True`` if changed.

    :raises InvalidInputError: ``codex_config_invalid`` for a config.toml that is not
        TOML, or whose result would not hold exactly our table.
    """
    before = read_bounded(config, reason_prefix="config_toml", missing=b"").decode("utf-8")
    try:
        tomllib.loads(before)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(
            "config.toml is not TOML; fix or move it first", reason_code="codex_config_invalid"
        ) from exc
    text = _without_table(before)
    if text != before:  # the blank line we put before our table goes with it
        text = text.rstrip("\n") + "\n" if text.strip() else ""
    expected = None
    if server is not None:
        command, args = server
        expected = {
            "command": command,
            "args": args,
            "default_tools_approval_mode": "approve",
            "env_vars": list(CODEX_FORWARDED),
        }
        # JSON strings are TOML basic strings: the same quotes and escapes.
        lines = [f"{key} = {json.dumps(value)}" for key, value in expected.items()]
        text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + TABLE + "\n"
        text += "\n".join(lines) + "\n"
    try:
        ours = tomllib.loads(text).get("mcp_servers", {}).get(SERVER)
    except tomllib.TOMLDecodeError:
        ours = ...
    if ours != expected:
        raise InvalidInputError(
            f"config.toml names {SERVER} in a form this installer cannot edit; edit it by hand",
            reason_code="codex_config_invalid",
        )
    if text == before:
        return False
    if server is None and not text.strip():
        config.unlink()  # only our table was left: the file is ours to take away again
    else:
        _replace(config, text)
    return True


def claude_json_path(home: Path) -> Path:
    """Claude Code's user-scope MCP file: ``~/.claude.json`` beside ``~/.claude``, else
    ``.claude.json`` inside the ``CLAUDE_CONFIG_DIR`` it reads."""
    if home == Path.home() / ".claude":
        return Path.home() / ".claude.json"
    return home / ".claude.json"


def _json_object(path: Path, reason: str) -> dict[str, Any]:
    raw = read_bounded(path, reason_prefix=reason, missing=b"{}", name=path.name)
    try:
        document = loads_bounded(raw)
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"{path.name} is not JSON", reason_code=f"{reason}_invalid"
        ) from exc
    if not isinstance(document, dict):
        raise InvalidInputError(f"{path.name} is not an object", reason_code=f"{reason}_invalid")
    return document


def claude_code(
    home: Path, settings: dict[str, Any], *, server: tuple[str, list[str]] | None
) -> tuple[dict[str, Any], bool]:
    """Our server in Claude Code's ``.claude.json`` and our rule in ``settings`` (the
    settings document the hook installer is writing): the new settings and whether
    ``.claude.json`` changed."""
    path = claude_json_path(home)
    before = _json_object(path, "claude_json")
    servers = before.get("mcpServers")
    servers = dict(servers) if isinstance(servers, dict) else {}
    removed = servers.pop(SERVER, None) is not None
    if server is not None:
        servers[SERVER] = {
            "type": "stdio",
            "command": server[0],
            "args": server[1],
            "env": {},
            # Loaded up front, never behind ToolSearch; and Claude Code waits (5 s at
            # most) for the server before it builds the first prompt, so the Turn that
            # starts the session is asked for the tool and has it.
            "alwaysLoad": True,
        }
    document = {**before, "mcpServers": servers}
    if not servers and (removed or "mcpServers" not in before):
        document.pop("mcpServers")  # an empty object we leave behind is ours to take away
    changed = document != before
    if changed and server is None and not document:
        path.unlink()  # nothing but our server was in it: ours to take away again
    elif changed:
        _replace(path, json.dumps(document, indent=2) + "\n")
    return _with_rule(settings, installing=server is not None), changed


def _with_rule(
    settings: dict[str, Any], *, installing: bool, rule: str = CLAUDE_RULE
) -> dict[str, Any]:
    """``settings`` with our permission rule (``rule``: the installed server's, or the
    plugin's) added or removed; nothing else changes."""
    permissions = settings.get("permissions", {})
    allow = permissions.get("allow", []) if isinstance(permissions, dict) else None
    if not isinstance(allow, list):
        raise InvalidInputError(
            "settings.json has permissions this installer cannot edit",
            reason_code="settings_json_invalid",
        )
    if (rule in allow) == installing:
        return settings
    rules = [*allow, rule] if installing else [r for r in allow if r != rule]
    kept = {key: value for key, value in permissions.items() if key != "allow"}
    if rules:
        kept["allow"] = rules
    others = {key: value for key, value in settings.items() if key != "permissions"}
    return {**others, "permissions": kept} if kept else others
