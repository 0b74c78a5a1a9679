"""The Codex App host's settlement ledger: writeback, then quota spend (turn-lifecycle §9).

The App settles a Turn in two steps that may come in either order: its refresh records
the settled Turn (the writeback), and its quota owner records the spend of the
effect, once. Each step goes into a small 0600 ledger sidecar per effect and is read
back. Once both read back, the App settles like every other host: it builds the
settlement evidence, with the quota spend in it, and dispatches ``post_settlement``
through :func:`turn_hooks.call_post_settlement`. A second spend of the same effect
finds it recorded, so nothing is charged twice.

An effect is keyed by ``[goal_id, agent_id, todo_id, turn_id, effect_id]``
(identities.md §9). Its Turn carries the Todo as the host session and ``effect_id``
as the Turn key, which is the key the settled event is learned under.

The ``codex-app`` commands belong to the capability that stages the result at
refresh; the command line hands them this module (``args.settlement_hosts``), so a
capability never imports a host.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pluggy

from hosts.adapters.generic import build_turn
from hosts.settlement.settlement import settlement_store
from sidecars import SidecarStore, goal_agent_parts, path_token
from turn_hooks import (
    Settlement,
    SettlementEvidence,
    TurnContext,
    call_post_settlement,
    settlement_result_fields,
)
from turn_hooks.canonical import hex_n, s4

HOST = "codex_app"
LEDGER_SCHEMA = "turn_hooks_app_settlement_v0"
LEDGER_DIR = "codex-app-settlements"
STEPS = ("writeback", "spend")
"""The settlement steps of one effect, in the App's usual order."""
READ_BACK = {"ok": True, "appended": True}
"""The evidence of a step that was recorded and read back."""


def default_effect(turn_id: str) -> str:
    """The effect a Turn settles when the App names none: its writeback spool id."""
    return f"writeback:{turn_id}"


def effect_key(goal_id: str, agent_id: str, todo_id: str, turn_id: str, effect_id: str) -> str:
    """The effect's key, ``app:`` and 20 hex digits of S4 over the five ids (§9)."""
    return "app:" + hex_n(s4([goal_id, agent_id, todo_id, turn_id, effect_id]), 20)


def app_turn(
    *, registry: str, goal_id: str, agent_id: str, todo_id: str, turn_id: str, effect_id: str
) -> TurnContext:
    """The Turn an App effect settles: the Todo is its session, the effect its key."""
    turn = build_turn(
        {"turn_id": turn_id, "session_id": todo_id},
        host=HOST,
        goal_id=goal_id,
        agent_id=agent_id,
        registry=registry,
    )
    return dataclasses.replace(turn, turn_key=effect_id)


def _key_of(turn: TurnContext) -> str:
    return effect_key(
        turn.goal_id or "",
        turn.agent_id or "",
        turn.host_session_id or "",
        turn.host_turn_id,
        turn.turn_key,
    )


def _store(turn: TurnContext) -> SidecarStore:
    return settlement_store(turn.registry, turn.goal_id)


def ledger_path(store: SidecarStore, goal_id: str, agent_id: str, key: str) -> Path:
    """``codex-app-settlements/T(goal)/T(agent)/T(key).json``: one effect's ledger."""
    return store.path(
        *goal_agent_parts(LEDGER_DIR, goal_id, agent_id),
        path_token(key, "candidate") + ".json",
    )


def _path(turn: TurnContext) -> tuple[SidecarStore, Path]:
    store = _store(turn)
    return store, ledger_path(store, turn.goal_id or "", turn.agent_id or "", _key_of(turn))


def record_step(turn: TurnContext, step: str) -> tuple[bool, bool]:
    """Record ``writeback`` or ``spend`` of the Turn's effect once, and read it back.

    Returns (read back as appended, recorded by this call): a second spend of the same
    effect finds it already recorded, so nothing is charged twice.
    """
    store, path = _path(turn)
    recorded = False

    def change(ledger: dict[str, Any] | None) -> dict[str, Any] | None:
        nonlocal recorded
        ledger = ledger or {"schema_version": LEDGER_SCHEMA, "candidate_id": _key_of(turn)}
        if ledger.get(step, {}).get("appended") is True:
            return None
        recorded = True
        return {**ledger, step: {**READ_BACK, "recorded_at": _now()}}

    store.update(path, change)
    return ledger_state(turn)[step], recorded


def ledger_state(turn: TurnContext) -> dict[str, bool]:
    """Which settlement steps of the Turn's effect read back as appended."""
    store, path = _path(turn)
    ledger = store.read(path) or {}
    return {step: ledger.get(step, {}).get("appended") is True for step in STEPS}


def settle_if_spent(pm: pluggy.PluginManager, turn: TurnContext) -> dict[str, Any] | None:
    """Dispatch ``post_settlement`` once both steps of the effect read back; else ``None``.

    The evidence is the ledger's: the writeback and the quota spend, both read back.
    The App runs no validator of its own at this point (a capability that needs one
    ran it when it staged the result at refresh), so ``task_validation`` is empty, and
    the host result holds every declared field empty: the text went to the stage.
    """
    if not all(ledger_state(turn).values()):
        return None
    settlement = Settlement(
        host_result=dict.fromkeys(settlement_result_fields(pm), ""),
        evidence=SettlementEvidence(writeback=dict(READ_BACK), quota_spend=dict(READ_BACK)),
    )
    return call_post_settlement(pm, turn, settlement)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
