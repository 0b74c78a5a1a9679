"""One way to name the binding: flags, then the environment, then the repository.

``sidecars.name_binding`` is the rule; the reward-memory commands (through
``_common.bind``) and ``settle`` use it, so a command run inside a Goal's
repository after ``init`` needs no flags, and an ambiguous discovery is an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures import f1
from turn_support import bound_goal

from hosts.cli.command import main
from sidecars import config_home, default_registry, name_binding, name_registry
from turn_hooks.errors import InvalidInputError


def write_registry(path: Path, goals: list[object]) -> Path:
    path.write_text(json.dumps({"goals": goals}))
    return path


def goal(goal_id: str, repo: Path | str, agents: object = ("explorer",)) -> dict[str, object]:
    return {
        "id": goal_id,
        "repo": str(repo),
        "coordination": {
            "registered_agents": list(agents) if isinstance(agents, tuple) else agents
        },
    }


def refusal(*args: object, **kwargs: object) -> tuple[str, str | None]:
    with pytest.raises(InvalidInputError) as caught:
        name_binding(*args, **kwargs)  # type: ignore[arg-type]
    return caught.value.reason_code, caught.value.field


def test_the_config_home_follows_xdg_and_ignores_a_relative_one(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert config_home() == tmp_path / "turn-hooks"
    assert default_registry() == tmp_path / "turn-hooks" / "registry.json"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for value in ("relative/dir", ""):
        monkeypatch.setenv("XDG_CONFIG_HOME", value)
        assert config_home() == tmp_path / "home" / ".config" / "turn-hooks"


def test_the_registry_is_the_flag_then_the_environment_then_the_default(monkeypatch, tmp_path):
    with pytest.raises(InvalidInputError) as caught:
        name_registry(None)
    assert (caught.value.reason_code, caught.value.field) == ("registry_missing", "registry")
    assert "turn-hooks init" in caught.value.message
    default = default_registry()
    default.parent.mkdir(parents=True)
    default.write_text("{}")
    assert name_registry(None) == (str(default), "default")
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", "/from/env.json")
    assert name_registry(None) == ("/from/env.json", "env")
    assert name_registry("/from/flag.json") == ("/from/flag.json", "flag")


def test_named_ids_need_no_registry_read_and_flags_win(monkeypatch, tmp_path):
    missing = str(tmp_path / "nothing-here.json")
    named = name_binding(missing, "g", "a")
    assert (named.goal_id, named.agent_id, named.sources) == (
        "g",
        "a",
        {"registry": "flag", "goal_id": "flag", "agent_id": "flag"},
    )
    monkeypatch.setenv("TURN_HOOKS_GOAL", "env-goal")
    monkeypatch.setenv("TURN_HOOKS_AGENT", "env-agent")
    assert (
        name_binding(missing, "g", None).goal_id,
        name_binding(missing, "g", None).agent_id,
    ) == (
        "g",
        "env-agent",
    )
    named = name_binding(missing, None, None)
    assert (named.goal_id, named.agent_id) == ("env-goal", "env-agent")
    assert named.sources == {"registry": "flag", "goal_id": "env", "agent_id": "env"}


def test_without_discovery_unnamed_ids_are_empty(tmp_path):
    named = name_binding(str(tmp_path / "r.json"), None, None, discover=False)
    assert (named.goal_id, named.agent_id, named.sources) == ("", "", {"registry": "flag"})


def test_the_goal_is_the_nearest_enclosing_repository(tmp_path):
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "vendor" / "inner"
    (inner / "src").mkdir(parents=True)
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    registry = write_registry(
        tmp_path / "r.json",
        [
            "not a goal",
            {"id": "no-repo"},
            {"id": 7, "repo": str(outer)},
            goal("looped", loop),
            goal("elsewhere", tmp_path / "other"),
            goal("outer", outer),
            goal("inner", inner),
        ],
    )
    named = name_binding(str(registry), None, None, cwd=inner / "src")
    assert (named.goal_id, named.agent_id) == ("inner", "explorer")
    assert named.sources == {"registry": "flag", "goal_id": "discovered", "agent_id": "discovered"}
    assert name_binding(str(registry), None, None, cwd=outer / "vendor").goal_id == "outer"
    assert name_binding(str(registry), None, None, cwd=outer).goal_id == "outer"


def test_no_goal_or_two_goals_for_one_repository_is_an_error(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    registry = write_registry(tmp_path / "r.json", [goal("a", repo), goal("b", repo)])
    assert refusal(str(registry), None, "x", cwd=repo) == ("binding_ambiguous", "goal_id")
    with pytest.raises(InvalidInputError, match=r"2 Goal for this repositorys match \(a, b\)"):
        name_binding(str(registry), None, "x", cwd=repo)
    assert refusal(str(registry), None, "x", cwd=tmp_path) == ("goal_not_discovered", "goal_id")


@pytest.mark.parametrize(
    ("agents", "reason"),
    [
        ((), "agent_not_discovered"),
        ("explorer", "agent_not_discovered"),  # not a list: nothing registered
        (("one", "two"), "binding_ambiguous"),
    ],
)
def test_the_agent_is_the_goals_only_registered_one(tmp_path, agents, reason):
    repo = tmp_path / "repo"
    repo.mkdir()
    registry = write_registry(tmp_path / "r.json", [goal("g", repo, agents)])
    assert refusal(str(registry), "g", None) == (reason, "agent_id")


def test_an_agent_is_not_discovered_for_an_unknown_goal_or_without_coordination(tmp_path):
    registry = write_registry(tmp_path / "r.json", [{"id": "g", "repo": str(tmp_path)}])
    assert refusal(str(registry), "nope", None) == ("goal_not_found", None)
    assert refusal(str(registry), "g", None) == ("agent_not_discovered", "agent_id")
    named = name_binding(str(registry), None, "a", cwd=tmp_path)
    assert (named.goal_id, named.agent_id) == ("g", "a")


def cli(capsys, *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_a_reward_memory_command_in_the_repository_needs_no_flags(capsys, monkeypatch, tmp_path):
    registry = bound_goal(tmp_path)
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", str(registry))
    code, status = cli(capsys, "reward-memory", "experiment-status")
    assert (code, status["status"], status["goal_id"], status["agent_id"]) == (
        0,
        "available",
        f1.GOAL,
        f1.AGENT,
    )
    code, error = cli(capsys, "reward-memory", "experiment-status", "--goal-id", "other")
    assert (code, error["reason_code"]) == (2, "goal_not_found")
    monkeypatch.chdir(tmp_path)
    code, error = cli(capsys, "reward-memory", "health-check")
    assert (code, error["reason_code"], error["field"]) == (2, "goal_not_discovered", "goal_id")


def test_the_default_registry_is_found_without_any_name(capsys, monkeypatch, tmp_path):
    registry = bound_goal(tmp_path)
    default = default_registry()
    default.parent.mkdir(parents=True)
    default.write_text(registry.read_text())
    monkeypatch.chdir(tmp_path / "repo")
    code, status = cli(capsys, "reward-memory", "experiment-status", "--format", "json")
    assert (code, status["status"]) == (0, "available")


def test_configure_names_its_binding_by_the_same_rule(capsys, monkeypatch, tmp_path):
    registry = bound_goal(tmp_path)
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", str(registry))
    code, preview = cli(capsys, "reward-memory", "configure")
    assert code == 0 and preview["goal_id"] == f1.GOAL and preview["agent_id"] == f1.AGENT


def test_ingest_event_without_ids_stays_a_fixture_preview(capsys, monkeypatch, tmp_path):
    # The ids choose ingest-event's mode, so only flags name them: no flags, a fixture.
    registry = bound_goal(tmp_path)
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", str(registry))
    monkeypatch.setenv("TURN_HOOKS_GOAL", f1.GOAL)
    monkeypatch.setenv("TURN_HOOKS_AGENT", f1.AGENT)
    source = tmp_path / "in.json"
    # A complete routed input: the fixture form refuses it for its missing keys.
    source.write_text(json.dumps({"event": f1.event(), "observed_at": f1.OBSERVED_AT}))
    code, error = cli(capsys, "reward-memory", "ingest-event", "--input", str(source))
    assert (code, error["reason_code"]) == (2, "missing_key")


def test_settle_names_its_binding_by_the_same_rule(capsys, monkeypatch, tmp_path):
    registry = bound_goal(tmp_path)
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", str(registry))
    code, summary = cli(capsys, "settle", "--pending")
    assert code == 0 and summary["ok"] is True
    monkeypatch.chdir(tmp_path)
    code, error = cli(capsys, "settle", "--pending")
    assert (code, error["reason_code"]) == (2, "goal_not_discovered")
