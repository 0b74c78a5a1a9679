"""The Stage 4 suite's fixture: one scratch embedded store and the corpus it holds.

The cases in :mod:`.evaluation` learn and recall through the real core against this
fixture. Kept apart from the cases because it is setup, not a claim: the config,
the event and the store stand in for a Goal, and the suite's verdict never depends
on how they are built, only on what the core does with them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.contract.config import normalise_config
from capabilities.reward_memory.contract.documents import IngestReceipt
from capabilities.reward_memory.contract.identities import peer_token
from capabilities.reward_memory.contract.values import EXTERNAL_WRITES, RAW_CONTENT
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from capabilities.reward_memory.memory.recall import execute_recall
from capabilities.reward_memory.memory.request import build_recall_request

GOAL, AGENT = "stage4-eval", "evaluator"
WORKSPACE, PROJECT = "workspace:eval", "project:eval"
SURFACE = "agent_workflow.turn_admission"
OBSERVED_AT = "2026-08-15T00:00:00+00:00"


def _config() -> dict[str, Any]:
    peer = peer_token(GOAL, AGENT)
    scope_ref = f"viking://user/eval/peers/{peer}/memories/reward-memory/goals/{GOAL}/experience"
    scope = {"workspace_ref": WORKSPACE, "project_ref": PROJECT, "surface_ids": [SURFACE]}
    scope["peer_ref"] = f"agent:{AGENT}"
    corpus = {
        "corpus_id": "experience",
        "class_id": "procedural_experience",
        "provider_id": "embedded_sqlite",
        "owner_ref": "owner:eval",
        "source_of_truth": "validated_turn_outcomes",
        "read_authority": "actor_scoped",
        "write_authority": "provider_managed",
        "scope": scope,
        "freshness": {"mode": "source_truth_bound"},
        "lifecycle": {"state": "active"},
        "retrieval": dict.fromkeys(
            ("index_required", "readback_required", "application_receipt_required"), True
        ),
        "maintenance": {
            "writeback_triggers": ["validated_turn_outcome"],
            "closure_policy": "provider_write_then_exact_readback",
            "retirement_authority": "owner:eval",
        },
        "privacy": {"visibility": "private", "raw_content_in_registry": False},
    }
    policy = {
        "schema_version": "reward_memory_standing_policy_v0",
        "policy_id": "policy:eval",
        "enabled": True,
        "auto_activate": True,
        "owner_ref": "owner:eval",
        "reviewer_ref": "reviewer:eval",
        "authority_source_ref": f"registry:{GOAL}:reward-memory",
        "scope": scope,
        "allowed_target_classes": ["procedural_experience"],
        "allowed_source_kinds": ["engineering_review"],
        "allowed_actor_roles": ["validated_goal_agent"],
        "allowed_action_scopes": [],
        RAW_CONTENT: False,
    }
    normalised: dict[str, Any] = normalise_config(
        {
            "schema_version": "reward_memory_experiment_config_v1",
            "project_provider_binding": {
                "provider_id": "embedded_sqlite",
                "namespace": "reward_memory",
                "actor_peer_id": peer,
                "corpus_scopes": [{"corpus_id": "experience", "scope_ref": scope_ref}],
            },
            "corpora": [{"corpus": corpus, "standing_policy": policy}],
            "surfaces": [
                {
                    "surface_id": SURFACE,
                    "adapter": "scoped_feedback",
                    "corpus_ids": ["experience"],
                    "ingest_corpus_id": "experience",
                    "recall_profile": {
                        "profile_id": "stage4",
                        "mode": "function_boundary",
                        "max_queries": 1,
                        "limit": 5,
                    },
                }
            ],
        }
    )
    return dict(normalised["corpora"]["experience"])


def scoped_event(
    summary: str, *, role: str = "validated_goal_agent", **guard: Any
) -> dict[str, Any]:
    """The fixture Agent's scoped-feedback event teaching ``summary`` (guard overrides)."""
    return {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "feedback_ref": "feedback:stage4",
        "workspace_ref": WORKSPACE,
        "project_ref": PROJECT,
        "peer_ref": f"agent:{AGENT}",
        "surface_id": SURFACE,
        "revision_ref": "rev-1",
        "target_class": "procedural_experience",
        "content_summary": summary,
        "experience": {
            "schema_version": "procedural_experience_contract_v0",
            "applicability": ["a module with a slow full suite"],
            "observed_outcome": "The focused run found the regression first.",
            "attribution": "Testing the touched module isolated the fault.",
            "future_behavior": {
                "trigger": "a change touches one module",
                "action": "prefer the focused fix and run that module's tests",
                "validation": "focused tests pass before the full suite",
                "stop_condition": "the change spans several modules",
            },
            "limitations": ["not for cross-module failures"],
            "evidence_refs": ["evidence:stage4"],
        },
        "source": {
            "source_kind": "engineering_review",
            "source_ref": "review:stage4",
            "actor_ref": f"agent:{AGENT}",
            "actor_role": role,
        },
        "reasoning": {"summary": "Checked against the recorded run.", "confidence": "high"},
        "guard_context": {
            "source_freshness": "current",
            "conflict_state": "clear",
            "current_artifact_verified": True,
            **guard,
        },
        "requested_action_scopes": [],
        RAW_CONTENT: False,
    }


class Fixture:
    """The scratch store and the corpus the cases run against."""

    def __init__(self, root: Path) -> None:
        self.entry = _config()
        self.path = root / "memory.sqlite3"
        self.provider = EmbeddedSqliteProvider(self.path)
        self.scratch_writes = 0

    def learn(self, summary: str) -> IngestReceipt:
        receipt = ingest_scoped_event(
            scoped_event(summary),
            corpus=self.entry["corpus"],
            standing_policy=self.entry["standing_policy"],
            provider_binding=self.entry["provider_binding"],
            observed_at=OBSERVED_AT,
            execute=True,
            provider=self.provider,
        )
        self.scratch_writes += int(receipt[EXTERNAL_WRITES])
        return receipt

    def recall(self, provider: Any = None, corpus: Any = None, **changes: Any) -> Any:
        request = {
            "workspace_ref": WORKSPACE,
            "project_ref": PROJECT,
            "peer_ref": f"agent:{AGENT}",
            "surface_id": SURFACE,
            "revision_ref": "rev-2",
            "mode": "function_boundary",
            "queries": [{"query": "focused fix module tests", "query_summary": "stage4"}],
            "limit": 5,
            "observed_at": "2026-08-16T00:00:00+00:00",
            "conflict_state": "clear",
            "freshness_context": {"source_truth_current": True},
            RAW_CONTENT: False,
            **changes,
        }
        corpus = corpus or self.entry["corpus"]
        checkpoint = {
            "verified": True,
            "corpus_id": "experience",
            "workspace_ref": request["workspace_ref"],
            "project_ref": request["project_ref"],
            "surface_id": request["surface_id"],
            "read_authority": "actor_scoped",
            "source_ref": f"registry:{GOAL}:reward-memory",
            "peer_ref": f"agent:{AGENT}",
        }
        packet = build_recall_request(corpus, request, read_authority_checkpoint=checkpoint)
        return execute_recall(
            packet,
            provider_binding=self.entry["provider_binding"],
            provider=provider or self.provider,
        )
