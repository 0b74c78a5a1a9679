"""Legacy terminalisation: a pending journal of a v0 reflection is ended, never replayed.

A v0 reflection carries no transferable experience, so it can never become a
memory; its journal ends as ``rejected`` with a migration record saying the
provider may already hold it. Kept apart so that this one-way migration can be
deleted on its own once no v0 journal is left anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract.values import now_timestamp
from capabilities.reward_memory.turn.post_settlement import base_receipt
from sidecars import SidecarStore

LEGACY_MIGRATION_SCHEMA = "turn_reward_memory_legacy_pending_migration_v0"


def terminalise_legacy(
    store: SidecarStore, path: Path, resolution: Resolution, observed_at: str | None
) -> dict[str, Any]:
    """End the pending v0 journal at ``path`` as ``rejected``; the replay's receipt."""

    def terminal(document: dict[str, Any] | None) -> dict[str, Any] | None:
        if document is None or document.get("status") != "pending":
            return None
        return {
            **document,
            "status": "rejected",
            "legacy_pending_migration": {
                "schema_version": LEGACY_MIGRATION_SCHEMA,
                "status": "terminal_rejected",
                "reason_code": "legacy_reflection_requires_transferable_experience",
                "provider_write_state": "unknown_may_have_committed",
                "provider_cleanup_performed": False,
                "migrated_at": observed_at or now_timestamp(),
            },
        }

    store.update(path, terminal)
    receipt = base_receipt(resolution.status)
    receipt.update(
        status="no_eligible_evidence",
        reason_code="legacy_reflection_requires_transferable_experience",
        reconciliation_state="rejected",
    )
    return receipt
