"""The utility ledger: append-only observations and their projection, per scope.

Two private sidecars (0600, locked, atomic) per utility context, under
``reward-memory-utility/T(goal)/T(agent)/``: ``<mur>.observations.json`` holds every
delivery ever recorded, in the order it came, and ``<mur>.projection.json`` the
``memory_utility_projection_v0`` of exactly those deliveries (contracts.md §15). The
file name is the reducer identity (identities.md §14), so a changed scope, snapshot
or reducer version starts a new ledger instead of mixing into an old one.

A retry of an observation already recorded (same ``observation_id``, same delivery
fingerprint) writes nothing, unless the stored projection fell behind the ledger (a
crash or a refused write between the two files): then the projection is replayed.
Both files are checked before either is written, so a sidecar the store refuses (a
link, a FIFO) fails the record with nothing written.

The owner has one voice per memory: of the owner's ratings of one memory
(:data:`OWNER_REF`), the projection counts the latest recorded. The
ledger keeps every one, so the history of what the owner said stays readable; a
changed mind replaces, never conflicts with, an earlier rating. A new delivery is appended and the
projection is brought up to date in the same locked step, from the ledger, with the
reducer the offline ``utility-project`` command uses; so :func:`rebuild` from the
observations alone gives the stored projection byte for byte. Nothing here ever
deletes or rewrites an observation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capabilities.reward_memory.utility import observation as u
from capabilities.reward_memory.utility.reducer import (
    MAX_OBSERVATIONS,
    REDUCER_VERSION,
    project,
    reducer_identity,
)
from sidecars import SidecarStore, dumps, goal_agent_parts
from turn_hooks.canonical import sha256_hex

LEDGER_SCHEMA = "reward_memory_utility_ledger_v0"
LEDGER_DIR = "reward-memory-utility"
CONTEXT_KEYS = ("scope", "retrieval_snapshot_ref", "policy_snapshot_ref", "reducer_version")
OWNER_REF = "turn_hooks.owner"
"""The evaluator ref of the owner's own ratings (``memory rate``)."""


def opaque(prefix: str, value: str) -> str:
    """An opaque scope ref for a private id: ``prefix`` + 32 hex of its digest.

    Goal and Agent ids are the user's own words; the utility scope holds digests of
    them so that no projection, history entry or review proposal repeats them, and
    two different ids never share a scope.
    """
    return f"{prefix}_{sha256_hex(value)[:32]}"


def utility_context(
    *,
    goal_id: str,
    agent_id: str,
    corpus_id: str,
    surface_id: str,
    retrieval_snapshot_ref: str,
    policy_snapshot_ref: str,
) -> dict[str, Any]:
    """The projection context of one (Goal, Agent, corpus, surface): never shared wider."""
    return {
        "scope": {
            "agent_id": opaque("agent", f"{goal_id}\x00{agent_id}"),
            # The corpus and surface as the application receipt names them: the
            # observation binds them (contracts.md §14). Config tokens, not user text.
            "corpus_id": corpus_id,
            "project_id": opaque("goal", goal_id),
            "surface_id": surface_id,
        },
        "retrieval_snapshot_ref": retrieval_snapshot_ref,
        "policy_snapshot_ref": policy_snapshot_ref,
        "reducer_version": REDUCER_VERSION,
    }


def _identity(context: dict[str, Any]) -> str:
    return reducer_identity(
        context["scope"],
        context["retrieval_snapshot_ref"],
        context["policy_snapshot_ref"],
        context["reducer_version"],
    )


@dataclass(frozen=True, slots=True)
class Ledger:
    """Where one context's observations and projection live."""

    store: SidecarStore
    goal_id: str
    agent_id: str
    context: dict[str, Any]

    def _path(self, suffix: str) -> Path:
        return self.store.path(
            *goal_agent_parts(LEDGER_DIR, self.goal_id, self.agent_id),
            f"{_identity(self.context)}.{suffix}.json",
        )

    @property
    def observations_path(self) -> Path:
        """``reward-memory-utility/T(goal)/T(agent)/<mur>.observations.json``."""
        return self._path("observations")

    @property
    def projection_path(self) -> Path:
        """``reward-memory-utility/T(goal)/T(agent)/<mur>.projection.json``."""
        return self._path("projection")

    def observations(self) -> list[dict[str, Any]]:
        """Every delivery recorded, oldest first (empty when none yet)."""
        document = self.store.read(self.observations_path)
        return _deliveries(document)

    def projection(self) -> dict[str, Any] | None:
        """The stored projection, or ``None`` before the first observation."""
        return self.store.read(self.projection_path)

    def rebuild(self) -> dict[str, Any]:
        """The projection replayed from every recorded observation (what is stored)."""
        return _project(self.context, self.observations())

    def record(self, observation: dict[str, Any]) -> bool:
        """Append ``observation`` (validated) and update the projection.

        :returns: ``False`` for a retry already recorded (nothing written).
        :raises UtilityError: an observation outside this ledger's context, or a
            ledger already at the reducer's bound; callers fail open.
        :raises SidecarError: the sidecars could not be read or written.
        """
        observation = u.validate_observation(observation)
        for key in ("scope", "retrieval_snapshot_ref", "policy_snapshot_ref"):
            if observation[key] != self.context[key]:
                u.fail("observation_out_of_scope", f"the observation's {key} is not this ledger's")
        fingerprint = u.delivery_fingerprint(observation)
        self.store.check_writable(self.projection_path)
        with self.store.transaction(self.observations_path) as ledger:
            deliveries = _deliveries(ledger.read())
            same_voice = deliveries
            if _owner_rating(observation):
                # Only the owner's last word on the memory can make this a retry:
                # going back to an earlier rating is a new word, not a repeat.
                same_voice = [
                    held
                    for held in deliveries
                    if _owner_rating(held)
                    and held["memory_ref_digests"] == observation["memory_ref_digests"]
                ][-1:]
            if any(
                held["observation_id"] == observation["observation_id"]
                and u.delivery_fingerprint(held) == fingerprint
                for held in same_voice
            ):
                replayed = _project(self.context, deliveries)
                if not same_bytes(self.store.read(self.projection_path), replayed):
                    self.store.write(self.projection_path, replayed)
                return False
            if len(deliveries) >= MAX_OBSERVATIONS:
                u.fail("utility_ledger_full", f"a ledger holds at most {MAX_OBSERVATIONS}")
            deliveries.append(observation)
            projection = _project(self.context, deliveries)
            if projection["ok"] is not True and len(deliveries) > 1:
                # Past the reducer's bounds (128 subjects) the whole projection would be
                # rejected and every memory lose its utility: the ledger stays as it was.
                u.fail("utility_ledger_full", "the projection is at its subject bound")
            # The observations first: a crash between the two writes leaves a projection
            # one behind, which the next record (or rebuild) replays; never the reverse.
            ledger.write(
                {"schema_version": LEDGER_SCHEMA, **self.context, "observations": deliveries}
            )
            self.store.write(self.projection_path, projection)
        return True


def _deliveries(document: dict[str, Any] | None) -> list[dict[str, Any]]:
    if document is None:
        return []
    if document.get("schema_version") != LEDGER_SCHEMA or not isinstance(
        document.get("observations"), list
    ):
        u.fail("utility_ledger_unreadable", "the utility ledger is not a ledger of this version")
    return list(document["observations"])


def _project(context: dict[str, Any], deliveries: list[dict[str, Any]]) -> dict[str, Any]:
    counted = counted_observations(deliveries)
    return project({**{key: context[key] for key in CONTEXT_KEYS}, "observations": counted})


def counted_observations(deliveries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The deliveries the projection reduces: every one, except that of the owner's
    ratings of one memory (``memory rate``: :data:`OWNER_REF`, item level) only the
    latest recorded counts. A rating binds to the memory's latest application, so a
    second rating of it is a second delivery of the same observation: the reducer
    would see a conflict and propose quarantine, where the owner only changed their
    mind.

    Deterministic (ledger order), so a replay gives the same bytes; the offline
    ``utility-project`` command reduces exactly what it is given.
    """
    latest: dict[tuple[str, ...], int] = {}
    for index, delivery in enumerate(deliveries):
        if _owner_rating(delivery):
            latest[tuple(delivery["memory_ref_digests"])] = index
    return [
        delivery
        for index, delivery in enumerate(deliveries)
        if not _owner_rating(delivery) or latest[tuple(delivery["memory_ref_digests"])] == index
    ]


def _owner_rating(delivery: dict[str, Any]) -> bool:
    return (
        delivery.get("evaluator_ref") == OWNER_REF and delivery.get("attribution_level") == "item"
    )


def same_bytes(left: dict[str, Any] | None, right: dict[str, Any] | None) -> bool:
    """Whether two projections are stored as the same bytes."""
    return left is not None and right is not None and dumps(left) == dumps(right)


def ledgers_of(store: SidecarStore, goal_id: str, agent_id: str) -> list[Path]:
    """Every projection sidecar of one (Goal, Agent), sorted (``memory show``, ``status``)."""
    return sorted(
        path
        for path in store.iter_documents(*goal_agent_parts(LEDGER_DIR, goal_id, agent_id))
        if path.name.endswith(".projection.json")
    )
