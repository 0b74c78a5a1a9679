"""Result values a model staged through a tool call, waiting for the Turn's Stop hook.

A plugin may declare a tool for a result field (``SettlementRegistration.result_tools``);
``turn-hooks mcp serve`` offers it to the model, and a call stages the value here
instead of the model writing the field's block into its final answer, which the user
would see. The Stop hook of the same Turn takes what was staged (:func:`take`) and
settles it exactly as a block of the final message: same validator, same receipts.

One sidecar per host session: ``staged-results/T(goal)/T(agent)/T(session).json``,
0600 in 0700 directories, replaced atomically under its lock. Each field keeps the
latest value staged with the host's Turn id when the host names it (Codex sends
``_meta["x-codex-turn-metadata"]`` with ``session_id`` and ``turn_id`` on every tool
call). A value staged for another Turn of the session is dropped, never settled for
this one. Claude Code names no Turn but gives its MCP servers the session
(``CLAUDE_CODE_SESSION_ID``): its values carry no Turn id. So that a value can only be
settled by the Turn it was staged in, every PreTurn drops what its session (and the
``session-unknown`` sidecar, used by a host that names no session) still holds
(:func:`discard`): what a Stop then finds was staged after this Turn's prompt. Each
Stop clears what it took. Two sessions of one Goal/Agent on a host that names neither
session nor Turn could take each other's value; Codex and Claude Code both name one.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from sidecars import SidecarStore, goal_agent_parts, path_token

STAGED_SCHEMA = "turn_hooks_staged_results_v0"
STAGED_DIR = "staged-results"
UNKNOWN_SESSION = "session-unknown"


def staged_path(store: SidecarStore, goal_id: str, agent_id: str, session_id: str | None) -> Any:
    """The staging sidecar of one host session (or of :data:`UNKNOWN_SESSION`)."""
    name = path_token(session_id, UNKNOWN_SESSION) if session_id else UNKNOWN_SESSION
    return store.path(*goal_agent_parts(STAGED_DIR, goal_id, agent_id), name + ".json")


def stage(
    store: SidecarStore,
    *,
    goal_id: str,
    agent_id: str,
    session_id: str | None,
    turn_id: str | None,
    field: str,
    value: str,
) -> None:
    """Keep ``value`` as the field's staged value for the session's Turn (latest wins).

    :raises SidecarError: the sidecar could not be read or written (typed reason).
    """
    path = staged_path(store, goal_id, agent_id, session_id)
    with store.transaction(path) as held:
        document = held.read() or {}
        results = document.get("results")
        results = dict(results) if isinstance(results, dict) else {}
        results[field] = {
            "value": value,
            "turn_id": turn_id,
            "staged_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        held.write({"schema_version": STAGED_SCHEMA, "results": results})


def take(
    store: SidecarStore,
    *,
    goal_id: str | None,
    agent_id: str | None,
    session_id: str | None,
    turn_id: str,
    fields: dict[str, str],
) -> dict[str, str]:
    """The values staged for this Turn, by field; the sidecars they were in are removed.

    Both the session's sidecar and the :data:`UNKNOWN_SESSION` one are read. A value
    whose Turn id names another Turn is dropped. Only declared ``fields`` are taken.
    """
    if not (goal_id and agent_id):
        return {}
    taken: dict[str, str] = {}
    for session in dict.fromkeys((session_id, None)):
        path = staged_path(store, goal_id, agent_id, session)
        if not os.path.lexists(path):
            continue  # nothing staged: a Stop writes nothing (no lock, no directory)
        with store.transaction(path) as held:
            results = (held.read() or {}).get("results")  # gone since: nothing to take
            for field, entry in (results if isinstance(results, dict) else {}).items():
                if field not in fields or field in taken or not isinstance(entry, dict):
                    continue
                staged_turn, value = entry.get("turn_id"), entry.get("value")
                if isinstance(value, str) and staged_turn in (None, turn_id):
                    taken[field] = value
        store.delete(path)
    return taken


def discard(store: SidecarStore, goal_id: str, agent_id: str, session_id: str | None) -> None:
    """Drop the values staged for a session (and under :data:`UNKNOWN_SESSION`) before a
    Turn starts; a sidecar that does not exist costs one ``lstat``."""
    for session in dict.fromkeys((session_id, None)):
        path = staged_path(store, goal_id, agent_id, session)
        if os.path.lexists(path):
            store.delete(path)
