"""The host-plugin route: hooks that carry no binding, and how it meets ``install``.

One plugin directory (``hosts/plugin``, listed by the repository's
``.claude-plugin/marketplace.json``, which Claude Code and Codex 0.147 both read)
holds a manifest per host: Claude Code's (``.claude-plugin/plugin.json``,
``hooks/hooks.json``, ``.mcp.json``) and Codex's (``.codex-plugin/plugin.json``,
``codex-hooks.json``; no server, whose tools ``codex exec`` would cancel without the
approval mode ``install codex`` writes). Each ships the same hook commands to every
user, ``turn-hooks host generic pre-turn --dialect claude-code`` and ``turn-hooks host
codex-cli pre-turn``, with no ``--goal-id``. Such
a hook names its binding as every command does once ``turn-hooks init`` has run
(:func:`sidecars.name_binding`): the registry by default, the Goal whose registered
repository encloses the directory the host runs the hook in, the Agent init
recorded. Its validator is the one the repository declares
(:mod:`sidecars.validator`); none declared is recall only. Outside every Goal's
repository it does nothing, quietly: a plugin is on in every directory.

The two routes detect each other, so a Turn gets one recall and one settlement:

- ``install claude-code`` where the plugin is enabled records the validator in the
  repository for the plugin's hooks and writes no hooks and no server of its own
  (:func:`plugin_enabled`); ``install codex`` where Codex has it enabled
  (:func:`codex_plugin_enabled`) likewise, and trusts the plugin's hooks as ``/hooks``
  would instead of its own;
- the plugin's hook, where ``install`` wired hooks of the same Goal into the
  settings (an install from before the plugin), does nothing: the installed hook,
  which names its binding explicitly, serves that Turn (:func:`installed_goals`).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

PLUGIN = "turn-hooks"
"""The plugin's name in its ``plugin.json`` and marketplace entry."""
PLUGIN_DIR = Path(__file__).parent.parent / "plugin"
"""The plugin directory the repository's marketplace lists."""
QUIET_REASONS = frozenset({"registry_missing", "goal_not_discovered"})
"""Discovery failures that only mean "not a repository of ours": no log entry, as a
plugin's hook runs in every directory the host is used in."""


def project_directory() -> Path:
    """The project Claude Code runs in: ``$CLAUDE_PROJECT_DIR``, which it gives its
    hooks, else the working directory (its servers start there)."""
    named = os.environ.get("CLAUDE_PROJECT_DIR")
    return Path(named) if named else Path.cwd()


def _enabled_in(document: object) -> bool | None:
    plugins = document.get("enabledPlugins") if isinstance(document, dict) else None
    found = None
    for key, value in plugins.items() if isinstance(plugins, dict) else ():
        if isinstance(key, str) and key.partition("@")[0] == PLUGIN and isinstance(value, bool):
            found = value if found is None else found or value
    return found


def plugin_enabled(home: Path, project: Path | None = None) -> bool:
    """Whether Claude Code has our plugin enabled for ``project``: ``enabledPlugins``
    of the user's ``settings.json`` in ``home``, then the project's
    ``.claude/settings.json`` and ``.claude/settings.local.json``, the later winning,
    as Claude Code layers them. An unreadable file says nothing."""
    from hosts.setup.settings_install import read_settings
    from turn_hooks.errors import InvalidInputError

    places = [home / "settings.json"]
    if project is not None:
        places += [
            project / ".claude" / "settings.json",
            project / ".claude" / "settings.local.json",
        ]
    enabled = False
    for place in places:
        try:
            said = _enabled_in(read_settings(place))
        except (InvalidInputError, OSError):
            continue
        enabled = enabled if said is None else said
    return enabled


def codex_plugin_enabled(codex_home: Path) -> bool:
    """Whether Codex has our plugin enabled in ``codex_home``: ``codex plugin add``
    writes ``[plugins."turn-hooks@MARKETPLACE"] enabled = true`` into its config.toml.
    Codex enables a plugin per home, not per project. An unreadable file says nothing."""
    import tomllib

    from hosts.setup.codex_trust import read_state
    from turn_hooks.errors import InvalidInputError

    try:
        text, _ = read_state(codex_home)
    except (InvalidInputError, OSError):
        return False
    plugins = tomllib.loads(text).get("plugins") if text else None
    return any(
        key.partition("@")[0] == PLUGIN and isinstance(value, dict) and value.get("enabled") is True
        for key, value in (plugins.items() if isinstance(plugins, dict) else ())
    )


def is_plugin_hook(hook: dict[str, Any]) -> bool:
    """Whether an app-server ``hooks/list`` entry is one of our Codex plugin's hooks
    (its key starts with the plugin's ``turn-hooks@MARKETPLACE`` id)."""
    key = hook.get("key")
    return (
        hook.get("source") == "plugin"
        and isinstance(key, str)
        and key.partition(":")[0].partition("@")[0] == PLUGIN
    )


def installed_goals(home: Path, host: str = "claude-code") -> set[str]:
    """The Goals whose hooks ``install claude-code`` wrote into ``home``'s settings
    (``install codex``: into ``home``'s hooks.json)."""
    from turn_hooks.errors import InvalidInputError

    try:
        if host == "codex":
            from hosts.setup.codex_install import our_commands as codex_commands
            from hosts.setup.codex_install import read_hooks

            commands = codex_commands(read_hooks(home / "hooks.json"))
        else:
            from hosts.setup.settings_install import HOSTS, our_commands, read_settings

            commands = our_commands(HOSTS[host], read_settings(home / "settings.json"))
    except (InvalidInputError, OSError, ValueError):
        return set()
    goals = set()
    for command in commands:
        parts = shlex.split(command)  # a command of ours parses: our_commands split it
        if "--goal-id" in parts[:-1]:
            goals.add(parts[parts.index("--goal-id") + 1])
    return goals


def discovered_binding(
    dialect: str, agent_id: str | None, registry: str | None
) -> dict[str, Any] | None:
    """The binding of the repository the hook runs in, or ``None`` outside every
    Goal's repository (and with no registry at all).

    :raises InvalidInputError: ``plugin_host_not_claude_code`` for the Claude Code
        plugin's hook run by another host: Codex 0.147 reads a repository's
        ``.claude-plugin/marketplace.json`` and installs the plugin, and once its hooks
        are trusted would run them with Claude Code's dialect. Claude Code names the
        project in ``$CLAUDE_PROJECT_DIR`` for its hooks; Codex does not. Any other
        discovery refusal (``binding_ambiguous``, an unreadable registry) too: the hook
        logs it and adds nothing.
    """
    from sidecars import name_binding
    from turn_hooks.errors import InvalidInputError

    if dialect == "claude-code" and not os.environ.get("CLAUDE_PROJECT_DIR"):
        raise InvalidInputError(
            "the Claude Code plugin's hook ran outside Claude Code: use `turn-hooks "
            "install HOST` for that host",
            reason_code="plugin_host_not_claude_code",
        )

    try:
        named = name_binding(registry, None, agent_id, cwd=project_directory())
    except InvalidInputError as exc:
        if exc.reason_code in QUIET_REASONS:
            return None
        raise
    return {"goal_id": named.goal_id, "agent_id": named.agent_id, "registry": named.registry}


def repository_validation(registry: str, goal_id: str) -> list[str] | None:
    """The validator argv the Goal's repository declares (:mod:`sidecars.validator`),
    built as ``install`` builds it; ``None`` when it declares none or recall only.

    :raises InvalidInputError: ``validator_record_invalid`` and the registry's refusals.
    """
    import argparse

    from hosts.setup.install import validation_argv
    from sidecars import read_validator, require_goal_repository

    declared = read_validator(require_goal_repository(registry, goal_id))
    if declared is None or declared["recall_only"]:
        return None
    args = argparse.Namespace(
        validate_with=declared["validate_with"],
        validator_deadline=declared["validation_timeout_seconds"],
        validation_command_json=None,
    )
    if declared["validation_command"] is not None:
        return list(declared["validation_command"])
    return validation_argv(args)


def serve_here(host_name: str, dialect: str, goal_id: str) -> bool:
    """Whether the plugin's hook serves this Goal's Turn: not where ``install`` wired
    hooks of the same Goal for the same host (they name it explicitly, and serve it):
    Claude Code's settings.json, or Codex's ``$CODEX_HOME/hooks.json``."""
    if host_name == "codex-cli":
        home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        return goal_id not in installed_goals(home, "codex")
    if dialect != "claude-code":
        return True
    from hosts.setup.settings_install import default_home

    return goal_id not in installed_goals(default_home("claude-code"))


COMMAND_FIX = (
    "the plugin's hooks run `turn-hooks` from PATH and none is there: install it as a "
    "command (`pipx install turn-hooks`, `uv tool install turn-hooks`, or a virtual "
    "environment's bin on PATH); until then they add nothing and exit 0"
)


def command_check(subject: str) -> dict[str, Any]:
    """The ``plugin_command`` row: ``turn-hooks`` on this PATH, as the plugin's hooks
    and server find it (the host hands them its own PATH, usually the shell's)."""
    import shutil

    from hosts.setup import doctor

    found = shutil.which("turn-hooks")
    if found is None:
        return doctor.row("plugin_command", subject, "plugin_command_missing", COMMAND_FIX)
    return doctor.row("plugin_command", subject, None, "the plugin's hooks find turn-hooks")


def route(home: Path, project: Path | None, goal_id: str | None) -> str:
    """Which route serves Claude Code for a Goal: ``plugin``, ``install``, ``both``
    (install's hooks serve the Goal; the plugin's stand aside) or ``none``."""
    plugin = plugin_enabled(home, project)
    goals = installed_goals(home)
    installed = goal_id in goals if goal_id else bool(goals)
    if plugin and installed:
        return "both"
    return "plugin" if plugin else "install" if installed else "none"


def route_check(home: Path, project: Path | None, goal_id: str | None) -> dict[str, Any]:
    """The ``route`` row ``doctor`` shows for Claude Code: which route is in force."""
    from hosts.setup import doctor

    found = route(home, project, goal_id)
    if found == "both":
        return doctor.row(
            "route",
            "claude-code",
            "routes_both",
            "the turn-hooks plugin is enabled and `install claude-code` wired hooks too: "
            "the installed hooks serve this Goal and the plugin's stand aside; run "
            "`turn-hooks install claude-code --uninstall` to leave it to the plugin",
            warning=True,
        )
    said = {
        "plugin": "the turn-hooks plugin serves Claude Code here",
        "install": "`turn-hooks install claude-code` wired the hooks (no plugin)",
        "none": "neither the plugin nor `install claude-code` serves Claude Code here",
    }
    return doctor.row("route", "claude-code", None, said[found])


RULE = f"mcp__plugin_{PLUGIN}_turn_hooks"
"""Claude Code's permission rule for the plugin server's tools (``claude -p`` refuses
a tool no rule allows, and a plugin cannot grant its own): ``install claude-code``
adds it where the plugin is enabled."""
SERVER = f"plugin:{PLUGIN}:turn_hooks"
"""How Claude Code names the plugin's MCP server (in ``/mcp`` and ``disabledMcpServers``)."""


def tool_allowed(home: Path, project: Path | None) -> bool:
    """Whether a settings file Claude Code reads allows the plugin's tools (:data:`RULE`)."""
    from hosts.setup.settings_install import read_settings
    from turn_hooks.errors import InvalidInputError

    places = [home / "settings.json"]
    if project is not None:
        places += [
            project / ".claude" / "settings.json",
            project / ".claude" / "settings.local.json",
        ]
    for place in places:
        try:
            permissions = read_settings(place).get("permissions")
        except (InvalidInputError, OSError):
            continue
        allow = permissions.get("allow") if isinstance(permissions, dict) else None
        if isinstance(allow, list) and RULE in allow:
            return True
    return False


def server_state(home: Path, disabled: bool) -> str:
    """The plugin's server as :func:`hosts.setup.status.tool_server` says it: ``disabled``
    (switched off for the project in ``/mcp``); ``unresolvable`` when ``turn-hooks``
    is not on PATH (the plugin starts it from there); ``unallowed`` when no permission
    rule lets the model call its tool (the answer's block carries the reflection
    then); else ``runs``."""
    import shutil

    if disabled:
        return "disabled"
    if not shutil.which("turn-hooks"):
        return "unresolvable"
    return "runs" if tool_allowed(home, project_directory()) else "unallowed"
