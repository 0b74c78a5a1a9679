"""``turn-hooks status``: one screen of what is installed, bound and happening.

The host half (hooks installed per host, the hook log, the settlement queue) is read
by ``hosts/``, which hands its read-only views to this command through the parsed
arguments (``host_status``, ``hook_log``, ``settlement_view``), as it hands plugin
commands their settlement hosts: a capability never imports a host. The
reward-memory half is read here, from the binding and its sidecars, with no provider
call: the binding's state, the last recall and the last settlement (when and what),
and the pending journals. The latest saved conformance run per host
(``conformance_reports``) is shown in brief.

Everything shown is public: ids, states, reason codes and times. The journals hold
the reflection text; only their status, Turn key and time are read out of them.
Why the last validation failed is public too (reason code, exit status, when); what
the validator printed is not, and is shown only to a person who asks for it with
``--validation-output`` (the tail the host keeps in its private spool).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from capabilities.providers.semantic import readiness
from capabilities.reward_memory.cli._common import (
    Result,
    add_binding_arguments,
    resolve_binding,
)

SCHEMA = "turn_hooks_status_v0"
RECENT_REASONS = 5
_BINDING_FIELDS = (
    "goal_id",
    "agent_id",
    "status",
    "available",
    "reason_code",
    "provider_id",
    "corpus_count",
    "automatic_recall",
    "automatic_ingest",
)

_CONFORMANCE_FIELDS = (
    "host",
    "automatic_recall",
    "automatic_ingest",
    "partial",
    "ok",
    "date",
    "reason_code",
)
"""What ``status`` shows of each host's latest conformance run (``conformance report``
has the rest)."""


def _last_recall(resolution: Any) -> dict[str, Any] | None:
    from capabilities.reward_memory.turn.pre_turn import receipt_path
    from turn_hooks import SidecarError

    status, store = resolution.status, resolution.sidecars
    try:
        receipt = store.read(receipt_path(store, status["goal_id"], status["agent_id"]))
    except SidecarError as exc:
        return {"reason_code": exc.reason_code}
    if not receipt:
        return None
    context = receipt.get("context") if isinstance(receipt.get("context"), dict) else {}
    return {
        "observed_at": receipt.get("observed_at"),
        "status": receipt.get("source_status"),
        "reason_code": receipt.get("reason_code"),
        "guidance_count": len(context.get("guidance") or []),
        "provider_call_count": receipt.get("provider_call_count"),
    }


def _journals(resolution: Any) -> tuple[dict[str, Any] | None, int, int]:
    """The newest settlement journal (public fields), the pending and unreadable counts."""
    from capabilities.reward_memory.turn.journal import JOURNAL_DIR
    from sidecars import goal_agent_parts
    from turn_hooks import SidecarError

    status, store = resolution.status, resolution.sidecars
    newest: dict[str, Any] | None = None
    pending = unreadable = 0
    try:
        paths = list(
            store.iter_documents(
                *goal_agent_parts(JOURNAL_DIR, status["goal_id"], status["agent_id"])
            )
        )
    except SidecarError:
        return None, 0, 1
    for path in paths:
        try:
            journal = store.read(path) or {}
        except SidecarError:
            unreadable += 1
            continue
        pending += journal.get("status") == "pending"
        when = str(journal.get("observed_at") or "")
        if newest is None or when > str(newest["observed_at"] or ""):
            receipt = journal.get("public_receipt")
            receipt = receipt if isinstance(receipt, dict) else {}
            newest = {
                "observed_at": journal.get("observed_at"),
                "turn_key": journal.get("turn_key"),
                "journal_status": journal.get("status"),
                "ingest_status": receipt.get("status"),
                "reason_code": receipt.get("reason_code"),
                "attempt_count": journal.get("attempt_count"),
            }
    return newest, pending, unreadable


def _utility(resolution: Any) -> dict[str, Any]:
    """The ranking in force and the memories whose utility proposes review (issue 39)."""
    from capabilities.reward_memory.turn.rating import review_proposals
    from capabilities.reward_memory.turn.settings import ranking_of
    from turn_hooks import SidecarError

    status, store = resolution.status, resolution.sidecars
    try:
        proposals = review_proposals(store, status["goal_id"], status["agent_id"])
    except SidecarError:
        proposals = {}
    return {
        "ranking": ranking_of(store, status["goal_id"], status["agent_id"]),
        "utility_review_count": len(proposals),
    }


def _store(resolution: Any) -> dict[str, Any] | None:
    """The embedded store's state, its files checked as a recall would open them (read
    only, nothing created; no network): ``available`` or ``unavailable`` with the
    store's own reason code (``embedded_store_corrupt``, ...). ``None`` for OpenViking,
    whose state a provider call would tell (``reward-memory health-check``)."""
    binding = _embedded(resolution)
    if binding is None:
        return None
    from capabilities.providers.factory import build_provider

    preflight = build_provider(binding, repo=resolution.repo, dry_run=True).preflight(timeout=1.0)
    return {
        "state": "available" if preflight.ok else "unavailable",
        "reason_code": preflight.reason_code,
    }


def _semantic(resolution: Any) -> dict[str, Any]:
    """:func:`readiness`, with the embedded store's cache checked when there is one."""
    store = None if resolution is None else _store_directory(resolution)
    return readiness(directory=store)


def _embedded(resolution: Any) -> dict[str, Any] | None:
    """The binding's provider binding when it is the embedded store, else ``None``."""
    config = resolution.config
    binding = config.get("project_provider_binding") if isinstance(config, dict) else None
    if not isinstance(binding, dict) or binding.get("provider_id") != "embedded_sqlite":
        return None
    return binding


def _store_directory(resolution: Any) -> Path | None:
    if _embedded(resolution) is None:
        return None
    from capabilities.providers.factory import embedded_path

    return embedded_path(resolution.repo).parent


def _binding(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    from turn_hooks import TurnHooksError

    try:
        resolution = resolve_binding(args)
    except TurnHooksError as exc:
        # status is for looking: an unnamed or broken binding is a state, not an exit 2.
        return {"state": "unresolved", "reason_code": exc.reason_code}, None
    status = resolution.status
    view: dict[str, Any] = {"state": "resolved"}
    view.update({key: status.get(key) for key in _BINDING_FIELDS})
    if status.get("goal_id") is None:
        return view, resolution
    store = _store(resolution)
    if store is not None:
        view["store"] = store
    settlement, pending, unreadable = _journals(resolution)
    view["last_recall"] = _last_recall(resolution)
    view["last_settlement"] = settlement
    view["pending_journal_count"] = pending
    view["unreadable_journal_count"] = unreadable
    view.update(_utility(resolution))
    host_view = getattr(args, "settlement_view", None)
    if host_view is not None:  # the host's queue: what a killed Stop hook left
        output = {"output": True} if getattr(args, "validation_output", False) else {}
        view.update(host_view(args.registry, status["goal_id"], status["agent_id"], **output))
        last = view.get("last_validation")
        if isinstance(last, dict) and last.get("validator_status") in ("failed", "inconclusive"):
            view["next_step"] = (
                "the validator did not pass: `turn-hooks status --validation-output` shows "
                "the end of what it printed"
            )
    return view, resolution


def status_command(args: argparse.Namespace) -> Result:
    """``status``: hosts, binding, last recall and settlement, recent hook-log reasons."""
    host_status = getattr(args, "host_status", None)
    hook_log = getattr(args, "hook_log", None)
    hosts = (
        host_status(
            home=Path.home(),
            codex_home=Path(args.codex_home) if args.codex_home else None,
            dsh_patch_file=Path(args.dsh_patch_file) if args.dsh_patch_file else None,
        )
        if host_status
        else []
    )
    log = hook_log(RECENT_REASONS) if hook_log else {"entries": [], "reason_counts": {}}
    binding, resolution = _binding(args)
    document = {
        "ok": True,
        "schema_version": SCHEMA,
        "binding": binding,
        "hosts": [
            {key: value for key, value in view.items() if key != "handlers"}
            | {
                "bound_to": ", ".join(
                    sorted({f"{h['goal_id']}/{h['agent_id']}" for h in view["handlers"]})
                ),
                # Which repository each Goal's hooks act in, by name (no paths here);
                # "unscoped": the registry names none, so the hook acts anywhere.
                "acts_in": ", ".join(
                    sorted(
                        {
                            f"{h['goal_id']}: {h['repository'] or 'unscoped'}"
                            + (" (here)" if h["serves_here"] else "")
                            for h in view["handlers"]
                        }
                    )
                ),
            }
            for view in hosts
        ],
        "conformance": _conformance(args),
        "semantic_recall": _semantic(resolution),
        "hook_log": {
            "entry_count": log.get("entry_count", 0),
            "reason_counts": log["reason_counts"],
            "recent": log["entries"],
        },
    }
    last = binding.get("last_validation")
    if args.format == "markdown" and isinstance(last, dict) and "validator_output_tail" in last:
        # Its own fenced block after the tables, as the terminal printed it.
        tail = last.pop("validator_output_tail")
        args.markdown_tail = ("Validator output (its last lines, private)", tail or "(none kept)")
    return document, "turn-hooks status"


def _conformance(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The latest saved conformance run per host, in brief (one small file per host)."""
    reports = getattr(args, "conformance_reports", None)
    lines = reports.summaries() if reports is not None else []
    return [{key: line[key] for key in _CONFORMANCE_FIELDS} for line in lines]


def add_status(commands: argparse._SubParsersAction[Any]) -> None:
    """``turn-hooks status``."""
    parser = commands.add_parser(
        "status",
        help="one screen: hooks per host, the binding, last recall and settlement, hook log",
        description="Read-only. The binding part needs a binding (flags or environment); "
        "without one it says why and shows the rest.",
    )
    add_binding_arguments(parser, required=False)
    # Optional ids, named by the one rule all the same (flags, TURN_HOOKS_*, the
    # repository): status looks where every other command looks.
    parser.set_defaults(discover_binding=True)
    parser.add_argument("--codex-home", help="Codex's home (default $CODEX_HOME or ~/.codex)")
    parser.add_argument("--dsh-patch-file", help="the DSH patch layer `install dsh` wrote")
    parser.add_argument(
        "--validation-output",
        action="store_true",
        help="also print the end of what the last validator run printed (kept privately "
        "in the settlement spool; may show paths): why it failed",
    )
    parser.set_defaults(handler=status_command)
