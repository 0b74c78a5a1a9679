"""Utility fixtures: U1 of identities.md §13, and projection inputs built from it.

Written by our own tests; the oracle job feeds the same inputs to LoopX 2.1.1.
"""

from __future__ import annotations

import copy
from typing import Any

from capabilities.reward_memory.utility import observation as u

RECEIPT: dict[str, Any] = {
    "schema_version": "reward_memory_application_receipt_v0",
    "application_id": "turn-recall-0123456789abcdef0123",
    "artifact_ref": "artifact:turn-0001",
    "corpus_id": "experience",
    "surface_id": "agent_workflow.turn_admission",
    "mode": "function_boundary",
    "query_kind": "business_recall",
    "query_evidence": [
        {
            "query_digest": "aaf9e9a39c1ac912",
            "query_summary": "turn admission",
            "exact_query_exposed": False,
        }
    ],
    "outcome": "applied",
    "memory_ref_digests": ["34e0a8c2c217e248"],
    "reasoning_summary": "guidance fitted the current task",
    "current_artifact_verified": True,
    "result_readback_verified": True,
    "provider_call_count": 1,
    "model_reasoning_preserved": True,
    "grants_new_action_authority": False,
    "external_writes_performed": False,
    "raw_content_captured": False,
}
SCOPE = {
    "agent_id": "explorer",
    "project_id": "project-demo",
    "corpus_id": "experience",
    "surface_id": "agent_workflow.turn_admission",
}
CONTEXT = {
    "scope": SCOPE,
    "retrieval_snapshot_ref": "snapshot:r1",
    "policy_snapshot_ref": "policy:p1",
}
VERIFIED = {
    "verified": True,
    "outcome_ref": "outcome:turn-0001",
    "artifact_ref": "artifact:turn-0001",
    "outcome_status": "passed",
}
PROPOSAL = {
    "scope": SCOPE,
    "application_id": RECEIPT["application_id"],
    "artifact_ref": "artifact:turn-0001",
    "outcome_ref": "outcome:turn-0001",
    "outcome_status": "passed",
    "retrieval_snapshot_ref": "snapshot:r1",
    "policy_snapshot_ref": "policy:p1",
    "memory_ref_digests": ["34e0a8c2c217e248"],
    "utility_label": "helpful",
    "attribution_level": "item",
    "evidence_basis": "owner_correction",
    "confidence": 0.8,
    "reason_codes": ["owner_confirmed"],
    "evidence_refs": ["evidence:review-9"],
    "evaluator_ref": "evaluator:owner",
    "evaluation_version": "evaluation_v0",
}
CREATED_AT = "2026-08-16T00:00:00Z"


def obs(**changes: Any) -> dict[str, Any]:
    """U1's observation with ``changes``, its id recomputed (valid unless asked not to be)."""
    body = {
        "schema_version": u.OBSERVATION_SCHEMA,
        "scope": SCOPE,
        "application_receipt_id": u.application_receipt_id(RECEIPT),
        **{
            k: v
            for k, v in PROPOSAL.items()
            if k not in ("scope", "application_id", "artifact_ref", "outcome_status")
        },
        "created_at": CREATED_AT,
        **dict.fromkeys(u.BOUNDARY_FIELDS, False),
    }
    body = copy.deepcopy(body)
    body.update(changes)
    return {
        "schema_version": body.pop("schema_version"),
        "observation_id": u.observation_id({"schema_version": u.OBSERVATION_SCHEMA, **body}),
        **body,
    }


def projection_input(*observations: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A projection input over U1's context."""
    return {"observations": list(observations), **copy.deepcopy(CONTEXT), **extra}


def _with(observation: dict[str, Any], **fields: Any) -> dict[str, Any]:
    broken = copy.deepcopy(observation)
    broken.update(fields)
    return broken


def _without(observation: dict[str, Any], key: str) -> dict[str, Any]:
    broken = copy.deepcopy(observation)
    del broken[key]
    return broken


def cases() -> dict[str, Any]:
    """Projection inputs by name: the reducer's table rows and every rejection path."""
    valid = obs()
    return {
        "duplicate_delivery": projection_input(obs(), obs()),
        "conflicting_delivery": projection_input(obs(), obs(utility_label="harmful")),
        "conflict_beside_a_good_subject": projection_input(
            obs(), obs(utility_label="harmful"), obs(evaluator_ref="ev:ok")
        ),
        "harmful": projection_input(obs(utility_label="harmful", confidence=0.6)),
        "same_tier_conflict": projection_input(
            obs(evaluator_ref="ev:a"), obs(utility_label="harmful", evaluator_ref="ev:b")
        ),
        "strongest_unknown_blocks_weaker": projection_input(
            obs(utility_label="unknown"),
            obs(evidence_basis="evaluator_inference", evaluator_ref="ev:w"),
        ),
        "strongest_unknown_and_tier_conflict": projection_input(
            obs(utility_label="unknown"),
            obs(evaluator_ref="ev:x"),
            obs(utility_label="harmful", evaluator_ref="ev:y"),
        ),
        "set_and_none_subjects": projection_input(
            obs(attribution_level="set"),
            obs(attribution_level="none", utility_label="unknown", evaluator_ref="ev:n"),
        ),
        "weak_tier_combines": projection_input(
            obs(evidence_basis="evaluator_inference", confidence=0.5, evaluator_ref="ev:1"),
            obs(
                evidence_basis="evaluator_inference",
                confidence=0.5,
                evaluator_ref="ev:2",
                created_at="2026-08-17T00:00:00+00:00",
            ),
        ),
        "strong_neutral_over_weaker_helpful": projection_input(
            obs(utility_label="neutral", confidence=0.3),
            obs(evidence_basis="deterministic_effect", evaluator_ref="ev:d"),
        ),
        "harmful_over_weaker_helpful": projection_input(
            obs(utility_label="harmful", confidence=0.4),
            obs(utility_label="harmful", confidence=0.5, evaluator_ref="ev:h2"),
            obs(evidence_basis="controlled_replay", evaluator_ref="ev:c"),
        ),
        "only_unknown": projection_input(
            obs(
                utility_label="unknown",
                evidence_basis="insufficient",
                evidence_refs=[],
                confidence=0.0,
            )
        ),
        "three_kinds_of_subject": projection_input(
            obs(),
            obs(
                attribution_level="set",
                memory_ref_digests=["1111111111111111", "34e0a8c2c217e248"],
                evaluator_ref="ev:s",
            ),
            obs(
                attribution_level="none",
                utility_label="unknown",
                evidence_basis="insufficient",
                evidence_refs=[],
                confidence=0.0,
                evaluator_ref="ev:n",
            ),
        ),
        "history_order": projection_input(
            obs(created_at="2026-08-18T00:00:00Z"),
            obs(evaluator_ref="ev:2", created_at="2026-08-15T00:00:00Z"),
            obs(attribution_level="set", evaluator_ref="ev:3", created_at="2026-08-17T00:00:00Z"),
            obs(attribution_level="set", evaluator_ref="ev:4", created_at="2026-08-19T00:00:00Z"),
        ),
        "offsets_compare_as_instants": projection_input(
            obs(created_at="2026-08-16T02:00:00+02:00"),
            obs(evaluator_ref="ev:z", created_at="2026-08-16T00:30:00Z"),
        ),
        "earliest_duplicate_kept": projection_input(
            obs(created_at="2026-08-18T00:00:00Z"), obs(created_at="2026-08-17T00:00:00Z")
        ),
        "history_bounded": projection_input(
            *[
                obs(
                    memory_ref_digests=[f"{i % 3:016x}"],
                    evaluator_ref=f"ev:{i}",
                    created_at=f"2026-08-{1 + i % 28:02d}T00:{i // 28 % 60:02d}:00Z",
                )
                for i in range(300)
            ]
        ),
        "unsorted_reason_codes_accepted": projection_input(obs(reason_codes=["b", "a"])),
        "stripped_created_at": projection_input(obs(created_at=" 2026-08-16T00:00:00Z")),
        "empty": projection_input(),
        "custom_reducer_version": projection_input(
            obs(), reducer_version="memory_utility_reducer_v1"
        ),
        "scope_mismatch": projection_input(obs(scope={**SCOPE, "agent_id": "other"})),
        "retrieval_snapshot_mismatch": projection_input(obs(retrieval_snapshot_ref="snapshot:r2")),
        "policy_snapshot_mismatch": projection_input(obs(policy_snapshot_ref="policy:p2")),
        "identity_invalid": projection_input(_with(valid, observation_id="muo_" + "0" * 64)),
        "write_boundary": projection_input(_with(valid, raw_content_captured=True)),
        "schema_mismatch": projection_input(_with(valid, schema_version="v9")),
        "missing_key": projection_input(_without(valid, "outcome_ref")),
        "bool_confidence": projection_input(_with(valid, confidence=True)),
        "confidence_above_one": projection_input(obs(confidence=1.5)),
        "url_ref": projection_input(obs(outcome_ref="https://x")),
        "path_ref": projection_input(obs(evaluator_ref="/home/x")),
        "slash_ref": projection_input(obs(evaluator_ref="a/b")),
        "bad_digest": projection_input(obs(memory_ref_digests=["XYZ"])),
        "unsorted_digests": projection_input(
            obs(
                memory_ref_digests=["34e0a8c2c217e248", "1111111111111111"], attribution_level="set"
            )
        ),
        "item_with_two_digests": projection_input(
            obs(memory_ref_digests=["1111111111111111", "34e0a8c2c217e248"])
        ),
        "duplicate_reason_codes": projection_input(obs(reason_codes=["a", "a"])),
        "timestamp_without_offset": projection_input(obs(created_at="2026-08-16T00:00:00")),
        "insufficient_but_helpful": projection_input(obs(evidence_basis="insufficient")),
        "none_but_helpful": projection_input(obs(attribution_level="none")),
        "strong_basis_without_evidence": projection_input(
            obs(utility_label="unknown", evidence_refs=[])
        ),
        "label_without_evidence": projection_input(
            obs(evidence_basis="evaluator_inference", evidence_refs=[])
        ),
        "observation_not_an_object": projection_input("x"),  # type: ignore[arg-type]
        "bad_observation_scope": projection_input(obs(scope={"agent_id": "a"})),
        "bad_observation_snapshot": projection_input(obs(retrieval_snapshot_ref="a/b")),
        "too_many_observations": projection_input(
            *[obs(evaluator_ref=f"ev:{i}") for i in range(1025)]
        ),
        "too_many_subjects": projection_input(
            *[obs(memory_ref_digests=[f"{i:016x}"], evaluator_ref=f"ev:{i}") for i in range(129)]
        ),
        "previous_projection_not_a_projection": projection_input(
            obs(), previous_projection={"reducer_identity": "mur_x"}
        ),
        "bad_context_scope": {
            "observations": [],
            "scope": {"agent_id": "a"},
            "retrieval_snapshot_ref": "s",
            "policy_snapshot_ref": "p",
        },
        "bad_context_snapshot": {
            "observations": [],
            "scope": SCOPE,
            "retrieval_snapshot_ref": "a/b",
            "policy_snapshot_ref": "policy:p1",
        },
    }


SHAPE_ERRORS = {
    "observations_not_a_list": {"observations": "x", **CONTEXT},
    "unknown_input_key": {"observations": [], **CONTEXT, "extra": 1},
    "missing_input_key": {
        "observations": [],
        "scope": SCOPE,
        "retrieval_snapshot_ref": "snapshot:r1",
    },
    "input_not_an_object": [],
}


def settled(
    family: str = "issue_fix",
    domain: str = "issue_fix.parser",
    outcome: str = "applied",
    application_id: str = RECEIPT["application_id"],
    **extra: Any,
) -> dict[str, Any]:
    """One settled application for a dogfood batch."""
    receipt = {**RECEIPT, "outcome": outcome, "application_id": application_id}
    return {
        "domain_family": family,
        "domain_id": domain,
        "application_receipt": receipt,
        "module_outcome": {
            "artifact_ref": receipt["artifact_ref"],
            "outcome_verified": True,
            "outcome_ref": "outcome:turn-0001",
            "outcome_status": "passed",
            "summary": "the focused tests pass",
        },
        "cost": {"latency_ms": 10, "model_tokens": 100, "provider_call_count": 1},
        "intervention": {"count": 0, "summary": None},
        "raw_content_captured": False,
        **extra,
    }


def control(action: str, ref: str) -> dict[str, Any]:
    """An operator-control receipt, as `operator-control` prints it."""
    retire = action == "retire"
    return {
        "schema_version": "reward_memory_operator_control_v0",
        "control_ref": ref,
        "action": action,
        "effective_action": action,
        "operator_ref": "operator:alice",
        "authority_ref": "owner:demo",
        "authority_source_ref": "source:1",
        "authority_verified": True,
        "corpus_id": "experience",
        "prior_candidate_ref_digest": "c900c6e5e9ca9120",
        "result_candidate_ref_digest": "c900c6e5e9ca9120",
        "result_state": "retired" if retire else "candidate",
        "reasoning_summary": "operator control",
        "provider_write_performed": False,
        "readback_verified": False,
        "next_step": "owner_write_retirement_then_exact_readback"
        if retire
        else "review_replacement_then_owner_write_and_exact_readback",
        "grants_new_action_authority": False,
        "raw_content_captured": False,
        "external_writes_performed": False,
    }


def dogfood_cases() -> dict[str, Any]:
    """Dogfood batches: ready, each missing piece, utility, and the rejections."""
    attribution = {"context": CONTEXT, "proposal": PROPOSAL, "created_at": CREATED_AT}
    full = [
        settled(utility_attribution=attribution),
        settled("loopx", "loopx.planning", "ignored", "turn-recall-planning"),
        settled("loopx", "loopx.review", "refuted", "turn-recall-review"),
    ]
    controls = [control("edit", "control:1"), control("retire", "control:2")]
    return {
        "ready": {"observations": full, "operator_controls": controls},
        "one_receipt": {"observations": [settled()], "operator_controls": []},
        "no_issue_fix": {"observations": full[1:], "operator_controls": controls},
        "no_controls": {"observations": full, "operator_controls": []},
        "utility_rejected": {
            "observations": [
                settled(
                    utility_attribution={
                        **attribution,
                        "proposal": {**PROPOSAL, "outcome_status": "failed"},
                    }
                )
            ],
            "operator_controls": [],
        },
        "feedback_and_intervention": {
            "observations": [
                settled(
                    intervention={"count": 2, "summary": "maintainer redirected the fix"},
                    bot_feedback={"captured": True, "summary": "review bot approved"},
                )
            ],
            "operator_controls": [control("retire", "control:9")],
        },
        "empty": {"observations": [], "operator_controls": []},
    }


DOGFOOD_ERRORS = {
    "duplicate_receipt": {"observations": [settled(), settled()], "operator_controls": []},
    "duplicate_control_ref": {
        "observations": [settled()],
        "operator_controls": [control("edit", "c:1"), control("retire", "c:1")],
    },
    "bad_family_prefix": {
        "observations": [settled("loopx", "issue_fix.x")],
        "operator_controls": [],
    },
    "applied_without_readback": {
        "observations": [
            settled(application_receipt={**RECEIPT, "result_readback_verified": False})
        ],
        "operator_controls": [],
    },
    "control_action_invalid": {"observations": [], "operator_controls": [control("delete", "c:1")]},
    "unverified_outcome": {
        "observations": [
            {
                **settled(),
                "module_outcome": {**settled()["module_outcome"], "outcome_verified": False},
            }
        ],
        "operator_controls": [],
    },
    "raw_content": {"observations": [settled(raw_content_captured=True)], "operator_controls": []},
    "unverified_control": {
        "observations": [],
        "operator_controls": [{**control("edit", "c:1"), "authority_verified": False}],
    },
}
