"""The experiment config loader and the private Goal/Agent rules (contracts.md §2-§4)."""

from __future__ import annotations

import copy
import json

import pytest
from fixtures import f1

from capabilities.reward_memory.contract.config import (
    goal_agent_scope,
    load_config,
    normalise_config,
)
from capabilities.reward_memory.contract.values import RewardMemoryInputError


def mutated(change, provider="openviking"):
    document = copy.deepcopy(f1.config(provider))
    change(document)
    return document


def corpus(document):
    return document["corpora"][0]["corpus"]


def policy(document):
    return document["corpora"][0]["standing_policy"]


def test_f1_normalises_to_the_documented_shape():
    config = normalise_config(f1.config())
    entry = config["corpora"]["experience"]
    assert entry["corpus"]["scope"] == {
        "workspace_ref": "workspace:demo",
        "project_ref": "project:demo",
        "surface_ids": [f1.SURFACE],
        "user_ref": None,
        "peer_ref": "agent:explorer",
        "session_ref": None,
    }
    assert entry["corpus"]["freshness"] == {
        "mode": "source_truth_bound",
        "source_revision": None,
        "max_age_seconds": None,
    }
    assert entry["provider_binding"] == {
        "corpus_id": "experience",
        "provider_id": "openviking",
        "namespace": "reward_memory",
        "scope_ref": f1.SCOPE_REF,
        "timeout_seconds": 30,
        "setup_hints": {},
        "actor_peer_id": f1.PEER,
    }
    assert config["automation"] == {
        "automatic_recall": True,
        "automatic_ingest": True,
        "fail_open": True,
    }
    assert config["automation_intent"] == {
        "automatic_recall": "default_enabled_new_config",
        "automatic_ingest": "default_enabled_new_config",
        "fail_open": "default",
    }


def test_explicit_false_is_kept_with_explicit_provenance():
    config = normalise_config(f1.config(automatic_ingest=False))
    assert config["automation"]["automatic_ingest"] is False
    assert config["automation_intent"]["automatic_ingest"] == "explicit"
    assert config["automation_intent"]["automatic_recall"] == "default_enabled_new_config"


def test_setup_hints_keep_only_compact_install_and_configure():
    document = mutated(
        lambda d: d["project_provider_binding"].update(
            setup_hints={"install": "  pip   install x ", "configure": "", "other": "y"},
            timeout_seconds=12.5,
        )
    )
    binding = normalise_config(document)["corpora"]["experience"]["provider_binding"]
    assert binding["setup_hints"] == {"install": "pip install x"}
    assert binding["timeout_seconds"] == 12.5


def drop(path):
    def change(document):
        *parents, leaf = path
        target = document
        for part in parents:
            target = target[part]
        del target[leaf]

    return change


REJECTED = {
    "unknown-top-key": lambda d: d.update(extra=1),
    "wrong-schema": lambda d: d.update(schema_version="reward_memory_experiment_config_v2"),
    "fail-open-false": lambda d: d.update(automation={"fail_open": False}),
    "automation-unknown": lambda d: d.update(automation={"sometimes": True}),
    "automation-not-bool": lambda d: d.update(automation={"automatic_recall": 1}),
    "timeout-bool": lambda d: d["project_provider_binding"].update(timeout_seconds=True),
    "timeout-too-big": lambda d: d["project_provider_binding"].update(timeout_seconds=121),
    "binding-unknown-key": lambda d: d["project_provider_binding"].update(endpoint="http://x"),
    "scope-digest-wrong": lambda d: corpus(d).update(provider_scope_ref_digest="0" * 16),
    "peer-mismatch": lambda d: d["project_provider_binding"].update(actor_peer_id="someone"),
    "corpus-provider-mismatch": lambda d: corpus(d).update(provider_id="embedded_sqlite"),
    "policy-owner": lambda d: policy(d).update(owner_ref="owner:other"),
    "policy-class": lambda d: policy(d).update(allowed_target_classes=["soft_preference"]),
    "policy-unknown-key": lambda d: policy(d).update(extra=True),
    "policy-raw": lambda d: policy(d).update(raw_content_captured=True),
    "policy-missing-key": drop(["corpora", 0, "standing_policy", "allowed_action_scopes"]),
    "corpus-raw-registry": lambda d: corpus(d)["privacy"].update(raw_content_in_registry=True),
    "corpus-bad-class": lambda d: corpus(d).update(class_id="memory"),
    "time-bound-without-age": lambda d: corpus(d).update(freshness={"mode": "time_bound"}),
    "revision-bound-without-rev": lambda d: corpus(d).update(freshness={"mode": "revision_bound"}),
    "retired-without-reason": lambda d: corpus(d).update(lifecycle={"state": "retired"}),
    "surface-unknown-corpus": lambda d: d["surfaces"][0].update(corpus_ids=["nope"]),
    "ingest-not-selected": lambda d: d["surfaces"][0].update(ingest_corpus_id="other"),
    "surface-not-in-corpus": lambda d: d["surfaces"][0].update(surface_id="other.surface"),
    "limit-too-big": lambda d: d["surfaces"][0]["recall_profile"].update(limit=9),
    "queries-bool": lambda d: d["surfaces"][0]["recall_profile"].update(max_queries=True),
    "bad-adapter": lambda d: d["surfaces"][0].update(adapter="semantic_router"),
    "destinations-wrong-surface": lambda d: d["surfaces"][0].update(destinations=[]),
    "scopes-not-corpora": lambda d: d["project_provider_binding"]["corpus_scopes"].append(
        {"corpus_id": "ghost", "scope_ref": "viking://user/a/memories/x"}
    ),
    "agent-scope-ref": lambda d: d["project_provider_binding"]["corpus_scopes"][0].update(
        scope_ref="viking://agent/shared/memories"
    ),
    "shared-agent-scope": lambda d: (
        corpus(d)["privacy"].update(visibility="workspace")
        or d["project_provider_binding"]["corpus_scopes"][0].update(
            scope_ref="viking://agent/x/memories"
        )
        or corpus(d).pop("provider_scope_ref_digest")
    ),
    "private-shared-scope": lambda d: (
        d["project_provider_binding"]["corpus_scopes"][0].update(
            scope_ref="viking://user/alice/memories/x"
        )
        or corpus(d).pop("provider_scope_ref_digest")
    ),
    "private-peer-ref": lambda d: (
        corpus(d)["scope"].update(peer_ref="user:x") or policy(d)["scope"].update(peer_ref="user:x")
    ),
    "no-corpora": lambda d: d.update(corpora=[]),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_hostile_configs_are_typed_errors(name):
    with pytest.raises(RewardMemoryInputError) as info:
        normalise_config(mutated(REJECTED[name]))
    assert info.value.to_public()["status"] == "invalid_request"
    assert info.value.field


def test_load_config_reads_a_file_inside_the_repo(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps(f1.config()))
    assert load_config(tmp_path, "c.json")["schema_version"] == "reward_memory_experiment_config_v1"
    for path, reason in (
        ("../c.json", "config_path_invalid"),
        ("/etc/passwd", "config_path_invalid"),
        ("missing.json", "config_unreadable"),
    ):
        with pytest.raises(RewardMemoryInputError) as info:
            load_config(tmp_path, path)
        assert info.value.reason_code == reason
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RewardMemoryInputError) as info:
        load_config(tmp_path, "bad.json")
    assert info.value.reason_code == "config_not_json"


def test_goal_agent_scope_for_f1():
    scope = goal_agent_scope(normalise_config(f1.config()), "demo-goal", "explorer")
    assert scope == {
        "schema_version": "reward_memory_goal_agent_scope_v1",
        "goal_id": "demo-goal",
        "agent_id": "explorer",
        "isolation_mode": "goal_scoped_agent_private",
        "private_corpus_count": 1,
        "actor_binding_verified": True,
        "actor_peer_id": f1.PEER,
    }


@pytest.mark.parametrize(
    ("goal", "agent"),
    [("demo-goal", "other"), ("other-goal", "explorer"), ("a/b", "explorer"), ("", "explorer")],
)
def test_a_private_config_binds_exactly_one_agent_and_goal(goal, agent):
    with pytest.raises(RewardMemoryInputError) as info:
        goal_agent_scope(normalise_config(f1.config()), goal, agent)
    assert info.value.reason_code == "goal_agent_provider_scope_mismatch"


def test_embedded_sqlite_may_hold_a_private_corpus():
    config = normalise_config(f1.config("embedded_sqlite"))
    assert goal_agent_scope(config, "demo-goal", "explorer")["isolation_mode"] == (
        "goal_scoped_agent_private"
    )


def test_shared_corpora_are_explicit_shared():
    def share(document):
        corpus(document)["privacy"]["visibility"] = "workspace"

    scope = goal_agent_scope(normalise_config(mutated(share)), "demo-goal", "anyone")
    assert scope["isolation_mode"] == "explicit_shared"
    assert scope["actor_binding_verified"] is False


def _scoped(scope_ref, provider_id="openviking", visibility="workspace", actor=f1.PEER):
    def change(document):
        binding = document["project_provider_binding"]
        binding["provider_id"] = corpus(document)["provider_id"] = provider_id
        binding["corpus_scopes"][0]["scope_ref"] = scope_ref
        corpus(document).pop("provider_scope_ref_digest", None)
        corpus(document)["privacy"]["visibility"] = visibility
        if actor is None:
            binding.pop("actor_peer_id", None)
        else:
            binding["actor_peer_id"] = actor

    return mutated(change)


@pytest.mark.parametrize(
    "scope_ref",
    [
        "viking://user/alice/memories/peers/someone/lessons",
        "viking://resources/peers/someone/lessons",
        "lark://space/peers/someone/lessons",
    ],
)
def test_a_scope_ref_naming_a_peer_anywhere_belongs_to_that_actor(scope_ref):
    provider = "lark" if scope_ref.startswith("lark") else "openviking"
    with pytest.raises(RewardMemoryInputError) as caught:
        normalise_config(_scoped(scope_ref, provider))
    assert caught.value.field.endswith("actor_peer_id")
    assert normalise_config(_scoped(scope_ref, provider, actor="someone"))["corpora"]


def test_an_unknown_providers_own_scopes_are_left_to_its_failing_sync():
    # Nothing can be written to a provider no tool knows; its scheme is not judged here.
    config = normalise_config(_scoped("lark://space/reward-memory", "lark", actor=None))
    assert config["corpora"]["experience"]["provider_binding"]["scope_ref"].startswith("lark://")
    with pytest.raises(RewardMemoryInputError):
        normalise_config(_scoped("lark://space/reward-memory", "openviking", actor=None))
