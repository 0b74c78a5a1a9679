"""Binding registry and experiment status: the resolution order of contracts.md §5.3."""

from __future__ import annotations

import copy
import json

import pytest
from fixtures import f1

from capabilities.reward_memory.binding.registry import load_registry, resolve
from capabilities.reward_memory.contract.values import RewardMemoryInputError
from conformance.public_safety import public_safety_violations


def status_of(tmp_path, change=None, config=None, raw=None, agent="explorer"):
    path = f1.write_goal(tmp_path, config)
    document = json.loads(path.read_text())
    if raw is not None:
        (tmp_path / "repo" / f1.CONFIG_PATH).write_bytes(raw)
    if change:
        change(document["goals"][0]["control_plane"]["reward_memory"])
    path.write_text(json.dumps(document))
    return resolve(load_registry(path), "demo-goal", agent).status


CASES = [
    ("available", None, None, "available", None, "verified"),
    ("disabled", lambda b: b.update(enabled=False), None, "disabled", None, "not_attempted"),
    (
        "not-experimental",
        lambda b: b.update(experimental=False),
        None,
        "disabled",
        None,
        "not_attempted",
    ),
    (
        "agent-not-enabled",
        lambda b: b.update(enabled_agents=["other"]),
        None,
        "agent_not_enabled",
        None,
        "not_attempted",
    ),
    (
        "config-missing",
        lambda b: b.pop("config_path"),
        None,
        "config_missing",
        None,
        "not_attempted",
    ),
    (
        "config-invalid",
        None,
        b'{"schema_version": 1}',
        "config_invalid",
        "config_unavailable_or_invalid",
        "rejected",
    ),
    (
        "drift",
        lambda b: b.update(config_digest="sha256:" + "0" * 64),
        None,
        "enablement_stale",
        "config_digest_missing_or_drifted",
        "drifted",
    ),
    (
        "receipt-missing",
        lambda b: b.pop("enablement_receipts"),
        None,
        "enablement_stale",
        "config_digest_missing_or_drifted",
        "drifted",
    ),
    (
        "receipt-blocked",
        lambda b: b["enablement_receipts"]["explorer"].update(status="blocked"),
        None,
        "enablement_unverified",
        "provider_write_preflight_missing_or_unverified",
        "unverified",
    ),
    (
        "receipt-other-provider",
        lambda b: b["enablement_receipts"]["explorer"].update(provider_id="embedded_sqlite"),
        None,
        "enablement_unverified",
        "provider_write_preflight_missing_or_unverified",
        "unverified",
    ),
]


@pytest.mark.parametrize(
    ("name", "change", "raw", "status", "reason", "route"), CASES, ids=[case[0] for case in CASES]
)
def test_resolution_order(tmp_path, name, change, raw, status, reason, route):
    result = status_of(tmp_path, change, raw=raw)
    assert result["status"] == status
    assert result.get("reason_code") == reason
    assert result["config_runtime_route"]["readback_status"] == route
    assert result["available"] is (status == "available")
    assert result["fail_open"] is True and result["external_writes_performed"] is False
    assert ("repair" in result) is (status in {"enablement_stale", "enablement_unverified"})
    assert [c["host_id"] for c in result["host_coverage"]] == [
        "codex_cli_turn",
        "generic_cli_turn",
        "dsh_turn",
        "codex_app_quota",
        "lark",
    ]
    assert not public_safety_violations(result), "no scope ref or local path is exposed"


def test_a_config_for_another_agent_is_a_scope_mismatch(tmp_path):
    def allow_other(binding):
        binding["enabled_agents"].append("other")
        binding["enablement_receipts"]["other"] = {
            **binding["enablement_receipts"]["explorer"],
            "agent_id": "other",
        }

    path = f1.write_goal(tmp_path)
    document = json.loads(path.read_text())
    document["goals"][0]["coordination"]["registered_agents"].append("other")
    allow_other(document["goals"][0]["control_plane"]["reward_memory"])
    path.write_text(json.dumps(document))
    status = resolve(load_registry(path), "demo-goal", "other").status
    assert (status["status"], status["reason_code"]) == (
        "config_invalid",
        "goal_agent_provider_scope_mismatch",
    )


def test_available_status_carries_the_effective_automation(tmp_path):
    status = status_of(tmp_path, config=f1.config(automatic_ingest=False))
    assert (status["automatic_recall"], status["automatic_ingest"]) == (True, False)
    assert status["automation_intent"]["automatic_ingest"] == "explicit"
    assert status["adapter"] == "scoped_feedback" and status["corpus_id"] == "experience"


def test_repair_plan_uses_the_placeholder_not_a_path(tmp_path):
    repair = status_of(tmp_path, lambda b: b.update(config_digest="sha256:" + "1" * 64))["repair"]
    assert repair["required_bindings"] == {"<invoked-registry>": "invoked_registry_path"}
    assert "--registry '<invoked-registry>'" in repair["apply_command"]
    assert str(tmp_path) not in json.dumps(repair)


def test_an_exact_override_never_falls_back(tmp_path):
    def override_disabled(binding):
        binding["agent_bindings"] = {"explorer": {**copy.deepcopy(binding), "enabled": False}}

    status = status_of(tmp_path, override_disabled)
    assert status["status"] == "disabled"
    assert status["binding_revision"].startswith("sha256:")

    def override_other(binding):
        binding["agent_bindings"] = {"someone-else": {"enabled": False}}

    assert status_of(tmp_path / "b", override_other)["status"] == "available"

    def override_garbage(binding):
        binding["agent_bindings"] = ["not", "an", "object"]

    assert status_of(tmp_path / "c", override_garbage)["status"] == "disabled"


def test_override_status_available_carries_its_revision(tmp_path):
    from capabilities.reward_memory.contract.identities import binding_revision

    def override_same(binding):
        binding["agent_bindings"] = {"explorer": copy.deepcopy(binding)}

    status = status_of(tmp_path, override_same)
    registry = json.loads((tmp_path / "registry.json").read_text())
    digest = registry["goals"][0]["control_plane"]["reward_memory"]["config_digest"]
    assert status["status"] == "available"
    assert status["binding_revision"] == binding_revision("explorer", f1.CONFIG_PATH, digest)


@pytest.mark.parametrize(
    ("goal", "agent", "reason"),
    [
        ("nope", "explorer", "goal_not_found"),
        ("demo-goal", "stranger", "agent_not_registered"),
        ("demo-goal", "Bad Agent!", "invalid_request"),
    ],
)
def test_unknown_goal_or_agent_is_a_typed_error(tmp_path, goal, agent, reason):
    path = f1.write_goal(tmp_path)
    with pytest.raises(RewardMemoryInputError) as info:
        resolve(load_registry(path), goal, agent)
    assert info.value.reason_code == reason


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "registry_unreadable"),
        ("{", "registry_invalid"),
        ('{"goals": 3}', "registry_invalid"),
    ],
)
def test_bad_registry_files(tmp_path, content, reason):
    path = tmp_path / "registry.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(RewardMemoryInputError) as info:
        load_registry(path)
    assert info.value.reason_code == reason


@pytest.mark.parametrize(
    ("pointer", "status", "reason"),
    [
        # Inside the repository: the config is read, and the binding is to requalify,
        # as LoopX 2.1.1 reports it (issue 19).
        (f"../repo/{f1.CONFIG_PATH}", "enablement_stale", "config_digest_missing_or_drifted"),
        (".loopx/config/../" + f1.CONFIG_PATH[len(".loopx/") :], "enablement_stale", None),
        # Leaving it is still refused, and nothing outside is read.
        ("../../etc/passwd", "config_invalid", "config_unavailable_or_invalid"),
        ("..", "config_invalid", "config_unavailable_or_invalid"),
    ],
)
def test_a_config_pointer_with_dot_dot(tmp_path, pointer, status, reason):
    result = status_of(tmp_path, lambda b: b.update(config_path=pointer))
    assert result["status"] == status
    assert result["reason_code"] == (reason or "config_digest_missing_or_drifted")
