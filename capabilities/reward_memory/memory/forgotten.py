"""Forgotten lessons: what the owner forgot stays forgotten, on either provider.

``memory forget`` retires a record, but the next Turn that draws the same lesson
would activate it again as a new record (a new Turn is a new candidate). So a
forget also leaves a *mark* in the store, beside the corpus: a small document at an
address the lesson alone determines. Ingest reads that one address before it writes
(:func:`is_forgotten`) and refuses a forgotten lesson with ``experience_forgotten``;
``memory restore`` (and an import that restores) clears it.

The lesson is the experience without its evidence refs (:func:`lesson_digest`): the
same trigger, action and outcome learned from another run's evidence is still the
lesson the owner asked to forget. The mark lives in the corpus's sibling scope
(``<scope_ref>-forgotten``), so recall, which searches strictly below the corpus
scope, never meets it, and ``memory list``/``export`` skip it like any file that is
not a record. It holds digests and refs only, never the lesson's text. Where the
corpus scope has no sibling of the same kind (a bare ``.../memories`` root), the
mark lives below the scope under a name recall's readers skip.
"""

from __future__ import annotations

import json
from typing import Any

from capabilities.providers.base import Provider
from capabilities.providers.scopes import classify_scope
from capabilities.providers.sync import stored_form
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.identities import experience_digest, record_body
from capabilities.reward_memory.memory.verify import write_exactly
from turn_hooks import ProviderError
from turn_hooks.canonical import hex_n, s1, sha256_hex

MARK_SCHEMA = "reward_memory_forgotten_lesson_v0"
FORGOTTEN_REASON = "experience_forgotten"
"""The reason code of an ingest that refused a forgotten lesson."""
OWNER_FORGET = "owner_forget"
SIBLING_SUFFIX = "-forgotten"
_MARK_PREFIX = "forgotten-lesson-"


def lesson_digest(experience: dict[str, Any]) -> str:
    """``sha256:`` over S1 of a normalised experience without its ``evidence_refs``."""
    lesson = {key: value for key, value in experience.items() if key != "evidence_refs"}
    return "sha256:" + sha256_hex(s1(lesson))


def mark_scope(scope_ref: str) -> str:
    """Where a corpus's marks live: its sibling scope, or below it when it has none."""
    scope = scope_ref.strip().rstrip("/")
    sibling = scope + SIBLING_SUFFIX
    own, other = classify_scope(scope), classify_scope(sibling)
    same = (
        own is not None
        and other is not None
        and len(own.segments) > 2
        and own.segments[-1] not in {"memories", "resources"}
        and (own.visibility, own.kind, own.user, own.peer)
        == (other.visibility, other.kind, other.user, other.peer)
    )
    return sibling if same else scope + "/" + SIBLING_SUFFIX.lstrip("-")


def mark_uri(scope_ref: str, lesson: str) -> str:
    """The one address of a lesson's mark below a corpus scope."""
    return f"{mark_scope(scope_ref)}/{_MARK_PREFIX}{hex_n(lesson, 20)}.json"


def record_lesson(record: dict[str, Any]) -> str | None:
    """The lesson digest of a stored record, ``None`` for a record without experience."""
    experience = record.get("experience")
    return lesson_digest(experience) if isinstance(experience, dict) else None


def is_owner_forgotten(record: dict[str, Any]) -> bool:
    """Whether a stored record was retired by its owner's ``memory forget``."""
    lifecycle = record.get("lifecycle")
    return (
        isinstance(lifecycle, dict)
        and lifecycle.get("state") == "retired"
        and lifecycle.get("retired_reason") == OWNER_FORGET
    )


def call_options(binding: dict[str, Any]) -> dict[str, Any]:
    """The peer and timeout every provider call for a corpus of ``binding`` passes."""
    return {
        "actor_peer_id": binding.get("actor_peer_id"),
        "timeout": float(binding["timeout_seconds"]),
    }


def is_forgotten(provider: Provider, binding: dict[str, Any], experience: dict[str, Any]) -> bool:
    """Whether the lesson of ``experience`` is marked forgotten in the corpus of ``binding``.

    A file at the mark's address that is not a mark of this lesson is no mark.

    :raises ProviderError: the mark could not be read (the caller retries later).
    """
    lesson = lesson_digest(experience)
    text = provider.read_exact(mark_uri(binding["scope_ref"], lesson), **call_options(binding))
    if text is None:
        return False
    try:
        mark = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(mark, dict)
        and mark.get("schema_version") == MARK_SCHEMA
        and mark.get("lesson_digest") == lesson
    )


def mark(
    provider: Provider, binding: dict[str, Any], record: dict[str, Any], memory_ref: str
) -> str:
    """Mark the lesson of a forgotten ``record``, read back exactly.

    Returns ``marked``, ``not_applicable`` (no experience: a new Turn cannot bring
    the same lesson back by its digest) or ``unavailable`` (write or readback failed).
    """
    lesson = record_lesson(record)
    if lesson is None:
        return "not_applicable"
    body = s1(
        {
            "schema_version": MARK_SCHEMA,
            "lesson_digest": lesson,
            "experience_digest": experience_digest(record["experience"]),
            "corpus_id": record.get("corpus_id"),
            "candidate_ref": record.get("candidate_ref"),
            "memory_ref": memory_ref,
            "reason": OWNER_FORGET,
            "marked_at": v.now_timestamp(),
            v.RAW_CONTENT: False,
        }
    )
    uri = mark_uri(binding["scope_ref"], lesson)
    try:
        provider.write(uri, body, **call_options(binding))
        readback = provider.read_exact(uri, **call_options(binding))
    except ProviderError:
        return "unavailable"
    return "marked" if readback is not None and stored_form(readback) == body else "unavailable"


def clear(provider: Provider, binding: dict[str, Any], record: dict[str, Any]) -> str:
    """Clear the mark of ``record``'s lesson, proven by a read that finds nothing.

    Returns ``cleared`` (a mark was there and is gone), ``absent`` (none was there),
    ``not_applicable`` (no experience) or ``unavailable``.
    """
    lesson = record_lesson(record)
    if lesson is None:
        return "not_applicable"
    uri = mark_uri(binding["scope_ref"], lesson)
    try:
        if provider.read_exact(uri, **call_options(binding)) is None:
            return "absent"
        provider.delete(uri, **call_options(binding))
        gone = provider.read_exact(uri, **call_options(binding)) is None
    except ProviderError:
        return "unavailable"
    return "cleared" if gone else "unavailable"


_RETIREMENT_KEYS = frozenset({"state", "retired_reason", "retirement_control_ref"})


def restored_form(record: dict[str, Any]) -> dict[str, Any]:
    """The active record a forgotten ``record`` was: its lifecycle without the retirement.

    Byte for byte the record ingest activated (retirement only added those keys), so
    an export taken before the forget reads as the same record again.
    """
    lifecycle = {k: val for k, val in record["lifecycle"].items() if k not in _RETIREMENT_KEYS}
    return {**record, "lifecycle": {**lifecycle, "state": "active"}}


def restore(
    provider: Provider, binding: dict[str, Any], uri: str, record: dict[str, Any]
) -> dict[str, Any]:
    """Bring a forgotten ``record`` (stored at ``uri``) back, with exact readback.

    The mark goes first: should the record's write then fail, the record is still
    forgotten and restoring it again finishes the job; the other order could leave a
    recalled memory whose lesson a Turn may never learn again. Returns the receipt
    fields: ``status`` (``restored``, ``readback_unverified`` or ``unavailable``),
    ``reason_code``, ``lesson_mark`` (:func:`clear`'s answer) and the write flags.
    """
    cleared = clear(provider, binding, record)
    result: dict[str, Any] = {
        "status": "unavailable",
        "reason_code": "forgotten_mark_unavailable",
        "lesson_mark": cleared,
        "exact_readback_verified": False,
        "provider_write_performed": cleared == "cleared",
        v.EXTERNAL_WRITES: cleared == "cleared",
    }
    if cleared == "unavailable":
        return result
    expected = stored_form(record_body(restored_form(record)))
    written = write_exactly(
        provider,
        uri,
        expected,
        peer=binding.get("actor_peer_id"),
        timeout=float(binding["timeout_seconds"]),
        done="restored",
        mismatch="restore_readback_mismatch",
    )
    return {**result, **written}
