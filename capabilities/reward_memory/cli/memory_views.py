"""``turn-hooks memory list|show|search|export``: a binding's memories, read only.

These views exist so that a person can see what was learned. They print the
records' own text (summaries, experience) on the command's output, and nowhere
else: no receipt, sidecar or hook log holds it. Each document says so with
``content_exposed: true``; ``export`` writes the text to the file it is given and
prints only counts.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from capabilities.reward_memory.cli._common import (
    Result,
    add_binding_arguments,
    resolve_binding,
)

LIST_SCHEMA = "turn_hooks_memory_list_v0"
SHOW_SCHEMA = "turn_hooks_memory_show_v0"
SEARCH_SCHEMA = "turn_hooks_memory_search_v0"
DEFAULT_SURFACE = "agent_workflow.turn_admission"


def _records(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.memory.inventory import all_records

    resolution = resolve_binding(args)
    # Reads only: a binding without a store yet lists as empty and creates nothing.
    return resolution, all_records(
        resolution, lambda binding: build_provider(binding, repo=resolution.repo, dry_run=True)
    )


def memory_list(args: argparse.Namespace) -> Result:
    """``memory list``: every record, active and retired, one row each."""
    from capabilities.reward_memory.memory.inventory import row, state_counts

    _resolution, records = _records(args)
    if args.state != "all":
        shown = [r for r in records if r.state == args.state]
    else:
        shown = records
    # Newest first: what was learned lately is what a person looks for.
    shown = sorted(shown, key=_activated_at, reverse=True)
    counts = state_counts(records)
    proposals = _review_proposals(_resolution)
    document = {
        "ok": True,
        "schema_version": LIST_SCHEMA,
        "record_count": len(records),
        "active_count": counts["active"],
        "retired_count": counts["retired"],
        "shown_count": len(shown),
        "content_exposed": True,
        "records": [_with_review(row(r), r, proposals) for r in shown],
        # Review proposals from the memories' utility (issue 39): never a deletion.
        "utility_review_count": sum(1 for r in records if _digest(r) in proposals),
    }
    if not records:
        args.markdown_note = "No memory yet: nothing has been learned for this binding."
    return document, "Memories"


def _digest(stored: Any) -> str:
    from capabilities.reward_memory.contract.identities import memory_ref_digest

    return memory_ref_digest(stored.uri)


def _review_proposals(resolution: Any) -> dict[str, list[str]]:
    from capabilities.reward_memory.turn.rating import review_proposals

    status = resolution.status
    if not status.get("goal_id") or not status.get("agent_id"):
        return {}
    return review_proposals(resolution.sidecars, status["goal_id"], status["agent_id"])


def _with_review(
    shown: dict[str, Any], stored: Any, proposals: dict[str, list[str]]
) -> dict[str, Any]:
    actions = proposals.get(_digest(stored))
    return {**shown, "utility_review": ", ".join(actions)} if actions else shown


def _activated_at(stored: Any) -> datetime:
    """When a record was activated; a record without a readable time sorts last."""
    value = stored.record.get("activated_at")
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None:
        return datetime.min.replace(tzinfo=UTC)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def memory_show(args: argparse.Namespace) -> Result:
    """``memory show REF``: one record in full."""
    from capabilities.reward_memory.memory.inventory import detail, find
    from capabilities.reward_memory.turn.rating import utility_state

    resolution, records = _records(args)
    stored = find(records, args.ref)
    status = resolution.status
    document = {
        "ok": True,
        "schema_version": SHOW_SCHEMA,
        "content_exposed": True,
        "record": detail(stored),
        # Estimate, support per label and tier, last observed, review (issue 39).
        "utility": utility_state(
            resolution.sidecars, status["goal_id"], status["agent_id"], _digest(stored)
        ),
    }
    return document, f"Memory {stored.memory_ref}"


def memory_search(args: argparse.Namespace) -> Result:
    """``memory search QUERY``: the recall a Turn would make, without a Turn."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.memory.hook import run_automatic_recall
    from capabilities.reward_memory.memory.inventory import bound_config
    from capabilities.reward_memory.memory.recall import failed_attempt_reason

    resolution = resolve_binding(args)
    config = bound_config(resolution)
    surface = args.surface_id or (
        DEFAULT_SURFACE
        if DEFAULT_SURFACE in config["surfaces"]
        else next(iter(sorted(config["surfaces"])), "")
    )
    if surface not in config["surfaces"]:
        v.fail("surface_id", "is not a configured surface", "surface_not_configured")
    v.compact(args.query, 500, "query")
    result = run_automatic_recall(
        resolution,
        surface_id=surface,
        query=args.query,
        query_summary="memory search",
        revision_ref=None,
        observed_at=None,
    )
    public = result.public()
    if public.get("status") == "guard_rejected":
        reason = public.get("boundary_detail_code") or public["reason_code"]
        v.fail("query", "was rejected by the recall guard", reason)
    rows = []
    for session in result.sessions:
        for item in session.items:
            record = item.record
            scope = record.get("scope") or {}
            rows.append(
                {
                    "memory_ref": item.public["memory_ref"],
                    "class": record.get("target_class"),
                    "summary": record.get("content_summary"),
                    "surface": ", ".join(scope.get("surface_ids") or []),
                    "activated_at": record.get("activated_at"),
                    "turn": scope.get("revision_ref"),
                    "corpus_id": record.get("corpus_id"),
                }
            )
    recall_status = public.get("status")
    if recall_status in {"disabled", "provider_unavailable"}:
        status = str(recall_status)
    else:
        # The recall's own words for "nothing" (not_available, recall_empty) read
        # like an unavailable provider; this command says what a person asked.
        status = "matched" if rows else "no_match"
    document = {
        "ok": True,
        "schema_version": SEARCH_SCHEMA,
        "status": status,
        "surface_id": surface,
        "recall_status": recall_status,
        "reason_code": public.get("reason_code") or failed_attempt_reason(public),
        "result_count": len(rows),
        "content_exposed": True,
        "results": rows,
    }
    if status == "disabled":
        args.markdown_note = (
            "Automatic recall is disabled for this binding: a Turn recalls nothing."
        )
    elif status == "provider_unavailable":
        args.markdown_note = "The memory provider is unavailable: nothing was searched."
    elif status == "no_match":
        args.markdown_note = "No memory matches this query."
    return document, "Memory search"


def memory_export(args: argparse.Namespace) -> Result:
    """``memory export``: JSON Lines of the canonical records, to a file or stdout."""
    from pathlib import Path

    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.memory.transfer import export_lines, export_receipt
    from sidecars import FILE_MODE, atomic_write_text

    target = None
    if args.output != "-":
        # Checked before any provider call: a bad output path costs nothing.
        target = Path(args.output)
        try:
            if target.is_symlink() or (target.exists() and not target.is_file()):
                v.fail(
                    "output",
                    "must be a regular file (not a directory or a link)",
                    "export_output_invalid",
                )
            parent_ok = target.parent.is_dir()
        except OSError:  # a name the system refuses (too long, say)
            parent_ok = False
        if not parent_ok:
            v.fail("output", "must be in an existing directory", "export_output_invalid")
    _resolution, records = _records(args)
    lines = export_lines(records)
    if target is None:
        # stdout is the export itself (private text, for a pipe or the terminal), so
        # the receipt goes to stderr, where a pipe into `memory import -` ignores it.
        _write_stdout("".join(lines))
        args.receipt_to_stderr = True
    else:
        try:
            atomic_write_text(target, "".join(lines), mode=FILE_MODE)
        except OSError:  # a full disk, a read-only directory: the old file stays whole
            v.fail("output", "could not be written", "export_output_unwritable")
    return export_receipt(records), "Memory export"


def _write_stdout(text: str) -> None:
    import sys

    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream, such as a test's StringIO
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def add_views(sub: argparse._SubParsersAction[Any]) -> None:
    """``memory list``, ``show``, ``search`` and ``export``."""
    listing = sub.add_parser(
        "list", help="every memory, active and retired, newest first (private text)"
    )
    add_binding_arguments(listing)
    listing.add_argument("--state", choices=("all", "active", "retired"), default="all")
    listing.set_defaults(handler=memory_list)
    show = sub.add_parser("show", help="one memory in full (private text)")
    show.add_argument("ref", help="a memory_ref from `memory list` (or a unique prefix)")
    add_binding_arguments(show)
    show.set_defaults(handler=memory_show)
    search = sub.add_parser("search", help="recall without a Turn (private text)")
    search.add_argument("query", help="what a Turn would ask")
    add_binding_arguments(search)
    search.add_argument("--surface-id", help="the surface to recall for (default: the first)")
    search.set_defaults(handler=memory_search)
    export = sub.add_parser(
        "export",
        help="write the canonical records as JSON Lines",
        description="Writes one canonical record per line to --output (mode 0600), or to "
        "stdout with `-`; prints counts only (on stderr with `-`). The file holds the "
        "memories' private text.",
    )
    add_binding_arguments(export)
    export.add_argument("--output", required=True, help="file to write, or - for stdout")
    export.set_defaults(handler=memory_export)
