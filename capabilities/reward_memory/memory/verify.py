"""After a write: exact readback and, for procedural experience, destination recall (§10).

A write counts only when the provider hands back exactly the bytes written, found by
a verification recall or read at the record's own address, and, for procedural
experience, when a business recall at the destination reaches the same experience.
Separate from :mod:`.ingest` because verification is recall, not writing: it reads
through the guarded request and the recall executor like any other reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capabilities.providers.base import Provider
from capabilities.reward_memory.contract.corpus import IDENTITY_FIELDS
from capabilities.reward_memory.contract.identities import content_digest
from capabilities.reward_memory.contract.values import RAW_CONTENT
from capabilities.reward_memory.memory.recall import RecallSession, execute_recall
from capabilities.reward_memory.memory.request import build_recall_request
from turn_hooks import ProviderError

if TYPE_CHECKING:
    from capabilities.reward_memory.contract.documents import IngestReceipt

READBACK_SUMMARY = "Verify the just-activated reward-memory record."
DESTINATION_SUMMARY = "Verify semantic recall at the configured destination surface."


def _verification_recall(
    record: dict[str, Any],
    corpus: dict[str, Any],
    policy: dict[str, Any],
    binding: dict[str, Any],
    provider: Provider,
    *,
    query: str,
    summary: str,
    query_kind: str,
    observed_at: str,
) -> RecallSession:
    scope = record["scope"]
    request: dict[str, Any] = {
        "workspace_ref": scope["workspace_ref"],
        "project_ref": scope["project_ref"],
        "surface_id": scope["surface_ids"][0],
        "revision_ref": scope["revision_ref"],
        "mode": "function_boundary",
        "queries": [{"query": query, "query_summary": summary}],
        "limit": 8,
        "observed_at": observed_at,
        "conflict_state": "clear",
        "query_kind": query_kind,
        RAW_CONTENT: False,
        "freshness_context": {
            "source_truth_current": True,
            "source_revision": corpus["freshness"]["source_revision"],
            "age_seconds": 0,
        },
    }
    checkpoint: dict[str, Any] = {
        "verified": True,
        "corpus_id": corpus["corpus_id"],
        "workspace_ref": scope["workspace_ref"],
        "project_ref": scope["project_ref"],
        "surface_id": scope["surface_ids"][0],
        "read_authority": corpus["read_authority"],
        "source_ref": policy["authority_source_ref"],
    }
    for key in IDENTITY_FIELDS:
        if corpus["scope"][key] is not None:
            request[key] = corpus["scope"][key]
            checkpoint[key] = corpus["scope"][key]
    packet = build_recall_request(corpus, request, read_authority_checkpoint=checkpoint)
    return execute_recall(packet, provider_binding=binding, provider=provider)


def verify_write(
    receipt: IngestReceipt,
    record: dict[str, Any],
    body: str,
    target: str,
    corpus: dict[str, Any],
    policy: dict[str, Any],
    binding: dict[str, Any],
    provider: Provider,
    observed_at: str,
) -> IngestReceipt:
    """Verify one completed write into ``receipt``: ``activated``, or why not.

    ``readback_unverified`` when the exact bytes cannot be found, and
    ``recall_unverified`` when the experience fails its quality check or the
    destination's business recall does not reach it.
    """
    expected_digest = content_digest(body)
    readback = _verification_recall(
        record,
        corpus,
        policy,
        binding,
        provider,
        query=f"{record['candidate_ref']} {record['content_summary']}",
        summary=READBACK_SUMMARY,
        query_kind="ingest_verification",
        observed_at=observed_at,
    )
    receipt["readback"] = readback.packet
    exact = any(
        item.uri == target
        and item.record.get("candidate_ref") == record["candidate_ref"]
        and item.content_digest == expected_digest
        for item in readback.items
    ) or _exact_at_target(provider, target, binding, expected_digest)
    experience = record.get("experience")
    destination: dict[str, Any] = {
        "required": record["target_class"] == "procedural_experience",
        "verified": False,
        "query_kind": "business_recall",
        "experience_digest": None,
        "receipt": None,
    }
    receipt["destination_recall"] = destination
    if not exact:
        receipt["status"] = "readback_unverified"
        receipt["reason_codes"] = ["exact_provider_readback_unverified"]
        return receipt
    receipt["exact_readback_verified"] = True
    quality = record["experience_quality"]
    if destination["required"]:
        assert experience is not None  # the guard requires it for procedural records
        behaviour = experience["future_behavior"]
        query = f"{experience['applicability'][0]} {behaviour['trigger']} {behaviour['action']}"
        business = _verification_recall(
            record,
            corpus,
            policy,
            binding,
            provider,
            query=query,
            summary=DESTINATION_SUMMARY,
            query_kind="business_recall",
            observed_at=observed_at,
        )
        digest = quality.get("experience_digest")
        destination.update(
            # The experience is what business recall must reach. When earlier Turns
            # stored the same experience, their records can fill the recall's limit
            # ahead of this one; reaching that same experience still proves it.
            verified=any(item.experience_digest == digest for item in business.items),
            experience_digest=digest,
            receipt=business.packet,
        )
    if not quality["passed"] or (destination["required"] and not destination["verified"]):
        receipt["status"] = "recall_unverified"
        receipt["reason_codes"] = ["destination_business_recall_unverified"]
        return receipt
    receipt["status"] = "activated"
    receipt["memory_available_for_recall"] = True
    receipt["reason_codes"] = []
    return receipt


def _exact_at_target(
    provider: Provider, target: str, binding: dict[str, Any], expected_digest: str
) -> bool:
    """The record at its deterministic target has exactly the written content.

    The verification recall sees only its first hits, so a corpus holding many
    records that match the same words can crowd the new record out of them. The
    record's own address is known, so it is read there: what else the corpus holds
    can never make a good write look unverified.
    """
    try:
        text = provider.read_exact(
            target,
            actor_peer_id=binding.get("actor_peer_id"),
            timeout=float(binding["timeout_seconds"]),
        )
    except ProviderError:  # unreachable or refused: not verified, so retried later
        return False
    return text is not None and content_digest(text) == expected_digest


def write_exactly(
    provider: Provider,
    uri: str,
    expected: str,
    *,
    peer: str | None,
    timeout: float,
    done: str,
    mismatch: str,
) -> dict[str, Any]:
    """Replace the document at ``uri`` with ``expected`` and read it back exactly.

    Returns the receipt fields the write decides: ``status`` (``done``,
    ``readback_unverified`` or ``unavailable``), ``reason_code`` (``mismatch`` when
    the readback differs) and the write flags. Retirement and restore both use it.
    """
    from capabilities.providers.sync import stored_form
    from capabilities.reward_memory.contract.values import EXTERNAL_WRITES

    try:
        provider.write(uri, expected, actor_peer_id=peer, timeout=timeout)
        readback = provider.read_exact(uri, actor_peer_id=peer, timeout=timeout)
    except ProviderError as exc:
        return {
            "status": "unavailable",
            "reason_code": exc.reason_code,
            "exact_readback_verified": False,
            "provider_write_performed": True,
            EXTERNAL_WRITES: True,
        }
    verified = readback is not None and stored_form(readback) == expected
    return {
        "status": done if verified else "readback_unverified",
        "reason_code": None if verified else mismatch,
        "exact_readback_verified": verified,
        "provider_write_performed": True,
        EXTERNAL_WRITES: True,
    }
