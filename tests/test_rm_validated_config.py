"""The config is validated once, when the binding is configured (issue 14).

Validator calls are counted, never timed: a Turn on an unchanged config must not
call ``normalise_config`` at all, and any change to the config's bytes must bring
the full validation (and its verdict) back.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from fixtures import f1
from rm_support import unenabled_goal

from capabilities.reward_memory.binding import validated
from capabilities.reward_memory.binding.enablement import configure_binding
from capabilities.reward_memory.binding.registry import load_registry, resolve
from capabilities.reward_memory.contract.config import normalise_config
from sidecars import SidecarStore, sidecar_root


@pytest.fixture
def goal(tmp_path):
    """An embedded-store Goal whose Agent is registered but not yet enabled."""
    registry = unenabled_goal(tmp_path)
    return registry


@pytest.fixture
def calls(monkeypatch):
    """How often the binding layer ran the config validator."""
    counted = []
    real = validated.normalise_config

    def counting(document):
        counted.append(1)
        return real(document)

    monkeypatch.setattr(validated, "normalise_config", counting)
    return counted


def configure(registry, *, execute=True):
    return configure_binding(
        registry_path=registry,
        goal_id=f1.GOAL,
        agent_id=f1.AGENT,
        config_path=f1.CONFIG_PATH,
        execute=execute,
        clear=False,
    )


def status(registry):
    return resolve(load_registry(registry), f1.GOAL, f1.AGENT).status


def kept_path(registry):
    store = SidecarStore(sidecar_root(registry.parent / "repo"))
    return validated.validated_path(store, f1.CONFIG_PATH)


def config_file(registry):
    return registry.parent / "repo" / f1.CONFIG_PATH


def test_an_unchanged_config_is_not_validated_again_by_a_turn(goal, calls):
    assert configure(goal)["status"] == "verified"
    calls.clear()
    first, second = status(goal), status(goal)
    assert calls == [], "the Turn used the form validated when the binding was configured"
    assert first["status"] == second["status"] == "available"
    kept_path(goal).unlink()
    fresh = status(goal)
    assert calls == [1], "without the kept form the config is validated as before"
    assert json.dumps(first) == json.dumps(fresh), "the kept form changes nothing in the status"


def test_the_kept_form_follows_the_sidecar_rules(goal):
    configure(goal)
    path = kept_path(goal)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert (path.parent / (path.name + ".lock")).exists(), "written under its lock"
    kept = json.loads(path.read_text())
    assert (
        kept["config_digest"]
        == json.loads(goal.read_text())["goals"][0]["control_plane"]["reward_memory"][
            "config_digest"
        ]
    )
    normal = normalise_config(json.loads(config_file(goal).read_text()))
    assert kept["config_json"] == json.dumps(normal, ensure_ascii=False, separators=(",", ":")), (
        "kept in its own key order (the order of corpora and surfaces is in every status)"
    )


def test_a_hand_edited_config_is_caught_by_its_digest(goal, calls):
    configure(goal)
    calls.clear()
    edited = config_file(goal)
    edited.write_bytes(edited.read_bytes() + b"\n")
    stale = status(goal)
    assert calls == [1], "changed bytes are validated again"
    assert (stale["status"], stale["reason_code"]) == (
        "enablement_stale",
        "config_digest_missing_or_drifted",
    )
    edited.write_text('{"schema_version": "reward_memory_experiment_config_v1"}')
    broken = status(goal)
    assert (broken["status"], broken["reason_code"]) == (
        "config_invalid",
        "config_unavailable_or_invalid",
    )


@pytest.mark.parametrize(
    "change",
    [
        {"config_digest": "sha256:" + "0" * 64},
        {"normal_form": validated.NORMAL_FORM + 1},
        {"schema_version": "something_else_v0"},
        {"config_json": "[1, 2]"},
        {"config_json": "{not json"},
    ],
    ids=["other-digest", "older-normal-form", "foreign-schema", "not-an-object", "not-json"],
)
def test_a_kept_form_for_other_bytes_is_never_trusted(goal, calls, change):
    configure(goal)
    path = kept_path(goal)
    kept = json.loads(path.read_text())
    # A form that would make the Turn unavailable if it were used.
    kept["config_json"] = json.dumps({"automation": {}})
    kept.update(change)
    SidecarStore(sidecar_root(goal.parent / "repo")).write(path, kept)
    calls.clear()
    assert status(goal)["status"] == "available"
    assert calls == [1]


def test_an_unreadable_kept_form_means_validating(goal, calls):
    configure(goal)
    kept_path(goal).chmod(0o644)  # the store refuses a sidecar others can read
    calls.clear()
    assert status(goal)["status"] == "available"
    assert calls == [1]


def test_a_preview_keeps_nothing_and_resolution_writes_nothing(goal, tmp_path):
    assert configure(goal, execute=False)["status"] == "preflight_ready"
    assert not kept_path(goal).exists()
    registry = f1.write_goal(tmp_path / "hand", f1.config("embedded_sqlite"))
    assert status(registry)["status"] == "available", "a hand-written binding still resolves"
    assert not (Path(registry).parent / "repo" / ".local").exists()


def test_a_form_that_cannot_be_kept_is_reported_not_raised(goal):
    local = goal.parent / "repo" / ".local"
    local.mkdir(mode=0o700)
    (local / "turn-hooks").write_text("not a directory")
    store = SidecarStore(sidecar_root(goal.parent / "repo"))
    assert validated.keep_validated(store, f1.CONFIG_PATH, "sha256:x", {}) is False
