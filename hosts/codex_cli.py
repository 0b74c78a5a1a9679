"""The Codex CLI adapter: ``UserPromptSubmit`` and ``Stop`` hooks (hosts.md §2).

Codex keeps injected context in the conversation history, so a per-session sidecar
remembers which memories were already rendered and they are not rendered again.
``Stop`` fires only for successful turns and must print JSON: it prints ``{}``.
"""

from __future__ import annotations

from typing import Any

from hosts.generic import build_turn, carry_on_settlements
from hosts.hook_log import record_pre_turn
from hosts.render import render_context, rendered_refs, without_refs
from hosts.settlement import settle, settlement_store
from sidecars import path_token
from turn_hooks import call_pre_turn, make_plugin_manager, project_contributions

HOST = "codex_cli"
INJECTED_SCHEMA = "turn_hooks_injected_context_v0"


def pre_turn(event: dict[str, Any], *, host: str = HOST, **binding: Any) -> dict[str, Any] | None:
    """UserPromptSubmit: the bounded context, or ``None`` to print nothing."""
    turn = build_turn(event, host=host, **binding)
    carry_on_settlements(turn)
    outcome = call_pre_turn(make_plugin_manager(), turn)
    record_pre_turn(host, outcome)
    projection = project_contributions(outcome.payload)
    store = settlement_store(turn.registry, binding["goal_id"], turn.cwd)
    path = store.path("injected", host, path_token(turn.host_session_id, "session") + ".json")
    delivered: set[str] = set()
    if turn.host_session_id:
        previous = store.read(path) or {}
        delivered = set(previous.get("candidate_refs") or [])
    projection = without_refs(projection, delivered)
    text = render_context(projection)
    if not text:
        return None
    fresh = rendered_refs(projection, text)
    if turn.host_session_id and fresh:
        store.update(
            path,
            lambda doc: {
                "schema_version": INJECTED_SCHEMA,
                "host": host,
                "candidate_refs": sorted({*(doc or {}).get("candidate_refs", []), *fresh}),
            },
        )
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}


def post_settlement(
    event: dict[str, Any],
    *,
    validation_argv: list[str] | None,
    validation_timeout: int,
    host: str = HOST,
    **binding: Any,
) -> dict[str, Any]:
    """Stop: settle the successful turn; Codex gets ``{}`` whatever happened."""
    turn = build_turn(event, host=host, **binding)
    message = event.get("last_assistant_message")
    message = message if isinstance(message, str) else None
    settle(
        make_plugin_manager(),
        turn,
        final_message=message,
        validation_argv=validation_argv,
        validation_timeout=validation_timeout,
    )
    return {}
