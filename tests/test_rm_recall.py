"""Recall execution on the embedded store: filters, caps, application receipts (§11-§12)."""

from __future__ import annotations

import copy
import inspect
import json

import pytest
from fixtures import f1
from rm_support import UNAVAILABLE, embedded_entry, ingest_kwargs, recording

from capabilities.reward_memory.contract.values import RewardMemoryInputError
from capabilities.reward_memory.memory import recall as recall_module
from capabilities.reward_memory.memory.hook import (
    RecallHookRequest,
    apply_recall,
    cite_guidance,
    run_recall_hook,
)
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from capabilities.reward_memory.memory.recall import execute_recall
from capabilities.reward_memory.memory.request import build_recall_request
from conformance.public_safety import public_safety_violations

CHECKPOINT = {
    "verified": True,
    "corpus_id": "experience",
    "workspace_ref": "workspace:demo",
    "project_ref": "project:demo",
    "surface_id": f1.SURFACE,
    "read_authority": "actor_scoped",
    "source_ref": "registry:demo-goal:reward-memory",
    "peer_ref": "agent:explorer",
}


def request(**changes):
    document = {
        "workspace_ref": "workspace:demo",
        "project_ref": "project:demo",
        "peer_ref": "agent:explorer",
        "surface_id": f1.SURFACE,
        "revision_ref": "turn-0002",
        "mode": "function_boundary",
        "queries": [{"query": "focused test module", "query_summary": "turn admission"}],
        "limit": 5,
        "observed_at": "2026-08-16T00:00:00+00:00",
        "conflict_state": "clear",
        "freshness_context": {"source_truth_current": True},
        "raw_content_captured": False,
    }
    document.update(changes)
    return document


@pytest.fixture
def stored(tmp_path):
    """A real embedded store holding the activated F1 record."""
    provider = recording(tmp_path)
    assert (
        ingest_scoped_event(f1.event(), execute=True, **ingest_kwargs(provider))["status"]
        == "activated"
    )
    provider.calls.clear()
    return provider


def recall(provider, entry=None, **changes):
    entry = entry or embedded_entry()
    packet = build_recall_request(
        entry["corpus"], request(**changes), read_authority_checkpoint=CHECKPOINT
    )
    return execute_recall(packet, provider_binding=entry["provider_binding"], provider=provider)


def test_recall_finds_the_record_with_one_provider_call(stored):
    session = recall(stored)
    packet = session.packet
    assert (packet["status"], packet["result_count"], packet["provider_call_count"]) == (
        "completed",
        1,
        1,
    )
    assert packet["results"][0]["candidate_ref"] == "candidate:6916d2a6fb7a59fefa81"
    assert packet["results"][0]["content_summary"] is None, "private corpora expose no text"
    assert packet["result_readback_verified"] is True
    assert stored.calls.count("search") == 1
    assert session.items[0].record["content_summary"] == f1.REFLECTION["content_summary"]
    assert not public_safety_violations(packet, raw_texts=(f1.REFLECTION["content_summary"],))


def test_public_safe_corpora_expose_the_summary(stored):
    entry = copy.deepcopy(embedded_entry())
    entry["corpus"]["privacy"]["visibility"] = "public_safe"
    assert (
        recall(stored, entry).packet["results"][0]["content_summary"]
        == (f1.REFLECTION["content_summary"])
    )


def test_empty_store(tmp_path):
    packet = recall(recording(tmp_path)).packet
    assert (packet["status"], packet["reason_code"], packet["empty_cause"]) == (
        "empty",
        "no_active_exact_corpus_results",
        "provider_returned_no_items",
    )


def put(provider, name, record):
    uri = f"{f1.SCOPE_REF}/{name}.json"
    provider.inner.write(
        uri, json.dumps(record, sort_keys=True, separators=(",", ":")), actor_peer_id=f1.PEER
    )
    return uri


def f1_record(stored):
    [uri] = stored.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER)
    return json.loads(stored.inner.read_exact(uri, actor_peer_id=f1.PEER))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda r: r.update(corpus_id="other"), "record_contract_filtered"),
        (lambda r: r.update(candidate_ref="nope"), "record_contract_filtered"),
        (lambda r: r["scope"].update(workspace_ref="workspace:other"), "scope_filtered"),
        (lambda r: r["scope"].update(surface_ids=["other.surface"]), "scope_filtered"),
        (lambda r: r["lifecycle"].update(state="retired"), "lifecycle_filtered"),
        (
            lambda r: r["lifecycle"].update(expires_at="2026-08-15T12:00:00+00:00"),
            "expiry_filtered",
        ),
        (lambda r: r["lifecycle"].update(expires_at="tomorrow"), "expiry_filtered"),
        (lambda r: r.pop("experience"), "legacy_contract_missing"),
        (lambda r: r["experience"].update(extra=1), "quality_filtered"),
    ],
)
def test_items_are_qualified_in_order(stored, change, reason):
    record = f1_record(stored)
    [uri] = stored.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER)
    stored.inner.delete(uri, actor_peer_id=f1.PEER)
    change(record)
    put(stored, "altered", record)
    packet = recall(stored).packet
    assert packet["status"] == "empty"
    assert packet["filtered_reason_counts"] == {reason: 1}
    assert packet["empty_cause"] == "all_provider_items_filtered"
    maintenance = packet["legacy_record_maintenance"]
    assert (maintenance["status"] == "owner_action_required") is (
        reason == "legacy_contract_missing"
    )


def test_duplicate_candidates_are_dropped_and_limit_is_kept(stored):
    record = f1_record(stored)
    put(stored, "copy", record)
    packet = recall(stored).packet
    assert (packet["provider_item_count"], packet["result_count"]) == (2, 1)
    other = copy.deepcopy(record)
    for i in range(3):
        other["candidate_ref"] = f"candidate:{i:020d}"
        put(stored, f"other-{i}", other)
    assert recall(stored, limit=2).packet["result_count"] == 2


def test_guard_blocked_request_makes_no_call(stored):
    session = recall(stored, conflict_state="unresolved")
    assert session.packet["status"] == "guard_blocked"
    assert stored.calls == []


def test_provider_failure_is_a_packet_not_an_exception(stored):
    stored.fail["search"] = UNAVAILABLE
    packet = recall(stored).packet
    assert (packet["status"], packet["reason_code"]) == (
        "provider_unavailable",
        "provider_search_failed",
    )
    assert packet["fail_open"] is True


@pytest.mark.parametrize(
    ("changes", "checkpoint", "reason"),
    [
        ({"freshness_context": None}, CHECKPOINT, "freshness_context_invalid"),
        (
            {"freshness_context": {"source_truth_current": True, "age_seconds": -1}},
            CHECKPOINT,
            "freshness_age_invalid",
        ),
        ({}, None, "read_authority_checkpoint_missing"),
        ({}, {"verified": True}, "read_authority_checkpoint_invalid"),
        ({"raw_content_captured": True}, CHECKPOINT, "raw_content_rejected"),
        ({"queries": []}, CHECKPOINT, "invalid_request"),
    ],
)
def test_typed_request_errors(changes, checkpoint, reason):
    with pytest.raises(RewardMemoryInputError) as info:
        build_recall_request(
            embedded_entry()["corpus"], request(**changes), read_authority_checkpoint=checkpoint
        )
    assert info.value.reason_code == reason


def test_applier_contract(stored):
    session = recall(stored)
    base = {"guidance": []}

    def apply(decision):
        return apply_recall(
            base,
            session,
            application_id="app-1",
            artifact_ref=None,
            apply_memory=lambda output, items: decision(items),
        )

    applied = apply_recall(
        base, session, application_id="app-1", artifact_ref="artifact:x", apply_memory=cite_guidance
    )
    assert applied["status"] == "applied" and applied["fail_open_preserved_base"] is False
    assert applied["receipt"]["memory_ref_digests"] == ["34e0a8c2c217e248"]
    assert not public_safety_violations(applied["receipt"])

    unverified = apply(
        lambda items: {
            "outcome": "applied",
            "output": {"x": 1},
            "memory_refs": [items[0].uri],
            "reasoning_summary": "r",
            "current_artifact_verified": False,
        }
    )
    assert (unverified["status"], unverified["output"]) == ("failed", base)
    foreign = apply(
        lambda items: {
            "outcome": "applied",
            "output": {"x": 1},
            "memory_refs": ["viking://elsewhere"],
            "reasoning_summary": "r",
            "current_artifact_verified": True,
        }
    )
    assert foreign["status"] == "failed"
    ignored = apply(
        lambda items: {
            "outcome": "ignored",
            "output": base,
            "memory_refs": [],
            "reasoning_summary": "did not fit",
        }
    )
    assert ignored["status"] == "ignored" and ignored["output"] is base
    changed = apply(
        lambda items: {"outcome": "refuted", "output": {"changed": 1}, "reasoning_summary": "x"}
    )
    assert changed["status"] == "failed"
    crashing = apply(lambda items: 1 / 0)
    assert (crashing["status"], crashing["receipt"]["reasoning_summary"]) == (
        "failed",
        "application_boundary_failed",
    )
    missing = apply_recall(base, session, application_id="a", artifact_ref=None, apply_memory=None)
    assert missing["receipt"]["reasoning_summary"] == "model_application_callback_not_supplied"


def hook(provider, config, **changes):
    kwargs = {
        "surface_id": f1.SURFACE,
        "base_output": {"base": 1},
        "workspace_ref": "workspace:demo",
        "project_ref": "project:demo",
        "revision_ref": "turn-0002",
        "queries": [{"query": "focused test module", "query_summary": "turn admission"}],
        "observed_at": "2026-08-16T00:00:00+00:00",
        "freshness_context": {"source_truth_current": True},
        "conflict_state": "clear",
        "read_authority_checkpoints": {"experience": CHECKPOINT},
        "application_id": "app",
        "identity": {"peer_ref": "agent:explorer"},
    }
    kwargs.update(changes)
    request = RecallHookRequest(**kwargs)
    return run_recall_hook(config, request, provider_for=lambda binding: provider).document


def config(**automation):
    from capabilities.reward_memory.contract.config import normalise_config

    return normalise_config(f1.config("embedded_sqlite", **automation))


def test_automatic_recall_hook(stored):
    document = hook(stored, config())
    assert document["status"] == "available_not_applied"
    assert document["telemetry"]["provider_call_count"] == 1
    assert document["telemetry"]["provider_call_cap"] == 1
    applied = hook(stored, config(), apply_memory=cite_guidance)
    assert applied["status"] == "applied"
    assert applied["output"]["guidance"][0]["candidate_ref"] == "candidate:6916d2a6fb7a59fefa81"


def test_hook_guards_and_disable(stored):
    assert hook(stored, config(), surface_id="x.y")["reason_code"] == (
        "surface_profile_or_query_invalid"
    )
    two = [{"query": "a", "query_summary": "b"}] * 2
    assert hook(stored, config(), queries=two)["status"] == "guard_rejected"
    bad = hook(stored, config(), read_authority_checkpoints={})
    assert (bad["reason_code"], bad["boundary_detail_code"]) == (
        "exact_corpus_request_invalid",
        "read_authority_checkpoint_missing",
    )
    off = hook(stored, config(automatic_recall=False))
    assert (off["status"], off["reason_code"]) == (
        "disabled",
        "automatic_recall_explicitly_disabled",
    )
    assert stored.calls == []


def test_hook_provider_failure_preserves_the_base(stored):
    stored.fail["search"] = UNAVAILABLE
    document = hook(stored, config(), apply_memory=cite_guidance)
    assert document["status"] == "provider_unavailable"
    assert document["output"] == {"base": 1} and document["fail_open_preserved_base"] is True


def test_the_recall_hook_takes_one_frozen_request(stored):
    """Issue 14: the hook's sixteen parameters became a request, the binding's config
    and the provider lookup; the request cannot be changed after it is built."""
    assert list(inspect.signature(run_recall_hook).parameters) == [
        "config",
        "request",
        "provider_for",
    ]
    request = RecallHookRequest(
        surface_id=f1.SURFACE,
        base_output={"base": 1},
        workspace_ref="workspace:demo",
        project_ref="project:demo",
        revision_ref=None,
        queries=[{"query": "focused test module", "query_summary": "turn admission"}],
        observed_at="2026-08-16T00:00:00+00:00",
        freshness_context={"source_truth_current": True},
        conflict_state="clear",
        read_authority_checkpoints={"experience": CHECKPOINT},
        application_id="app",
        identity={"peer_ref": "agent:explorer"},
    )
    with pytest.raises(AttributeError):
        request.surface_id = "x.y"
    first = run_recall_hook(config(), request, provider_for=lambda binding: stored).document
    again = run_recall_hook(config(), request, provider_for=lambda binding: stored).document
    assert first == again, "a request is reusable: the hook keeps no state in it"
    assert first["status"] == "available_not_applied"


def test_hits_are_read_back_only_until_limit_items_qualify(stored):
    record = f1_record(stored)
    for i in range(11):
        record["candidate_ref"] = f"candidate:{i:020d}"
        put(stored, f"other-{i}", record)
    session = recall(stored, limit=5)
    assert (session.packet["result_count"], session.packet["provider_item_count"]) == (5, 5)
    assert stored.calls == ["search"] + ["read_exact"] * 5, "12 hits, 5 read back"
    stored.calls.clear()
    twice = recall(
        stored,
        mode="bounded_agentic_search",
        queries=[{"query": q, "query_summary": "turn admission"} for q in ("focused", "module")],
        limit=5,
    ).packet
    assert stored.calls == ["search"] + ["read_exact"] * 5 + ["search"], (
        "the second query still searches (its failure would be reported) but reads nothing"
    )
    assert (twice["provider_call_count"], twice["result_readback_verified"]) == (2, True)
    assert (twice["result_count"], twice["duplicate_item_count"]) == (5, 0)


def test_a_retrieval_whose_reads_are_unusable_says_so_once_exhausted(stored):
    from capabilities.providers.sync import retrieve

    [uri] = stored.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER)
    stored.inner.write(uri, "focused test module, not a record", actor_peer_id=f1.PEER)
    retrieval = retrieve(
        stored, f1.SCOPE_REF, "focused test module", max_results=5, actor_peer_id=f1.PEER, timeout=5
    )
    assert (retrieval.status, retrieval.reason_code, stored.calls) == (
        "completed",
        None,
        ["search"],
    )
    assert list(retrieval.items) == []
    assert (retrieval.read_performed, retrieval.reason_code) == (True, "provider_reads_unusable")


def test_a_record_text_is_checked_once_and_each_recall_gets_its_own_receipt(stored, monkeypatch):
    checked = []
    check = recall_module.normalise_experience

    def counting(experience):
        checked.append(experience["future_behavior"]["action"])
        return check(experience)

    monkeypatch.setattr(recall_module, "normalise_experience", counting)
    monkeypatch.setattr(recall_module, "_QUALITY_MEMO", {})
    first = recall(stored).packet
    first["results"][0]["experience_quality"]["reason_codes"].append("changed by a reader")
    second = recall(stored).packet
    assert second["results"] == recall(stored).packet["results"]
    assert second["results"][0]["experience_quality"]["reason_codes"] == []
    assert len(checked) == 1, "the same stored text is not checked again"
    # Any other text is checked on its own: here an invalid contract, filtered each time.
    record = f1_record(stored)
    record["experience"]["extra"] = 1
    put(stored, "altered", record)
    for _ in range(2):
        assert recall(stored).packet["filtered_reason_counts"] == {"quality_filtered": 1}
    assert len(checked) == 2


def test_the_quality_memo_stays_bounded(stored, monkeypatch):
    monkeypatch.setattr(recall_module, "_QUALITY_MEMO", {})
    monkeypatch.setattr(recall_module, "QUALITY_MEMO_SIZE", 1)
    record = f1_record(stored)
    record["content_summary"] += " again"
    put(stored, "other", record)  # a second text: the memo holds one at a time
    assert recall(stored).packet["result_count"] == 1  # the same candidate, once
    assert len(recall_module._QUALITY_MEMO) == 1
