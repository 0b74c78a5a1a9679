"""What a binding has stored: every record of its corpora, active and retired.

The ``memory`` commands look at a binding's memories as a person would: one row per
stored record with its class, summary, surface, when it was activated and from
which Turn. A record is named publicly by its ``memory_ref`` (the opaque provider ref
that ingest and recall receipts already print); a unique prefix of its digest is
enough.

Everything here reads. The rows hold the record's own text, so they are private:
the commands print them on their terminal output only, never into a receipt or log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from capabilities.providers.base import Provider
from capabilities.providers.lesson_index import parse_record
from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.identities import provider_ref

RECORD_SCHEMA = "reward_memory_active_record_v0"
RECORD_PREFIX = "reward-memory-"
LIST_LIMIT = 1000
"""Records listed per corpus: far above what one Agent's corpus holds in practice."""
MIN_PREFIX = 4
"""The fewest hex digits of a ref's digest that name it (as git's shortest abbreviation)."""
_PROVIDER = "provider-"
_CANDIDATE = "candidate:"

ProviderFor = Callable[[dict[str, Any]], Provider]


@dataclass(frozen=True)
class StoredRecord:
    """One stored record, with where it lives (private) and its public ref."""

    corpus_id: str
    binding: dict[str, Any]
    uri: str
    memory_ref: str
    text: str
    record: dict[str, Any]

    @property
    def state(self) -> str:
        """The lifecycle state (``active``, ``retired``, ...)."""
        return str(self.record.get("lifecycle", {}).get("state") or "unknown")


def bound_config(resolution: Resolution) -> dict[str, Any]:
    """The binding's config, or a typed error when the binding is not available."""
    if resolution.config is None or not resolution.status["available"]:
        # The Agent named is fine; its Goal's config is what cannot be used (a FIFO
        # or a damaged file where experiment.json should be, a disabled binding).
        v.fail(
            "agent_id",
            f"has no available experiment ({resolution.status['status']}): "
            "`turn-hooks status` says why, and `turn-hooks init` in the repository "
            "writes its config again",
            "experiment_unavailable",
        )
    return resolution.config


def corpus_records(
    corpus_id: str, entry: dict[str, Any], provider: Provider
) -> Iterator[StoredRecord]:
    """The reward-memory records of one corpus (canaries and foreign files skipped).

    :raises ProviderError: the provider failed; callers report it as unavailable.
    """
    binding = entry["provider_binding"]
    peer = binding.get("actor_peer_id")
    timeout = float(binding["timeout_seconds"])
    uris = provider.list(
        binding["scope_ref"], limit=LIST_LIMIT, actor_peer_id=peer, timeout=timeout
    )
    for uri in sorted(uris):
        if not uri.rsplit("/", 1)[-1].startswith(RECORD_PREFIX):
            continue
        text = provider.read_exact(uri, actor_peer_id=peer, timeout=timeout)
        record = None if text is None else parse_record(text)
        if text is None or record is None or record.get("corpus_id") != corpus_id:
            continue
        yield StoredRecord(
            corpus_id=corpus_id,
            binding=binding,
            uri=uri,
            memory_ref=provider_ref(binding["provider_id"], binding["namespace"], uri),
            text=text,
            record=record,
        )


def all_records(resolution: Resolution, provider_for: ProviderFor) -> list[StoredRecord]:
    """Every record of every corpus of the binding, corpus by corpus.

    :raises ProviderError: a provider failed (the command reports it, exit 2).
    """
    config = bound_config(resolution)
    records: list[StoredRecord] = []
    for corpus_id in sorted(config["corpora"]):
        entry = config["corpora"][corpus_id]
        records += corpus_records(corpus_id, entry, provider_for(entry["provider_binding"]))
    return records


def find(records: list[StoredRecord], ref: str, *, field: str = "ref") -> StoredRecord:
    """The one record ``ref`` names: its memory_ref, or a unique prefix of it.

    A ``candidate:`` ref (or a unique prefix of it, with or without ``candidate:``) is
    accepted too, since recalled memories are shown by it. ``field`` names the ref in
    a refusal (``refs[2]`` of several, so the user knows which).
    """
    if not isinstance(ref, str) or not ref.strip():
        v.fail(field, "must be a memory_ref printed by `memory list`", "memory_ref_invalid")
    ref = ref.strip()
    # The digest is what tells refs apart, so a prefix counts its hex digits, with or
    # without the ``provider-`` every ref shares.
    digest = ref.removeprefix(_PROVIDER).removeprefix(_CANDIDATE).rstrip("…").lower()
    if len(digest) >= MIN_PREFIX and all(c in "0123456789abcdef" for c in digest):
        matches = [r for r in records if r.memory_ref.startswith(_PROVIDER + digest)]
        if not matches and not ref.startswith(_PROVIDER):
            candidate = _CANDIDATE + digest
            matches = [
                r for r in records if str(r.record.get("candidate_ref") or "").startswith(candidate)
            ]
    elif ref.startswith(_CANDIDATE):
        matches = [r for r in records if r.record.get("candidate_ref") == ref]
    else:
        v.fail(
            field,
            f"must be a memory_ref (provider-<hex>) or at least {MIN_PREFIX} hex digits of it",
            "memory_ref_invalid",
        )
    if not matches:
        v.fail(
            field,
            "names no memory of this binding: `memory list` prints each memory's ref "
            "(provider-<hex>); the candidate:<hex> a recall shows is taken too",
            "memory_ref_unknown",
        )
    if len({r.memory_ref for r in matches}) > 1:
        v.fail(field, "is an ambiguous prefix: give more characters", "memory_ref_ambiguous")
    return matches[0]


def row(stored: StoredRecord) -> dict[str, Any]:
    """One record as a person reads it (private: holds the summary text)."""
    record = stored.record
    scope: dict[str, Any] = record["scope"] if isinstance(record.get("scope"), dict) else {}
    return {
        "memory_ref": stored.memory_ref,
        "state": stored.state,
        "class": record.get("target_class"),
        "summary": record.get("content_summary"),
        "surface": ", ".join(str(s) for s in scope.get("surface_ids") or []),
        "activated_at": record.get("activated_at"),
        "turn": scope.get("revision_ref"),
        "corpus_id": stored.corpus_id,
    }


def detail(stored: StoredRecord) -> dict[str, Any]:
    """One record in full: the row, its lifecycle, source and experience (private)."""
    record = stored.record
    return {
        **row(stored),
        "candidate_ref": record.get("candidate_ref"),
        "provider_id": stored.binding["provider_id"],
        "lifecycle": record.get("lifecycle"),
        "source": record.get("source"),
        "experience": record.get("experience"),
        "review": record.get("review"),
    }


def state_counts(records: list[StoredRecord]) -> dict[str, int]:
    """``{"active": n, "retired": m}`` plus any other lifecycle state seen."""
    counts = {"active": 0, "retired": 0}
    for stored in records:
        counts[stored.state] = counts.get(stored.state, 0) + 1
    return counts


def state_split(provider: Provider, binding: dict[str, Any], uris: list[str]) -> dict[str, int]:
    """Lifecycle states of the records at ``uris`` (read calls only), for health-check.

    :raises ProviderError: a read failed.
    """
    peer = binding.get("actor_peer_id")
    timeout = float(binding["timeout_seconds"])
    counts: dict[str, int] = {}
    for uri in uris:
        text = provider.read_exact(uri, actor_peer_id=peer, timeout=timeout)
        record = None if text is None else parse_record(text)
        if record is not None:
            state = str(record.get("lifecycle", {}).get("state") or "unknown")
            counts[state] = counts.get(state, 0) + 1
    return counts
