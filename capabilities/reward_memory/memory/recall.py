"""Recall: the guarded request, its execution and the application receipt (§11-§12).

Recall is read-only. A request that fails a guard makes no provider call; a provider
failure yields a packet that says so (fail-open), never an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from capabilities.providers.base import Provider
from capabilities.providers.sync import RetrievedItem, retrieve
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.corpus import DURABLE_CLASSES, IDENTITY_FIELDS
from capabilities.reward_memory.contract.experience import experience_quality, normalise_experience
from capabilities.reward_memory.contract.identities import (
    content_digest,
    memory_ref_digest,
    provider_ref,
    short_digest,
)

REQUEST_SCHEMA = "reward_memory_recall_request_v0"
RECALL_SCHEMA = "reward_memory_recall_v0"
APPLICATION_SCHEMA = "reward_memory_application_receipt_v0"
APPLICATION_WRAPPER_SCHEMA = "reward_memory_application_v0"
REQUEST_RULE = (
    "caller_supplies_queries_and_reasoning_deterministic_code_checks_"
    "scope_authority_privacy_freshness_and_conflict"
)
MODES = ("function_boundary", "bounded_agentic_search")
QUERY_KINDS = ("business_recall", "ingest_verification")
RECORD_SCHEMA = "reward_memory_active_record_v0"

_REQUEST_REQUIRED = frozenset(
    {
        "workspace_ref",
        "project_ref",
        "surface_id",
        "mode",
        "queries",
        "observed_at",
        "conflict_state",
    }
)
_CHECKPOINT_REQUIRED = frozenset(
    {"verified", "corpus_id", "workspace_ref", "project_ref", "surface_id", "read_authority"}
)
_CHECKPOINT_KEYS = ("corpus_id", "workspace_ref", "project_ref", "surface_id", "read_authority")


def _queries(value: object, mode: str) -> list[dict[str, str]]:
    high = 1 if mode == "function_boundary" else 3
    items = v.listing(value, "request.queries", 1, high)
    return [
        {
            "query": v.compact(
                v.exact_keys(item, "request.queries[]", frozenset({"query", "query_summary"}))[
                    "query"
                ],
                500,
                "request.queries[].query",
            ),
            "query_summary": v.compact(
                item["query_summary"], 220, "request.queries[].query_summary"
            ),
        }
        for item in items
    ]


def _freshness(value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("source_truth_current"), bool):
        v.fail("request.freshness_context", "is invalid", "freshness_context_invalid")
    age = value.get("age_seconds")
    if age is not None and (isinstance(age, bool) or not isinstance(age, int) or age < 0):
        v.fail("request.freshness_context.age_seconds", "is invalid", "freshness_age_invalid")
    return {
        "source_truth_current": value["source_truth_current"],
        "source_revision": value.get("source_revision"),
        "age_seconds": age,
    }


def _checkpoint(value: object, corpus: dict[str, Any]) -> dict[str, Any]:
    if value is None:
        v.fail("read_authority_checkpoint", "is required", "read_authority_checkpoint_missing")
    if not isinstance(value, dict) or not _CHECKPOINT_REQUIRED <= set(value):
        v.fail("read_authority_checkpoint", "is invalid", "read_authority_checkpoint_invalid")
    if not isinstance(value["verified"], bool):
        v.fail(
            "read_authority_checkpoint.verified", "is invalid", "read_authority_checkpoint_invalid"
        )
    normal: dict[str, Any] = {"verified": value["verified"]}
    for key in _CHECKPOINT_KEYS:
        normal[key] = value[key]
    normal["source_ref"] = value.get("source_ref")
    for key in IDENTITY_FIELDS:
        if corpus["scope"][key] is not None:
            normal[key] = value.get(key)
    return normal


def normalise_request(request: object) -> dict[str, Any]:
    """The recall request input; raises typed input errors. Unknown keys are ignored,
    as upstream does, because callers add their own context next to the request."""
    document = v.mapping(request, "request")
    missing = _REQUEST_REQUIRED - set(document)
    if missing:
        v.fail(f"request.{sorted(missing)[0]}", "is required", "missing_key")
    if v.boolean(document.get("raw_content_captured"), "request.raw_content_captured"):
        v.fail("request.raw_content_captured", "must be false", "raw_content_rejected")
    mode = v.enum(document["mode"], MODES, "request.mode")
    normal: dict[str, Any] = {
        "workspace_ref": v.token(document["workspace_ref"], "request.workspace_ref"),
        "project_ref": v.token(document["project_ref"], "request.project_ref"),
        "surface_id": v.surface_id(document["surface_id"], "request.surface_id"),
        "revision_ref": v.optional_token(document.get("revision_ref"), "request.revision_ref"),
        "mode": mode,
        "queries": _queries(document["queries"], mode),
        "limit": v.integer(document.get("limit", 5), "request.limit", 1, 8),
        "observed_at": v.timestamp(document["observed_at"], "request.observed_at"),
        "conflict_state": document["conflict_state"]
        if isinstance(document["conflict_state"], str)
        else v.fail("request.conflict_state", "must be a string"),
    }
    for key in IDENTITY_FIELDS:
        identity = v.optional_token(document.get(key), f"request.{key}")
        if identity is not None:
            normal[key] = identity
    normal["query_kind"] = v.enum(
        document.get("query_kind", "business_recall"), QUERY_KINDS, "request.query_kind"
    )
    normal["query_evidence"] = [
        {
            "query_digest": short_digest(query["query"]),
            "query_summary": query["query_summary"],
            "exact_query_exposed": False,
        }
        for query in normal["queries"]
    ]
    return normal


def _guard_reasons(
    corpus: dict[str, Any],
    request: dict[str, Any],
    freshness: dict[str, Any],
    checkpoint: dict[str, Any],
) -> list[str]:
    reasons = []
    scope = corpus["scope"]
    mode = corpus["freshness"]["mode"]
    if corpus["class_id"] not in DURABLE_CLASSES:
        reasons.append("corpus_class_not_durable_recall_memory")
    if corpus["lifecycle"]["state"] != "active":
        reasons.append("corpus_not_active")
    if request["workspace_ref"] != scope["workspace_ref"]:
        reasons.append("workspace_scope_mismatch")
    if request["project_ref"] != scope["project_ref"]:
        reasons.append("project_scope_mismatch")
    for key in IDENTITY_FIELDS:
        if scope[key] is not None and request.get(key) != scope[key]:
            reasons.append(f"{key}_scope_mismatch")
    if request["surface_id"] not in scope["surface_ids"]:
        reasons.append("surface_scope_mismatch")
    if request["conflict_state"] != "clear":
        reasons.append("unresolved_conflict")
    if mode in {"source_truth_bound", "execution_bound"} and not freshness["source_truth_current"]:
        reasons.append("source_truth_not_current")
    if mode in {"revision_bound", "session_archive_bound"} and (
        freshness.get("source_revision") != corpus["freshness"]["source_revision"]
    ):
        reasons.append("source_revision_mismatch")
    if mode == "time_bound":
        age = freshness.get("age_seconds")
        if age is None or age > corpus["freshness"]["max_age_seconds"]:
            reasons.append("source_age_exceeded")
    if (
        mode == "revision_bound"
        and request["revision_ref"] != corpus["freshness"]["source_revision"]
    ):
        reasons.append("request_revision_mismatch")
    for key in IDENTITY_FIELDS:
        if scope[key] is not None and request.get(key) != scope[key]:
            reasons.append(f"read_authority_{key}_scope_mismatch")
    if not checkpoint["verified"]:
        reasons.append("read_authority_unverified")
    if not checkpoint["source_ref"]:
        reasons.append("read_authority_source_missing")
    expected = {
        "corpus_id": corpus["corpus_id"],
        "workspace_ref": request["workspace_ref"],
        "project_ref": request["project_ref"],
        "surface_id": request["surface_id"],
        "read_authority": corpus["read_authority"],
    }
    for key in _CHECKPOINT_KEYS:
        if checkpoint[key] != expected[key]:
            reasons.append(f"read_authority_{key}_mismatch")
    for key in IDENTITY_FIELDS:
        if key in checkpoint and checkpoint[key] != scope[key]:
            reasons.append(f"read_authority_{key}_mismatch")
    return reasons


def build_recall_request(
    corpus: dict[str, Any], request: object, *, read_authority_checkpoint: object
) -> dict[str, Any]:
    """The ``reward_memory_recall_request_v0`` packet for one normalised corpus."""
    normal = normalise_request(request)
    raw = request if isinstance(request, dict) else {}
    freshness = _freshness(raw.get("freshness_context"))
    checkpoint = _checkpoint(read_authority_checkpoint, corpus)
    reasons = _guard_reasons(corpus, normal, freshness, checkpoint)
    return {
        "ok": True,
        "schema_version": REQUEST_SCHEMA,
        "status": "guard_blocked" if reasons else "ready",
        "corpus": corpus,
        "request": normal,
        "read_authority_checkpoint": checkpoint,
        "guard": {
            "passed": not reasons,
            "reason_codes": reasons,
            "semantic_reasoning_preserved": True,
            "rule": REQUEST_RULE,
        },
        "automatic_recall": False,
        "provider_call_performed": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }


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

    packet: dict[str, Any]
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
    try:
        normal = None if experience is None else normalise_experience(experience)
    except v.RewardMemoryInputError:
        return "quality_filtered", record, None
    quality = experience_quality(corpus["class_id"], normal)
    if not quality["passed"]:
        return "quality_filtered", record, None
    return None, record, quality


def _packet(request_packet: dict[str, Any], provider_id: str) -> dict[str, Any]:
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
        "external_writes_performed": False,
        "raw_provider_payload_captured": False,
        "raw_content_persisted": False,
    }


def execute_recall(
    request_packet: dict[str, Any],
    *,
    provider_binding: dict[str, Any],
    provider: Provider,
) -> RecallSession:
    """Run a ready request: one search per query, exact reads, qualification (§11.2)."""
    packet = _packet(request_packet, provider_binding["provider_id"])
    session = RecallSession(packet=packet)
    if request_packet["status"] != "ready":
        packet.update(status="guard_blocked", reason_code="recall_request_guard_blocked")
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
            packet.update(status="provider_unavailable", reason_code=retrieval.reason_code)
            _empty_items(session)
            return session
        if retrieval.search_performed and retrieval.items:
            packet["result_readback_verified"] = True
        for item in retrieval.items:
            if len(session.items) >= limit:
                break  # stop at `limit` qualified items
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
        packet.update(status="completed", reason_code=None)
    else:
        cause = (
            "all_provider_items_filtered"
            if packet["provider_item_count"]
            else "provider_returned_no_items"
        )
        packet.update(
            status="empty", reason_code="no_active_exact_corpus_results", empty_cause=cause
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
        "grants_new_action_authority": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }
