"""``turn-hooks memory forget|restore|rate|import``: the ``memory`` commands that write.

Each checks everything first (every ref, every line) and writes nothing on bad
input; each has a ``--dry-run`` that plans without a write. Their receipts are public:
refs and counts, never a record's text.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from capabilities.reward_memory.cli._common import (
    Result,
    add_binding_arguments,
    resolve_binding,
)


def _provider_for(resolution: Any, *, dry_run: bool) -> Any:
    from capabilities.providers.factory import build_provider

    return lambda binding: build_provider(binding, repo=resolution.repo, dry_run=dry_run)


def _lookup_for(resolution: Any) -> Any:
    """Providers that only read: finding what a REF names creates nothing."""
    from capabilities.providers.factory import build_provider

    return lambda binding: build_provider(binding, repo=resolution.repo, read_only=True)


def _by_ref(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """Run :mod:`~capabilities.reward_memory.curation.forget`'s ``name`` on the REFs."""
    from capabilities.reward_memory.curation import forget

    resolution = resolve_binding(args)
    change = getattr(forget, name)
    receipt: dict[str, Any] = change(
        resolution,
        list(args.refs),
        provider_for=_provider_for(resolution, dry_run=args.dry_run),
        execute=not args.dry_run,
        lookup_for=_lookup_for(resolution),
    )
    return receipt


def memory_forget(args: argparse.Namespace) -> Result:
    """``memory forget REF...``: the owner's retirement with exact readback, one step."""
    return _by_ref(args, "forget"), "Memory forget"


def memory_restore(args: argparse.Namespace) -> Result:
    """``memory restore REF...``: forgotten memories back, with exact readback."""
    return _by_ref(args, "restore"), "Memory restore"


def memory_rate(args: argparse.Namespace) -> Result:
    """``memory rate REF LABEL --reason TEXT``: the owner's correction, read back exactly."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.memory.inventory import all_records, find
    from capabilities.reward_memory.turn.rating import rate

    v.compact(args.reason, 500, "reason")  # checked before any provider call
    resolution = resolve_binding(args)
    records = all_records(resolution, _lookup_for(resolution))
    stored = find(records, args.ref)
    status = resolution.status
    receipt = rate(
        resolution.sidecars,
        goal_id=status["goal_id"],
        agent_id=status["agent_id"],
        stored=stored,
        label=args.label,
        reason=args.reason,
        created_at=v.now_timestamp(),
    )
    return receipt, "Memory rate"


def _progress(done: int, total: int) -> None:
    """One rewritten line on stderr, only when stderr is a terminal."""
    sys.stderr.write(f"\rimporting {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def memory_import(args: argparse.Namespace) -> Result:
    """``memory import FILE``: canonical records back, through ingest's guards."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.memory.transfer import import_records, parse_import
    from sidecars import read_source
    from turn_hooks import InvalidInputError

    try:
        # An export of a large corpus is bigger than one JSON input: 64 MiB bound.
        data = read_source(args.input, limit=64 * 1024 * 1024)
    except InvalidInputError as exc:
        raise v.RewardMemoryInputError(
            exc.message, reason_code=exc.reason_code, field="input"
        ) from exc
    resolution = resolve_binding(args)
    parsed = parse_import(resolution, data)
    interactive = sys.stderr is not None and sys.stderr.isatty()
    receipt = import_records(
        resolution,
        parsed,
        provider_for=_provider_for(resolution, dry_run=args.dry_run),
        execute=not args.dry_run,
        observed_at=v.now_timestamp(),
        progress=_progress if interactive and parsed else None,
    )
    return receipt, "Memory import"


def _ref_command(
    sub: argparse._SubParsersAction[Any],
    name: str,
    *,
    help: str,
    description: str,
    dry_run: str,
    handler: Any,
) -> None:
    """One ``memory`` command that takes REFs, the binding options and ``--dry-run``."""
    parser = sub.add_parser(name, help=help, description=description)
    parser.add_argument("refs", nargs="+", metavar="REF", help="memory_ref (or unique prefix)")
    add_binding_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help=dry_run)
    parser.set_defaults(handler=handler)


def add_changes(sub: argparse._SubParsersAction[Any]) -> None:
    """``memory forget``, ``memory restore``, ``memory rate`` and ``memory import``."""
    _ref_command(
        sub,
        "forget",
        help="retire memories now, with exact readback (the owner's retirement)",
        description="Each REF (a memory_ref from `memory list`, or a unique prefix) is read "
        "exactly, replaced by the same record marked retired and read back. Recall stops "
        "returning it; `memory list` still shows it as retired. Its lesson is remembered "
        "as forgotten, so a later Turn that draws the same lesson does not learn it again "
        "(the hook log says experience_forgotten). Every REF is resolved before anything "
        "is written; `memory restore` undoes it.",
        dry_run="say what would be retired",
        handler=memory_forget,
    )
    _ref_command(
        sub,
        "restore",
        help="bring forgotten memories back, with exact readback (undoes `forget`)",
        description="Each REF (a memory_ref of a forgotten memory, from `memory list --state "
        "retired`, or a unique prefix) is written back as the active record it was, read "
        "back exactly, and its lesson is no longer remembered as forgotten: recall returns "
        "it again and a Turn may learn that lesson again. A REF that names nothing "
        "(memory_ref_unknown) or a memory that is not forgotten (memory_not_forgotten: "
        "active, or retired by review) exits 2 and nothing is written.",
        dry_run="say what would be restored",
        handler=memory_restore,
    )
    rater = sub.add_parser(
        "rate",
        help="say whether a memory helped: the owner's correction, the strongest evidence",
        description="Records your judgement of REF (a memory_ref from `memory list`, or a "
        "unique prefix) as an owner_correction utility observation, bound to the latest "
        "Turn that applied the memory and had a verified outcome, and reads it back "
        "exactly. It outweighs every weaker judgement; with `init --ranking utility` a "
        "harmful memory ranks below an equally relevant one, and a harmful rating "
        "proposes review (never a deletion: `memory forget` is yours to run). A memory no "
        "Turn applied yet exits 2 (memory_application_unknown).",
    )
    rater.add_argument("ref", metavar="REF", help="memory_ref (or unique prefix)")
    rater.add_argument("label", choices=("helpful", "harmful", "neutral"))
    rater.add_argument("--reason", required=True, help="one sentence why (kept private)")
    add_binding_arguments(rater)
    rater.set_defaults(handler=memory_rate)
    importer = sub.add_parser(
        "import",
        help="write exported records into this binding, through ingest's guards",
        description="Reads JSON Lines written by `memory export` (from either provider). "
        "Every line is checked first (record contract, standing policy, experience "
        "quality, activation identity); one bad line writes nothing. A record already "
        "stored is left as it is; a different record at its address is a conflict, except "
        "the same record as `memory forget` left it: importing an export taken before the "
        "forget restores it.",
    )
    importer.add_argument("input", help="the JSON Lines file, or - for stdin")
    add_binding_arguments(importer)
    importer.add_argument("--dry-run", action="store_true", help="check and plan, write nothing")
    importer.set_defaults(handler=memory_import)
