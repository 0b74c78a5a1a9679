"""The Codex CLI adapter: ``UserPromptSubmit`` and ``Stop`` hooks (hosts.md §2).

Codex keeps injected context in the conversation history, so a per-session sidecar
remembers which context items were already rendered and they are not rendered again
(:func:`hosts.adapters.generic.render_once`, shared with the generic hosts). Where Codex runs
our MCP server the reflection is asked for through its tool, else as a block
(:mod:`hosts.adapters.channel`); DSH, which shares this adapter, has the block.
``Stop`` fires only for successful turns and must print JSON: it prints ``{}``.
"""

from __future__ import annotations

from typing import Any

from hosts.adapters.channel import result_tools
from hosts.adapters.generic import INJECTED_SCHEMA as INJECTED_SCHEMA
from hosts.adapters.generic import (
    build_turn,
    carry_on_settlements,
    render_once,
    with_delivered,
)
from hosts.adapters.generic import delivered_refs as delivered_refs
from hosts.settlement.hook_log import record_pre_turn
from hosts.settlement.settlement import settle, write_ahead
from turn_hooks import TurnContext, call_pre_turn, make_plugin_manager, project_contributions

HOST = "codex_cli"


def pre_turn(event: dict[str, Any], *, host: str = HOST, **binding: Any) -> dict[str, Any] | None:
    """UserPromptSubmit: the bounded context, or ``None`` to print nothing."""
    turn = build_turn(event, host=host, **binding)
    carry_on_settlements(turn)
    pm = make_plugin_manager()
    seen, session = with_delivered(turn, binding["goal_id"])
    outcome = call_pre_turn(pm, seen)
    record_pre_turn(host, outcome)
    projection = project_contributions(outcome.payload)
    text = render_once(turn, projection, binding["goal_id"], result_tools(host, pm), session)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}


def stop_turn(
    event: dict[str, Any], *, host: str = HOST, **binding: Any
) -> tuple[TurnContext, str | None]:
    """(Turn, final message) of a Stop event, as :func:`post_settlement` settles it;
    shared with the recovery of a dead hook's spill (:func:`hosts.settlement.spill.recover`)."""
    turn = build_turn(event, host=host, **binding)
    message = event.get("last_assistant_message")
    return turn, message if isinstance(message, str) else None


def post_settlement(
    event: dict[str, Any],
    *,
    validation_argv: list[str] | None,
    validation_timeout: int | None,
    host: str = HOST,
    **binding: Any,
) -> dict[str, Any]:
    """Stop: spool the successful turn and settle it detached; Codex gets ``{}``."""
    turn, message = stop_turn(event, host=host, **binding)
    argv, timeout = validation_argv, validation_timeout
    # Before the plugins load: a kill from here on leaves the Turn queued.
    ahead = write_ahead(
        turn, final_message=message, validation_argv=argv, validation_timeout=timeout
    )
    settle(
        make_plugin_manager(),
        turn,
        final_message=message,
        validation_argv=argv,
        validation_timeout=timeout,
        detach=True,
        ahead=ahead,
    )
    return {}
