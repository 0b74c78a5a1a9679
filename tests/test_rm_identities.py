"""Every vector of shared/spec/identities.md, pinned."""

from __future__ import annotations

import json

import pytest
from fixtures import f1

from capabilities.reward_memory.contract import identities as ids
from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
from capabilities.reward_memory.contract.experience import parse_reflection


@pytest.mark.parametrize(
    ("goal", "agent", "token"),
    [
        ("goal", "pilot", "loopx-goal-pilot-5fee5ac24d627da886b0"),
        ("demo-goal", "explorer", "loopx-demo-goal-explorer-bead5d4a47eca8769aee"),
        ("Other Goal", "explorer", "loopx-other-goal-explorer-1573fe203b01b3f7bd35"),
        ("g/x", "agent-one", "loopx-g-x-agent-one-6c15183ec116a24d1e3a"),
        ("demo-goal", "code-reviewer", "loopx-demo-goal-code-reviewer-401f87264cd002793994"),
        ("Ünïcode goal", "explorer", "loopx-n-code-goal-explorer-333eb4474f96c25c326f"),
    ],
)
def test_peer_tokens(goal, agent, token):
    assert ids.peer_token(goal, agent) == token


def test_candidate_ref_of_f1_and_the_wrong_serialization():
    packet = build_candidate(normalise_event(f1.event()))
    assert packet["candidate"]["candidate_ref"] == "candidate:6916d2a6fb7a59fefa81"


def test_candidate_ref_of_the_unicode_soft_preference():
    event = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "feedback_ref": "review:42",
        "workspace_ref": "workspace:demo",
        "project_ref": "project:demo",
        "surface_id": "issue_fix.patch_planning",
        "target_class": "soft_preference",
        "content_summary": "  先运行  聚焦测试，再跑全量。 ",  # noqa: RUF001 - Chinese text by design
        "source": {
            "source_kind": "maintainer_correction",
            "source_ref": "review:42",
            "actor_ref": "user:lin",
            "actor_role": "maintainer",
        },
        "reasoning": {"summary": "maintainer said so", "confidence": "high"},
        "guard_context": {
            "source_freshness": "current",
            "conflict_state": "clear",
            "current_artifact_verified": False,
        },
        "raw_content_captured": False,
    }
    packet = build_candidate(normalise_event(event))
    assert packet["candidate"]["content_summary"] == "先运行 聚焦测试，再跑全量。"  # noqa: RUF001 - as above
    assert packet["candidate"]["candidate_ref"] == "candidate:cf249e24696cf93f5b29"


def test_policy_review_and_target_identities():
    candidate = "candidate:6916d2a6fb7a59fefa81"
    assert ids.policy_digest("policy:experience") == "f911a35a4da1"
    assert ids.review_ref("policy:experience", candidate) == (
        "review:f911a35a4da1:6916d2a6fb7a59fefa81"
    )
    target = ids.target_uri(f1.SCOPE_REF + "/", "policy:experience", candidate)
    assert target == f1.SCOPE_REF + "/reward-memory-f911a35a4da1-6916d2a6fb7a59fefa81.json"
    assert ids.provider_ref("openviking", "reward_memory", target) == (
        "provider-967043053432713a5e4b"
    )
    assert ids.memory_ref_digest(target) == "34e0a8c2c217e248"


@pytest.mark.parametrize(
    ("activated_at", "ref"),
    [
        ("2026-08-15T00:00:00+00:00", "activation:b736728dacbd52e16567"),
        ("2026-08-15T00:00:00Z", "activation:7483d6348bff9bf6b337"),
    ],
)
def test_activation_refs(activated_at, ref):
    assert ids.activation_ref("experience", "candidate:6916d2a6fb7a59fefa81", activated_at) == ref


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("g", "a", "t", "i", "e"), "app:f23ff4b2cfc6272e204a"),
        (
            ("demo-goal", "explorer", "todo-1", "turn-2026-01", "effect:spend:7"),
            "app:c87d5767567f6843a55e",
        ),
        (("目标", "explorer", "t", "i", "e"), "app:67752778102ed536903e"),
    ],
)
def test_app_candidate_ids(args, expected):
    assert ids.app_candidate_id(*args) == expected


P1 = {
    "enabled": True,
    "experimental": True,
    "config_path": ".loopx/config/reward-memory/experiment.json",
    "config_digest": "sha256:" + "0" * 64,
    "enabled_agents": ["explorer"],
    "automation": {"automatic_ingest": True, "automatic_recall": True},
    "enablement_receipts": {
        "explorer": {
            "status": "verified",
            "config_digest": "sha256:" + "0" * 64,
            "actor_binding_verified": True,
            "writability_verified": True,
            "exact_readback_verified": True,
        }
    },
}


def test_binding_identities():
    assert ids.binding_fingerprint(P1, "explorer") == (
        "sha256:1d28037b3aa8a3857556e0144423ce0b95a343f40b0907cdda44fafb6761d88c"
    )
    assert ids.binding_fingerprint({}, "a") == (
        "sha256:1a4146c4e145ff73efcbfa0aa5a64c5453a4d1547c2a10d6e11a4a3d5f0c24c9"
    )
    assert (
        ids.binding_revision(
            "explorer", ".loopx/config/reward-memory/agent.json", "sha256:" + "1" * 64
        )
        == "sha256:404a785383a6c9a846a83cbdb96a97dd6021cbf9e49ef65aa063145ad9bea5eb"
    )
    assert ids.binding_revision("explorer", None, None) == (
        "sha256:40a2ddc2cffee6a91c0716ca3a74bc86333d095bf45421bf84ffb0706d6ead3d"
    )
    declaration = {
        "validation_command": None,
        "validation_command_argv": ["python", "-m", "pytest", "-q"],
        "validation_label": None,
        "validation_timeout_seconds": 20,
    }
    assert ids.validation_declaration_sha256(declaration) == (
        "4b27fe82f2e834351500dcb7356f6c0b5695f355d9749dbac283a6306a59ab83"
    )


@pytest.mark.parametrize("indent", [None, 2, 7])
def test_reflection_digest_ignores_formatting(indent):
    raw = json.dumps(f1.REFLECTION, indent=indent)
    assert parse_reflection(raw).raw_digest == (
        "sha256:1f9a79ec96e3f92ee0ba164a0e5bf976a67f2eaa4e82f0481f5d84b87b63f8eb"
    )


def test_turn_event_identities():
    evidence = ids.evidence_digest(["evidence:ci-run-17"])
    assert evidence == "d6073be24c563920"
    assert ids.evidence_digest(["證據:1"]) == "395955dd2187faa3"
    event_id = ids.source_event_id(
        "demo-goal", "explorer", "turn-0001", f1.SURFACE, "policy:experience", evidence
    )
    assert event_id == "ccacaaa758c25c7958af"
    assert ids.turn_source_ref(event_id, evidence) == f1.SOURCE_REF


def test_content_experience_and_query_digests():
    from capabilities.reward_memory.memory.ingest import ingest_scoped_event  # noqa: F401 - import check

    assert ids.experience_digest(f1.EXPERIENCE) == (
        "sha256:97b0d28bd066376bc3faeddb6946010ed7f2344da2dafa73ac7a31156a7f58cf"
    )
    assert ids.short_digest(f1.REFLECTION["content_summary"]) == "745ad23ef582dd29"
    assert ids.short_digest(f1.SCOPE_REF) == "0ead3454e47d00c2"
    assert ids.short_digest("q") == "8e35c2cd3bf6641b"
    assert (
        ids.short_digest(
            "candidate:6916d2a6fb7a59fefa81 Run the focused test module before the full suite."
        )
        == "aaf9e9a39c1ac912"
    )
    behaviour = f1.EXPERIENCE["future_behavior"]
    destination = (
        f"{f1.EXPERIENCE['applicability'][0]} {behaviour['trigger']} {behaviour['action']}"
    )
    assert ids.short_digest(destination) == "a84457425d64d3cb"


def test_canonical_context_text():
    assert ids.canonical_context_text("a\r\nb\n\n") == "a\nb\n"
    assert ids.content_digest("x\n") == ids.content_digest("x")


SITUATION = {
    "schema_version": "agent_turn_situation_v0",
    "goal_id": "demo-goal",
    "agent_id": "explorer",
    "turn_instance_id": "turn-0001",
    "workspace_ref": "workspace:demo",
    "project_ref": "project:demo",
    "phase": "implement",
    "decision": "run",
    "selected_todo": {
        "todo_id": "todo-1",
        "action_kind": "implement",
        "text": "Fix the flaky parser test",
    },
    "recent_outcomes": [],
    "next_intent": "fix the failing test",
    "conflict_state": "clear",
    "status_health_ok": True,
    "user_prompt_included": False,
}


def test_turn_recall_identities():
    fingerprint = ids.situation_fingerprint(SITUATION)
    assert fingerprint == "sha256:b7916bab3ecbf33812e8c2a26b2b03164d5d5250a0a0b206b1e794e4103bbbe9"
    recall_id = ids.turn_recall_id("turn-0001", fingerprint)
    assert recall_id == "sha256:4d8a173df49dabb8110424413e8ca09bae03a0b678e4f2df62cf2cb003c2793a"
    assert ids.application_id(recall_id) == "turn-recall-4d8a173df49dabb81104"
    query = (
        "agent=explorer | goal=demo-goal | project=project:demo | phase=implement | "
        "todo=Fix the flaky parser test | action_kind=implement | intent=fix the failing test"
    )
    assert ids.preview_query_digest(query) == (
        "sha256:c851e6bb2ad586a445e36acafe5ada3878e4becbff58e07b4ea803f4bd0633de"
    )


def test_f1_active_record_bytes(tmp_path):
    from rm_support import ingest_kwargs, recording

    from capabilities.reward_memory.memory.ingest import ingest_scoped_event

    provider = recording(tmp_path)
    receipt = ingest_scoped_event(f1.event(), execute=True, **ingest_kwargs(provider))
    assert receipt["status"] == "activated"
    [uri] = provider.inner.list(f1.SCOPE_REF, limit=5, actor_peer_id=f1.PEER)
    body = provider.inner.read_exact(uri, actor_peer_id=f1.PEER)
    assert len(body.encode()) + 1 == 2039, "the wire body is S1 + newline; stored without it"
    assert ids.content_digest(body) == (
        "e139c8eda3c02e5f6d75a152997608521302ff8471da3c39ca56e15bf8b6d54e"
    )
