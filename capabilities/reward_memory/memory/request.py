"""The guarded recall request (contracts.md §11.1): checked before any provider call.

Scope, read authority, privacy, freshness and conflict are checked here by
deterministic code; the caller supplies the queries and its reasoning. Separate
from :mod:`.recall` because a guard decision never needs a provider: a request
that fails here is answered without one, and the oracle compares it on its own.
"""

from __future__ import annotations

from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.corpus import DURABLE_CLASSES, IDENTITY_FIELDS
from capabilities.reward_memory.contract.identities import short_digest

REQUEST_SCHEMA = "reward_memory_recall_request_v0"
REQUEST_RULE = (
    "caller_supplies_queries_and_reasoning_deterministic_code_checks_"
    "scope_authority_privacy_freshness_and_conflict"
)
MODES = ("function_boundary", "bounded_agentic_search")
QUERY_KINDS = ("business_recall", "ingest_verification")
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
    if v.boolean(document.get(v.RAW_CONTENT), f"request.{v.RAW_CONTENT}"):
        v.fail(f"request.{v.RAW_CONTENT}", "must be false", "raw_content_rejected")
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
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }
