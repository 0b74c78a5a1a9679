"""``turn-hooks init``: a repository bound in one command, on both providers.

Real git repositories, the real embedded store and the real OpenViking server (the
fixtures of test_openviking_real). Nothing is written on bad input; a second run
changes nothing.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from test_openviking_real import ov_env, ov_server  # noqa: F401 - fixtures used by name

from capabilities.reward_memory.binding.setup import CONFIG_PATH, IGNORE_TEXT
from hosts.cli.command import main
from sidecars import default_registry


def cli(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def files_below(*roots: Path) -> list[str]:
    return sorted(str(p) for root in roots if root.exists() for p in root.rglob("*"))


@pytest.fixture(params=["embedded", "openviking"])
def provider(request):
    if request.param == "openviking":
        request.getfixturevalue("ov_env")
    return request.param


def test_init_binds_the_repository_then_changes_nothing(provider, capsys, monkeypatch, tmp_path):
    repo = git_repo(tmp_path / "My_Project.v2")
    (repo / "src").mkdir()
    monkeypatch.chdir(repo / "src")
    code, first = cli(capsys, "init", "--provider", provider)
    assert code == 0, first
    assert (first["status"], first["goal_id"], first["agent_id"]) == (
        "initialised",
        "my-project-v2",
        "agent",
    )
    assert first["changed"] == ["registry_entry", "config", "enablement"]
    assert first["git_ignored"] == ".local/turn-hooks/" and "install codex" in first["next_step"]
    assert first["external_writes_performed"] is True  # the canary
    assert str(tmp_path) not in json.dumps(first)  # no local path in the receipt
    registry = default_registry()
    assert stat.S_IMODE(registry.stat().st_mode) == 0o600
    assert stat.S_IMODE(registry.parent.stat().st_mode) == 0o700
    for part in (".local", ".local/turn-hooks", ".local/turn-hooks/reward-memory"):
        assert stat.S_IMODE((repo / part).stat().st_mode) == 0o700
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""  # everything init put in the repository is ignored
    code, experiment = cli(capsys, "reward-memory", "experiment-status")
    assert (code, experiment["status"], experiment["provider_id"]) == (
        0,
        "available",
        {"embedded": "embedded_sqlite", "openviking": "openviking"}[provider],
    )
    before = {p: p.read_bytes() for p in (registry, repo / CONFIG_PATH)}
    code, again = cli(capsys, "init", "--provider", provider)
    assert (code, again["status"], again["changed"]) == (0, "unchanged", [])
    assert again["external_writes_performed"] is False
    assert {p: p.read_bytes() for p in before} == before


def test_a_changed_config_is_rewritten_and_enabled_again(capsys, monkeypatch, tmp_path):
    repo = git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert cli(capsys, "init")[0] == 0
    config = repo / CONFIG_PATH
    config.write_text(config.read_text().replace('"limit": 5', '"limit": 3'))
    (repo / ".local/turn-hooks/.gitignore").unlink()
    code, again = cli(capsys, "init")
    assert (code, again["changed"]) == (0, ["config", "enablement"])
    assert (repo / ".local/turn-hooks/.gitignore").read_text() == IGNORE_TEXT
    assert cli(capsys, "reward-memory", "experiment-status")[1]["status"] == "available"


def test_explicit_ids_and_registry_win(capsys, monkeypatch, tmp_path):
    repo = git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    registry = tmp_path / "elsewhere" / "registry.json"
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", str(registry))
    code, done = cli(capsys, "init", "--goal-id", "Web.App_1", "--agent-id", "Claude Code")
    assert (code, done["goal_id"], done["agent_id"]) == (0, "Web.App_1", "claude-code")
    assert registry.is_file() and not default_registry().exists()
    goals = json.loads(registry.read_text())["goals"]
    assert goals[0]["coordination"]["registered_agents"] == ["claude-code"]


def refused(capsys, *argv: str) -> str:
    code, error = cli(capsys, *argv)
    assert code == 2 and error["ok"] is False, error
    return error["reason_code"]


def test_bad_input_is_refused_before_anything_is_written(capsys, monkeypatch, tmp_path):
    repo = git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    watched = (repo, default_registry().parent.parent)
    before = files_below(*watched)
    assert refused(capsys, "init", "--goal-id", "a/b") == "goal_id_invalid"
    assert refused(capsys, "init", "--agent-id", "9 lives") == "invalid_request"
    assert refused(capsys, "init", "--provider", "nope") == "usage_invalid"
    # No OpenViking server is configured in this test.
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "none.conf"))
    assert refused(capsys, "init", "--provider", "openviking") == "provider_endpoint_unconfigured"
    monkeypatch.setenv("OPENVIKING_URL", "http://127.0.0.1:9")  # nothing listens there
    assert refused(capsys, "init", "--provider", "openviking") == "provider_unavailable"
    assert files_below(*watched) == before
    monkeypatch.chdir(tmp_path)
    assert refused(capsys, "init") == "not_a_git_repository"
    assert files_below(*watched) == before


def test_a_linked_state_directory_is_refused(capsys, monkeypatch, tmp_path):
    repo = git_repo(tmp_path / "repo")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", repo / ".local")
    monkeypatch.chdir(repo)
    assert refused(capsys, "init") == "state_dir_not_directory"
    assert list((tmp_path / "outside").iterdir()) == []


@pytest.mark.parametrize("target", ["registry", "dangling"])
def test_a_linked_registry_is_refused_and_left_as_it_is(capsys, monkeypatch, tmp_path, target):
    repo = git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    registry = default_registry()
    registry.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere.json"
    if target == "registry":
        elsewhere.write_text('{"goals": []}')
    os.symlink(elsewhere, registry)
    assert refused(capsys, "init") == "registry_not_regular"
    assert registry.is_symlink(), "the link is not replaced"
    assert not elsewhere.exists() or elsewhere.read_text() == '{"goals": []}'
    assert not (repo / ".local").exists(), "nothing written"


def test_an_unreadable_registry_is_left_as_it_is(capsys, monkeypatch, tmp_path):
    repo = git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    registry = default_registry()
    registry.parent.mkdir(parents=True)
    registry.write_text('{"goals": 3}')
    assert refused(capsys, "init") == "registry_invalid"
    assert registry.read_text() == '{"goals": 3}' and not (repo / ".local").exists()


def test_one_goal_and_one_agent_per_repository(capsys, monkeypatch, tmp_path):
    repo, other = git_repo(tmp_path / "repo"), git_repo(tmp_path / "other")
    monkeypatch.chdir(repo)
    assert cli(capsys, "init")[0] == 0
    registry = default_registry().read_bytes()
    assert refused(capsys, "init", "--goal-id", "second") == "repository_has_goal"
    assert refused(capsys, "init", "--agent-id", "claude") == "goal_has_other_agent"
    monkeypatch.chdir(other)
    assert refused(capsys, "init", "--goal-id", "repo") == "goal_repository_conflict"
    assert default_registry().read_bytes() == registry
    assert not (other / ".local").exists()
    code, done = cli(capsys, "init")  # the other repository gets its own Goal
    assert (code, done["goal_id"]) == (0, "other")
    monkeypatch.chdir(repo)
    assert cli(capsys, "reward-memory", "experiment-status")[1]["goal_id"] == "repo"


def test_a_directory_name_without_letters_still_names_a_goal(capsys, monkeypatch, tmp_path):
    repo = git_repo(tmp_path / "___")
    monkeypatch.chdir(repo)
    code, done = cli(capsys, "init")
    assert (code, done["goal_id"]) == (0, "goal")


def test_progress_goes_to_a_terminal_only(monkeypatch, tmp_path):
    import pty
    import shutil
    import sys

    repo = git_repo(tmp_path / "repo")
    script = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
    assert script
    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [script, "init"], cwd=repo, stdout=subprocess.PIPE, stderr=follower, check=False
        )
        shown = os.read(leader, 4096).decode()
    finally:
        os.close(leader)
        os.close(follower)
    assert result.returncode == 0 and json.loads(result.stdout)["status"] == "initialised"
    assert "canary write and exact readback" in shown
    piped = subprocess.run([script, "init"], cwd=repo, capture_output=True, text=True, check=False)
    assert piped.stderr == "" and json.loads(piped.stdout)["status"] == "unchanged"


def test_init_switches_the_ranking_and_the_utility_evaluator(capsys, monkeypatch, tmp_path):
    # Issue 39: off by default; --ranking utility|relevance per binding; status shows it.
    repo = git_repo(tmp_path / "ranked")
    monkeypatch.chdir(repo)
    code, first = cli(capsys, "init")
    assert (code, first["ranking"], first["utility_evaluator"]) == (0, "relevance", "none")
    code, switched = cli(
        capsys, "init", "--ranking", "utility", "--utility-evaluator", "python3 -m evaluator"
    )
    assert (code, switched["ranking"], switched["ranking_changed"]) == (0, "utility", True)
    assert (switched["status"], switched["changed"]) == (
        "updated",
        ["ranking", "utility_evaluator"],
    )
    assert switched["utility_evaluator"] == "declared"
    code, again = cli(capsys, "init", "--ranking", "utility")
    assert (again["status"], again["changed"], again["ranking_changed"]) == ("unchanged", [], False)
    code, refused = cli(capsys, "init", "--utility-evaluator", "no-such-evaluator-x --judge")
    assert (code, refused["reason_code"]) == (2, "utility_evaluator_not_found")
    assert "python3" not in json.dumps(switched)
    _code, status = cli(capsys, "status")
    assert status["binding"]["ranking"] == "utility"
    code, back = cli(capsys, "init", "--ranking", "relevance", "--no-utility-evaluator")
    assert (back["ranking"], back["ranking_changed"], back["utility_evaluator"]) == (
        "relevance",
        True,
        "none",
    )
