"""The corpus owner's retirement write, after an operator-control decision.

The operator control decides; this performs it, on the declared provider of the bound
corpus: read the stored record exactly, check it is the active record the decision
names, replace it with the same record marked retired, and read that back exactly.
Recall already skips any record whose lifecycle is not ``active``, so a retired memory
stops being recalled while its provenance stays inspectable. Without ``execute``
nothing is written. A record that changed since the decision is a conflict, never
overwritten.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from capabilities.providers.base import Provider
from capabilities.providers.sync import stored_form
from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.identities import record_body, short_digest, target_uri
from capabilities.reward_memory.curation.operator import SCHEMA as CONTROL_SCHEMA
from capabilities.reward_memory.memory.verify import write_exactly
from turn_hooks import ProviderError

SCHEMA = "reward_memory_retirement_receipt_v0"
ACTIVE_RECORD_SCHEMA = "reward_memory_active_record_v0"


def _control(document: object) -> dict[str, Any]:
    control = v.mapping(document, "input")
    if control.get("schema_version") != CONTROL_SCHEMA or control.get("status") != "control_ready":
        v.fail("input", "must be a ready operator-control result", "retirement_control_invalid")
    receipt = v.mapping(control.get("receipt"), "input.receipt")
    decision = v.mapping(control.get("decision"), "input.decision")
    v.mapping(decision.get("record"), "input.decision.record")
    if receipt.get("effective_action") != "retire" or decision.get("status") != "retired":
        v.fail("input.receipt", "is not a retirement", "retirement_control_invalid")
    return control


def retire(
    resolution: Resolution,
    document: object,
    *,
    provider_for: Callable[[dict[str, Any]], Provider],
    execute: bool,
) -> dict[str, Any]:
    """Perform (or, without ``execute``, plan) one decided retirement."""
    control = _control(document)
    receipt = control["receipt"]
    config = resolution.config
    if config is None:
        v.fail(
            "binding", f"is not available ({resolution.status['status']})", "binding_unavailable"
        )
    entry = v.lookup(config["corpora"], receipt.get("corpus_id"))
    if entry is None:
        v.fail("input.receipt.corpus_id", "is not a corpus of this binding", "corpus_not_declared")
    corpus = entry["corpus"]
    # the live declaration decides, not the one the decision was made against
    if receipt.get("authority_ref") != corpus["maintenance"]["retirement_authority"]:
        v.fail(
            "input.receipt.authority_ref",
            "is not this corpus's retirement authority",
            "operator_authority_mismatch",
        )
    candidate = str(control["decision"]["record"].get("candidate_ref"))
    binding = entry["provider_binding"]
    target = target_uri(binding["scope_ref"], entry["standing_policy"]["policy_id"], candidate)
    result: dict[str, Any] = {
        "ok": True,
        "schema_version": SCHEMA,
        "status": "planned",
        "reason_code": None,
        "corpus_id": corpus["corpus_id"],
        "provider_id": binding["provider_id"],
        "control_ref": receipt.get("control_ref"),
        "candidate_ref_digest": short_digest(candidate),
        "exact_readback_verified": False,
        "provider_write_performed": False,
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
        v.NEW_ACTION_AUTHORITY: False,
    }
    provider = provider_for(binding)
    peer = binding.get("actor_peer_id")
    timeout = float(binding["timeout_seconds"])
    try:
        current = provider.read_exact(target, actor_peer_id=peer, timeout=timeout)
    except ProviderError as exc:
        return {**result, "status": "unavailable", "reason_code": exc.reason_code}
    if current is None:
        return {**result, "status": "not_found", "reason_code": "active_record_absent"}
    try:
        stored = json.loads(current)
    except ValueError:
        stored = None
    if (
        not isinstance(stored, dict)
        or stored.get("schema_version") != ACTIVE_RECORD_SCHEMA
        or stored.get("candidate_ref") != candidate
    ):
        return {**result, "status": "conflict", "reason_code": "stored_record_differs"}
    if stored.get("lifecycle", {}).get("state") == "retired":
        return {
            **result,
            "status": "retired",
            "reason_code": "already_retired",
            "exact_readback_verified": True,
        }
    expected = retired_form(stored, "reviewed_retirement", receipt.get("control_ref"))
    if not execute:
        return {**result, "reason_code": "execute_required_for_verified_write"}
    return {**result, **write_retired(provider, target, expected, peer=peer, timeout=timeout)}


def retired_form(stored: dict[str, Any], reason: str, control_ref: object) -> str:
    """The stored form of ``stored`` marked retired, naming why and by which control."""
    retired = copy.deepcopy(stored)
    retired["lifecycle"] = {
        **{k: val for k, val in stored["lifecycle"].items() if k != "state"},
        "state": "retired",
        "retired_reason": reason,
        "retirement_control_ref": control_ref,
    }
    return stored_form(record_body(retired))


def write_retired(
    provider: Provider, target: str, expected: str, *, peer: str | None, timeout: float
) -> dict[str, Any]:
    """Replace the record at ``target`` with ``expected`` and read it back exactly.

    Returns the receipt fields the write decides: ``status`` (``retired``,
    ``readback_unverified`` or ``unavailable``), ``reason_code`` and the write flags.
    """
    return write_exactly(
        provider,
        target,
        expected,
        peer=peer,
        timeout=timeout,
        done="retired",
        mismatch="retirement_readback_mismatch",
    )
