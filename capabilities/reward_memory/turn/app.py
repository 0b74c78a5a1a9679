"""Reward memory's half of the Codex App two-phase path (turn-lifecycle §9).

``refresh-state`` stages the reflection in a locked 0600 candidate sidecar keyed by
(Goal, Agent, Todo, Turn, effect) and runs the Todo's declared validator every
time, so an earlier pass never masks a current failure. Staging never calls a
provider. The App host (``hosts.adapters.codex_app``) keeps the writeback and spend ledger;
once both read back it dispatches ``post_settlement`` with the quota-spend evidence,
and the plugin's hook finalizes the staged candidate here, through the ordinary Turn
ingest with ``turn_key = effect_id``.

The model's memory application answer is staged beside the candidate and settled at
finalize (:mod:`capabilities.reward_memory.turn.app_application`); a Turn that applied
a memory without a reflection is validated at refresh all the same.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.experience import parse_attestation, parse_reflection
from capabilities.reward_memory.contract.identities import (
    app_candidate_id,
    binding_fingerprint,
    validation_declaration_sha256,
)
from capabilities.reward_memory.contract.reader import read_reflection, refuse_unreadable
from capabilities.reward_memory.contract.values import now_timestamp
from capabilities.reward_memory.turn.app_application import (
    APPLICATION_FIELD,
    application_answer,
    application_stage_path,
    settle_recall,
    stage_application,
)
from capabilities.reward_memory.turn.post_settlement import (
    APP_WIRING,
    ProviderFor,
    base_receipt,
    run_turn_ingest_fail_open,
)
from sidecars import SidecarStore, goal_agent_parts, path_token
from turn_hooks import Settlement, TurnContext, run_external

SIDECAR_SCHEMA = "codex_app_reward_memory_outcome_sidecar_v0"
STAGE_SCHEMA = "codex_app_reward_memory_outcome_candidate_v0"
REQUEST_SCHEMA = "reward_memory_reflection_validation_request_v0"
STAGE_WIRING = "codex_app_refresh_stage"
CANDIDATE_DIR = "reward-memory-app-outcomes"
INGEST_HOOK_ID = "reward-memory.outcome-ingest"
"""The plugin's ``post_settlement`` hook id: the App command reads its own result
from the dispatcher receipt under it (plugin.py registers it; a test pins both)."""
DEFAULT_TIMEOUT = 20
MAX_TIMEOUT = 29
"""The App validates inside its refresh call, so the validator stays under the 30 s
a hook is given; ``refresh-state`` refuses a longer deadline (issue 36: not cut
silently)."""


def declaration(
    argv: list[str] | None, timeout: int | None, label: str | None = None
) -> dict[str, Any]:
    """The Todo's validator declaration, in the shape its digest is taken over."""
    return {
        "validation_command": None,
        "validation_command_argv": argv,
        "validation_label": label,
        "validation_timeout_seconds": timeout,
    }


def run_todo_validator(
    declared: dict[str, Any] | None,
    *,
    request: dict[str, Any],
    workspace: Path | None,
    raw_digest: str | None,
    evidence_refs: list[str],
) -> dict[str, Any]:
    """``task_validation`` of the App protocol: passed only with the exact attestation.

    Without a reflection (``raw_digest`` ``None``: a Turn that only applied a memory)
    there is nothing to attest: exit 0 is the verdict ``passed``, as
    ``turn-hooks validate command`` answers such a request.
    """
    if not declared:
        return {"ok": False, "status": "unavailable", "validator_kind": "none"}
    argv = declared.get("validation_command_argv")
    if not argv and isinstance(declared.get("validation_command"), str):
        argv = shlex.split(declared["validation_command"])
    if not argv or workspace is None:
        return {"ok": False, "status": "unavailable", "validator_kind": "todo_declared_command"}
    timeout = declared.get("validation_timeout_seconds")
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= MAX_TIMEOUT:
        timeout = DEFAULT_TIMEOUT  # staged before refresh-state refused longer ones
    run = run_external(argv, request, cwd=workspace, timeout=timeout, sort_keys=True)
    if run.reason == "external_failed":
        return {
            "ok": False,
            "status": "failed",
            "exit_code": run.exit_code,
            "validator_kind": "todo_declared_command",
        }
    try:
        stdout = run.stdout.decode("utf-8")
    except UnicodeDecodeError:
        stdout = ""  # as ever: output that is not text attests nothing
    if raw_digest is None:
        status = "passed" if run.reason is None else "inconclusive"
        return {
            "ok": status == "passed",
            "status": status,
            "validator_kind": "todo_declared_command",
        }
    attestation = parse_attestation(stdout, raw_digest, evidence_refs) if not run.reason else None
    if attestation is None:
        return {"ok": False, "status": "inconclusive", "validator_kind": "todo_declared_command"}
    return {
        "ok": True,
        "status": "passed",
        "validator_kind": "todo_declared_command",
        "reward_memory_reflection_validation": attestation,
    }


def candidate_path(store: SidecarStore, goal_id: str, agent_id: str, candidate_id: str) -> Path:
    """``reward-memory-app-outcomes/T(goal)/T(agent)/T(candidate_id).json`` (identities §4)."""
    return store.path(
        *goal_agent_parts(CANDIDATE_DIR, goal_id, agent_id),
        path_token(candidate_id, "candidate") + ".json",
    )


def _stage_receipt(experiment: Any, candidate: str, **fields: Any) -> dict[str, Any]:
    receipt = {
        "ok": True,
        "schema_version": STAGE_SCHEMA,
        "goal_id": experiment["goal_id"],
        "agent_id": experiment["agent_id"],
        "status": "runtime_unavailable",
        "reason_code": None,
        "candidate_id": candidate,
        "reflection_digest": None,
        "validation_bound": False,
        "raw_content_projected": False,
        "provider_sync_count": 0,
        "external_writes_performed": False,
        "host_wiring": STAGE_WIRING,
        "fail_open": True,
        "sidecar_receipt_reused": False,
    }
    receipt.update(fields)
    return receipt


def stage(
    resolution: Resolution,
    *,
    todo_id: str,
    turn_instance_id: str,
    effect_id: str,
    reflection_json: str | None,
    declared: dict[str, Any] | None,
    workspace: Path | None,
    observed_at: str | None = None,
    restage: bool = False,
    application_json: str | None = None,
) -> dict[str, Any]:
    """Stage one App Turn's reflection and validate it; never calls a provider.

    An application answer is staged beside it; without a reflection, the Turn's
    validator runs for the answer alone, whose verdict finalize settles it with.
    """
    status = resolution.status
    ids = [status["goal_id"], status["agent_id"], todo_id, turn_instance_id, effect_id]
    if not all(isinstance(part, str) and part for part in ids):
        v.fail(
            "candidate_id",
            "needs non-empty goal, agent, todo, turn and effect ids",
            "app_candidate_identity_invalid",
        )
    candidate = app_candidate_id(*ids)
    answer = application_answer(application_json)
    if not status["available"]:
        return _stage_receipt(
            status, candidate, status=status["status"], reason_code=status.get("reason_code")
        )
    if reflection_json is not None:
        # The App hands the model's text over as given: read it here, as hooks hosts do
        # before they spool, so the validator attests the canonical reflection.
        refuse_unreadable(reflection_json)
        reflection_json = read_reflection(reflection_json).value
    parsed = parse_reflection(reflection_json)
    header = {
        "schema_version": REQUEST_SCHEMA,
        "goal_id": status["goal_id"],
        "agent_id": status["agent_id"],
        "todo_id": todo_id,
        "turn_instance_id": turn_instance_id,
        "effect_id": effect_id,
    }
    if answer is not None and parsed.kind in {"none", "no_evidence", "legacy"}:
        validation = run_todo_validator(
            declared,
            request={**header, APPLICATION_FIELD: answer},
            workspace=workspace,
            raw_digest=None,
            evidence_refs=[],
        )
        stage_application(
            resolution.sidecars,
            status,
            candidate,
            answer=answer,
            turn_instance_id=turn_instance_id,
            validation=validation,
            observed_at=observed_at,
        )
    if parsed.kind in {"none", "no_evidence"}:
        return _stage_receipt(
            status,
            candidate,
            status="no_eligible_evidence",
            reason_code="app_refresh_declared_no_reward_evidence",
        )
    if parsed.kind == "legacy":
        return _stage_receipt(
            status,
            candidate,
            status="no_eligible_evidence",
            reason_code="legacy_reflection_requires_transferable_experience",
        )
    reflection = parsed.normalised
    assert reflection is not None and parsed.raw_digest is not None
    fingerprint = binding_fingerprint(resolution.binding, status["agent_id"])
    declaration_digest = validation_declaration_sha256(declared or declaration(None, None))
    store = resolution.sidecars
    path = candidate_path(store, status["goal_id"], status["agent_id"], candidate)
    with store.transaction(path) as sidecar:
        previous = sidecar.read()
        if previous is not None:
            if previous.get("schema_version") != SIDECAR_SCHEMA:
                v.fail("candidate", "sidecar has another schema", "app_outcome_sidecar_invalid")
            if previous.get("reflection") != reflection:
                v.fail(
                    "reflection", "differs from the staged one", "app_outcome_reflection_changed"
                )
            if previous.get("binding_fingerprint") != fingerprint:
                v.fail("binding", "changed since staging", "app_outcome_binding_changed")
            if previous.get("validation_declaration_sha256") != declaration_digest and not restage:
                v.fail(
                    "validation",
                    "declaration changed; re-stage explicitly",
                    "app_outcome_validation_changed",
                )
        request = {**header, "reflection": reflection, "reflection_digest": parsed.raw_digest}
        validation = run_todo_validator(
            declared,
            request=request,
            workspace=workspace,
            raw_digest=parsed.raw_digest,
            evidence_refs=reflection["evidence_refs"],
        )
        sidecar.write(
            {
                "schema_version": SIDECAR_SCHEMA,
                "goal_id": status["goal_id"],
                "agent_id": status["agent_id"],
                "todo_id": todo_id,
                "turn_instance_id": turn_instance_id,
                "effect_id": effect_id,
                "candidate_id": candidate,
                "reflection_digest": parsed.raw_digest,
                "binding_fingerprint": fingerprint,
                "validation_declaration_sha256": declaration_digest,
                "reflection": reflection,
                "task_validation": validation,
                "observed_at": (previous or {}).get("observed_at")
                or observed_at
                or now_timestamp(),
                "raw_content_captured": False,
            }
        )
    if answer is not None:  # its verdict is the reflection's validation, staged above
        stage_application(
            store,
            status,
            candidate,
            answer=answer,
            turn_instance_id=turn_instance_id,
            validation=None,
            observed_at=observed_at,
        )
    bound = validation.get("status") == "passed"
    return _stage_receipt(
        status,
        candidate,
        status="validation_bound" if bound else "awaiting_evidence_validation",
        reason_code=None if bound else "reflection_not_bound_to_independent_validation",
        reflection_digest=parsed.raw_digest,
        validation_bound=bound,
        sidecar_receipt_reused=previous is not None,
    )


def finalize(
    resolution: Resolution,
    turn: TurnContext,
    settlement: Settlement,
    *,
    provider_for: ProviderFor,
) -> dict[str, Any] | None:
    """Finalize the staged candidate of a settled App effect (exact key only).

    The candidate key comes from the Turn the App host settles: the Todo is its
    session, the App turn its host turn and the effect its key. Nothing staged is no
    receipt. The evidence is the stored ``task_validation`` with the writeback and
    quota spend the host read back; the event is learned under ``turn_key = effect_id``
    and the stored ``observed_at``.
    """
    status = resolution.status
    candidate_id = app_candidate_id(
        status["goal_id"],
        status["agent_id"],
        turn.host_session_id or "",
        turn.host_turn_id,
        turn.turn_key,
    )
    store = resolution.sidecars
    path = candidate_path(store, status["goal_id"], status["agent_id"], candidate_id)
    staged = store.read(path)
    application = store.read(
        application_stage_path(store, status["goal_id"], status["agent_id"], candidate_id)
    )
    if staged is None:
        if application is None:
            return None  # a refresh may yet stage this Turn: its recall waits for it
        receipt = base_receipt(status, APP_WIRING)
        receipt.update(
            status="no_eligible_evidence", reason_code="app_refresh_declared_no_reward_evidence"
        )
        return settle_recall(resolution, turn, application, receipt)
    receipt = _ingest_staged(resolution, settlement, staged, provider_for=provider_for)
    return settle_recall(resolution, turn, application, receipt, staged.get("task_validation"))


def _ingest_staged(
    resolution: Resolution,
    settlement: Settlement,
    staged: dict[str, Any],
    *,
    provider_for: ProviderFor,
) -> dict[str, Any]:
    """The staged reflection's ingest, once its validation passed; else why it waits."""
    status = resolution.status
    receipt = base_receipt(status, APP_WIRING)
    if binding_fingerprint(resolution.binding, status["agent_id"]) != staged.get(
        "binding_fingerprint"
    ):
        receipt.update(status="runtime_state_invalid", reason_code="app_outcome_binding_changed")
        return receipt
    evidence = settlement.evidence.to_json()
    evidence["task_validation"] = staged.get("task_validation") or {}
    if staged["task_validation"].get("status") != "passed":
        receipt.update(
            status="evidence_validation_required",
            reason_code="reflection_not_bound_to_independent_validation",
            candidate_state="awaiting_evidence_validation",
        )
        return receipt
    raw = json.dumps(
        staged["reflection"], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return run_turn_ingest_fail_open(
        resolution,
        turn_key=str(staged["effect_id"]),
        host_result={"reward_memory_reflection_json": raw},
        evidence=evidence,
        provider_for=provider_for,
        observed_at=staged.get("observed_at"),
        wiring=APP_WIRING,
        attested_digest=staged.get("reflection_digest"),
    )
