"""`turn-hooks install codex`: hooks.json entries, trusted through Codex's app-server.

The handlers call this interpreter by absolute path. Trust is granted the way Codex
itself records it: `hooks/list` reports each handler's current hash, and
`config/batchWrite` upserts `hooks.state` with it (no hash is computed here).
Installing twice changes nothing, and a reinstall replaces our handlers where they
are (Codex keys trust by position). `--uninstall` removes exactly our handlers (of
the Goal named, or of every Goal) and the trust entries Codex kept for them, by
editing config.toml (:mod:`hosts.setup.codex_trust`): no codex binary is needed for it. What
it empties goes too: the ``[hooks.state]`` table, and a hooks.json or config.toml
left with nothing in it.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from hosts.facts.codex_rpc import AppServer
from hosts.setup import mcp_install
from hosts.setup._hook_line import handler_words, hook_line
from hosts.setup.settings_install import refuse_link
from sidecars import read_bounded
from turn_hooks import InvalidInputError, loads_bounded

EVENTS = {"UserPromptSubmit": "pre-turn", "Stop": "post-settlement"}
HOOK_TIMEOUT = 30
USER_FIELDS = ("additionalContextLimit",)
"""Fields of our handler that the user may set and a reinstall keeps
(``additionalContextLimit``: Codex's bound on the context, :mod:`hosts.facts.codex_limit`)."""


def hook_command(
    event: str,
    *,
    registry: str,
    goal_id: str,
    agent_id: str,
    validation_argv: list[str] | None,
    prompt_in_recall: bool = True,
) -> str:
    """The exact command line Codex runs for one of our handlers."""
    return hook_line(
        ["codex-cli"],
        EVENTS[event],
        registry=registry,
        goal_id=goal_id,
        agent_id=agent_id,
        validation_argv=validation_argv,
        prompt_in_recall=prompt_in_recall,
    )


def goal_of(command: str) -> str | None:
    """The Goal id an installed command names (``None``: it names none)."""
    try:
        parts = shlex.split(command)
    except ValueError:
        return None
    return parts[parts.index("--goal-id") + 1] if "--goal-id" in parts[:-1] else None


def _ours(handler: Any, goal_id: str | None, agent_id: str | None) -> bool:
    """One of our handlers: of this Goal (and Agent, unless ``agent_id`` is ``None``),
    or of any binding with ``goal_id`` ``None``."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    words = handler_words(command)
    if words is None or words[0][words[1] + 1] != "codex-cli":
        return False
    if goal_id is None:
        return True
    if agent_id is None:
        return goal_of(command) == goal_id
    return f"--goal-id {shlex.quote(goal_id)} --agent-id {shlex.quote(agent_id)}" in command


def our_handlers(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every handler of ours in a hooks.json document, in Codex's order."""
    hooks = document.get("hooks")
    return [
        handler
        for groups in (hooks.values() if isinstance(hooks, dict) else [])
        for group in (groups if isinstance(groups, list) else [])
        for handler in (group.get("hooks", []) if isinstance(group, dict) else [])
        if _ours(handler, None, None)
    ]


def our_commands(document: dict[str, Any]) -> list[str]:
    """The commands of every handler of ours in a hooks.json document (for ``doctor``)."""
    return [handler["command"] for handler in our_handlers(document)]


def read_hooks(path: Path) -> dict[str, Any]:
    """hooks.json, read as the installer reads it."""
    return _read(path)


def _without_ours(
    document: dict[str, Any], goal_id: str | None, agent_id: str | None
) -> dict[str, Any]:
    # The handler objects kept are the same objects: codex_trust follows them.
    raw = document.get("hooks")
    hooks: dict[str, Any] = raw if isinstance(raw, dict) else {}
    cleaned: dict[str, Any] = {}
    for event, groups in hooks.items():
        kept_groups = []
        for group in groups if isinstance(groups, list) else []:
            handlers = [h for h in group.get("hooks", []) if not _ours(h, goal_id, agent_id)]
            if handlers:
                kept_groups.append({**group, "hooks": handlers})
        if kept_groups:
            cleaned[event] = kept_groups
    return {**document, "hooks": cleaned}


def _with_ours(
    document: dict[str, Any], goal_id: str, agent_id: str, new: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """``document`` with this binding's handler of each event replaced where it is.

    In place, not moved to the end: Codex keys trust by position, so moving ours
    would leave every handler after it (another Goal's, a foreign one) untrusted.
    """
    placed: set[str] = set()

    def put(event: str, handler: Any) -> list[Any]:
        if not _ours(handler, goal_id, agent_id):
            return [handler]
        if event in placed:
            return []  # a duplicate of ours: one handler per event
        placed.add(event)
        # A limit the user set on our handler is theirs: a reinstall keeps it.
        kept = {**new[event], **{k: handler[k] for k in USER_FIELDS if k in handler}}
        return [handler if handler == kept else kept]

    raw = document.get("hooks")
    hooks: dict[str, Any] = raw if isinstance(raw, dict) else {}
    updated: dict[str, Any] = {}
    for event, groups in hooks.items():
        kept_groups = []
        for group in groups if isinstance(groups, list) else []:
            handlers = [kept for h in group.get("hooks", []) for kept in put(event, h)]
            if handlers:
                kept_groups.append({**group, "hooks": handlers})
        if kept_groups:
            updated[event] = kept_groups
    for event, handler in new.items():
        if event not in placed:
            updated.setdefault(event, []).append({"hooks": [handler]})
    return {**document, "hooks": updated}


def _read(path: Path) -> dict[str, Any]:
    # Bounded and non-blocking: a FIFO or /dev/zero at hooks.json is a typed refusal,
    # and so is a link (``hooks_json_symlink``).
    refuse_link(path, "hooks_json", "hooks.json")
    raw = read_bounded(
        path, reason_prefix="hooks_json", missing=b'{"hooks": {}}', name="hooks.json"
    )
    try:
        document = loads_bounded(raw)
    except InvalidInputError as exc:
        raise ValueError("hooks.json exists but is not JSON; fix or move it first") from exc
    return document if isinstance(document, dict) else {"hooks": {}}


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".turn-hooks.tmp")
    temp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)


def _restore(path: Path, original: bytes | None) -> None:
    """Put hooks.json back: its earlier bytes, or no file when there was none."""
    if original is None:
        path.unlink(missing_ok=True)
        return
    temp = path.with_name(path.name + ".turn-hooks.tmp")
    temp.write_bytes(original)
    os.replace(temp, path)


def trust_our_hooks(
    codex: str,
    codex_home: Path,
    cwd: Path,
    goal_id: str,
    agent_id: str,
    select: Any = None,
) -> list[str]:
    """Trust our handlers (``select``: the hooks it picks) through app-server; return
    their trust statuses afterwards."""
    env = {**os.environ, "CODEX_HOME": str(codex_home)}
    server = AppServer(codex, env)
    try:
        server.request("initialize", {"clientInfo": {"name": "turn-hooks", "version": "0.1"}})
        server.notify("initialized")

        def ours() -> list[dict[str, Any]]:
            listed = server.request("hooks/list", {"cwds": [str(cwd)]})
            return [
                hook
                for entry in listed.get("data", [])
                for hook in entry.get("hooks", [])
                if (select(hook) if select else _ours(hook, goal_id, agent_id))
            ]

        pending = {
            hook["key"]: {"trusted_hash": hook["currentHash"]}
            for hook in ours()
            if hook.get("trustStatus") in {"untrusted", "modified"}
        }
        if pending:
            server.request(
                "config/batchWrite",
                {
                    "edits": [
                        {"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": pending}
                    ]
                },
            )
        return [hook.get("trustStatus", "unknown") for hook in ours()]
    finally:
        server.close()


def uninstall(*, codex_home: Path, goal_id: str | None) -> dict[str, Any]:
    """Remove the handlers of ours of one Goal (every Goal's with ``None``) and the
    ``[hooks.state]`` trust entries Codex kept for them; nothing else. The entries
    of the handlers that move up are moved with them (:mod:`hosts.setup.codex_trust`), so
    no app-server is needed: only Codex's home."""
    from hosts.setup import codex_trust

    path = codex_home / "hooks.json"
    before = _read(path)
    document = _without_ours(before, goal_id, None)
    changed = document != before
    goals = sorted(
        {goal_of(command) or "" for command in our_commands(before)}
        - {goal_of(command) or "" for command in our_commands(document)}
    )
    # config.toml first: an entry form it does not know refuses with nothing written.
    forgotten = codex_trust.follow(codex_home, before, document) if changed else 0
    files_removed = []
    if changed and not any(document.get("hooks") or {}) and set(document) <= {"hooks"}:
        path.unlink()  # only our handlers were in it: ours to take away again
        files_removed.append(path.name)
    elif changed:
        _write(path, document)
    # The tool channel is one per Codex home: it goes with the last handler of ours.
    config = codex_home / "config.toml"
    unserved = not our_commands(document) and mcp_install.codex_config(config, server=None)
    if not os.path.lexists(config) and (forgotten or unserved):
        files_removed.append(config.name)
    return {
        "ok": True,
        "schema_version": "turn_hooks_install_v0",
        "host": "codex_cli",
        "action": "uninstall",
        "changed": changed or forgotten > 0 or unserved,
        "events": [],
        "goals_removed": goals,
        "handlers_removed": len(our_commands(before)) - len(our_commands(document)),
        "trust_entries_removed": forgotten,
        "files_removed": files_removed,
        "mcp_removed": {"server": mcp_install.SERVER if unserved else None},
    }


def install(
    *,
    codex: str,
    codex_home: Path,
    registry: str,
    goal_id: str,
    agent_id: str,
    validation_argv: list[str] | None,
    prompt_in_recall: bool = True,
) -> dict[str, Any]:
    """Install our handlers; a public-safe report of what changed.

    An install whose hooks cannot all be trusted puts hooks.json and config.toml
    back as they were (byte for byte, or absent): a command that fails leaves
    nothing behind.
    """
    from hosts.setup import codex_trust

    path, config = codex_home / "hooks.json", codex_home / "config.toml"
    before = _read(path)
    codex_trust.read_state(codex_home)  # a config.toml it cannot edit: refused first
    original = path.read_bytes() if path.exists() else None
    original_config = config.read_bytes() if config.exists() else None
    new = {
        event: {
            "type": "command",
            "timeout": HOOK_TIMEOUT,
            "command": hook_command(
                event,
                registry=registry,
                goal_id=goal_id,
                agent_id=agent_id,
                validation_argv=validation_argv,
                prompt_in_recall=prompt_in_recall,
            ),
        }
        for event in EVENTS
    }
    document = _with_ours(before, goal_id, agent_id, new)
    changed = document != before
    try:
        if changed:
            codex_trust.follow(codex_home, before, document)
            _write(path, document)
        statuses = trust_our_hooks(codex, codex_home, Path.cwd(), goal_id, agent_id)
    except BaseException:
        if changed:
            _restore(path, original)
            _restore(config, original_config)
        raise
    ok = bool(statuses) and all(s == "trusted" for s in statuses)
    if changed and not ok:
        _restore(path, original)
        _restore(config, original_config)
        changed = False
    served = ok and mcp_install.codex_config(
        codex_home / "config.toml",
        server=mcp_install.server_command(registry=registry),
    )
    return {
        "ok": ok,
        "schema_version": "turn_hooks_install_v0",
        "host": "codex_cli",
        "action": "install",
        "changed": changed or served,
        "events": sorted(EVENTS),
        "trust_statuses": statuses,
        "mcp_server": mcp_install.SERVER if ok else None,
    }
