"""Stage 1 read models: the corpus registry and the corpus health check.

Both are stateless and read-only. The registry projects the declared corpora of a
bound config (who owns each, who may read and write it, how it stays fresh and is
retired, how it is isolated, which surfaces recall from and ingest into it). The
health check probes the live provider with read calls only and keeps its five states
apart, because a corpus can exist, be indexed and be searchable, yet never be
recalled automatically. Scope refs and paths never appear: a scope is a 16-hex
digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from capabilities.providers.base import Provider
from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract.values import EXTERNAL_WRITES, RAW_CONTENT
from capabilities.reward_memory.memory.inventory import state_split
from capabilities.reward_memory.turn.pre_turn import receipt_path
from capabilities.reward_memory.turn.situation import SURFACE
from turn_hooks import ProviderError

REGISTRY_SCHEMA = "reward_memory_corpus_registry_v0"
HEALTH_SCHEMA = "reward_memory_corpus_health_v0"
HEALTH_STATES = (
    "corpus_present",
    "index_present",
    "retrieval_query_succeeded",
    "result_readback_verified",
    "memory_applied_with_receipt",
)
RECORD_PREFIX = "reward-memory-"
ACTIVE_RECORD_SCHEMA = "reward_memory_active_record_v0"
LIST_LIMIT = 100
HEALTH_TIMEOUT = 5.0


def scope_digest(scope_ref: str) -> str:
    """The public stand-in for a provider scope ref."""
    return hashlib.sha256(scope_ref.encode("utf-8")).hexdigest()[:16]


def scope_isolation(corpus: dict[str, Any]) -> str:
    """``private_peer``, ``shared`` or ``public_safe``."""
    visibility = corpus["privacy"]["visibility"]
    if visibility == "public_safe":
        return "public_safe"
    if visibility == "private" and corpus["scope"].get("peer_ref"):
        return "private_peer"
    return "shared"


def _surface_use(config: dict[str, Any], corpus_id: str) -> dict[str, Any]:
    surfaces = config["surfaces"].values()
    recall = sorted(s["surface_id"] for s in surfaces if corpus_id in s["corpus_ids"])
    ingest = sorted(s["surface_id"] for s in surfaces if s["ingest_corpus_id"] == corpus_id)
    automation = config["automation"]
    return {
        "recall_surfaces": recall,
        "ingest_surfaces": ingest,
        "automatic_recall": bool(automation["automatic_recall"]) and SURFACE in recall,
        "automatic_ingest": bool(automation["automatic_ingest"]) and SURFACE in ingest,
    }


def _registry_row(config: dict[str, Any], corpus_id: str) -> dict[str, Any]:
    entry = config["corpora"][corpus_id]
    corpus = entry["corpus"]
    return {
        "corpus_id": corpus_id,
        "class_id": corpus["class_id"],
        "owner_ref": corpus["owner_ref"],
        "source_of_truth": corpus["source_of_truth"],
        "read_authority": corpus["read_authority"],
        "write_authority": corpus["write_authority"],
        "freshness_mode": corpus["freshness"]["mode"],
        "lifecycle_state": corpus["lifecycle"]["state"],
        "retirement_authority": corpus["maintenance"]["retirement_authority"],
        "scope_isolation": scope_isolation(corpus),
        "visibility": corpus["privacy"]["visibility"],
        "provider_id": entry["provider_binding"]["provider_id"],
        "provider_scope_ref_digest": scope_digest(entry["provider_binding"]["scope_ref"]),
        **_surface_use(config, corpus_id),
    }


def _header(resolution: Resolution, schema: str) -> dict[str, Any]:
    status = resolution.status
    return {
        "ok": True,
        "schema_version": schema,
        "goal_id": status["goal_id"],
        "agent_id": status["agent_id"],
        "binding_status": status["status"],
        "available": status["available"],
        "reason_code": status.get("reason_code"),
    }


def corpus_registry(resolution: Resolution) -> dict[str, Any]:
    """``reward_memory_corpus_registry_v0``: the bound config's corpora; no provider call."""
    config = resolution.config
    rows = [_registry_row(config, c) for c in sorted(config["corpora"])] if config else []
    return {
        **_header(resolution, REGISTRY_SCHEMA),
        "corpus_count": len(rows),
        "corpora": rows,
        "provider_call_count": 0,
        EXTERNAL_WRITES: False,
        RAW_CONTENT: False,
    }


def _record_uris(uris: list[str]) -> list[str]:
    return sorted(u for u in uris if u.rsplit("/", 1)[-1].startswith(RECORD_PREFIX))


def _query_for(text: str | None) -> str:
    """A query made of the record's own summary (kept private: it is never reported)."""
    try:
        record = json.loads(text or "")
        return str(record.get("content_summary") or record.get("target_class") or "memory")
    except (ValueError, AttributeError):
        return "memory"


def _applied(resolution: Resolution, candidates: list[str] | None) -> tuple[bool, str | None]:
    """Whether the latest same-Turn recall receipt applied guidance from this corpus."""
    status = resolution.status
    store = resolution.sidecars
    try:
        receipt = store.read(receipt_path(store, status["goal_id"], status["agent_id"]))
    except Exception:  # an unreadable sidecar is "no receipt", never a failed check
        receipt = None
    if not receipt or receipt.get("source_status") != "applied":
        return False, None
    context = receipt.get("context")
    context = context if isinstance(context, dict) else {}
    refs = [
        str(item.get("candidate_ref", "")).removeprefix("candidate:")
        for item in context.get("guidance") or []
        if isinstance(item, dict)
    ]
    if candidates is not None:
        refs = [ref for ref in refs if any(ref and ref in uri for uri in candidates)]
    observed = receipt.get("observed_at")
    return bool(refs), observed if isinstance(observed, str) else None


def _names_itself(uri: str, text: str | None, corpus_id: str) -> bool:
    """The text read back is the active record the URI names, of this corpus."""
    try:
        record = json.loads(text or "")
    except ValueError:
        return False
    return (
        isinstance(record, dict)
        and record.get("schema_version") == ACTIVE_RECORD_SCHEMA
        and record.get("corpus_id") == corpus_id
        and uri.endswith(
            "-" + str(record.get("candidate_ref", "")).removeprefix("candidate:") + ".json"
        )
    )


def _probe(provider: Provider, binding: dict[str, Any]) -> tuple[dict[str, Any], list[str] | None]:
    """The four provider states (read calls only), and the corpus's record URIs."""
    scope, peer = binding["scope_ref"], binding.get("actor_peer_id")
    states: dict[str, Any] = {s: None for s in HEALTH_STATES[:4]}
    reasons: list[str] = []
    preflight = provider.preflight(timeout=HEALTH_TIMEOUT)
    if not preflight.ok and preflight.reason_code == "embedded_store_absent":
        states.update(corpus_present=False, index_present=False, retrieval_query_succeeded=False)
        return {
            **states,
            "provider_status": "available",
            "record_count": 0,
            "active_record_count": 0,
            "retired_record_count": 0,
            "reason_codes": ["embedded_store_absent"],
        }, []
    if not preflight.ok:
        return {
            **states,
            "provider_status": "unavailable",
            "record_count": None,
            "active_record_count": None,
            "retired_record_count": None,
            "reason_codes": [preflight.reason_code or "provider_unavailable"],
        }, None
    try:
        uris = _record_uris(
            provider.list(scope, limit=LIST_LIMIT, actor_peer_id=peer, timeout=HEALTH_TIMEOUT)
        )
        states["corpus_present"] = bool(uris)
        first = (
            provider.read_exact(uris[0], actor_peer_id=peer, timeout=HEALTH_TIMEOUT)
            if uris
            else None
        )
        hits = provider.search(
            scope, _query_for(first), limit=5, actor_peer_id=peer, timeout=HEALTH_TIMEOUT
        )
        states["retrieval_query_succeeded"] = True
        found = [hit.uri.split("#", 1)[0] for hit in hits]
        found = [uri for uri in found if uri in uris]
        states["index_present"] = bool(found)
        if found:
            text = provider.read_exact(found[0], actor_peer_id=peer, timeout=HEALTH_TIMEOUT)
            verified = _names_itself(found[0], text, binding["corpus_id"])
            states["result_readback_verified"] = verified
            if not verified:
                reasons.append("result_readback_mismatch")
        else:
            reasons.append("no_result_to_read_back")
        split = state_split(provider, binding, uris)
    except ProviderError as exc:
        reasons.append(exc.reason_code)
        return {
            **states,
            "provider_status": "unavailable",
            "record_count": None,
            "active_record_count": None,
            "retired_record_count": None,
            "reason_codes": reasons,
        }, None
    if not uris:
        reasons.append("corpus_empty")
    return {
        **states,
        "provider_status": "available",
        "record_count": len(uris),
        "active_record_count": split.get("active", 0),
        "retired_record_count": split.get("retired", 0),
        "reason_codes": reasons,
    }, uris


def corpus_health(
    resolution: Resolution, *, provider_for: Callable[[dict[str, Any]], Provider]
) -> dict[str, Any]:
    """``reward_memory_corpus_health_v0``: five separate states per corpus; zero writes.

    ``provider_for`` must build read-only providers. Provider unavailability is a
    state in the report, never an error.
    """
    config = resolution.config or {"corpora": {}}
    rows = []
    for corpus_id in sorted(config["corpora"]):
        entry = config["corpora"][corpus_id]
        registry_row = _registry_row(config, corpus_id)
        binding = entry["provider_binding"]
        probe, uris = _probe(provider_for(binding), binding)
        applied, observed = _applied(resolution, uris)
        reasons = probe.pop("reason_codes")
        if not registry_row["automatic_recall"]:
            reasons.append("not_recalled_automatically")
        rows.append(
            {
                "corpus_id": corpus_id,
                "provider_id": registry_row["provider_id"],
                "provider_scope_ref_digest": registry_row["provider_scope_ref_digest"],
                **probe,
                "memory_applied_with_receipt": applied,
                "latest_application_observed_at": observed,
                "automatic_recall": registry_row["automatic_recall"],
                "reason_codes": sorted(set(reasons)),
            }
        )
    return {
        **_header(resolution, HEALTH_SCHEMA),
        "health_states": list(HEALTH_STATES),
        "corpus_count": len(rows),
        "corpora": rows,
        "provider_writes_performed": 0,
        EXTERNAL_WRITES: False,
        RAW_CONTENT: False,
    }
