"""The Codex CLI adapter: ``UserPromptSubmit`` and ``Stop`` hooks (hosts.md §2).

Codex keeps injected context in the conversation history, so a per-session sidecar
remembers which context items were already rendered and they are not rendered again.
``Stop`` fires only for successful turns and must print JSON: it prints ``{}``.
"""

from __future__ import annotations

from typing import Any

from hosts.generic import build_turn, carry_on_settlements
from hosts.hook_log import record_pre_turn
from hosts.render import render, without_refs
from hosts.settlement import binding_store, settle
from sidecars import path_token
from turn_hooks import call_pre_turn, make_plugin_manager, project_contributions

HOST = "codex_cli"
INJECTED_SCHEMA = "turn_hooks_injected_context_v1"
"""v1 keeps the delivered items' refs as ``item_refs``."""


def delivered_refs(document: object) -> set[str]:
    """The item refs an injected-context sidecar records as delivered.

    A v0 sidecar, written while hosts rendered one capability's items themselves,
    keeps the same refs under that capability's own key: its one list.
    """
    if not isinstance(document, dict):
        return set()
    if document.get("schema_version") == INJECTED_SCHEMA:
        refs = document.get("item_refs")
    else:
        refs = next((value for value in document.values() if isinstance(value, list)), None)
    return {ref for ref in refs or [] if isinstance(ref, str)}


def pre_turn(event: dict[str, Any], *, host: str = HOST, **binding: Any) -> dict[str, Any] | None:
    """UserPromptSubmit: the bounded context, or ``None`` to print nothing."""
    turn = build_turn(event, host=host, **binding)
    carry_on_settlements(turn)
    outcome = call_pre_turn(make_plugin_manager(), turn)
    record_pre_turn(host, outcome)
    projection = project_contributions(outcome.payload)
    # With no usable Goal there is nowhere to remember delivered items: all are rendered.
    store = binding_store(turn.registry, binding["goal_id"])
    remembered = None
    if store is not None and turn.host_session_id:
        name = path_token(turn.host_session_id, "session") + ".json"
        remembered = (store, store.path("injected", host, name))
    delivered = delivered_refs(remembered[0].read(remembered[1])) if remembered else set()
    rendering = render(without_refs(projection, delivered))
    if not rendering.text:
        return None
    if remembered and rendering.item_refs:
        sidecars, path = remembered
        sidecars.update(
            path,
            lambda doc: {
                "schema_version": INJECTED_SCHEMA,
                "host": host,
                "item_refs": sorted({*delivered_refs(doc), *rendering.item_refs}),
            },
        )
    text = rendering.text
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}


def post_settlement(
    event: dict[str, Any],
    *,
    validation_argv: list[str] | None,
    validation_timeout: int,
    host: str = HOST,
    **binding: Any,
) -> dict[str, Any]:
    """Stop: spool the successful turn and settle it detached; Codex gets ``{}``."""
    turn = build_turn(event, host=host, **binding)
    message = event.get("last_assistant_message")
    message = message if isinstance(message, str) else None
    settle(
        make_plugin_manager(),
        turn,
        final_message=message,
        validation_argv=validation_argv,
        validation_timeout=validation_timeout,
        detach=True,
    )
    return {}
