"""`turn-hooks install codex|claude-code|gemini|dsh` and `turn-hooks doctor`.

From a scratch git repository: `init`, then `install` with the built-in validator,
then real Turns of the real Codex CLI and Claude Code (offline, fake model servers).
Checks run before anything is written; uninstalling needs only the host's home and
removes exactly what install added, Codex's trust entries included.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from fixtures import f1
from test_claude_real import CLAUDE
from test_codex_real import CODEX, REFLECTED, developer_texts
from turn_support import journals_after_settlement

from conformance.drivers import run_host
from conformance.fakes import FakeMessages, FakeResponses

TURN_HOOKS = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
VALIDATE = ["turn-hooks", "validate", "command", "--", sys.executable, "-c", "pass"]
FOREIGN = {"type": "command", "command": "true", "timeout": 5}


def turn_hooks(cwd: Path, *argv: str, home: Path | None = None) -> tuple[int, dict]:
    assert TURN_HOOKS
    env = {**os.environ, "PATH": f"{Path(TURN_HOOKS).parent}:{os.environ['PATH']}"}
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    if home is not None:  # the host homes doctor looks in by default
        env["HOME"] = str(home)
    result = subprocess.run(
        [TURN_HOOKS, *argv], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )
    assert "Traceback" not in result.stdout + result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "shop-api"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    code, done = turn_hooks(path, "init")
    assert (code, done["goal_id"]) == (0, "shop-api"), done
    return path


def codex_home(root: Path, fake: FakeResponses) -> Path:
    home = root / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "http://127.0.0.1:{fake.port}/v1"\n'
        'wire_api = "responses"\nenv_key = "FAKE_API_KEY"\nrequest_max_retries = 0\n'
        "stream_max_retries = 0\n"
    )
    (home / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [FOREIGN]}]}}))
    return home


def codex_exec(home: Path, repo: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODEX_HOME": str(home), "FAKE_API_KEY": "dummy"}
    return run_host([str(CODEX), "exec", "--skip-git-repo-check", prompt], cwd=repo, env=env)


def trust_state(home: Path) -> dict:
    return tomllib.loads((home / "config.toml").read_text()).get("hooks", {}).get("state", {})


def test_codex_from_init_to_a_recalled_memory_and_back(repo, tmp_path):
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    with FakeResponses() as fake:
        home = codex_home(tmp_path, fake)
        install = ["install", "codex", "--codex-home", str(home), "--codex-bin", str(CODEX)]
        original = (home / "hooks.json").read_bytes()
        code, refused = turn_hooks(repo, *install)
        assert (code, refused["reason_code"]) == (2, "validator_missing")
        assert (home / "hooks.json").read_bytes() == original, "nothing written when refused"
        validator = ["--validation-command-json", json.dumps(VALIDATE)]
        code, report = turn_hooks(repo, *install, *validator)
        assert (code, report["trust_statuses"]) == (0, ["trusted", "trusted"]), report
        assert [c["check"] for c in report["checks"]][:3] == [
            "binding",
            "validator",
            "hook_command",
        ]
        stop = json.loads((home / "hooks.json").read_text())["hooks"]["Stop"][-1]["hooks"][0]
        assert json.dumps(TURN_HOOKS)[1:-1] in stop["command"], "the validator's absolute path"
        assert turn_hooks(repo, *install, *validator)[1]["changed"] is False

        fake.reply(REFLECTED)
        first = codex_exec(home, repo, "fix the flaky parser test")
        assert first.returncode == 0, first.stderr[-2000:]
        # A person types the next prompt later: the detached settlement has finished.
        [journal] = journals_after_settlement(repo)
        assert journal["public_receipt"]["status"] == "activated"
        fake.reply("Module tests first.")
        second = codex_exec(home, repo, "a change touches one module: which tests first?")
        assert second.returncode == 0, second.stderr[-2000:]
        assert any("[memory 1]" in text for text in developer_texts(fake.requests[-1]))

        code, doctor = turn_hooks(repo, "doctor", "codex", "--codex-home", str(home))
        assert (code, doctor["installed"]) == (0, {"codex": 2}), doctor
        assert len(trust_state(home)) == 2
        code, removed = turn_hooks(
            tmp_path, "install", "codex", "--uninstall", "--codex-home", str(home),
            "--codex-bin", str(CODEX),
        )  # fmt: skip
        assert (code, removed["trust_entries_removed"]) == (0, 2), removed
        assert json.loads((home / "hooks.json").read_text()) == {
            "hooks": {"Stop": [{"hooks": [FOREIGN]}]}
        }
        assert trust_state(home) == {}


def test_a_bad_binding_is_refused_before_any_hook_is_written(repo, tmp_path):
    home = tmp_path / "claude"
    for argv, reason in (
        (["--registry", str(tmp_path / "none.json"), "--goal-id", "nope"], "registry_unreadable"),
        (["--goal-id", "nope"], "goal_not_found"),
        (["--agent-id", "nobody"], "agent_not_registered"),
        (["--validation-command-json", '["no-such-validator-x"]'], "validator_not_found"),
    ):  # fmt: skip
        code, refused = turn_hooks(repo, "install", "claude-code", "--home", str(home), *argv)
        assert (code, refused["ok"], refused["reason_code"]) == (2, False, reason), refused
        assert not home.exists()
    code, refused = turn_hooks(tmp_path, "install", "gemini", "--home", str(home), "--recall-only")
    assert (code, refused["reason_code"]) == (2, "goal_not_discovered")


def test_claude_code_learns_then_recalls_from_an_installed_home(repo, tmp_path):
    assert CLAUDE.exists(), f"claude is not installed at {CLAUDE}: run `make test`"
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"theme": "dark"}))
    validator = ["--validation-command-json", json.dumps(VALIDATE)]
    code, report = turn_hooks(repo, "install", "claude-code", "--home", str(config), *validator)
    assert (code, report["events"]) == (0, ["Stop", "UserPromptSubmit"]), report
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    with FakeMessages() as fake:
        env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{fake.port}"
        argv = [str(CLAUDE), "-p", "--model", "fake-model", "--output-format", "json"]
        fake.reply(
            "Fixed.\n<reward_memory_reflection_json>"
            + json.dumps(f1.REFLECTION)
            + "</reward_memory_reflection_json>"
        )
        first = run_host([*argv, "fix the flaky parser test"], cwd=repo, env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        [journal] = journals_after_settlement(repo)
        assert journal["public_receipt"]["status"] == "activated"
        fake.reply("Module tests first.")
        second = run_host([*argv, "which tests first?"], cwd=repo, env=env)
        assert second.returncode == 0, second.stderr[-2000:]
        assert json.dumps(fake.requests[-1]).count("[memory 1]") == 1
    code, removed = turn_hooks(
        tmp_path, "install", "claude-code", "--uninstall", "--home", str(config)
    )
    assert (code, removed["changed"]) == (0, True)
    assert json.loads((config / "settings.json").read_text()) == {"theme": "dark"}


def test_gemini_and_dsh_install_the_same_way(repo, tmp_path):
    home, patch = tmp_path / "gemini", tmp_path / "layer.json"
    for host, place in (("gemini", ["--home", str(home)]), ("dsh", ["--patch-file", str(patch)])):
        code, report = turn_hooks(repo, "install", host, *place, "--recall-only")
        assert (code, report["changed"]) == (0, True), report
        assert turn_hooks(repo, "install", host, *place, "--recall-only")[1]["changed"] is False
        code, doctor = turn_hooks(tmp_path, "doctor", host, *place)
        assert code == 0 and doctor["installed"] == {host: 2 if host == "gemini" else 1}, doctor
    handlers = json.loads((home / "settings.json").read_text())["hooks"]
    assert sorted(handlers) == ["AfterAgent", "BeforeAgent"]
    assert handlers["AfterAgent"][0]["hooks"][0]["timeout"] == 30000
    for host, place in (("gemini", ["--home", str(home)]), ("dsh", ["--patch-file", str(patch)])):
        assert turn_hooks(tmp_path, "install", host, "--uninstall", *place)[0] == 0
    assert json.loads((home / "settings.json").read_text()) == {} and not patch.exists()


def test_doctor_fails_loudly_when_an_installed_hook_no_longer_resolves(repo, tmp_path):
    home = tmp_path / "claude"
    assert turn_hooks(repo, "install", "claude-code", "--home", str(home), "--recall-only")[0] == 0
    settings = home / "settings.json"
    gone = str(tmp_path / "deleted-venv" / "bin" / "python")
    settings.write_text(settings.read_text().replace(sys.executable, gone))
    code, doctor = turn_hooks(tmp_path, "doctor", "claude-code", "--home", str(home))
    assert (code, doctor["ok"], doctor["reason_code"]) == (2, False, "hook_command_unresolvable")
    assert str(tmp_path) not in json.dumps(doctor)


def test_doctor_checks_a_named_registry_and_an_unreadable_host_file(repo, tmp_path):
    home = tmp_path / "claude"
    assert turn_hooks(repo, "install", "claude-code", "--home", str(home), "--recall-only")[0] == 0
    fifo = tmp_path / "registry.fifo"
    os.mkfifo(fifo)
    # Named on the command line, the registry is checked as named: never passed over.
    code, error = turn_hooks(
        repo, "doctor", "claude-code", "--home", str(home), "--registry", str(fifo)
    )
    assert (code, error["reason_code"]) == (2, "registry_not_regular")
    # A settings file doctor cannot read hides what is installed: a failed check.
    (home / "settings.json").write_text('{"hooks":')
    code, doctor = turn_hooks(repo, "doctor", "claude-code", "--home", str(home), "--recall-only")
    assert (code, doctor["ok"]) == (2, False)
    assert [c["check"] for c in doctor["checks"] if not c["ok"]] == ["hooks"]


def test_doctor_warns_about_an_editable_install_in_a_clone(repo, tmp_path):
    # The test environment is an editable install of this clone: just what the warning is for.
    code, doctor = turn_hooks(repo, "doctor", "--recall-only", home=tmp_path / "home")
    assert code == 0 and doctor["installed"] == {}
    warning = [c for c in doctor["checks"] if c["check"] == "stable_installation"]
    assert [(c["ok"], c["warning"], c["reason_code"]) for c in warning] == [
        (True, True, "editable_install_in_clone")
    ]


def test_validate_with_declares_the_built_in_validator_in_shell_words():
    # `--validate-with "make test"` is the validator a person means, with no JSON to
    # write; bad words are the declaration's own typed error, before any write.
    import argparse

    from hosts.install import validation_argv
    from turn_hooks.errors import InvalidInputError

    def args(**values):
        return argparse.Namespace(
            **{"validate_with": None, "validation_command_json": None, **values}
        )

    argv = validation_argv(args(validate_with="make 'unit tests'"))
    assert argv == [
        sys.executable,
        "-m",
        "hosts._entry",
        "validate",
        "command",
        "--",
        "make",
        "unit tests",
    ]
    assert validation_argv(args()) is None
    for bad in (
        args(validate_with=""),
        args(validate_with="make 'test"),
        args(validate_with="make test", validation_command_json='["x"]'),
    ):
        with pytest.raises(InvalidInputError) as caught:
            validation_argv(bad)
        assert caught.value.reason_code == "validation_declaration_invalid"
