"""Ingest on the real embedded store: every receipt status, exact readback, replay."""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest
from fixtures import f1
from rm_support import TIMEOUT, UNAVAILABLE, embedded_entry, ingest_kwargs, recording

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.providers.sync import stored_form
from capabilities.reward_memory.contract.values import RewardMemoryInputError
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from conformance.public_safety import public_safety_violations


def ingest(provider, event=None, *, execute=True, entry=None):
    return ingest_scoped_event(
        event or f1.event(), execute=execute, **ingest_kwargs(provider, entry)
    )


def assert_public(receipt):
    assert not public_safety_violations(
        receipt,
        raw_texts=(f1.REFLECTION["content_summary"], f1.EXPERIENCE["future_behavior"]["action"]),
    )


def test_activated_with_exact_readback_then_deduplicated(tmp_path):
    provider = recording(tmp_path)
    first = ingest(provider)
    assert first["status"] == "activated"
    assert first["exact_readback_verified"] is True
    assert first["memory_available_for_recall"] is True
    assert first["external_writes_performed"] is True and first["deduplicated"] is False
    assert first["destination_recall"]["verified"] is True
    assert provider.calls.count("write") == 1
    second = ingest(provider)
    assert (second["status"], second["deduplicated"], second["external_writes_performed"]) == (
        "activated",
        True,
        False,
    )
    assert provider.calls.count("write") == 1, "a replay never writes again"
    assert first["activation_ref"] == second["activation_ref"] == "activation:b736728dacbd52e16567"
    assert_public(first)
    assert_public(second)


def test_fresh_ingest_costs_read_write_read_plus_two_recalls(tmp_path):
    provider = recording(tmp_path)
    ingest(provider)
    write_phase = provider.calls[: provider.calls.index("write") + 2]
    # The first read asks whether the lesson was forgotten (issue 36).
    assert write_phase == ["read_exact", "preflight", "read_exact", "write", "read_exact"]
    assert provider.calls.count("search") == 2, "exact readback and destination recall"


def test_one_ingest_opens_the_embedded_store_once(tmp_path, monkeypatch):
    # Its preflight, reads, write and both recalls share one connection, which the
    # ingest closes: the next ingest opens (and checks) the store afresh.
    provider = EmbeddedSqliteProvider(tmp_path / "store" / "memory.sqlite3")
    assert provider.preflight(timeout=5).ok
    opened = []
    connect = sqlite3.connect

    def counting(target, *args, **kwargs):
        if str(target) == str(provider.path):
            opened.append(target)
        return connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counting)
    assert ingest(provider)["status"] == "activated"
    assert len(opened) == 1
    assert ingest(provider)["deduplicated"] is True
    assert len(opened) == 2


def test_dry_run_is_preflight_ready_and_writes_nothing(tmp_path):
    provider = recording(tmp_path)
    receipt = ingest(provider, execute=False)
    assert (receipt["status"], receipt["reason_codes"]) == (
        "preflight_ready",
        ["execute_required_for_verified_write"],
    )
    assert receipt["write"]["retry_disposition"] == "execute_required"
    assert "write" not in provider.calls
    assert receipt["provider_ref"].startswith("provider-")


def test_dry_run_with_unreadable_target_is_incomplete(tmp_path):
    provider = recording(tmp_path)
    provider.fail["read_exact"] = UNAVAILABLE
    receipt = ingest(provider, execute=False)
    assert (receipt["status"], receipt["reason_codes"]) == (
        "preflight_incomplete",
        ["provider_sync_target_parent_unavailable"],
    )


def test_unavailable_provider(tmp_path):
    from capabilities.providers.factory import UnavailableProvider

    receipt = ingest(UnavailableProvider("embedded_sqlite", "embedded_store_failed"))
    assert (receipt["status"], receipt["reason_codes"]) == (
        "unavailable",
        ["embedded_store_failed"],
    )
    assert receipt["fail_open"] is True


def test_an_unconfigured_endpoint_is_not_worth_retrying(monkeypatch, tmp_path):
    """Like LoopX 2.1.1 without its `ov` CLI: a missing endpoint is `no_retry` (issue 19)."""
    from capabilities.providers.factory import build_provider

    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("OPENVIKING_URL", raising=False)
    receipt = ingest(build_provider({"provider_id": "openviking"}, repo=tmp_path))
    assert (receipt["status"], receipt["write"]["retry_disposition"]) == ("unavailable", "no_retry")


@pytest.mark.parametrize(
    ("fault", "status", "reason"),
    [
        ({"write": UNAVAILABLE}, "provider_unavailable", "provider_sync_write_failed_absent"),
        ({"write": TIMEOUT}, "provider_unavailable", "provider_sync_write_timeout_absent"),
    ],
)
def test_a_failed_write_is_provider_unavailable_and_retryable(tmp_path, fault, status, reason):
    provider = recording(tmp_path)
    provider.fail.update(fault)
    receipt = ingest(provider)
    assert (receipt["status"], receipt["reason_codes"]) == (status, [reason])
    assert receipt["write"]["retry_disposition"] == "safe_to_retry"
    provider.fail.clear()
    assert ingest(provider)["status"] == "activated", "a retry completes it"


def test_a_write_that_lands_differently_is_committed_pending(tmp_path):
    provider = recording(tmp_path)
    provider.write_lands_then = '{"schema_version":"something else"}'
    receipt = ingest(provider)
    assert (receipt["status"], receipt["reason_codes"]) == (
        "committed_pending",
        ["provider_commit_pending"],
    )
    assert receipt["write"]["retry_disposition"] == "wait_and_reconcile"


def test_a_record_already_there_but_different_is_a_revision_conflict(tmp_path):
    provider = recording(tmp_path)
    ingest(provider)
    [uri] = provider.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER)
    provider.inner.write(uri, '{"tampered": true}', actor_peer_id=f1.PEER)
    receipt = ingest(provider)
    assert (receipt["status"], receipt["reason_codes"]) == (
        "provider_unavailable",
        ["provider_sync_revision_conflict"],
    )
    assert provider.inner.read_exact(uri, actor_peer_id=f1.PEER) == '{"tampered": true}', (
        "a different record is never overwritten"
    )


def test_lost_readback_after_write(tmp_path):
    provider = recording(tmp_path)
    calls = {"n": 0}
    real = provider.inner.read_exact

    def flaky(uri, **kwargs):
        calls["n"] += 1
        # after the forgotten-lesson read and the target read: the readback after the write
        if calls["n"] == 3:
            raise UNAVAILABLE
        return real(uri, **kwargs)

    provider.inner.read_exact = flaky
    receipt = ingest(provider)
    assert receipt["reason_codes"] == ["provider_sync_reconciliation_unavailable"]
    assert receipt["write"]["pending_count"] == 1
    provider.inner.read_exact = real
    replay = ingest(provider)
    assert (replay["status"], replay["deduplicated"]) == ("activated", True), (
        "the write had landed; the replay reconciles without writing"
    )


def test_exact_readback_mismatch_is_readback_unverified(tmp_path):
    provider = recording(tmp_path)
    receipt = ingest(provider)
    assert receipt["status"] == "activated"
    [uri] = provider.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER)
    stored = provider.inner.read_exact(uri, actor_peer_id=f1.PEER)
    # a record that reads back with one changed byte is not the record we wrote
    provider.readback_text = None
    original = provider.inner.read_exact

    def altered(target, **kwargs):
        text = original(target, **kwargs)
        if text == stored and provider.calls.count("search") >= 1:
            return text.replace("focused", "Focused", 1)
        return text

    provider.calls.clear()
    provider.inner.read_exact = altered
    receipt = ingest(provider)
    assert receipt["status"] in {"readback_unverified", "provider_unavailable"}
    assert receipt["exact_readback_verified"] is False


def test_destination_recall_miss_is_recall_unverified(tmp_path):
    provider = recording(tmp_path)
    real_search = provider.inner.search

    def readback_only(scope_ref, query, **kwargs):
        return real_search(scope_ref, query, **kwargs) if query.startswith("candidate:") else []

    provider.inner.search = readback_only
    receipt = ingest(provider)
    assert (receipt["status"], receipt["reason_codes"]) == (
        "recall_unverified",
        ["destination_business_recall_unverified"],
    )
    assert receipt["exact_readback_verified"] is True
    assert receipt["destination_recall"]["verified"] is False


GUARD_CASES = {
    "wrong-role": (
        lambda e: e["source"].update(actor_role="maintainer"),
        ["candidate_actor_role_not_allowed"],
    ),
    "wrong-source-kind": (
        lambda e: e["source"].update(source_kind="gossip"),
        ["candidate_source_kind_not_allowed"],
    ),
    "no-experience": (
        lambda e: e.pop("experience"),
        ["procedural_experience_quality_contract_missing"],
    ),
    "stale": (
        lambda e: e["guard_context"].update(source_freshness="stale"),
        ["source_freshness_not_current"],
    ),
    "action-scope": (
        lambda e: e.update(requested_action_scopes=["deploy"]),
        ["advisory_class_requested_action_authority", "candidate_action_scope_not_allowed"],
    ),
    "viking-agent-peer": (
        lambda e: e.update(peer_ref="viking://agent/x"),
        ["candidate_peer_ref_corpus_mismatch", "candidate_peer_ref_policy_mismatch"],
    ),
    "wrong-peer": (
        lambda e: e.update(peer_ref="agent:intruder"),
        ["candidate_peer_ref_corpus_mismatch", "candidate_peer_ref_policy_mismatch"],
    ),
    "other-workspace": (
        lambda e: e.update(workspace_ref="workspace:other"),
        ["candidate_workspace_corpus_mismatch", "candidate_workspace_policy_mismatch"],
    ),
}


@pytest.mark.parametrize("name", sorted(GUARD_CASES))
def test_guard_blocked_makes_zero_provider_calls(tmp_path, name):
    change, reasons = GUARD_CASES[name]
    event = f1.event()
    change(event)
    provider = recording(tmp_path)
    receipt = ingest(provider, event)
    assert receipt["status"] == "guard_blocked"
    assert receipt["guard"]["reason_codes"] == reasons
    assert provider.calls == []
    assert "activation_ref" not in receipt


def test_standing_policy_guards(tmp_path):
    entry = copy.deepcopy(embedded_entry())
    entry["standing_policy"].update(enabled=False, auto_activate=False)
    entry["corpus"]["write_authority"] = "read_only"
    entry["corpus"]["retrieval"]["readback_required"] = False
    provider = recording(tmp_path)
    receipt = ingest(provider, entry=entry)
    assert receipt["guard"]["reason_codes"] == [
        "corpus_exact_readback_not_required",
        "corpus_write_authority_not_durable",
        "standing_policy_disabled",
        "standing_policy_requires_manual_review",
    ]
    assert provider.calls == []


BAD_EVENTS = {
    "unknown-key": lambda e: e.update(extra=1),
    "wrong-type": lambda e: e.update(source="source:x"),
    # A falsy non-string is empty text (contracts.md §1.1); 42 would be the text "42".
    "empty-number": lambda e: e.update(content_summary=0),
    "oversize-raw": lambda e: e.update(raw_content_captured=True),
    "local-path": lambda e: e.update(content_summary="see /home/alice/notes.txt"),
    "secret": lambda e: e["reasoning"].update(summary="token=abcdefghijklmnop"),
    "bad-class": lambda e: e.update(target_class="working_context"),
    "bad-confidence": lambda e: e["reasoning"].update(confidence="certain"),
    "extra-experience-key": lambda e: e["experience"].update(note="x"),
    "not-an-object": None,
}


@pytest.mark.parametrize("name", sorted(BAD_EVENTS))
def test_hostile_events_are_typed_errors_with_zero_calls(tmp_path, name):
    event = f1.event()
    if BAD_EVENTS[name] is None:
        event = ["not", "an", "event"]
    else:
        BAD_EVENTS[name](event)
    provider = recording(tmp_path)
    with pytest.raises(RewardMemoryInputError) as info:
        ingest(provider, event)
    assert info.value.to_public()["schema_version"] == "reward_memory_error_v0"
    assert provider.calls == []
    assert not (tmp_path / "store").exists(), "nothing was created or written"


def test_oversize_summary_is_cut_not_rejected(tmp_path):
    event = f1.event()
    event["content_summary"] = "long " * 400
    receipt = ingest(recording(tmp_path), event)
    assert receipt["status"] == "activated"


def test_stored_record_is_the_canonical_body_without_newline(tmp_path):
    provider = recording(tmp_path)
    ingest(provider)
    [uri] = provider.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER)
    text = provider.inner.read_exact(uri, actor_peer_id=f1.PEER)
    record = json.loads(text)
    assert text == stored_form(
        json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    )
    assert record["review"]["reasoning_summary"] == (
        "Standing exact-scope policy accepted this compact candidate."
    )
