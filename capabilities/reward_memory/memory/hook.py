"""The automatic recall hook and the applier contract (contracts.md §11.3, §12).

Corpora are tried in the surface's order and the loop stops at the first corpus
whose recall is not empty. The applier decides whether recalled guidance is used;
anything but a well-formed ``applied`` keeps the base output unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from capabilities.providers.base import Provider
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.corpus import IDENTITY_FIELDS
from capabilities.reward_memory.contract.values import now_timestamp
from capabilities.reward_memory.memory.recall import (
    APPLICATION_WRAPPER_SCHEMA,
    RecallItem,
    RecallSession,
    application_receipt,
    execute_recall,
)
from capabilities.reward_memory.memory.request import build_recall_request

if TYPE_CHECKING:
    from capabilities.reward_memory.contract.documents import RecallPacket

HOOK_SCHEMA = "reward_memory_automatic_recall_hook_v0"

Applier = Callable[[Any, tuple[RecallItem, ...]], Mapping[str, Any]]
"""``(base_output, items) -> {outcome, output, memory_refs, current_artifact_verified,
reasoning_summary}``; ``memory_refs`` are the raw URIs of items it used."""

ProviderFor = Callable[[dict[str, Any]], Provider]


def apply_recall(
    base_output: Any,
    session: RecallSession,
    *,
    application_id: str,
    artifact_ref: str | None,
    apply_memory: Applier | None,
) -> dict[str, Any]:
    """Run the caller's applier over one recall; fail open to ``base_output`` (§12)."""
    status = session.packet.get("status")

    def wrap(
        outcome: str, output: Any, uris: list[str], summary: str, verified: bool
    ) -> dict[str, Any]:
        receipt = application_receipt(
            session,
            application_id=application_id,
            artifact_ref=artifact_ref,
            outcome=outcome,
            cited_uris=uris,
            reasoning_summary=summary,
            current_artifact_verified=verified,
        )
        return {
            "ok": True,
            "schema_version": APPLICATION_WRAPPER_SCHEMA,
            "status": outcome,
            "output": output,
            "receipt": receipt,
            "fail_open_preserved_base": output is base_output,
        }

    if status != "completed" or not session.items:
        return wrap("not_available", base_output, [], f"recall_{status or 'invalid'}", False)
    if apply_memory is None:
        return wrap(
            "available_not_applied",
            base_output,
            [],
            "model_application_callback_not_supplied",
            False,
        )
    try:
        decision = apply_memory(base_output, tuple(session.items))
        outcome = decision["outcome"]
        uris = list(decision.get("memory_refs") or [])
        verified = decision.get("current_artifact_verified") is True
        summary = v.compact(decision.get("reasoning_summary"), 500, "reasoning_summary")
        known = {item.uri for item in session.items}
        if outcome == "applied" and uris and set(uris) <= known and verified:
            return wrap("applied", decision["output"], uris, summary, True)
        if outcome in {"ignored", "refuted"} and decision.get("output") == base_output:
            return wrap(outcome, base_output, [u for u in uris if u in known], summary, verified)
    except Exception:  # the applier is caller code: any failure keeps the base output
        pass
    return wrap("failed", base_output, [], "application_boundary_failed", False)


@dataclass
class RecallHookResult:
    """The hook's public document plus the private session of the last attempt."""

    document: dict[str, Any]
    session: RecallSession | None = None
    sessions: list[RecallSession] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        """The public document (no raw memory text: ``output`` is the caller's)."""
        return self.document


def _telemetry(profile: dict[str, Any] | None, corpus_count: int, queries: int) -> dict[str, Any]:
    if profile is None:
        return {
            "profile_id": None,
            "query_count": 0,
            "configured_corpus_count": 0,
            "attempted_corpus_count": 0,
            "provider_call_count": 0,
            "provider_call_cap": 0,
            "result_readback_verified": False,
        }
    return {
        "profile_id": profile["profile_id"],
        "mode": profile["mode"],
        "query_count": queries,
        "max_queries_per_corpus": profile["max_queries"],
        "configured_corpus_count": corpus_count,
        "attempted_corpus_count": 0,
        "provider_call_count": 0,
        "provider_call_cap": profile["max_queries"] * corpus_count,
        "result_readback_verified": False,
    }


class RecallHookRequest(NamedTuple):
    """One surface's recall: what is asked, where, for whom, and how it is applied.

    A NamedTuple, not a dataclass: it is built once per Turn on the hook path, and
    importing it should cost no more than the sixteen keyword arguments it replaces.
    """

    surface_id: str
    base_output: Any
    """What the Turn gets when nothing is applied (returned unchanged, fail-open)."""
    workspace_ref: str
    project_ref: str
    revision_ref: str | None
    queries: list[dict[str, Any]]
    observed_at: str
    freshness_context: dict[str, Any]
    conflict_state: str
    read_authority_checkpoints: dict[str, dict[str, Any]]
    """One verified read checkpoint per corpus id of the surface."""
    application_id: str
    artifact_ref: str | None = None
    identity: dict[str, str | None] | None = None
    """The identity refs (user, peer, session) the recall is scoped to."""
    apply_memory: Applier | None = None
    search_text: str | None = None
    """What the provider searches for instead of each query's text (``None``: the
    query's own text; ``""``: nothing). The packet keeps the queries and their
    digests; only the provider's search changes (:class:`SearchingFor`)."""


class SearchingFor:
    """A provider whose searches look for ``text``; every other call is the provider's.

    The queries of a recall request are part of its public, reference-compared packet,
    so a caller that searches on other words changes what the provider is asked, not
    the packet. An empty ``text`` searches nothing: the provider is not asked.
    """

    def __init__(self, provider: Provider, text: str) -> None:
        self._provider = provider
        self._text = text

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._provider, name)
        if name not in ("search", "search_read"):
            return attribute
        text = self._text

        def search(scope_ref: str, *_query: str, **options: Any) -> Any:
            options.pop("query", None)
            return attribute(scope_ref, text, **options) if text else []

        return search


def run_recall_hook(
    config: dict[str, Any], request: RecallHookRequest, *, provider_for: ProviderFor
) -> RecallHookResult:
    """Recall for one surface over its corpora in order; never raises for provider faults.

    :param config: the binding's normalised experiment config.
    :param request: the surface, queries and applier of this recall.
    :param provider_for: the provider for a corpus's provider binding.
    """
    surface_id = request.surface_id
    base_output = request.base_output
    document: dict[str, Any] = {
        "ok": True,
        "schema_version": HOOK_SCHEMA,
        "surface_id": surface_id,
        "status": "disabled",
        "output": base_output,
        "automatic_recall": config["automation"]["automatic_recall"],
        "fail_open_preserved_base": True,
        "provider_failure_is_user_gate": False,
        v.NEW_ACTION_AUTHORITY: False,
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }
    result = RecallHookResult(document=document)
    if not config["automation"]["automatic_recall"]:
        document.update(
            reason_code="automatic_recall_explicitly_disabled", telemetry=_telemetry(None, 0, 0)
        )
        return result
    surface = config["surfaces"].get(surface_id)
    if surface is None:
        document.update(
            status="guard_rejected",
            reason_code="surface_profile_or_query_invalid",
            telemetry=_telemetry(None, 0, 0),
        )
        return result
    profile = surface["recall_profile"]
    queries = request.queries
    telemetry = _telemetry(profile, len(surface["corpus_ids"]), len(queries))
    if not 1 <= len(queries) <= profile["max_queries"] or (
        profile["mode"] == "function_boundary" and len(queries) != 1
    ):
        document.update(
            status="guard_rejected",
            reason_code="surface_profile_or_query_invalid",
            telemetry=telemetry,
        )
        return result
    document["telemetry"] = telemetry
    attempts: list[RecallPacket] = []
    guarded: dict[str, Any] = {
        "workspace_ref": request.workspace_ref,
        "project_ref": request.project_ref,
        "surface_id": surface_id,
        "revision_ref": request.revision_ref,
        "mode": profile["mode"],
        "queries": queries,
        "limit": profile["limit"],
        "observed_at": request.observed_at,
        "conflict_state": request.conflict_state,
        "freshness_context": request.freshness_context,
        v.RAW_CONTENT: False,
    }
    identity = request.identity
    for key in IDENTITY_FIELDS:
        if identity and identity.get(key) is not None:
            guarded[key] = identity[key]
    for corpus_id in surface["corpus_ids"]:
        entry = config["corpora"][corpus_id]
        try:
            packet = build_recall_request(
                entry["corpus"],
                guarded,
                read_authority_checkpoint=request.read_authority_checkpoints.get(corpus_id),
            )
        except v.RewardMemoryInputError as exc:
            document.update(
                status="guard_rejected",
                reason_code="exact_corpus_request_invalid",
                boundary_detail_code=exc.reason_code,
                recall_attempts=attempts,
            )
            return result
        provider = provider_for(entry["provider_binding"])
        if request.search_text is not None:
            provider = cast("Provider", SearchingFor(provider, request.search_text))
        session = execute_recall(
            packet, provider_binding=entry["provider_binding"], provider=provider
        )
        telemetry["attempted_corpus_count"] += 1
        telemetry["provider_call_count"] += session.packet["provider_call_count"]
        telemetry["result_readback_verified"] = session.packet["result_readback_verified"]
        attempts.append(session.packet)
        result.sessions.append(session)
        result.session = session
        if session.packet["status"] != "empty":
            break
    assert result.session is not None  # a configured surface has at least one corpus
    application = apply_recall(
        base_output,
        result.session,
        application_id=request.application_id,
        artifact_ref=request.artifact_ref,
        apply_memory=request.apply_memory,
    )
    document.update(
        status=application["status"],
        output=application["output"],
        fail_open_preserved_base=application["fail_open_preserved_base"],
        application=application,
        recall_attempts=attempts,
    )
    if result.session.packet["status"] == "provider_unavailable":
        document["status"] = "provider_unavailable"
    return result


def run_automatic_recall(
    resolution: Any,
    *,
    surface_id: str,
    query: str,
    query_summary: str,
    revision_ref: str | None,
    observed_at: str | None,
) -> RecallHookResult:
    """The operator's recall for a resolved binding: guidance cited, never written."""
    from capabilities.providers.factory import build_provider

    config = resolution.config
    surface = config["surfaces"].get(surface_id)
    corpora = [config["corpora"][c] for c in surface["corpus_ids"]] if surface else []
    first = corpora[0]["corpus"] if corpora else None
    scope = first["scope"] if first else {"workspace_ref": "", "project_ref": ""}
    checkpoints = {
        entry["corpus"]["corpus_id"]: read_checkpoint(
            entry, surface_id, f"registry:{resolution.status['goal_id']}:reward-memory"
        )
        for entry in corpora
    }
    request = RecallHookRequest(
        surface_id=surface_id,
        base_output={"guidance": []},
        workspace_ref=scope["workspace_ref"],
        project_ref=scope["project_ref"],
        revision_ref=revision_ref,
        queries=[{"query": query, "query_summary": query_summary}],
        observed_at=observed_at or now_timestamp(),
        freshness_context={"source_truth_current": True},
        conflict_state="clear",
        read_authority_checkpoints=checkpoints,
        application_id="operator-recall",
        identity={key: scope.get(key) for key in IDENTITY_FIELDS},
        apply_memory=cite_guidance,
    )
    return run_recall_hook(
        config,
        request,
        # Reads only: a binding with no store yet reads as empty, and nothing is created.
        provider_for=lambda binding: build_provider(binding, repo=resolution.repo, dry_run=True),
    )


def read_checkpoint(entry: dict[str, Any], surface_id: str, source_ref: str) -> dict[str, Any]:
    """A verified read checkpoint for a declared corpus of a resolved binding."""
    corpus = entry["corpus"]
    checkpoint: dict[str, Any] = {
        "verified": True,
        "corpus_id": corpus["corpus_id"],
        "workspace_ref": corpus["scope"]["workspace_ref"],
        "project_ref": corpus["scope"]["project_ref"],
        "surface_id": surface_id,
        "read_authority": corpus["read_authority"],
        "source_ref": source_ref,
    }
    for key in IDENTITY_FIELDS:
        if corpus["scope"][key] is not None:
            checkpoint[key] = corpus["scope"][key]
    return checkpoint


def guidance_item(item: RecallItem) -> dict[str, Any]:
    """The private guidance form of one recalled record (raw memory text)."""
    record = item.record
    return {
        "candidate_ref": record["candidate_ref"],
        "target_class": record["target_class"],
        "content_summary": record["content_summary"],
        "experience": record.get("experience"),
    }


def cite_guidance(base_output: Any, items: tuple[RecallItem, ...]) -> dict[str, Any]:
    """An applier that delivers every recalled item as guidance (the Turn recall's)."""
    guidance = [guidance_item(item) for item in items]
    output = dict(base_output) if isinstance(base_output, dict) else {}
    output["guidance"] = guidance
    return {
        "outcome": "applied",
        "output": output,
        "memory_refs": [item.uri for item in items],
        "current_artifact_verified": True,
        "reasoning_summary": "recalled guidance delivered as private, non-authoritative context",
    }
