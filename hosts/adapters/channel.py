"""Which channel carries a Turn's result fields back: the field's tool, or a block.

A plugin may declare a tool for a result field (``SettlementRegistration.result_tools``).
Where the host runs our MCP server (``turn-hooks mcp serve``, wired by ``install codex``
and ``install claude-code``), the model hands the value over through that tool, out of
the user's sight; everywhere else it ends its final message with the field's
``<field>…</field>`` block. The rendered request names one channel only
(:func:`hosts.facts.render.field_request`): a model asked for both writes both, and the user
reads the JSON.

Whether the channel is wired is read on every Turn from the host's own configuration,
the file the host itself reads its MCP servers from: Codex's ``$CODEX_HOME/config.toml``
(``~/.codex``), Claude Code's ``.claude.json`` (beside ``~/.claude``, or inside
``$CLAUDE_CONFIG_DIR``). The hook runs in the host's environment, so it finds the same
file. Our server must be there, not switched off for the project, with a command that
still runs (:func:`hosts.setup.status.tool_server`, which ``doctor`` and ``status`` use
too). Not a flag written into the hook command at install: a server removed or broken since would
leave it stale, and the model would be asked for a tool it does not have. A Turn
whose request names the block while the server runs loses nothing: settlement takes
a staged value and a block alike (:mod:`hosts.settlement.settlement`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pluggy

TOOL_HOSTS = {"codex_cli": "codex", "claude_code": "claude-code"}
"""The Turn hosts (``TurnContext.host``) that run stdio MCP servers, with the name
``install`` knows each by. The Codex App runs the Codex CLI's hook (``codex_cli``);
Gemini, DSH and generic runtimes have the block alone."""


def tool_home(turn_host: str) -> Path | None:
    """Where the host that runs a Turn of ``turn_host`` reads its MCP servers from
    (``None``: it has no tool channel)."""
    name = TOOL_HOSTS.get(turn_host)
    if name is None:
        return None
    if name == "codex":
        return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    from hosts.setup.settings_install import default_home

    return default_home(name)


def wired(turn_host: str) -> bool:
    """Whether the host of a Turn runs our MCP server now, with a command that runs."""
    home = tool_home(turn_host)
    if home is None:
        return False
    from hosts.setup.status import tool_server

    return tool_server(TOOL_HOSTS[turn_host], home) == "runs"


def result_tools(turn_host: str, pm: pluggy.PluginManager) -> dict[str, str]:
    """The tool that carries each result field on this Turn's host, by field: every
    declared result tool where the channel is wired (:func:`wired`), else nothing."""
    from turn_hooks import settlement_result_tools

    tools = settlement_result_tools(pm)
    if not tools or not wired(turn_host):
        return {}
    return {tool["field"]: name for name, tool in tools.items()}
