"""The generic CLI host: one stdin/stdout JSON contract for any hook-based runtime.

``turn-hooks host generic pre-turn`` reads ``{turn_id, session_id?, cwd?, prompt?}``
and prints ``{"additional_context": text}``; ``post-settlement`` reads ``{turn_id,
session_id?, cwd?, last_assistant_message}`` after a successful Turn and prints the
settlement receipt. Both always exit 0: a hook never blocks the Turn.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hosts.render import extract_reflection, render_context
from hosts.settlement import settle
from turn_hooks import TurnContext, call_pre_turn, make_plugin_manager, project_contributions


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def build_turn(
    event: dict[str, Any],
    *,
    host: str,
    goal_id: str,
    agent_id: str,
    registry: str | None,
    ingest_connected: bool = True,
) -> TurnContext:
    """The kernel's Turn from a host event; the boundary says which edges this host wires."""
    turn_id = event.get("turn_id") or event.get("prompt_id")
    if not isinstance(turn_id, str) or not turn_id:
        raise ValueError("the host event names no turn id")
    envelope = {
        "goal_id": goal_id,
        "agent_id": agent_id,
        "boundary": {
            "capabilities": {
                "reward_memory": {"automatic_recall": True, "automatic_ingest": ingest_connected}
            }
        },
    }
    prompt = event.get("prompt")
    session = event.get("session_id")
    cwd = event.get("cwd")
    return TurnContext(
        host=host,  # type: ignore[arg-type]  # callers pass a member of HOSTS
        host_turn_id=turn_id,
        host_session_id=session if isinstance(session, str) else None,
        cwd=cwd if isinstance(cwd, str) else None,
        goal_id=goal_id,
        agent_id=agent_id,
        turn_envelope=envelope,
        payload={"turn_envelope": envelope},
        observed_at=_now(),
        prompt=prompt if isinstance(prompt, str) else None,
        registry=registry,
    )


def pre_turn(event: dict[str, Any], **binding: Any) -> dict[str, Any]:
    """Dispatch PreTurn and render the contribution as text."""
    turn = build_turn(event, host="generic_cli", **binding)
    outcome = call_pre_turn(make_plugin_manager(), turn)
    text = render_context(project_contributions(outcome.payload))
    return {"additional_context": text} if text else {}


def post_settlement(
    event: dict[str, Any],
    *,
    validation_argv: list[str] | None,
    validation_timeout: int,
    **binding: Any,
) -> dict[str, Any]:
    """Settle a successful Turn: validator, spool readback, ``post_settlement``."""
    turn = build_turn(event, host="generic_cli", **binding)
    message = event.get("last_assistant_message")
    message = message if isinstance(message, str) else None
    return settle(
        make_plugin_manager(),
        turn,
        final_message=message,
        reflection=extract_reflection(message),
        validation_argv=validation_argv,
        validation_timeout=validation_timeout,
    )


def parse_event(text: str) -> dict[str, Any]:
    """One JSON object from hook stdin (hosts may or may not end it with a newline)."""
    document = json.loads(text.strip())
    if not isinstance(document, dict):
        raise ValueError("hook stdin must be a JSON object")
    return document
