"""The Codex App's memory application answer, from its refresh to its settlement.

The App hands over the model's answer on which recalled memories it applied with
``--reward-memory-application-json`` at refresh; it is staged here (0600, keyed by the
App candidate) and settled at finalize against what PreTurn recalled for the App's
turn id, with the Turn's verdict, as every other host settles it
(:mod:`capabilities.reward_memory.turn.application`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.values import now_timestamp
from capabilities.reward_memory.turn.application import (
    FIELD,
    FIELD_MAX,
    settle_application_fail_open,
)
from sidecars import SidecarStore, goal_agent_parts, path_token
from turn_hooks import TurnContext

APPLICATION_STAGE_DIR = "reward-memory-app-applications"
APPLICATION_STAGE_SCHEMA = "codex_app_reward_memory_application_stage_v0"
APPLICATION_FIELD = FIELD
"""The App's refresh carries the same field a hook host's result does."""


def application_stage_path(
    store: SidecarStore, goal_id: str, agent_id: str, candidate_id: str
) -> Path:
    """``reward-memory-app-applications/T(goal)/T(agent)/T(candidate_id).json``: the
    application answer the App's refresh handed over, until finalize settles it."""
    return store.path(
        *goal_agent_parts(APPLICATION_STAGE_DIR, goal_id, agent_id),
        path_token(candidate_id, "candidate") + ".json",
    )


def application_answer(text: str | None) -> str | None:
    """The App's application answer as given, ``None`` when blank.

    :raises RewardMemoryInputError: longer than the field's bound
        (``application_answer_too_large``), as a hook host's schema refuses it.
    """
    if text is None or not text.strip():
        return None
    if len(text) > FIELD_MAX:
        v.fail(
            APPLICATION_FIELD,
            f"exceeds {FIELD_MAX} characters",
            "application_answer_too_large",
        )
    return text


def stage_application(
    store: SidecarStore,
    status: Any,
    candidate: str,
    *,
    answer: str,
    turn_instance_id: str,
    validation: dict[str, Any] | None,
    observed_at: str | None,
) -> None:
    """Keep the answer (and, for a Turn without a reflection, its verdict) for finalize."""
    path = application_stage_path(store, status["goal_id"], status["agent_id"], candidate)
    previous = store.read(path) or {}
    store.write(
        path,
        {
            "schema_version": APPLICATION_STAGE_SCHEMA,
            "candidate_id": candidate,
            "turn_instance_id": turn_instance_id,
            "answer": answer,
            "task_validation": validation,
            "observed_at": previous.get("observed_at") or observed_at or now_timestamp(),
        },
    )


def settle_recall(
    resolution: Resolution,
    turn: TurnContext,
    application: dict[str, Any] | None,
    receipt: dict[str, Any],
    validation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Settle what PreTurn recalled for the App's turn id, with the staged answer (a
    silent model is ``available_not_applied``) and the Turn's verdict."""
    answer = (application or {}).get("answer") or ""
    verdict = validation or (application or {}).get("task_validation")
    settled = settle_application_fail_open(
        resolution,
        turn.host_turn_id,
        {APPLICATION_FIELD: answer},
        {"task_validation": verdict} if isinstance(verdict, dict) else None,
        (application or {}).get("observed_at") or turn.observed_at,
    )
    if settled is not None:
        receipt["memory_application"] = settled
    return receipt
