"""How much text each host is given: one table, the only place a host's cap is set.

Two bounds apply to every Turn. A capability's contribution may hold up to
``CONTRIBUTION_BUDGET_BYTES`` (64 KiB of compact UTF-8 JSON): that is the contract,
checked by the kernel. What a host injects is the rendered text of the projected
contributions, and each runtime truncates or replaces text above a cap of its own
(Claude Code replaces ``additionalContext`` over 10,000 characters with a preview
stub; Codex truncates near 2,500 tokens). So every host renders to a cap below its
runtime's (hosts.md §1.2): over it, whole items are dropped from the end and one line
says how many (:func:`hosts.facts.render.render`); the runtime never cuts anything.

The table is keyed by the Turn's host (``TurnContext.host``); ``HOST_CAPS`` names
each host as conformance does. The Codex App runs the Codex CLI's own
``UserPromptSubmit`` hook, so it renders through that row.
"""

from __future__ import annotations

from dataclasses import dataclass

from turn_hooks.models import MAX_RESULT_BYTES

CONTRIBUTION_BUDGET_BYTES = MAX_RESULT_BYTES
"""The contract's bound on one contribution (64 KiB, compact UTF-8 JSON)."""


@dataclass(frozen=True)
class HostCap:
    """One host's bound on the text it is given, and the runtime's own limit it stays under."""

    host: str
    """The host as conformance names it."""
    turn_host: str
    """The ``TurnContext.host`` of the hook that renders for it."""
    render_chars: int
    """At most this many characters are rendered."""
    runtime_limit: str
    """What the runtime itself does with longer text (why the cap is where it is)."""


CODEX_RENDER_CHARS = 8000
"""Codex CLI's cap, which the Codex App shares: it runs the same hook."""

HOST_CAPS = {
    cap.host: cap
    for cap in (
        HostCap(
            "codex-cli",
            "codex_cli",
            CODEX_RENDER_CHARS,
            "cuts hook context over 4 bytes per token of additionalContextLimit (2,500)",
        ),
        HostCap(
            "codex-app", "codex_cli", CODEX_RENDER_CHARS, "runs the Codex CLI hook: the same cap"
        ),
        HostCap(
            "claude-code", "claude_code", 8000, "replaces more than 10,000 characters with a stub"
        ),
        HostCap("gemini", "gemini", 8000, "documents no cap"),
        HostCap("dsh", "dsh", 8000, "keeps the context in its history, as Codex does"),
        HostCap("generic", "generic_cli", 8000, "unknown: the same bound as the strictest host"),
    )
}
"""Every host's cap, by its conformance name."""

_BY_TURN_HOST = {cap.turn_host: cap.render_chars for cap in HOST_CAPS.values()}
DEFAULT_RENDER_CHARS = HOST_CAPS["generic"].render_chars
"""The cap of a host the table does not name."""


def render_cap(turn_host: str) -> int:
    """The characters a Turn of ``turn_host`` (``TurnContext.host``) may be given."""
    return _BY_TURN_HOST.get(turn_host, DEFAULT_RENDER_CHARS)


def render_byte_cap(turn_host: str, goal_id: str, agent_id: str | None) -> int | None:
    """The UTF-8 bytes a Turn may be given where the runtime counts bytes, else ``None``.

    Codex (CLI and App: ``codex_cli``) keeps a hook's context whole up to its
    handler's ``additionalContextLimit``, which the user may lower in ``hooks.json``
    (:mod:`hosts.facts.codex_limit`); the smaller of that and :func:`render_cap` applies.
    """
    if turn_host != "codex_cli":
        return None
    from hosts.facts import codex_limit

    return codex_limit.context_bytes(goal_id, agent_id)
