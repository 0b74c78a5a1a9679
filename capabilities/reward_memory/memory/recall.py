"""Recall: a ready request's execution and the application receipt (§11.2-§12).

The request and its guard are :mod:`.request`'s. Recall is read-only. A request
that failed its guard makes no provider call; a provider failure yields a packet
that says so (fail-open), never an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from capabilities.providers.base import Provider
from capabilities.providers.sync import RetrievedItem, retrieve
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.corpus import IDENTITY_FIELDS
from capabilities.reward_memory.contract.experience import experience_quality, normalise_experience
from capabilities.reward_memory.contract.identities import (
    content_digest,
    memory_ref_digest,
    provider_ref,
)

if TYPE_CHECKING:
    from capabilities.reward_memory.contract.documents import RecallPacket

RECALL_SCHEMA = "reward_memory_recall_v0"
APPLICATION_SCHEMA = "reward_memory_application_receipt_v0"
APPLICATION_WRAPPER_SCHEMA = "reward_memory_application_v0"
RECORD_SCHEMA = "reward_memory_active_record_v0"


@dataclass
class RecallItem:
    """A qualified record from one recall: public fields plus in-process details."""

    public: dict[str, Any]
    uri: str
    record: dict[str, Any]
    content_digest: str
    experience_digest: str | None


@dataclass
class RecallSession:
    """What one recall produced: the public packet and the qualified items."""

    packet: RecallPacket
    items: list[RecallItem] = field(default_factory=list)


def _legacy_maintenance(refs: list[str]) -> dict[str, Any]:
    found = bool(refs)
    return {
        "status": "owner_action_required" if found else "not_required",
        "record_count": len(refs),
        "record_refs": sorted(refs),
        "allowed_actions": ["migrate", "retire"] if found else [],
        "migration_path": "ingest_validated_replacement_then_retire_legacy" if found else None,
        "retirement_path": "declared_retirement_authority_write_then_exact_readback"
        if found
        else None,
        "write_authority_required": True,
        "provider_write_performed": False,
        "exact_readback_verified": False,
    }


def _expired(record: dict[str, Any], observed_at: str) -> bool:
    expires = record.get("lifecycle", {}).get("expires_at")
    if expires is None:
        return False
    try:
        deadline = v.parse_timestamp(v.timestamp(expires, "expires_at"))
    except v.RewardMemoryInputError:
        return True
    return v.parse_timestamp(observed_at) >= deadline


def _qualify(
    item: RetrievedItem, corpus: dict[str, Any], request: dict[str, Any], observed_at: str
) -> tuple[str | None, dict[str, Any] | None, dict[str, Any] | None]:
    """Return (filter reason, record, quality); reason ``None`` means qualified."""
    try:
        record = json.loads(item.content)
    except json.JSONDecodeError:
        return "record_contract_filtered", None, None
    if (
        not isinstance(record, dict)
        or record.get("schema_version") != RECORD_SCHEMA
        or record.get("corpus_id") != corpus["corpus_id"]
        or record.get("target_class") != corpus["class_id"]
        or not isinstance(record.get("candidate_ref"), str)
        or not record["candidate_ref"].startswith("candidate:")
        or not isinstance(record.get("content_summary"), str)
        or not record["content_summary"]
        or not isinstance(record.get("scope"), dict)
        or not isinstance(record.get("lifecycle"), dict)
    ):
        return "record_contract_filtered", None, None
    scope = record["scope"]
    corpus_scope = corpus["scope"]
    if (
        scope.get("workspace_ref") != corpus_scope["workspace_ref"]
        or scope.get("project_ref") != corpus_scope["project_ref"]
        or any(scope.get(key) != corpus_scope[key] for key in IDENTITY_FIELDS if corpus_scope[key])
        or request["surface_id"] not in (scope.get("surface_ids") or [])
        or (
            corpus["freshness"]["mode"] == "revision_bound"
            and scope.get("revision_ref") != corpus["freshness"]["source_revision"]
        )
    ):
        return "scope_filtered", record, None
    if record["lifecycle"].get("state") != "active":
        return "lifecycle_filtered", record, None
    if _expired(record, observed_at):
        return "expiry_filtered", record, None
    experience = record.get("experience")
    if corpus["class_id"] == "procedural_experience" and experience is None:
        return "legacy_contract_missing", record, None
    quality = _quality(corpus["class_id"], experience, item.content)
    if quality is None or not quality["passed"]:
        return "quality_filtered", record, None
    return None, record, quality


QUALITY_MEMO_SIZE = 512
"""Records whose experience quality one process remembers (about 1.5 MB of text)."""
_QUALITY_MEMO: dict[tuple[str, str], dict[str, Any] | None] = {}


def _quality(class_id: str, experience: object, content: str) -> dict[str, Any] | None:
    """The quality receipt of a record's experience, ``None`` when its contract is invalid.

    Checking a contract runs the public-safety expressions over each of its texts,
    the largest part of qualifying a record. The result depends on the record's
    text alone, so it is remembered by that exact text: an ingest's destination
    recall finds the record its readback just checked, and a resident server's
    Turns recall the same records again and again.
    """
    key = (class_id, content)
    if key in _QUALITY_MEMO:
        known = _QUALITY_MEMO[key]
    else:
        try:
            normal = None if experience is None else normalise_experience(experience)
        except v.RewardMemoryInputError:
            known = None
        else:
            known = experience_quality(class_id, normal)
        if len(_QUALITY_MEMO) >= QUALITY_MEMO_SIZE:
            _QUALITY_MEMO.clear()  # bounded; the next recalls fill it again
        _QUALITY_MEMO[key] = known
    # Each caller gets its own receipt: packets are built from it and may change it.
    return None if known is None else {**known, "reason_codes": list(known["reason_codes"])}


def _packet(request_packet: dict[str, Any], provider_id: str) -> RecallPacket:
    request = request_packet["request"]
    return {
        "ok": True,
        "schema_version": RECALL_SCHEMA,
        "corpus_id": request_packet["corpus"]["corpus_id"],
        "surface_id": request["surface_id"],
        "mode": request["mode"],
        "query_kind": request["query_kind"],
        "query_evidence": request["query_evidence"],
        "provider_id": provider_id,
        "result_count": 0,
        "results": [],
        "provider_item_count": 0,
        "filtered_item_count": 0,
        "filtered_reason_counts": {},
        "duplicate_item_count": 0,
        "empty_cause": None,
        "legacy_record_maintenance": _legacy_maintenance([]),
        "result_readback_verified": False,
        "provider_call_count": 0,
        "automatic_recall": False,
        "fail_open": True,
        "provider_failure_is_user_gate": False,
        v.EXTERNAL_WRITES: False,
        "raw_provider_payload_captured": False,
        "raw_content_persisted": False,
    }


def execute_recall(
    request_packet: dict[str, Any],
    *,
    provider_binding: dict[str, Any],
    provider: Provider,
) -> RecallSession:
    """Run a ready request: one search per query, then exact reads only until ``limit``
    items qualified (§11.2).

    A later query whose search runs after ``limit`` items qualified reads nothing:
    ``result_readback_verified`` is already true then, so the packet is the same as
    when every hit was read.
    """
    packet = _packet(request_packet, provider_binding["provider_id"])
    session = RecallSession(packet=packet)
    if request_packet["status"] != "ready":
        packet.update({"status": "guard_blocked", "reason_code": "recall_request_guard_blocked"})
        return session
    corpus = request_packet["corpus"]
    request = request_packet["request"]
    namespace = provider_binding["namespace"]
    public_safe = corpus["privacy"]["visibility"] == "public_safe"
    limit = request["limit"]
    seen_uris: set[str] = set()
    seen_candidates: set[str] = set()
    filtered: dict[str, int] = {}
    legacy: list[str] = []
    for query in request["queries"]:
        packet["provider_call_count"] += 1
        retrieval = retrieve(
            provider,
            provider_binding["scope_ref"],
            query["query"],
            max_results=min(24, limit * 3),
            actor_peer_id=provider_binding.get("actor_peer_id"),
            timeout=float(provider_binding["timeout_seconds"]),
        )
        if retrieval.status != "completed":
            packet.update({"status": "provider_unavailable", "reason_code": retrieval.reason_code})
            _empty_items(session)
            return session
        # Stop at `limit` qualified items before asking for the next one: the items
        # are read back lazily, so no hit past that point is read at all.
        while len(session.items) < limit:
            item = next(retrieval.items, None)
            if item is None:
                break
            packet["result_readback_verified"] = True
            if item.uri in seen_uris:
                packet["duplicate_item_count"] += 1
                continue
            seen_uris.add(item.uri)
            packet["provider_item_count"] += 1
            reason, record, quality = _qualify(item, corpus, request, request["observed_at"])
            if reason is not None:
                filtered[reason] = filtered.get(reason, 0) + 1
                if reason == "legacy_contract_missing":
                    legacy.append(
                        provider_ref(provider_binding["provider_id"], namespace, item.uri)
                    )
                continue
            assert record is not None and quality is not None
            if record["candidate_ref"] in seen_candidates:
                continue
            seen_candidates.add(record["candidate_ref"])
            session.items.append(_recall_item(item, record, quality, provider_binding, public_safe))
    packet["filtered_item_count"] = sum(filtered.values())
    packet["filtered_reason_counts"] = dict(sorted(filtered.items()))
    packet["legacy_record_maintenance"] = _legacy_maintenance(legacy)
    packet["results"] = [item.public for item in session.items]
    packet["result_count"] = len(session.items)
    if session.items:
        packet.update({"status": "completed", "reason_code": None})
    else:
        cause = (
            "all_provider_items_filtered"
            if packet["provider_item_count"]
            else "provider_returned_no_items"
        )
        packet.update(
            {
                "status": "empty",
                "reason_code": "no_active_exact_corpus_results",
                "empty_cause": cause,
            }
        )
    return session


def _empty_items(session: RecallSession) -> None:
    session.items.clear()


def _recall_item(
    item: RetrievedItem,
    record: dict[str, Any],
    quality: dict[str, Any],
    binding: dict[str, Any],
    public_safe: bool,
) -> RecallItem:
    public = {
        "memory_ref": provider_ref(binding["provider_id"], binding["namespace"], item.uri),
        "candidate_ref": record["candidate_ref"],
        "target_class": record["target_class"],
        "content_summary": record["content_summary"] if public_safe else None,
        "experience_quality": quality,
        "content_exposed": public_safe,
    }
    return RecallItem(
        public=public,
        uri=item.uri,
        record=record,
        content_digest=content_digest(item.content),
        experience_digest=quality.get("experience_digest"),
    )


def failed_attempt_reason(result: dict[str, Any]) -> str | None:
    """The failed search's own code for a recall whose store did not answer
    (``provider_unavailable``): LoopX leaves the top-level code null, and the last
    attempt says why. ``None`` for any other recall."""
    if result.get("status") != "provider_unavailable":
        return None
    attempts = result.get("recall_attempts") or [{}]
    reason = attempts[-1].get("reason_code")
    return reason if isinstance(reason, str) else None


def application_receipt(
    session: RecallSession,
    *,
    application_id: str,
    artifact_ref: str | None,
    outcome: str,
    cited_uris: list[str],
    reasoning_summary: str,
    current_artifact_verified: bool,
) -> dict[str, Any]:
    """A ``reward_memory_application_receipt_v0`` for one recall (§12)."""
    packet = session.packet
    return {
        "schema_version": APPLICATION_SCHEMA,
        "application_id": application_id,
        "artifact_ref": artifact_ref,
        "corpus_id": packet["corpus_id"],
        "surface_id": packet["surface_id"],
        "mode": packet["mode"],
        "query_kind": packet["query_kind"],
        "query_evidence": packet["query_evidence"],
        "outcome": outcome,
        "memory_ref_digests": sorted({memory_ref_digest(uri) for uri in cited_uris}),
        "reasoning_summary": reasoning_summary,
        "current_artifact_verified": current_artifact_verified,
        "result_readback_verified": packet["result_readback_verified"],
        "provider_call_count": packet["provider_call_count"],
        "model_reasoning_preserved": True,
        v.NEW_ACTION_AUTHORITY: False,
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }
