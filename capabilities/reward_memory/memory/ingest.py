"""Ingest: standing-policy guard, activation and provider sync (§7, §10).

A record is accepted only when the provider returns exactly the bytes written
(resource ref, candidate ref and content digest all match) and, for procedural
experience, a business recall at the destination finds the same experience; that
verification is :mod:`.verify`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capabilities.providers.base import Provider
from capabilities.providers.factory import SUPPORTED_PROVIDERS
from capabilities.providers.sync import held, sync
from capabilities.reward_memory.contract.candidate import (
    EVENT_SCHEMA,
    build_active_record,
    normalise_event,
    scoped_feedback_candidate,
)
from capabilities.reward_memory.contract.corpus import IDENTITY_FIELDS
from capabilities.reward_memory.contract.identities import (
    STANDING_POLICY_REASONING,
    provider_ref,
    record_body,
    review_ref,
    short_digest,
    target_uri,
)
from capabilities.reward_memory.contract.values import (
    EXTERNAL_WRITES,
    NEW_ACTION_AUTHORITY,
    RAW_CONTENT,
    timestamp,
)
from capabilities.reward_memory.memory.forgotten import FORGOTTEN_REASON, is_forgotten
from capabilities.reward_memory.memory.verify import verify_write
from turn_hooks import ProviderError

if TYPE_CHECKING:
    from capabilities.reward_memory.contract.documents import IngestReceipt

INGEST_SCHEMA = "reward_memory_ingest_receipt_v0"
POLICY_RULE = (
    "standing_policy_checks_exact_owner_class_source_actor_scope_and_authority_"
    "without_semantic_routing"
)
_SCOPE_NAMES = {"workspace_ref": "workspace", "project_ref": "project"}
_SCOPE_NAMES.update({key: key for key in IDENTITY_FIELDS})
PENDING_SYNC_STATUSES = frozenset({"committed_pending"})


def standing_policy_reasons(
    candidate: dict[str, Any], corpus: dict[str, Any], policy: dict[str, Any]
) -> list[str]:
    """The standing-policy guard codes (§7) for one candidate, corpus and policy."""
    reasons = []
    corpus_scope = corpus["scope"]
    policy_scope = policy["scope"]
    scope = candidate["scope"]
    if not policy["enabled"]:
        reasons.append("standing_policy_disabled")
    if not policy["auto_activate"]:
        reasons.append("standing_policy_requires_manual_review")
    if policy["owner_ref"] != corpus["owner_ref"]:
        reasons.append("standing_policy_owner_mismatch")
    for key, name in _SCOPE_NAMES.items():
        if policy_scope.get(key) != corpus_scope[key]:
            reasons.append(f"standing_policy_{name}_corpus_mismatch")
    if not set(policy_scope["surface_ids"]) <= set(corpus_scope["surface_ids"]):
        reasons.append("standing_policy_surface_exceeds_corpus")
    if corpus["lifecycle"]["state"] != "active":
        reasons.append("corpus_not_active")
    if corpus["write_authority"] in {"read_only", "ephemeral_runtime"}:
        reasons.append("corpus_write_authority_not_durable")
    if not corpus["retrieval"]["readback_required"]:
        reasons.append("corpus_exact_readback_not_required")
    if candidate["target_class"] != corpus["class_id"]:
        reasons.append("candidate_class_corpus_mismatch")
    if policy["allowed_target_classes"] != [corpus["class_id"]]:
        reasons.append("standing_policy_class_not_exact_for_corpus")
    if candidate["target_class"] not in policy["allowed_target_classes"]:
        reasons.append("candidate_class_not_allowed")
    if candidate["source"]["source_kind"] not in policy["allowed_source_kinds"]:
        reasons.append("candidate_source_kind_not_allowed")
    if candidate["source"]["actor_role"] not in policy["allowed_actor_roles"]:
        reasons.append("candidate_actor_role_not_allowed")
    for key, name in _SCOPE_NAMES.items():
        if scope.get(key) != policy_scope.get(key):
            reasons.append(f"candidate_{name}_policy_mismatch")
    if len(scope["surface_ids"]) != 1:
        reasons.append("candidate_surface_count_not_one")
    if not set(scope["surface_ids"]) <= set(policy_scope["surface_ids"]):
        reasons.append("candidate_surface_not_allowed")
    for key, name in _SCOPE_NAMES.items():
        if scope.get(key) != corpus_scope[key]:
            reasons.append(f"candidate_{name}_corpus_mismatch")
    if not set(scope["surface_ids"]) <= set(corpus_scope["surface_ids"]):
        reasons.append("candidate_surface_corpus_mismatch")
    if (
        corpus["freshness"]["mode"] == "revision_bound"
        and scope["revision_ref"] != corpus["freshness"]["source_revision"]
    ):
        reasons.append("candidate_revision_corpus_mismatch")
    if not set(candidate["requested_action_scopes"]) <= set(policy["allowed_action_scopes"]):
        reasons.append("candidate_action_scope_not_allowed")
    return reasons


def _base_receipt(
    candidate_packet: dict[str, Any], corpus: dict[str, Any], policy: dict[str, Any]
) -> IngestReceipt:
    candidate = candidate_packet["candidate"]
    quality = candidate_packet["guard"]["experience_quality"]
    return {
        "ok": True,
        "schema_version": INGEST_SCHEMA,
        "candidate_ref": candidate["candidate_ref"],
        "corpus_id": corpus["corpus_id"],
        "policy_id": policy["policy_id"],
        "surface_ids": candidate["scope"]["surface_ids"],
        "guard": {},
        "experience_quality": quality,
        "deduplicated": False,
        "exact_readback_verified": False,
        "memory_available_for_recall": False,
        "fail_open": True,
        "provider_failure_is_user_gate": False,
        NEW_ACTION_AUTHORITY: False,
        RAW_CONTENT: False,
        "raw_provider_payload_captured": False,
        EXTERNAL_WRITES: False,
    }


def ingest_candidate(
    candidate_packet: dict[str, Any],
    *,
    corpus: dict[str, Any],
    standing_policy: dict[str, Any],
    provider_binding: dict[str, Any],
    observed_at: object,
    execute: bool = False,
    provider: Provider,
    automatic_recall: bool = False,
) -> IngestReceipt:
    """Guard, activate, write and verify one candidate; return the ingest receipt.

    ``observed_at`` is checked only once the guard passes: it dates the activated
    record, so a blocked candidate's receipt does not depend on it.
    """
    candidate = candidate_packet["candidate"]
    receipt = _base_receipt(candidate_packet, corpus, standing_policy)
    reasons = list(candidate_packet["guard"]["reason_codes"])
    reasons += standing_policy_reasons(candidate, corpus, standing_policy)
    if not candidate_packet["guard"]["passed"] and not reasons:
        reasons.append("candidate_guard_not_passed")
    reasons = sorted(set(reasons))
    receipt["guard"] = {
        "passed": not reasons,
        "reason_codes": reasons,
        "experience_quality": receipt["experience_quality"],
        "semantic_reasoning_preserved": True,
        "rule": POLICY_RULE,
    }
    if reasons:
        receipt["status"] = "guard_blocked"
        return receipt
    observed_at = timestamp(observed_at, "input.observed_at")
    policy_id = standing_policy["policy_id"]
    review = {
        "reviewer_ref": standing_policy["reviewer_ref"],
        "review_ref": review_ref(policy_id, candidate["candidate_ref"]),
        "reasoning_summary": STANDING_POLICY_REASONING,
    }
    record = build_active_record(candidate, corpus, review, observed_at)
    target = target_uri(provider_binding["scope_ref"], policy_id, candidate["candidate_ref"])
    body = record_body(record)
    # The forgotten-lesson check, the write, its readback and the destination recall
    # on one connection.
    with held(provider):
        refused = _forgotten(receipt, candidate, provider, provider_binding, execute)
        if refused is not None:
            return refused
        receipt["activation_ref"] = record["activation_ref"]
        receipt["provider_ref"] = provider_ref(
            provider_binding["provider_id"], provider_binding["namespace"], target
        )
        receipt["next_recall"] = {
            "corpus_id": corpus["corpus_id"],
            "surface_ids": candidate["scope"]["surface_ids"],
            "mode": "function_boundary",
            "automatic_recall": automatic_recall,
        }
        return _sync_and_verify(
            receipt,
            record,
            body,
            target,
            corpus,
            standing_policy,
            provider_binding,
            provider,
            execute,
            observed_at,
        )


def _forgotten(
    receipt: IngestReceipt,
    candidate: dict[str, Any],
    provider: Provider,
    provider_binding: dict[str, Any],
    execute: bool,
) -> IngestReceipt | None:
    """The refusal of a lesson its owner forgot (:mod:`.forgotten`), else ``None``.

    Final, like a guard refusal: the same lesson is refused however often it is
    retried, until ``memory restore`` clears the mark. A mark that cannot be read
    leaves the answer to the sync when the provider is down (its preflight names
    why, as it always did); a provider that is up but could not say is retried
    later, never written to meanwhile. A dry run writes nothing either way.
    """
    experience = candidate.get("experience")
    if not isinstance(experience, dict):
        return None
    try:
        forgotten = is_forgotten(provider, provider_binding, experience)
    except ProviderError:
        timeout = float(provider_binding["timeout_seconds"])
        if not execute or not provider.preflight(timeout=timeout).ok:
            return None
        receipt["status"] = "provider_unavailable"
        receipt["reason_codes"] = ["forgotten_check_unavailable"]
        return receipt
    if not forgotten:
        return None
    receipt["guard"] = {**receipt["guard"], "passed": False, "reason_codes": [FORGOTTEN_REASON]}
    receipt["status"] = "guard_blocked"
    receipt["reason_codes"] = [FORGOTTEN_REASON]
    return receipt


def _sync_and_verify(
    receipt: IngestReceipt,
    record: dict[str, Any],
    body: str,
    target: str,
    corpus: dict[str, Any],
    standing_policy: dict[str, Any],
    provider_binding: dict[str, Any],
    provider: Provider,
    execute: bool,
    observed_at: str,
) -> IngestReceipt:
    """Write the activated record at most once, then verify it (:mod:`.verify`)."""
    if provider_binding["provider_id"] not in SUPPORTED_PROVIDERS:
        # No tool can sync to a provider it does not know: LoopX 2.1.1's sync fails
        # before any packet exists, whatever the scope ref looks like, and the
        # receipt says so the same way.
        receipt["status"] = "provider_unavailable"
        receipt["reason_codes"] = ["provider_sync_execution_failed"]
        return receipt
    result = sync(
        provider,
        [(body, target)],
        namespace=provider_binding["namespace"],
        execute=execute,
        actor_peer_id=provider_binding.get("actor_peer_id"),
        timeout=float(provider_binding["timeout_seconds"]),
        observed_at=observed_at,
    )
    receipt["write"] = result.packet()
    receipt[EXTERNAL_WRITES] = result.write_count > 0
    if not execute or result.status == "unavailable":
        receipt["status"] = result.status
        receipt["reason_codes"] = [result.reason_code] if result.reason_code else []
        return receipt
    if result.status != "completed" or target not in result.result_refs:
        receipt["status"] = (
            "committed_pending"
            if result.status in PENDING_SYNC_STATUSES
            else "provider_unavailable"
        )
        receipt["reason_codes"] = [result.reason_code or "provider_sync_unverified"]
        return receipt
    receipt["deduplicated"] = result.write_count == 0
    return verify_write(
        receipt,
        record,
        body,
        target,
        corpus,
        standing_policy,
        provider_binding,
        provider,
        observed_at,
    )


def ingest_scoped_event(
    event: object,
    *,
    corpus: dict[str, Any],
    standing_policy: dict[str, Any],
    provider_binding: dict[str, Any],
    observed_at: object,
    execute: bool = False,
    provider: Provider,
    automatic_recall: bool = False,
) -> IngestReceipt:
    """Ingest one ``scoped_feedback_reward_memory_event_v0`` (typed error when invalid)."""
    normal = normalise_event(event)
    checkpoint = None
    if normal["target_class"] == "hard_policy":
        # Hard policy needs authority; the standing policy is the only authority here.
        checkpoint = {
            "verified": standing_policy["enabled"],
            "source_ref": standing_policy["authority_source_ref"],
            "actor_ref": normal["source"]["actor_ref"],
            "actor_role": normal["source"]["actor_role"],
            "project_ref": normal["project_ref"],
            "action_scopes": normal["requested_action_scopes"],
        }
    adapter = scoped_feedback_candidate(normal, checkpoint=checkpoint)
    receipt = ingest_candidate(
        adapter["shared_candidate"],
        corpus=corpus,
        standing_policy=standing_policy,
        provider_binding=provider_binding,
        observed_at=observed_at,
        execute=execute,
        provider=provider,
        automatic_recall=automatic_recall,
    )
    receipt.update(
        {
            "adapter_schema_version": adapter["schema_version"],
            "event_schema_version": EVENT_SCHEMA,
            "feedback_ref": normal["feedback_ref"],
            "event_summary_digest": short_digest(normal["content_summary"]),
            "next_reward_memory_call": "explicit_function_boundary_recall",
        }
    )
    return receipt
