"""The write-ahead journal of one Turn's ingest: where it lives and what its states mean.

A journal is written (locked, 0600) before any provider call and again after it, so
a crash or an outage leaves a ``pending`` journal behind. PostSettlement writes it,
reconciliation replays it, and operators and tests list it; this module is the one
place all three agree on its address and its states.

Every learned Turn keeps its journal, and every PreTurn looks for the pending ones,
so finding them must not cost a look at each journal: at a thousand journals that
was tens of milliseconds a Turn. A pending journal therefore has a flag, an empty
file in ``reward-memory-pending/T(goal)/T(agent)/``, made before the journal is
first written ``pending`` (under the journal's lock) and removed once it is not
(:func:`pending_journals`). A store from before the flags, or a journal a process of
an older version wrote, is found by a full look, taken when the directory has never
had one or its last one is older than :data:`FULL_LOOK_SECONDS`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from sidecars import SidecarStore, goal_agent_parts, path_token, sidecar_root
from turn_hooks import SidecarError

JOURNAL_SCHEMA = "turn_reward_memory_sidecar_v0"
JOURNAL_DIR = "reward-memory-outcomes"
PENDING_DIR = "reward-memory-pending"
PENDING_SUFFIX = ".pending"
LOOKED_FLAG = "journals-looked-over"
"""Made (touched) in the flag directory after each full look at the journals."""
FULL_LOOK_SECONDS = 24 * 3600.0
"""How long flags alone are trusted: once a day, every journal is looked at again."""
PEEK_LIMIT = 4 * 1024 * 1024
"""The sidecar bound: a larger journal is left to the store's read, which refuses it."""
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


def pending_flag(store: SidecarStore, journal: Path) -> Path:
    """The flag that stands for the journal at ``journal`` being pending."""
    goal, agent = journal.parent.parent.name, journal.parent.name
    return store.path(PENDING_DIR, goal, agent, journal.name.removesuffix(".json") + PENDING_SUFFIX)


def flag_pending(store: SidecarStore, journal: Path) -> None:
    """Flag ``journal`` as pending, before it is written so: a journal pending without
    its flag would wait for the next full look to be retried."""
    store.raise_flag(pending_flag(store, journal))


def unflag_written(store: SidecarStore, journal: Path, status: str) -> None:
    """After ``journal`` was written with ``status`` (its lock held): remove its flag
    unless it is still pending. Failing to costs one more look, never a retry."""
    if status != "pending":
        with contextlib.suppress(SidecarError):
            store.lower_flag(pending_flag(store, journal))


def unflag_unless_pending(store: SidecarStore, journal: Path) -> None:
    """Remove ``journal``'s flag when, read under its lock, it is not pending (any more).

    Under the lock because a writer flags a journal and writes it ``pending`` under
    that lock: removing the flag between the two would lose the journal's retry.
    Failing to remove it costs one more look, never a retry.
    """
    try:
        with store.lock(journal):
            document = store.read(journal)
            if document is None or document.get("status") != "pending":
                store.lower_flag(pending_flag(store, journal))
    except SidecarError:
        return


def pending_journals(store: SidecarStore, goal_id: str, agent_id: str) -> list[Path]:
    """The journals of one (Goal, Agent) that may be pending, sorted by file name.

    The flagged ones, after a full look when one is due (module docstring). A flag
    may outlive its journal's pending state (a kill between the journal's last write
    and the flag's removal): callers read each journal, and
    :func:`unflag_unless_pending` removes such a flag.
    """
    flags = goal_agent_parts(PENDING_DIR, goal_id, agent_id)
    journals = goal_agent_parts(JOURNAL_DIR, goal_id, agent_id)
    looked = store.path(*flags, LOOKED_FLAG)
    age = store.flag_age(looked)
    if age is None or not 0 <= age < FULL_LOOK_SECONDS:
        for path in store.iter_documents(*journals):
            if may_be_pending(path):
                # One that cannot be flagged (a name this package never writes, a FIFO
                # planted at its flag) is not a reason to look at none of the others.
                with contextlib.suppress(SidecarError):
                    flag_pending(store, path)
        store.raise_flag(looked, touch=True)  # only now: a look cut short is taken again
    directory = store.path(*journals)
    return [
        directory / (name.removesuffix(PENDING_SUFFIX) + ".json")
        for name in store.flags(*flags, suffix=PENDING_SUFFIX)
    ]


def may_be_pending(path: Path) -> bool:
    """Whether the journal at ``path`` can say ``"status": "pending"``, from its bytes.

    JSON can spell the string ``pending`` only as those seven letters in quotes or
    with a ``\\u`` escape, so a file that holds neither cannot be pending, whatever
    else it holds. Anything this quick look cannot settle (a file it cannot open or
    read whole) is left to the store's checked read, which decides as before.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return True
    try:
        size = os.fstat(fd).st_size
        raw = os.read(fd, PEEK_LIMIT + 1) if size <= PEEK_LIMIT else b""
    except OSError:
        return True
    finally:
        os.close(fd)
    return len(raw) != size or b'"pending"' in raw or b"\\u" in raw
