"""The generic CLI host: one stdin/stdout JSON contract for any hook-based runtime.

``turn-hooks host generic pre-turn`` reads ``{turn_id, session_id?, cwd?, prompt?}``
and prints ``{"additional_context": text}``; ``post-settlement`` reads ``{turn_id,
session_id?, cwd?, last_assistant_message}`` after a successful Turn and prints the
settlement receipt. Both always exit 0: a hook never blocks the Turn.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hosts.dialects import DIALECTS, gemini_turn_id
from hosts.hook_log import record, record_pre_turn
from hosts.render import render_context
from hosts.settlement import goal_repository, settle
from sidecars import SidecarStore, path_token, sidecar_root
from turn_hooks import TurnContext, call_pre_turn, make_plugin_manager, project_contributions
from turn_hooks.errors import InvalidInputError

MAX_EVENT_CHARS = 4 * 1024 * 1024


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
    prompt_in_recall: bool = True,
) -> TurnContext:
    """The kernel's Turn from a host event; the boundary says which edges this host wires.

    ``prompt_in_recall=False`` withholds the user's prompt, so recall is keyed on the
    goal and project alone (the upstream prompt-independent situation).
    """
    turn_id = event.get("turn_id") or event.get("prompt_id")
    if not isinstance(turn_id, str) or not turn_id:
        raise InvalidInputError(
            "the host event names no turn id", reason_code="host_turn_id_missing"
        )
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
        prompt=prompt if prompt_in_recall and isinstance(prompt, str) else None,
        registry=registry,
    )


def _store_for(binding: dict[str, Any], cwd: Any) -> SidecarStore:
    repo = goal_repository(binding.get("registry"), binding.get("goal_id")) or Path(
        cwd if isinstance(cwd, str) else "."
    )
    return SidecarStore(sidecar_root(repo))


def _gemini_turn(event: dict[str, Any], binding: dict[str, Any], *, starting: bool) -> None:
    """Gemini has no turn id: BeforeAgent mints one, AfterAgent reads it back."""
    session = event.get("session_id")
    if not isinstance(session, str) or not session:
        return
    store = _store_for(binding, event.get("cwd"))
    path = store.path("injected", "gemini", path_token(session, "session") + ".json")
    if starting:
        turn_id = gemini_turn_id(event)
        if turn_id:
            store.update(path, lambda doc: {**(doc or {}), "current_turn_id": turn_id})
            event["turn_id"] = turn_id
        return
    current = (store.read(path) or {}).get("current_turn_id")
    if isinstance(current, str):
        event["turn_id"] = current


def pre_turn(event: dict[str, Any], *, dialect: str = "plain", **binding: Any) -> Any:
    """Dispatch PreTurn and render the contribution in the runtime's dialect."""
    style = DIALECTS[dialect]
    if dialect == "gemini":
        _gemini_turn(event, binding, starting=True)
    turn = build_turn(event, host=style.host, **binding)
    outcome = call_pre_turn(make_plugin_manager(), turn)
    record_pre_turn(style.host, outcome)
    return style.pre_turn_output(render_context(project_contributions(outcome.payload)))


def post_settlement(
    event: dict[str, Any],
    *,
    validation_argv: list[str] | None,
    validation_timeout: int,
    dialect: str = "plain",
    **binding: Any,
) -> Any:
    """Settle a successful Turn: validator, spool readback, ``post_settlement``."""
    style = DIALECTS[dialect]
    if dialect == "gemini":
        _gemini_turn(event, binding, starting=False)
    turn = build_turn(event, host=style.host, **binding)
    if style.final_text_marks_success and style.final_text_field not in event:
        record(style.host, "post_settlement", [("adapter", "host_turn_not_completed")])
        return style.settlement_output({})
    message = event.get(style.final_text_field)
    message = message if isinstance(message, str) else None
    receipt = settle(
        make_plugin_manager(),
        turn,
        final_message=message,
        validation_argv=validation_argv,
        validation_timeout=validation_timeout,
    )
    return style.settlement_output(receipt)


def parse_event(text: str) -> dict[str, Any]:
    """One JSON object from hook stdin (hosts may or may not end it with a newline).

    Input over ``MAX_EVENT_CHARS`` is refused unread: no host event needs that much,
    and a hook must not spend the Turn's time parsing it.
    """
    if len(text) > MAX_EVENT_CHARS:
        raise InvalidInputError("hook stdin is too large", reason_code="hook_input_too_large")
    try:
        document = json.loads(text.strip())
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            "hook stdin is not JSON", reason_code="hook_input_not_json"
        ) from exc
    if not isinstance(document, dict):
        raise InvalidInputError(
            "hook stdin must be a JSON object", reason_code="hook_input_not_object"
        )
    return document
