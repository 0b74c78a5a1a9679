"""Application receipts from real Turns, and the utility observation they lead to.

A Turn that recalled memories asks the model, in a few words, which of them it
applied, ignored or refuted (:data:`APPLICATION_INSTRUCTION`); the answer comes back
in ``reward_memory_application_json`` (or the ``record_memory_use`` tool, plugin.py), read here
at settlement. PreTurn keeps, per Turn, which memories it delivered
(:func:`remember_recall`: private, 0600); settlement binds the answer to them and to
the validator's verdict on the Turn (:func:`settle_application`):

* ``reward_memory_application_receipt_v0`` (contracts.md §12): the recalled refs as
  digests, the retrieval and policy snapshot refs, the artifact. A silent model gives
  ``available_not_applied``; an answer that breaks the contract gives ``failed``.
* the verified outcome is the validator's verdict: ``passed`` or ``failed``; an
  ``inconclusive`` or absent verdict is no outcome, and no observation is made.
* the observation (§14): without an evaluator, ``unknown`` at set level on
  ``insufficient`` evidence, which records lineage and moves nothing; with one, what
  its proposal says (:mod:`capabilities.reward_memory.utility.evaluator`, fail-open).

Everything here fails open: the Turn and its ingest are settled whatever happens.
The public receipt holds digests and statuses only, never a ref as the model wrote
it, a memory's text, a path or a scope ref.

PreTurn imports this module on every Turn (the question, :func:`remember_recall`), and
settlement on every Stop; the utility package (ledger, reducer, lineage) is imported
only by a settlement that finds a Turn's recall to settle, so a Turn that recalled
nothing pays nothing for the loop (issue 39, "Cost").
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.identities import memory_ref_digest
from capabilities.reward_memory.turn.settings import read_settings
from sidecars import SidecarStore, goal_agent_parts, path_token
from turn_hooks import InvalidInputError, SidecarError, loads_bounded
from turn_hooks.canonical import s1, sha256_hex

FIELD = "reward_memory_application_json"
FIELD_MAX = 600
"""The most characters of an answer: three refs and one sentence fit easily."""
APPLICATION_INSTRUCTION = (
    # Asked only when memories were recalled (issue 39: a few hundred bytes at most).
    # No "[memory N]" here: a host that showed the memories earlier in the session
    # leaves them out now, and this text must not look like one of them.
    "Also fill reward_memory_application_json: one JSON object with outcome (applied, "
    "ignored or refuted), memory_refs (the candidate refs of the recalled memories it "
    "concerns) and reasoning_summary (one sentence why)."
)
RECALL_DIR = "reward-memory-recalls"
RECALL_SCHEMA = "reward_memory_turn_recall_items_v0"
APPLICATION_DIR = "reward-memory-applications"
APPLICATION_RECORD_SCHEMA = "reward_memory_turn_application_v0"
SETTLEMENT_SCHEMA = "reward_memory_turn_application_settlement_v0"
CONCLUSIVE = ("passed", "failed")
MODEL_OUTCOMES = ("applied", "ignored", "refuted")


def snapshot_refs(corpus_entry: dict[str, Any], corpus_id: str) -> dict[str, str]:
    """The retrieval and policy snapshot refs of one corpus binding: stable while its
    provider and standing policy stay; a change starts a new utility ledger."""
    provider = corpus_entry.get("provider_binding") or {}
    policy = corpus_entry.get("standing_policy") or {}
    retrieval = {"corpus_id": corpus_id, "provider_id": provider.get("provider_id")}
    return {
        "retrieval_snapshot_ref": "rsnap_" + sha256_hex(s1(retrieval))[:32],
        "policy_snapshot_ref": "psnap_"
        + sha256_hex(s1({"policy_id": policy.get("policy_id")}))[:32],
    }


def recall_path(store: SidecarStore, goal_id: str, agent_id: str, turn_key: str) -> Path:
    """``reward-memory-recalls/T(goal)/T(agent)/T(turn_key).json``: one Turn's recall."""
    return store.path(
        *goal_agent_parts(RECALL_DIR, goal_id, agent_id), path_token(turn_key, "turn") + ".json"
    )


def application_path(store: SidecarStore, goal_id: str, agent_id: str, application_id: str) -> Path:
    """``reward-memory-applications/T(goal)/T(agent)/T(application_id).json``."""
    return store.path(
        *goal_agent_parts(APPLICATION_DIR, goal_id, agent_id),
        path_token(application_id, "application") + ".json",
    )


def remember_recall(
    store: SidecarStore,
    *,
    goal_id: str,
    agent_id: str,
    turn_key: str,
    config: dict[str, Any],
    hook: Any,
    observed_at: str,
    ranking: dict[str, Any] | None = None,
) -> bool:
    """Keep which memories this Turn received, for its settlement; ``False`` when none
    were delivered or the record could not be written (the Turn is not asked then)."""
    application = hook.document.get("application")
    session = hook.session
    if hook.document.get("status") != "applied" or session is None or not session.items:
        return False
    receipt = dict(application["receipt"])
    corpus_id = session.packet["corpus_id"]
    record = {
        "schema_version": RECALL_SCHEMA,
        "turn_key": turn_key,
        "observed_at": observed_at,
        "corpus_id": corpus_id,
        "receipt": receipt,
        **snapshot_refs(config["corpora"].get(corpus_id, {}), corpus_id),
        "items": [
            {
                "candidate_ref": item.record["candidate_ref"],
                "memory_ref_digest": memory_ref_digest(item.uri),
            }
            for item in session.items
        ],
    }
    if ranking is not None:
        record["ranking"] = ranking
    try:
        # Before the host has its context, so without the fsyncs: lost in a crash of the
        # machine, this Turn's application goes unrecorded, as if it recalled nothing.
        store.write(recall_path(store, goal_id, agent_id, turn_key), record, durable=False)
    except SidecarError:
        return False
    return True


def read_answer(raw: object) -> dict[str, Any] | None:
    """The model's answer read tolerantly: ``None`` when it said nothing.

    A JSON object (a fenced one too) with ``outcome`` in any case and ``memory_refs``
    as a list or one string. Anything else is an answer that breaks the contract.

    :raises InvalidInputError: the answer is there but unreadable.
    """
    text = raw.strip() if isinstance(raw, str) else ""
    if not text:
        return None
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    document = loads_bounded(text)
    if not isinstance(document, dict):
        raise InvalidInputError(
            "the answer is not one JSON object", reason_code="application_answer_invalid"
        )
    outcome = str(document.get("outcome", "")).strip().lower()
    refs = document.get("memory_refs")
    refs = [refs] if isinstance(refs, str) else refs if isinstance(refs, list) else []
    summary = document.get("reasoning_summary")
    return {
        "outcome": outcome,
        "memory_refs": [str(ref).strip() for ref in refs if isinstance(ref, str | int)],
        "reasoning_summary": summary if isinstance(summary, str) else "",
    }


def _decide(
    answer: dict[str, Any] | None, items: list[dict[str, Any]]
) -> tuple[str, list[str], str]:
    """(outcome, cited digests, reasoning summary) by the §12 rules."""
    if answer is None:
        return "available_not_applied", [], "model_gave_no_application_answer"
    by_ref = {item["candidate_ref"]: item["memory_ref_digest"] for item in items}
    # "[memory 2]" or "memory 2" names the second item as the model saw it.
    for index, item in enumerate(items, start=1):
        by_ref.setdefault(f"[memory {index}]", item["memory_ref_digest"])
        by_ref.setdefault(f"memory {index}", item["memory_ref_digest"])
    cited = [by_ref[ref] for ref in answer["memory_refs"] if ref in by_ref]
    unknown = [ref for ref in answer["memory_refs"] if ref not in by_ref]
    try:
        summary = v.compact(
            answer["reasoning_summary"] or answer["outcome"], 500, "reasoning_summary"
        )
    except v.RewardMemoryInputError:
        summary = "application_answer_summary_invalid"
    if answer["outcome"] not in MODEL_OUTCOMES or unknown or not cited:
        return "failed", [], "application_boundary_failed"
    return answer["outcome"], sorted(set(cited)), summary


def outcome_of(evidence: dict[str, Any] | None) -> str | None:
    """The validator's conclusive verdict on the Turn, ``passed`` or ``failed``; else
    ``None`` (inconclusive, unavailable, not run): no outcome."""
    validation = evidence.get("task_validation") if isinstance(evidence, dict) else None
    status = validation.get("status") if isinstance(validation, dict) else None
    return status if status in CONCLUSIVE else None


def settle_application(
    store: SidecarStore,
    *,
    goal_id: str,
    agent_id: str,
    turn_key: str,
    host_result: dict[str, Any],
    evidence: dict[str, Any] | None,
    observed_at: str,
    evaluator: Any = None,
) -> dict[str, Any] | None:
    """The Turn's application settlement (public-safe), or ``None`` when it recalled
    nothing. Never raises for faults of its own: they are its ``reason_code``."""
    try:
        recall = store.read(recall_path(store, goal_id, agent_id, turn_key))
    except SidecarError:
        return None
    if recall is None or recall.get("schema_version") != RECALL_SCHEMA:
        return None
    # Here, not at the top: only a Turn that recalled something gets this far.
    from capabilities.reward_memory.utility import observation as u
    from capabilities.reward_memory.utility.ledger import Ledger, utility_context
    from capabilities.reward_memory.utility.lineage import observe

    public: dict[str, Any] = {"schema_version": SETTLEMENT_SCHEMA, "reason_code": None}
    try:
        answer = read_answer(host_result.get(FIELD))
    except InvalidInputError:
        answer = {"outcome": "", "memory_refs": [], "reasoning_summary": ""}
    outcome, cited, summary = _decide(answer, recall["items"])
    receipt = {
        **recall["receipt"],
        "outcome": outcome,
        "memory_ref_digests": cited,
        "reasoning_summary": summary,
        "current_artifact_verified": outcome == "applied",
        "retrieval_snapshot_ref": recall["retrieval_snapshot_ref"],
        "policy_snapshot_ref": recall["policy_snapshot_ref"],
    }
    verdict = outcome_of(evidence)
    application_id = receipt["application_id"]
    outcome_ref = "turn_outcome_" + sha256_hex(s1([application_id, turn_key]))[:32]
    verified = (
        {
            "verified": True,
            "outcome_ref": outcome_ref,
            "artifact_ref": receipt["artifact_ref"],
            "outcome_status": verdict,
        }
        if verdict is not None
        else None
    )
    context = utility_context(
        goal_id=goal_id,
        agent_id=agent_id,
        corpus_id=recall["corpus_id"],
        surface_id=receipt["surface_id"],
        retrieval_snapshot_ref=recall["retrieval_snapshot_ref"],
        policy_snapshot_ref=recall["policy_snapshot_ref"],
    )
    record = {
        "schema_version": APPLICATION_RECORD_SCHEMA,
        "turn_key": turn_key,
        "observed_at": observed_at,
        "receipt": receipt,
        "application_receipt_id": u.application_receipt_id(receipt),
        "verified_outcome": verified,
        "attribution_context": {
            key: context[key] for key in ("scope", "retrieval_snapshot_ref", "policy_snapshot_ref")
        },
        "cited": [item for item in recall["items"] if item["memory_ref_digest"] in cited],
        "recalled": recall["items"],
    }
    public.update(
        application_receipt_id=record["application_receipt_id"],
        application_outcome=outcome,
        memory_ref_digests=cited,
        outcome_status=verdict or "no_outcome",
        observation_status="not_observed",
    )
    try:
        store.write(application_path(store, goal_id, agent_id, application_id), record)
    except SidecarError as exc:
        public["reason_code"] = exc.reason_code
        return public
    if verified is None or not cited:
        public["reason_code"] = "no_verified_outcome" if verified is None else "no_memory_cited"
    else:
        observation, reason = observe(record, context, observed_at, evaluator)
        public["reason_code"] = reason
        if observation is not None:
            try:
                Ledger(store, goal_id, agent_id, context).record(observation)
            except SidecarError as exc:
                # The recall stays: a retry of this settlement records it, once.
                public["reason_code"] = exc.reason_code
                return public
            except u.UtilityError as exc:
                public["reason_code"] = exc.reason_code
            else:
                public.update(
                    observation_status="observed",
                    observation_id=observation["observation_id"],
                    utility_label=observation["utility_label"],
                    evidence_basis=observation["evidence_basis"],
                )
    if not _rerun_pending(evidence):
        # Settled: a Turn's recall is read once. Kept while the validator is to run
        # again (an inconclusive run is no outcome, yet), so its verdict still counts.
        with contextlib.suppress(SidecarError):
            store.delete(recall_path(store, goal_id, agent_id, turn_key))
    return public


def _rerun_pending(evidence: dict[str, Any] | None) -> bool:
    validation = evidence.get("task_validation") if isinstance(evidence, dict) else None
    return isinstance(validation, dict) and validation.get("status") == "inconclusive"


def utility_evaluator(resolution: Any) -> dict[str, Any] | None:
    """The utility evaluator the binding declares (``init --utility-evaluator``):
    ``{argv, timeout_seconds}``, or ``None``."""
    status = resolution.status
    declared = read_settings(resolution.sidecars, status["goal_id"], status["agent_id"]).get(
        "utility_evaluator"
    )
    if isinstance(declared, dict) and isinstance(declared.get("argv"), list) and declared["argv"]:
        return declared
    return None


def dumps_answer(answer: dict[str, Any]) -> str:
    """An answer as the field holds it (tests and the reference fake model)."""
    return json.dumps(answer, separators=(",", ":"))


def settle_application_fail_open(
    resolution: Any,
    turn_key: str,
    host_result: dict[str, Any],
    evidence: dict[str, Any] | None,
    observed_at: str,
) -> dict[str, Any] | None:
    """The Turn's memory application settlement (turn/application.py), or ``None``
    when the Turn recalled nothing; a failure of its own is a reason code, never a
    failure of the settlement."""
    status = resolution.status
    if not status["available"] or resolution.config is None:
        return None
    try:
        return settle_application(
            resolution.sidecars,
            goal_id=status["goal_id"],
            agent_id=status["agent_id"],
            turn_key=turn_key,
            host_result=host_result,
            evidence=evidence,
            observed_at=observed_at,
            evaluator=utility_evaluator(resolution),
        )
    except Exception:  # advisory: the Turn and its ingest are settled regardless
        return {
            "schema_version": "reward_memory_turn_application_settlement_v0",
            "reason_code": "memory_application_runtime_failed",
        }
