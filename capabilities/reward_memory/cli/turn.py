"""``reconcile`` and ``codex-app``: the Turn's journals and the Codex App two-phase path.

The commands of :mod:`capabilities.reward_memory.turn`, for operators and for the
Codex App, whose host calls them instead of a hook. ``codex-app`` stages the
reflection here and leaves the writeback and spend ledger, and the settlement, to the
App host that the command line hands it (``args.settlement_hosts``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from capabilities.reward_memory.cli._common import (
    Result,
    add_binding_arguments,
    json_argv,
    registry_path,
    resolve_binding,
)


def reconcile_journals(args: argparse.Namespace) -> Result:
    """``reconcile``: retry pending Turn journals of the current binding (at most 3)."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.turn.reconcile import reconcile

    resolution = resolve_binding(args)
    return reconcile(
        resolution,
        provider_for=lambda binding: build_provider(binding, repo=resolution.repo),
        limit=args.limit,
    ), "Reward memory reconciliation"


def _app_host(args: argparse.Namespace) -> Any:
    """The App host the command line hands its commands: it keeps the writeback and
    spend ledger and settles through ``post_settlement`` (``hosts.adapters.codex_app``)."""
    hosts = getattr(args, "settlement_hosts", None) or {}
    host = hosts.get("codex_app")
    if host is None:  # a parser built without the composition root
        from capabilities.reward_memory.contract import values as v

        v.fail("codex_app", "no App host is wired into this command line", "app_host_missing")
    return host


def _app_turn(args: argparse.Namespace, host: Any, resolution: Any) -> Any:
    from turn_hooks.errors import InvalidInputError

    # An empty or blank id would name one candidate for every such Turn.
    for field in ("todo_id", "turn_id", "effect_id"):
        value = getattr(args, field)
        if value is not None and not value.strip():
            raise InvalidInputError(
                f"--{field.replace('_', '-')} is empty", reason_code="app_id_empty", field=field
            )
    status = resolution.status
    return host.app_turn(
        registry=registry_path(args),
        goal_id=status["goal_id"],
        agent_id=status["agent_id"],
        todo_id=args.todo_id,
        turn_id=args.turn_id,
        effect_id=args.effect_id or host.default_effect(args.turn_id),
    )


def _finalize_if_settled(host: Any, turn: Any) -> dict[str, Any] | None:
    """Reward memory's receipt from the App's settlement, once writeback and spend read
    back (``None`` before that, or when nothing is staged)."""
    from capabilities.reward_memory.turn.app import INGEST_HOOK_ID
    from turn_hooks import make_plugin_manager

    receipt = host.settle_if_spent(make_plugin_manager(), turn)
    if receipt is None:
        return None
    result: dict[str, Any] | None = (receipt.get("results") or {}).get(INGEST_HOOK_ID)
    return result


def _refuse_unbounded_reflection(text: str | None) -> None:
    """Refuse, as ``reflection_invalid``, reflection argv that nests too deeply or holds
    a number literal too long for any reader; everything else is the stage's to judge."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.contract.experience import MAX_REFLECTION_BYTES
    from turn_hooks import InvalidInputError, loads_bounded

    if not text or len(text.encode("utf-8")) > MAX_REFLECTION_BYTES:
        return
    try:
        loads_bounded(text)
    except InvalidInputError as exc:
        if exc.reason_code in {"input_too_deep", "input_number_too_long"}:
            v.fail("reward_memory_reflection_json", "is not bounded JSON", "reflection_invalid")


def app_refresh_state(args: argparse.Namespace) -> Result:
    """``codex-app refresh-state``: record the settled Turn, stage and validate its reflection."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.turn.app import MAX_TIMEOUT, declaration, stage

    if not 1 <= args.validation_timeout_seconds <= MAX_TIMEOUT:
        v.fail(
            "validation_timeout_seconds",
            f"must be between 1 and {MAX_TIMEOUT}: the Codex App validates inside this "
            "call, under its own deadline; a longer suite wants a narrower check here",
            "validation_timeout_invalid",
        )
    host = _app_host(args)
    resolution = resolve_binding(args)
    turn = _app_turn(args, host, resolution)
    argv = None
    if args.validation_command_json:
        argv = json_argv(
            args.validation_command_json,
            "validation_command_json",
            "validation_declaration_invalid",
        )
    declared = declaration(argv, args.validation_timeout_seconds) if argv else None
    _refuse_unbounded_reflection(args.reward_memory_reflection_json)
    workspace = Path(args.validation_workspace) if args.validation_workspace else resolution.repo
    staged = stage(
        resolution,
        todo_id=args.todo_id,
        turn_instance_id=args.turn_id,
        effect_id=turn.turn_key,
        reflection_json=args.reward_memory_reflection_json,
        declared=declared,
        workspace=workspace,
        restage=args.restage,
        application_json=args.reward_memory_application_json,
    )
    if resolution.status["available"]:
        host.record_step(turn, "writeback")
    return {
        "ok": True,
        "schema_version": "turn_hooks_codex_app_refresh_v0",
        "stage": staged,
        "finalize": _finalize_if_settled(host, turn),
    }, "Codex App refresh"


def app_spend_slot(args: argparse.Namespace) -> Result:
    """``codex-app spend-slot``: record the spend once, then finalize a staged candidate."""
    host = _app_host(args)
    resolution = resolve_binding(args)
    turn = _app_turn(args, host, resolution)
    if not args.execute:
        state = host.ledger_state(turn)
        return {
            "ok": True,
            "schema_version": "turn_hooks_codex_app_spend_v0",
            "mode": "preview",
            "already_charged": state["spend"],
            "charged": False,
            "finalize": None,
        }, ("Codex App spend (preview)")
    appended, charged = host.record_step(turn, "spend")
    return {
        "ok": True,
        "schema_version": "turn_hooks_codex_app_spend_v0",
        "mode": "execute",
        "already_charged": appended and not charged,
        "charged": charged,
        "spend_read_back": appended,
        "finalize": _finalize_if_settled(host, turn),
    }, "Codex App spend"


def add_codex_app(commands: argparse._SubParsersAction[Any]) -> None:
    """``turn-hooks codex-app refresh-state|spend-slot`` (a top-level command)."""
    app = commands.add_parser("codex-app", help="Codex App two-phase settlement: stage, then spend")
    sub = app.add_subparsers(dest="codex_app_command", required=True)
    refresh = sub.add_parser("refresh-state", help="record the settled Turn; stage its reflection")
    spend = sub.add_parser("spend-slot", help="record the spend once; finalize a staged candidate")
    for parser in (refresh, spend):
        add_binding_arguments(parser)
        parser.add_argument("--todo-id", required=True, help="the Todo (or thread) id")
        parser.add_argument("--turn-id", required=True, help="the App turn id")
        parser.add_argument("--effect-id", help="settlement effect id (default writeback:<turn>)")
    refresh.add_argument("--reward-memory-reflection-json", help="the v1 reflection JSON text")
    refresh.add_argument(
        "--reward-memory-application-json",
        help="the model's answer on which recalled memories it applied (at most 600 "
        "characters); settled with the Turn's verdict once the spend reads back",
    )
    refresh.add_argument("--validation-command-json", help="the Todo's validator argv as JSON")
    refresh.add_argument(
        "--validation-timeout-seconds",
        type=int,
        default=20,
        metavar="1..29",
        help="the validator's deadline (default 20): the App validates inside this call, "
        "so it stays under the call's own 30 s; a longer one is refused, not cut silently",
    )
    refresh.add_argument("--validation-workspace", help="validator cwd (default: Goal repository)")
    refresh.add_argument(
        "--restage",
        action="store_true",
        help="accept a changed validator declaration for this identity",
    )
    refresh.set_defaults(handler=app_refresh_state)
    spend.add_argument("--execute", action="store_true", help="record the spend (once)")
    spend.set_defaults(handler=app_spend_slot)


def add_reconcile(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory reconcile``."""
    again = sub.add_parser("reconcile", help="retry pending Turn journals of this binding")
    add_binding_arguments(again)
    again.add_argument("--limit", type=int, default=3, help="journals to retry (1..3)")
    again.set_defaults(handler=reconcile_journals)
