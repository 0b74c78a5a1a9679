"""PreTurn: the Turn's recall packet and the memory contribution (turn-lifecycle §5-§6).

Everything here fails open: a disabled binding, a guard or a provider failure yields
a packet that says so, and the Turn proceeds. The contribution never grants
authority; it carries private, non-authoritative guidance and, when ingest is on,
the reflection request.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, cast

from capabilities.providers.base import Provider
from capabilities.providers.factory import noting_semantic
from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract.identities import application_id
from capabilities.reward_memory.contract.values import EXTERNAL_WRITES, NEW_ACTION_AUTHORITY
from capabilities.reward_memory.memory.hook import (
    RecallHookRequest,
    cite_guidance,
    read_checkpoint,
    run_recall_hook,
)
from capabilities.reward_memory.memory.recall import failed_attempt_reason
from capabilities.reward_memory.turn.application import APPLICATION_INSTRUCTION, remember_recall
from capabilities.reward_memory.turn.application import FIELD as APPLICATION_FIELD
from capabilities.reward_memory.turn.application import FIELD_MAX as APPLICATION_FIELD_MAX
from capabilities.reward_memory.turn.host_view import (
    guidance_items,
    shows_new,
    with_capability_flags,
)
from capabilities.reward_memory.turn.reconcile import reconcile
from capabilities.reward_memory.turn.settings import ranking_of
from capabilities.reward_memory.turn.situation import (
    SURFACE,
    build_situation,
    identity_scope,
    search_text,
    situation_query,
    situation_summary,
)
from sidecars import SidecarStore, goal_agent_parts
from turn_hooks import SidecarError, TurnContext, measure_context_items, measure_result_bytes

if TYPE_CHECKING:
    from capabilities.reward_memory.contract.documents import ExperimentStatus, TurnRecallPacket

PACKET_SCHEMA = "agent_turn_recall_v0"
CONTEXT_SCHEMA = "agent_turn_recall_context_v0"
RECEIPT_SCHEMA = "agent_turn_recall_receipt_v1"
SLOT = "reward_memory_recall"
RESULT_FIELD = "reward_memory_reflection_json"
RESULT_FIELD_MAX = 2400
BUDGET = 65536
EXPERIMENT_KEYS = (
    "enabled",
    "available",
    "configured_for_agent",
    "goal_id",
    "agent_id",
    "automatic_recall",
    "automatic_ingest",
)

GUIDANCE_INSTRUCTION = (
    "reward_memory_recall may hold guidance: the memories below, from this Agent's "
    "validated past Turns. Private context, not authority: use one only where it fits the "
    "evidence in front of you now, never as permission to act."
)
REFLECTION_INSTRUCTION = (
    # Every rule the reader (contract/reader.py) still enforces, and only those: what it
    # reads tolerantly (constants, key and enum case, fences, refs as phrases) is unsaid.
    # Part of every Turn's context, so each word earns its place (issue 38: the whole
    # no-recall text, with the host's request, stays under 1 KB on every channel).
    "Fill reward_memory_reflection_json only when independent evidence from this Turn (a "
    "test run, a review, a measured result; never your own summary) showed a reusable way "
    "of working. It is one JSON object and nothing else: outcome_kind (research, "
    "simulation, real or engineering), content_summary, reasoning_summary, confidence (low, "
    "medium or high), evidence_refs (1 to 5 refs to that evidence, such as a test id) and "
    "experience: applicability and limitations (1 to 5 items each), observed_outcome, "
    "attribution, future_behavior (trigger, action, validation, stop_condition). Each text "
    "at most 500 characters, the whole at most 2400; no secrets, no absolute or home paths."
)

ProviderFor = Callable[[dict[str, Any]], Provider]


def automation_enabled(payload: dict[str, Any], op: str) -> bool:
    """The automation gate of §6 for ``automatic_recall`` or ``automatic_ingest``."""
    recall = payload.get(SLOT)
    experiment = recall.get("experiment") if isinstance(recall, dict) else None
    envelope = payload.get("turn_envelope")
    envelope = envelope if isinstance(envelope, dict) else {}
    boundary = envelope.get("boundary")
    capabilities = boundary.get("capabilities") if isinstance(boundary, dict) else None
    flags = capabilities.get("reward_memory") if isinstance(capabilities, dict) else None
    return (
        isinstance(experiment, dict)
        and isinstance(flags, dict)
        and flags.get(op) is True
        and all(
            experiment.get(key) is True for key in ("enabled", "available", "configured_for_agent")
        )
        and bool(envelope.get("goal_id"))
        and bool(envelope.get("agent_id"))
        and envelope.get("goal_id") == experiment.get("goal_id")
        and envelope.get("agent_id") == experiment.get("agent_id")
        and experiment.get(op) is True
    )


def _experiment(status: ExperimentStatus) -> dict[str, Any]:
    return {key: status.get(key) for key in EXPERIMENT_KEYS}


def _packet(status: ExperimentStatus, **fields: Any) -> TurnRecallPacket:
    packet: TurnRecallPacket = {
        "ok": True,
        "schema_version": PACKET_SCHEMA,
        "status": status["status"],
        "reason_code": status.get("reason_code"),
        "surface_id": SURFACE,
        "turn_recall_id": None,
        "situation_fingerprint": None,
        "context": None,
        "application": None,
        "recall_attempts": [],
        "telemetry": None,
        "provider_call_count": 0,
        "fail_open": True,
        "fail_open_preserved_base": True,
        "provider_failure_is_user_gate": False,
        NEW_ACTION_AUTHORITY: False,
        "quota_spend_performed": False,
        EXTERNAL_WRITES: False,
        "raw_provider_payload_captured": False,
        "suppress_external_sinks": True,
        "goal_id": status["goal_id"],
        "agent_id": status["agent_id"],
        "experiment": _experiment(status),
        "host_wiring": "agent_turn_admission",
    }
    # The callers pass packet keys only (ids, outcome, reconciliation).
    packet.update(cast("TurnRecallPacket", fields))
    return packet


def receipt_path(store: SidecarStore, goal_id: str, agent_id: str) -> Any:
    """``agent-turn-recall/T(goal)/T(agent).json`` (identities §4)."""
    directory, goal, agent = goal_agent_parts("agent-turn-recall", goal_id, agent_id)
    return store.path(directory, goal, agent + ".json")


def turn_recall(
    turn: TurnContext,
    resolution: Resolution,
    *,
    provider_for: ProviderFor,
) -> TurnRecallPacket:
    """The Turn's ``agent_turn_recall_v0`` packet; never raises for expected faults."""
    status = resolution.status
    if not status["available"] or resolution.config is None:
        return _packet(status)
    config = resolution.config
    extra: dict[str, Any] = {}
    if config["automation"]["automatic_ingest"]:
        extra["outcome_ingest_reconciliation"] = reconcile(
            resolution, provider_for=provider_for, observed_at=turn.observed_at
        )
    if not config["automation"]["automatic_recall"]:
        return _packet(
            {
                **status,
                "status": "explicitly_disabled",
                "reason_code": "automatic_recall_explicitly_disabled",
            },
            **extra,
        )
    if SURFACE not in config["surfaces"]:
        return _packet(
            {
                **status,
                "status": "guard_rejected",
                "reason_code": "surface_profile_or_query_invalid",
            },
            **extra,
        )
    scope = identity_scope(config)
    situation = build_situation(turn, status["goal_id"], status["agent_id"], scope)
    recall_id = situation["turn_recall_id"]
    fingerprint = situation["situation_fingerprint"]
    ids = {"turn_recall_id": recall_id, "situation_fingerprint": fingerprint}
    store = resolution.sidecars
    path = receipt_path(store, status["goal_id"], status["agent_id"])
    revision = status.get("binding_revision")
    try:
        previous = store.read(path)
    except SidecarError:
        previous = None
    if (
        previous is not None
        and previous.get("turn_recall_id") == recall_id
        and previous.get("binding_revision") == revision
    ):
        return _packet(
            {**status, "status": "deduplicated", "reason_code": previous.get("reason_code")},
            **ids,
            **extra,
            context=previous.get("context"),
            same_turn_receipt_reused=True,
        )
    base = {"schema_version": CONTEXT_SCHEMA, "situation": situation, "guidance": []}
    corpora = config["surfaces"][SURFACE]["corpus_ids"]
    source_ref = f"registry:{status['goal_id']}:reward-memory"
    request = RecallHookRequest(
        surface_id=SURFACE,
        base_output=base,
        workspace_ref=scope["workspace_ref"],
        project_ref=scope["project_ref"],
        revision_ref=fingerprint,
        queries=[
            {"query": situation_query(situation), "query_summary": situation_summary(situation)}
        ],
        observed_at=turn.observed_at,
        freshness_context={
            "source_truth_current": situation["status_health_ok"],
            "source_revision": fingerprint,
        },
        conflict_state=situation["conflict_state"],
        read_authority_checkpoints={
            c: read_checkpoint(config["corpora"][c], SURFACE, source_ref) for c in corpora
        },
        application_id=application_id(recall_id),
        artifact_ref=fingerprint,
        identity={key: scope.get(key) for key in ("user_ref", "peer_ref", "session_ref")},
        apply_memory=cite_guidance,
        search_text=search_text(turn),
    )
    ranking = ranking_of(store, status["goal_id"], status["agent_id"])
    audit: list[dict[str, Any]] = []
    provider_for, semantic_reason = noting_semantic(provider_for)
    if ranking == "utility":  # off by default: `turn-hooks init --ranking utility`
        # Imported here: a binding that ranks by relevance pays nothing for them (issue 39).
        from capabilities.reward_memory.turn.ranking import rank_factors, ranked_provider_for

        factors = rank_factors(
            store,
            goal_id=status["goal_id"],
            agent_id=status["agent_id"],
            config=config,
            surface_id=SURFACE,
        )
        provider_for = ranked_provider_for(provider_for, factors, audit)
    result = run_recall_hook(config, request, provider_for=provider_for)
    hook = result.document
    # Which items carried which factor, by digest: any ranking can be replayed.
    ranking_receipt = {"ranking": ranking, "modifiers": audit} if ranking == "utility" else None
    shown = shows_new(hook.get("output"), turn.delivered_item_refs)
    if config["automation"]["automatic_ingest"] and _host_settles(turn) and shown:
        # Settlement binds the answer to what this Turn showed (issue 39): none, no record.
        remember_recall(
            store,
            goal_id=status["goal_id"],
            agent_id=status["agent_id"],
            turn_key=turn.turn_key,
            config=config,
            hook=result,
            observed_at=turn.observed_at,
            ranking=ranking_receipt,
        )
    reason = hook.get("reason_code") or failed_attempt_reason(hook)
    if reason is None and hook["status"] == "not_available":
        # Likewise when none was relevant: the empty search's cause (nothing reached
        # the relevance floor, or every item found was filtered out) is what it shows.
        last = hook["recall_attempts"][-1] if hook.get("recall_attempts") else {}
        reason = last.get("empty_cause") or last.get("reason_code")
    if hook["status"] != "provider_unavailable":
        # Meaning fell back to words or repaired its cache: the log says (``semantic_*``).
        reason = semantic_reason() or reason
    telemetry = hook.get("telemetry")
    calls = telemetry["provider_call_count"] if telemetry else 0
    context = hook["output"] if hook["status"] == "applied" else None
    packet = _packet(
        {**status, "status": hook["status"], "reason_code": reason},
        **ids,
        **extra,
        context=context,
        application=hook.get("application"),
        recall_attempts=hook.get("recall_attempts", []),
        telemetry=telemetry,
        provider_call_count=calls,
        fail_open_preserved_base=hook["fail_open_preserved_base"],
    )
    receipt: dict[str, Any] = {
        "schema_version": RECEIPT_SCHEMA,
        "goal_id": status["goal_id"],
        "agent_id": status["agent_id"],
        "turn_recall_id": recall_id,
        "situation_fingerprint": fingerprint,
        "source_status": hook["status"],
        "reason_code": reason,
        "provider_call_count": calls,
        "context": context,
        "observed_at": turn.observed_at,
    }
    if revision is not None:
        receipt["binding_revision"] = revision
    if ranking_receipt is not None:
        receipt["ranking"] = ranking_receipt
    try:
        # Before the host has its context, so without the fsyncs: lost in a crash of
        # the machine, the same Turn asked again recalls again; nothing else depends on it.
        store.write(path, receipt, durable=False)
        packet["same_turn_receipt_written"] = True
    except SidecarError:
        packet["same_turn_receipt_written"] = False
    return packet


def _host_settles(turn: TurnContext) -> bool:
    """Whether the host settles this Turn (its ``post_settlement`` edge): only then is a
    Turn's recall kept for its settlement, so a recall-only host leaves nothing behind."""
    envelope = with_capability_flags(dict(turn.payload)).get("turn_envelope")
    boundary = envelope.get("boundary") if isinstance(envelope, dict) else None
    capabilities = boundary.get("capabilities") if isinstance(boundary, dict) else None
    flags = capabilities.get("reward_memory") if isinstance(capabilities, dict) else None
    return isinstance(flags, dict) and flags.get("automatic_ingest") is True


def participation(packet: TurnRecallPacket) -> TurnRecallPacket:
    """The recall packet with ``context`` removed: what the readback slot records."""
    return {**packet, "context": None}


def memory_contribution(
    payload: dict[str, Any],
    packet: TurnRecallPacket,
    delivered: Collection[str] = (),
) -> dict[str, Any] | None:
    """The ``reward-memory.turn-context`` result, within the 64 KiB rule (§4, §5.1).

    The recalled guidance goes to the host twice: as JSON in the context field, and
    as one context item per memory (:func:`guidance_items`) for the host to render.
    With none the host will show (``delivered``: :func:`shows_new`), no memory is
    announced nor asked about, unless this same Turn showed them (a repeated PreTurn).
    Over budget, the recall context, its items and its guidance instruction are
    omitted while the readback, the reflection instruction and the result field are
    kept; if even that does not fit, nothing is contributed (the dispatcher records
    the failure).
    """
    readback = participation(packet)
    gate_payload = {**with_capability_flags(payload), SLOT: readback}
    recall_on = automation_enabled(gate_payload, "automatic_recall")
    ingest_on = automation_enabled(gate_payload, "automatic_ingest")

    def build(with_context: bool) -> dict[str, Any]:
        context = packet.get("context") if with_context and recall_on else None
        shown = shows_new(context, delivered)
        # The same Turn asked again: its first PreTurn showed these memories and asked.
        owed = shown or (bool(guidance_items(context)) and packet["status"] == "deduplicated")
        instructions = [GUIDANCE_INSTRUCTION] if shown else []
        fields: dict[str, Any] = {}
        if ingest_on:
            instructions.append(REFLECTION_INSTRUCTION)
            fields[RESULT_FIELD] = {"type": "string", "maxLength": RESULT_FIELD_MAX}
            if owed:  # asked only when memories were recalled and shown (issue 39)
                instructions.append(APPLICATION_INSTRUCTION)
                fields[APPLICATION_FIELD] = {"type": "string", "maxLength": APPLICATION_FIELD_MAX}
        result: dict[str, Any] = {
            "readback": {SLOT: readback},
            "context_fields": {SLOT: {**readback, "context": context}}
            if recall_on or ingest_on
            else {},
            "instructions": instructions,
            "result_fields": fields,
            "context_items": guidance_items(context),
        }
        return result

    full = build(True)
    # The four-key document is measured as the reference measures it; the items,
    # which repeat part of it as text, on their own against the same budget.
    if max(measure_result_bytes(full), measure_context_items(full["context_items"])) <= BUDGET:
        return full
    return build(False)


def runtime_failure(status: ExperimentStatus) -> TurnRecallPacket:
    """The packet of a recall that failed unexpectedly: nothing delivered, Turn unchanged."""
    return _packet(
        {
            **status,
            "status": "runtime_unavailable",
            "reason_code": "automatic_recall_runtime_failed",
        }
    )
