"""The shapes of the documents that cross a module boundary, as TypedDicts.

They are types only: a value is still the plain dict it always was, so the JSON, its
key order and its start-up cost do not change (TypedDicts build no objects, and the
hook path imports this module only for type checking). Keys a document gains on the
way (a reason code, the outcome of a later step) are ``NotRequired``; nested parts
that belong to one module stay ``dict[str, Any]``.

* :class:`ExperimentStatus`: ``reward_memory_experiment_status_v1``, made by
  ``binding.registry.resolve``, read by every hook and command.
* :class:`RecallPacket`: ``reward_memory_recall_v0``, one corpus's recall, made by
  ``memory.recall``, carried by the recall hook into the Turn's attempts.
* :class:`TurnRecallPacket`: ``agent_turn_recall_v0``, the Turn's recall packet,
  made by ``turn.pre_turn``, read by the plugin and the host view.
* :class:`IngestReceipt`: ``reward_memory_ingest_receipt_v0``, made by
  ``memory.ingest`` (and completed by ``memory.verify``), read by the Turn's ingest.
* :class:`JournalEntry` (and its :class:`JournalIdentity`):
  ``turn_reward_memory_sidecar_v0``, the write-ahead journal of ``turn.journal``,
  written by PostSettlement and replayed by reconciliation.
"""

# No ``from __future__ import annotations``: on Python 3.11 a TypedDict with string
# annotations misreports ``NotRequired`` keys, and tests read the keys at run time.
from typing import Any, NotRequired, TypedDict


class ExperimentStatus(TypedDict):
    """``reward_memory_experiment_status_v1`` (contracts.md §5.3)."""

    ok: bool
    schema_version: str
    goal_id: str
    agent_id: str
    experimental: bool
    enabled: bool
    configured_for_agent: bool
    config_pointer_registered: bool
    automatic_ingest: bool
    automatic_recall: bool
    fail_open: bool
    config_runtime_route: dict[str, Any]
    external_writes_performed: bool
    host_coverage: list[dict[str, str]]
    binding_revision: NotRequired[str]
    # The first failing check (or ``available``) sets these two, after the common part.
    status: NotRequired[str]
    available: NotRequired[bool]
    # ``None`` only where PreTurn carries a recall outcome without one in this shape.
    reason_code: NotRequired[str | None]
    isolation_mode: NotRequired[str]
    actor_binding_verified: NotRequired[bool]
    writability_verified: NotRequired[bool]
    exact_readback_verified: NotRequired[bool]
    repair: NotRequired[dict[str, Any]]
    config_schema_version: NotRequired[str]
    provider_id: NotRequired[str]
    corpus_count: NotRequired[int]
    corpus_ids: NotRequired[list[str]]
    surface_ids: NotRequired[list[str]]
    surface_profiles: NotRequired[list[dict[str, Any]]]
    automation_intent: NotRequired[dict[str, Any]]
    raw_content_captured: NotRequired[bool]
    enablement_receipt_status: NotRequired[str]
    adapter: NotRequired[str]
    corpus_id: NotRequired[str]


class RecallPacket(TypedDict):
    """``reward_memory_recall_v0``: what one corpus's recall returned (§11.2)."""

    ok: bool
    schema_version: str
    corpus_id: str
    surface_id: str
    mode: str
    query_kind: str
    query_evidence: dict[str, Any]
    provider_id: str
    result_count: int
    results: list[dict[str, Any]]
    provider_item_count: int
    filtered_item_count: int
    filtered_reason_counts: dict[str, int]
    duplicate_item_count: int
    empty_cause: str | None
    legacy_record_maintenance: dict[str, Any]
    result_readback_verified: bool
    provider_call_count: int
    automatic_recall: bool
    fail_open: bool
    provider_failure_is_user_gate: bool
    external_writes_performed: bool
    raw_provider_payload_captured: bool
    raw_content_persisted: bool
    status: NotRequired[str]
    reason_code: NotRequired[str | None]


class TurnRecallPacket(TypedDict):
    """``agent_turn_recall_v0``: the Turn's recall packet (turn-lifecycle §5)."""

    ok: bool
    schema_version: str
    status: str
    reason_code: str | None
    surface_id: str
    turn_recall_id: str | None
    situation_fingerprint: str | None
    context: dict[str, Any] | None
    application: dict[str, Any] | None
    recall_attempts: list[RecallPacket]
    telemetry: dict[str, Any] | None
    provider_call_count: int
    fail_open: bool
    fail_open_preserved_base: bool
    provider_failure_is_user_gate: bool
    grants_new_action_authority: bool
    quota_spend_performed: bool
    external_writes_performed: bool
    raw_provider_payload_captured: bool
    suppress_external_sinks: bool
    goal_id: str
    agent_id: str
    experiment: dict[str, Any]
    host_wiring: str
    outcome_ingest_reconciliation: NotRequired[dict[str, Any]]
    same_turn_receipt_reused: NotRequired[bool]
    same_turn_receipt_written: NotRequired[bool]


class IngestReceipt(TypedDict):
    """``reward_memory_ingest_receipt_v0``: one candidate's guard, write and readback (§10)."""

    ok: bool
    schema_version: str
    candidate_ref: str
    corpus_id: str
    policy_id: str
    surface_ids: list[str]
    guard: dict[str, Any]
    experience_quality: dict[str, Any]
    deduplicated: bool
    exact_readback_verified: bool
    memory_available_for_recall: bool
    fail_open: bool
    provider_failure_is_user_gate: bool
    grants_new_action_authority: bool
    raw_content_captured: bool
    raw_provider_payload_captured: bool
    external_writes_performed: bool
    status: NotRequired[str]
    reason_codes: NotRequired[list[str]]
    activation_ref: NotRequired[str]
    provider_ref: NotRequired[str]
    next_recall: NotRequired[dict[str, Any]]
    write: NotRequired[dict[str, Any]]
    readback: NotRequired[RecallPacket]
    destination_recall: NotRequired[dict[str, Any]]
    adapter_schema_version: NotRequired[str]
    event_schema_version: NotRequired[str]
    feedback_ref: NotRequired[str]
    event_summary_digest: NotRequired[str]
    next_reward_memory_call: NotRequired[str]
    experiment: NotRequired[ExperimentStatus]  # added by the ``ingest-event`` command


class JournalIdentity(TypedDict):
    """What names one journal; a stored journal that disagrees is never replayed."""

    goal_id: str
    agent_id: str
    turn_key: str
    source_event_id: str


class JournalEntry(JournalIdentity):
    """``turn_reward_memory_sidecar_v0``: one Turn's write-ahead ingest journal.

    Keys in file order: ``schema_version``, ``status``, the identity, then the rest.
    """

    schema_version: str
    status: str
    surface_id: str
    reflection: dict[str, Any]
    reflection_validation: dict[str, Any]
    settlement_validation: dict[str, Any]
    observed_at: str
    attempt_count: int
    raw_content_captured: bool
    binding_revision: NotRequired[str]
    public_receipt: NotRequired[dict[str, Any]]
    terminal_failure: NotRequired[dict[str, Any]]
