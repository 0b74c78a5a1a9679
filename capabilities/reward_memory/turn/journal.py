"""The write-ahead journal of one Turn's ingest: where it lives and what its states mean.

A journal is written (locked, 0600) before any provider call and again after it, so
a crash or an outage leaves a ``pending`` journal behind. PostSettlement writes it,
reconciliation replays it, and operators and tests list it; this module is the one
place all three agree on its address and its states.
"""

from __future__ import annotations

from pathlib import Path

from sidecars import SidecarStore, goal_agent_parts, path_token, sidecar_root

JOURNAL_SCHEMA = "turn_reward_memory_sidecar_v0"
JOURNAL_DIR = "reward-memory-outcomes"
PENDING_INGEST_STATUSES = frozenset(
    {
        "committed_pending",
        "provider_unavailable",
        "readback_unverified",
        "recall_unverified",
        # A provider that failed its preflight (server down) is retried too: upstream
        # rejects such a journal, the OpenViking provider issue asks for it to stay
        # pending and be reconciled after the server is back.
        "unavailable",
    }
)


def journal_path(store: SidecarStore, goal_id: str, agent_id: str, event_id: str) -> Path:
    """``reward-memory-outcomes/T(goal)/T(agent)/T(source_event_id).json`` (identities §4)."""
    return store.path(
        *goal_agent_parts(JOURNAL_DIR, goal_id, agent_id), path_token(event_id, "event") + ".json"
    )


def journal_files_of(repo: Path) -> list[Path]:
    """Every journal below a Goal repository, sorted (for operators and tests)."""
    root = sidecar_root(repo) / JOURNAL_DIR
    return sorted(root.rglob("*.json")) if root.is_dir() else []


def reconciliation_state(status: str, exact: bool) -> str:
    """A journal's state after one ingest attempt: ``completed``, ``pending`` or ``rejected``."""
    if status == "activated" and exact:
        return "completed"
    return "pending" if status in PENDING_INGEST_STATUSES else "rejected"
