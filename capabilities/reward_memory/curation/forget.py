"""``memory forget``: the owner's retirement of stored memories, in one step.

``operator-control`` + ``retire`` serve an operator acting on someone else's corpus,
with a checkpoint proving their authority. The person running ``memory forget`` on
their own binding is that corpus's owner, so the decision and the write are one
step here: each named record is read exactly, replaced by the same record marked
retired (``retired_reason: owner_forget``) and read back exactly, on the declared
provider of its corpus. Recall already skips a record that is not ``active``.

Every ref is resolved before anything is written, so one bad ref writes nothing.
The count reported is what was retired and read back, not what was asked for.
"""

from __future__ import annotations

from typing import Any

from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.curation.retirement import retired_form, write_retired
from capabilities.reward_memory.memory.inventory import ProviderFor, all_records, find

SCHEMA = "reward_memory_forget_receipt_v0"
REASON = "owner_forget"


def forget(
    resolution: Resolution, refs: list[str], *, provider_for: ProviderFor, execute: bool
) -> dict[str, Any]:
    """Retire the records ``refs`` name (or, without ``execute``, say what would be)."""
    records = all_records(resolution, provider_for)
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
        if stored.state != "active":
            row.update(status="retired", reason_code="already_retired")
            row["exact_readback_verified"] = True
        elif execute:
            binding = stored.binding
            expected = retired_form(stored.record, REASON, f"owner-forget:{stored.memory_ref}")
            row.update(
                write_retired(
                    provider_for(binding),
                    stored.uri,
                    expected,
                    peer=binding.get("actor_peer_id"),
                    timeout=float(binding["timeout_seconds"]),
                )
            )
        rows.append(row)
    retired = sum(1 for r in rows if r["status"] == "retired" and r["provider_write_performed"])
    failed = [r for r in rows if r["status"] in {"unavailable", "readback_unverified"}]
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
        "records": rows,
        v.EXTERNAL_WRITES: any(r[v.EXTERNAL_WRITES] for r in rows),
        v.RAW_CONTENT: False,
    }
