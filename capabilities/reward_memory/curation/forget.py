"""``memory forget`` and ``memory restore``: the owner's retirement, and its undo.

``operator-control`` + ``retire`` serve an operator acting on someone else's corpus,
with a checkpoint proving their authority. The person running ``memory forget`` on
their own binding is that corpus's owner, so the decision and the write are one
step here: each named record is read exactly, replaced by the same record marked
retired (``retired_reason: owner_forget``) and read back exactly, on the declared
provider of its corpus. Recall already skips a record that is not ``active``.

Every ref is resolved before anything is written, so one bad ref writes nothing.
The count reported is what was retired and read back, not what was asked for.

A forget also marks the record's lesson as forgotten in the store
(:mod:`capabilities.reward_memory.memory.forgotten`), so a later Turn that draws the
same lesson does not learn it again. ``memory restore`` undoes both: the record is
written back as the active record it was, read back exactly, and the mark cleared.
"""

from __future__ import annotations

from typing import Any

from capabilities.providers.base import Provider
from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.curation.retirement import retired_form, write_retired
from capabilities.reward_memory.memory.forgotten import (
    is_forgotten,
    is_owner_forgotten,
    mark,
    record_lesson,
)
from capabilities.reward_memory.memory.forgotten import restore as restore_record
from capabilities.reward_memory.memory.inventory import (
    ProviderFor,
    StoredRecord,
    all_records,
    find,
)
from turn_hooks import ProviderError

SCHEMA = "reward_memory_forget_receipt_v0"
REASON = "owner_forget"


def forget(
    resolution: Resolution,
    refs: list[str],
    *,
    provider_for: ProviderFor,
    execute: bool,
    lookup_for: ProviderFor | None = None,
) -> dict[str, Any]:
    """Retire the records ``refs`` name (or, without ``execute``, say what would be)."""
    # Refs are resolved read only: a ref that names nothing writes nothing, not even
    # an empty store (``lookup_for``, else ``provider_for``).
    records = all_records(resolution, lookup_for or provider_for)
    chosen = []
    for index, ref in enumerate(refs):
        stored = find(records, ref, field=f"refs[{index}]" if len(refs) > 1 else "ref")
        if stored not in chosen:
            chosen.append(stored)
    config = resolution.config or {"corpora": {}}
    rows = []
    for stored in chosen:
        corpus = config["corpora"][stored.corpus_id]["corpus"]
        row: dict[str, Any] = {
            "memory_ref": stored.memory_ref,
            "corpus_id": stored.corpus_id,
            "provider_id": stored.binding["provider_id"],
            "authority_ref": corpus["maintenance"]["retirement_authority"],
            "status": "planned",
            "reason_code": "dry_run" if not execute else None,
            "exact_readback_verified": False,
            "provider_write_performed": False,
            v.EXTERNAL_WRITES: False,
        }
        binding = stored.binding
        provider = provider_for(binding)
        if stored.state != "active":
            row.update(status="retired", reason_code="already_retired")
            row["exact_readback_verified"] = True
        elif execute:
            expected = retired_form(stored.record, REASON, f"owner-forget:{stored.memory_ref}")
            row.update(
                write_retired(
                    provider,
                    stored.uri,
                    expected,
                    peer=binding.get("actor_peer_id"),
                    timeout=float(binding["timeout_seconds"]),
                )
            )
        row["lesson_mark"] = _lesson_mark(stored, provider, row, execute)
        rows.append(row)
    retired = sum(1 for r in rows if r["status"] == "retired" and r["provider_write_performed"])
    failed = [
        r
        for r in rows
        if r["status"] in {"unavailable", "readback_unverified"}
        or r["lesson_mark"] == "unavailable"
    ]
    if not execute:
        status = "planned"
    elif failed:
        status = "failed"
    else:  # nothing retired now because everything asked for already was: unchanged
        status = "forgotten" if retired else "unchanged"
    return {
        "ok": not failed,
        "schema_version": SCHEMA,
        "status": status,
        "dry_run": not execute,
        "requested_count": len(refs),
        "matched_count": len(rows),
        "retired_count": retired,
        "would_retire_count": 0 if execute else sum(1 for r in rows if r["status"] == "planned"),
        "already_retired_count": sum(1 for r in rows if r["reason_code"] == "already_retired"),
        "lessons_marked_count": sum(1 for r in rows if r["lesson_mark"] == "marked"),
        "records": rows,
        v.EXTERNAL_WRITES: any(r[v.EXTERNAL_WRITES] for r in rows),
        v.RAW_CONTENT: False,
    }


def _lesson_mark(
    stored: StoredRecord, provider: Provider, row: dict[str, Any], execute: bool
) -> str:
    """Mark the lesson of a record this owner forgot, so a later Turn does not learn it
    again (:mod:`capabilities.reward_memory.memory.forgotten`).

    Also for a record forgotten before marks existed (``already_retired``): forgetting
    it again is how such a lesson gets its mark. A record retired by review is the
    operator's decision, not the owner's, and gets none.
    """
    reviewed = row["reason_code"] == "already_retired" and not is_owner_forgotten(stored.record)
    if not record_lesson(stored.record) or reviewed:
        return "not_applicable"
    if not execute:
        return "planned"
    if row["status"] != "retired":
        return "not_written"
    if row["reason_code"] == "already_retired":
        experience = stored.record.get("experience")
        try:
            if isinstance(experience, dict) and is_forgotten(provider, stored.binding, experience):
                return "present"
        except ProviderError:
            return "unavailable"
    marked = mark(provider, stored.binding, stored.record, stored.memory_ref)
    if marked == "marked":
        row[v.EXTERNAL_WRITES] = True
    return marked


RESTORE_SCHEMA = "reward_memory_restore_receipt_v0"


def restore(
    resolution: Resolution,
    refs: list[str],
    *,
    provider_for: ProviderFor,
    execute: bool,
    lookup_for: ProviderFor | None = None,
) -> dict[str, Any]:
    """Bring back the forgotten records ``refs`` name (or, without ``execute``, plan it).

    Each is written back as the active record it was and read back exactly, and its
    lesson's mark is cleared, so recall returns it and a Turn may learn it again.
    Every ref is resolved first: one that names nothing, or a memory that is not
    forgotten (active, or retired by review), is a typed error and nothing is written.
    """
    # Refs are resolved read only: a ref that names nothing writes nothing, not even
    # an empty store (``lookup_for``, else ``provider_for``).
    records = all_records(resolution, lookup_for or provider_for)
    chosen: list[StoredRecord] = []
    for index, ref in enumerate(refs):
        field = f"refs[{index}]" if len(refs) > 1 else "ref"
        stored = find(records, ref, field=field)
        if not is_owner_forgotten(stored.record):
            why = "is active" if stored.state == "active" else "was retired by review"
            v.fail(
                field,
                f"names a memory that is not forgotten ({why}); `memory list --state retired` "
                "shows the forgotten ones",
                "memory_not_forgotten",
            )
        if stored not in chosen:
            chosen.append(stored)
    rows = []
    for stored in chosen:
        row: dict[str, Any] = {
            "memory_ref": stored.memory_ref,
            "corpus_id": stored.corpus_id,
            "provider_id": stored.binding["provider_id"],
            "status": "planned",
            "reason_code": "dry_run",
            "lesson_mark": "planned" if record_lesson(stored.record) else "not_applicable",
            "exact_readback_verified": False,
            "provider_write_performed": False,
            v.EXTERNAL_WRITES: False,
        }
        if execute:
            provider = provider_for(stored.binding)
            row.update(restore_record(provider, stored.binding, stored.uri, stored.record))
        rows.append(row)
    restored = sum(1 for r in rows if r["status"] == "restored")
    failed = execute and restored < len(rows)
    return {
        "ok": not failed,
        "schema_version": RESTORE_SCHEMA,
        "status": "planned" if not execute else "failed" if failed else "restored",
        "dry_run": not execute,
        "requested_count": len(refs),
        "matched_count": len(rows),
        "restored_count": restored,
        "would_restore_count": 0 if execute else len(rows),
        "records": rows,
        v.EXTERNAL_WRITES: any(r[v.EXTERNAL_WRITES] for r in rows),
        v.RAW_CONTENT: False,
    }
