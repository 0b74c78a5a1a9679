"""`turn-hooks install claude-code|gemini`: our handlers in the runtime's settings.json.

Claude Code reads ``$CLAUDE_CONFIG_DIR/settings.json`` (``~/.claude``), Gemini CLI
``~/.gemini/settings.json``; both take ``{"hooks": {Event: [{"hooks": [handler]}]}}``.
The handlers call the generic CLI host with the runtime's dialect, through the
absolute interpreter that ran ``install``. Our handlers are recognised by their
command (``python -S .../hosts/_entry.py host generic ... --dialect <name>``); everything else in
the file is kept as it was. Installing twice changes nothing; uninstalling removes
the handlers of ours of the Goal named (of every Goal with ``--all``) and nothing
else, so it needs nothing but the runtime's home; a ``hooks`` object it empties goes,
and so does a file left holding nothing (install created it), and the receipt says
what was removed, the tool server's wiring included.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hosts.setup import mcp_install
from hosts.setup._hook_line import handler_words, hook_line
from sidecars import read_bounded
from turn_hooks import InvalidInputError, loads_bounded


@dataclass(frozen=True)
class SettingsHost:
    """How one runtime names its events, its home and its timeouts."""

    name: str
    host: str
    events: dict[str, str]  # runtime event -> our hook event
    home_env: str | None
    home_dir: str
    timeout: int  # in the runtime's unit
    tool_channel: bool = False  # it runs our stdio MCP server (hosts.setup.mcp_install)


HOSTS = {
    "claude-code": SettingsHost(
        "claude-code",
        "claude_code",
        {"UserPromptSubmit": "pre-turn", "Stop": "post-settlement"},
        "CLAUDE_CONFIG_DIR",
        ".claude",
        30,
        tool_channel=True,
    ),
    "gemini": SettingsHost(
        "gemini",
        "gemini",
        {"BeforeAgent": "pre-turn", "AfterAgent": "post-settlement"},
        None,
        ".gemini",
        30000,  # Gemini counts milliseconds
    ),
}


def default_home(name: str) -> Path:
    """The runtime's configuration directory."""
    spec = HOSTS[name]
    named = os.environ.get(spec.home_env) if spec.home_env else None
    return Path(named) if named else Path.home() / spec.home_dir


def hook_command(
    spec: SettingsHost,
    event: str,
    *,
    registry: str,
    goal_id: str,
    agent_id: str,
    validation_argv: list[str] | None,
    prompt_in_recall: bool = True,
) -> str:
    """The exact command line the runtime runs for one of our handlers."""
    return hook_line(
        ["generic"],
        spec.events[event],
        registry=registry,
        goal_id=goal_id,
        agent_id=agent_id,
        validation_argv=validation_argv,
        prompt_in_recall=prompt_in_recall,
        extra=("--dialect", spec.name),
    )


def is_ours(spec: SettingsHost, handler: Any) -> bool:
    """A handler this installer wrote (for any binding)."""
    command = handler.get("command") if isinstance(handler, dict) else None
    words = handler_words(command)
    if words is None:
        return False
    parts, at = words
    return parts[at + 1] == "generic" and f"--dialect {spec.name}" in " ".join(parts)


def our_commands(spec: SettingsHost, document: dict[str, Any]) -> list[str]:
    """The commands of our handlers in a settings document (for ``doctor``)."""
    hooks = document.get("hooks")
    found = []
    for groups in hooks.values() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                if is_ours(spec, handler):
                    found.append(handler["command"])
    return found


def refuse_link(path: Path, reason_prefix: str, name: str) -> None:
    """A host file that is a symlink is refused (``<prefix>_symlink``), never
    written through nor replaced by a file: the Files rule allows no links, and a
    dotfiles link silently turned into a copy would surprise either way."""
    try:
        link = path.is_symlink()
    except OSError as exc:  # a name too long for the file system: nothing there to use
        raise InvalidInputError(
            f"{name} cannot be reached ({exc.strerror}): point "
            "--home/--codex-home/--patch-file at a real directory",
            reason_code=f"{reason_prefix}_unreachable",
        ) from exc
    if link:
        raise InvalidInputError(
            f"{name} is a symbolic link: replace the link with a file, or point "
            "--home/--codex-home/--patch-file at the real one",
            reason_code=f"{reason_prefix}_symlink",
        )


def read_settings(path: Path) -> dict[str, Any]:
    """settings.json, bounded and non-blocking; ``{}`` when there is none.

    :raises InvalidInputError: ``settings_json_symlink`` for a link.
    """
    refuse_link(path, "settings_json", "settings.json")
    raw = read_bounded(path, reason_prefix="settings_json", missing=b"{}", name="settings.json")
    try:
        document = loads_bounded(raw)
    except InvalidInputError as exc:
        raise InvalidInputError(
            "settings.json exists but is not JSON; fix or move it first",
            reason_code="settings_json_invalid",
        ) from exc
    if not isinstance(document, dict):
        raise InvalidInputError(
            "settings.json is not a JSON object", reason_code="settings_json_invalid"
        )
    return document


def _without(spec: SettingsHost, document: dict[str, Any], keep: Any) -> dict[str, Any]:
    raw = document.get("hooks")
    if not isinstance(raw, dict):
        return {**document, "hooks": {}} if raw is None else document
    cleaned: dict[str, Any] = {}
    for event, groups in raw.items():
        if not isinstance(groups, list):
            cleaned[event] = groups
            continue
        kept = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept.append(group)
                continue
            handlers = [h for h in group["hooks"] if not (is_ours(spec, h) and not keep(h))]
            if handlers:
                kept.append({**group, "hooks": handlers})
        if kept:
            cleaned[event] = kept
    return {**document, "hooks": cleaned}


def _goal_of(command: str) -> str:
    parts = shlex.split(command)  # a handler of ours parses: is_ours split it
    return parts[parts.index("--goal-id") + 1] if "--goal-id" in parts[:-1] else ""


def _editable_settings(path: Path) -> dict[str, Any]:
    """The settings document, refused when its ``hooks`` is not one we can edit."""
    before = read_settings(path)
    if not isinstance(before.get("hooks", {}), dict):
        raise InvalidInputError(
            "settings.json has a hooks value that is not an object",
            reason_code="settings_json_invalid",
        )
    return before


def uninstall(name: str, *, home: Path, goal_id: str | None) -> dict[str, Any]:
    """Remove the handlers of ours of one Goal (of every Goal with ``None``)."""
    spec = HOSTS[name]
    path = home / "settings.json"
    before = _editable_settings(path)
    document = _without(
        spec, before, keep=lambda h: goal_id is not None and _goal_of(h["command"]) != goal_id
    )
    if not document["hooks"]:
        document.pop("hooks")  # an empty hooks object is ours to take away again
    unserved = False
    if spec.tool_channel and not our_commands(spec, document):
        # The tool channel is one per host home: it goes with the last handler of ours.
        document, unserved = mcp_install.claude_code(home, document, server=None)
    changed = document != before
    files_removed = []
    if changed and not document:
        path.unlink()  # nothing but ours was in it: the file is ours to take away again
        files_removed.append(path.name)
    elif changed:
        _write(path, document)
    if unserved and not mcp_install.claude_json_path(home).exists():
        files_removed.append(mcp_install.claude_json_path(home).name)
    goals = {_goal_of(c) for c in our_commands(spec, before)} - {
        _goal_of(c) for c in our_commands(spec, document)
    }
    report = {
        "ok": True,
        "schema_version": "turn_hooks_install_v0",
        "host": spec.host,
        "action": "uninstall",
        "changed": changed or unserved,
        "events": [],
        "goals_removed": sorted(goals),
        "handlers_removed": len(our_commands(spec, before)) - len(our_commands(spec, document)),
        "files_removed": files_removed,
    }
    if spec.tool_channel:
        report["mcp_removed"] = {
            "server": mcp_install.SERVER if unserved else None,
            "permission_rule": _rule(before) and not _rule(document),
        }
    return report


def _rule(settings: dict[str, Any]) -> bool:
    """Whether ``settings`` allows our tool server (:data:`mcp_install.CLAUDE_RULE`)."""
    permissions = settings.get("permissions")
    allow = permissions.get("allow") if isinstance(permissions, dict) else None
    return isinstance(allow, list) and mcp_install.CLAUDE_RULE in allow


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".turn-hooks.tmp")
    temp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)


def allow_rule(home: Path, rule: str, *, installing: bool = True) -> bool:
    """Add (or remove) one permission rule in Claude Code's ``settings.json`` and
    nothing else; ``True`` when the file changed. For the plugin route, whose tools
    ``claude -p`` refuses without a rule and which a plugin cannot grant itself."""
    path = home / "settings.json"
    before = _editable_settings(path)
    document = mcp_install._with_rule(before, installing=installing, rule=rule)
    if document == before:
        return False
    if document:
        _write(path, document)
    else:
        path.unlink()
    return True


def install(
    name: str,
    *,
    home: Path,
    registry: str,
    goal_id: str,
    agent_id: str,
    validation_argv: list[str] | None,
    prompt_in_recall: bool = True,
) -> dict[str, Any]:
    """Install our handlers; a public-safe report of what changed."""
    spec = HOSTS[name]
    path = home / "settings.json"
    before = _editable_settings(path)
    # Installing replaces our handlers of this binding (as for Codex).
    binding = f"--goal-id {shlex.quote(goal_id)} --agent-id {shlex.quote(agent_id)}"
    document = _without(spec, before, keep=lambda handler: binding not in handler["command"])
    for event in spec.events:
        handler = {
            "type": "command",
            "timeout": spec.timeout,
            "command": hook_command(
                spec,
                event,
                registry=registry,
                goal_id=goal_id,
                agent_id=agent_id,
                validation_argv=validation_argv,
                prompt_in_recall=prompt_in_recall,
            ),
        }
        document["hooks"].setdefault(event, []).append({"hooks": [handler]})
    served = False
    if spec.tool_channel:
        # The result tools' MCP server, and the rule that lets `claude -p` call them.
        server = mcp_install.server_command(registry=registry)
        document, served = mcp_install.claude_code(home, document, server=server)
    changed = document != before
    if changed:
        _write(path, document)
    return {
        "ok": True,
        "schema_version": "turn_hooks_install_v0",
        "host": spec.host,
        "action": "install",
        "changed": changed or served,
        "events": sorted(spec.events),
        **({"mcp_server": mcp_install.SERVER} if spec.tool_channel else {}),
    }
