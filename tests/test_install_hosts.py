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


def turn_hooks(
    cwd: Path, *argv: str, home: Path | None = None, path: Path | None = None
) -> tuple[int, dict]:
    assert TURN_HOOKS
    env = {**os.environ, "PATH": f"{Path(TURN_HOOKS).parent}:{os.environ['PATH']}"}
    if path is not None:  # one more directory on PATH (the real codex's)
        env["PATH"] = f"{path}:{env['PATH']}"
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
        # No codex binary needed to uninstall: hooks.json and config.toml are edited.
        code, removed = turn_hooks(
            tmp_path, "install", "codex", "--uninstall", "--all", "--codex-home", str(home)
        )
        assert (code, removed["trust_entries_removed"]) == (0, 2), removed
        assert removed["goals_removed"] == ["shop-api"]
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
        tmp_path, "install", "claude-code", "--uninstall", "--home", str(config),
        "--goal-id", "shop-api",
    )  # fmt: skip
    assert (code, removed["changed"], removed["goals_removed"]) == (0, True, ["shop-api"])
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
        # Named by discovery in the repository; another Goal's hooks would be kept.
        code, kept = turn_hooks(repo, "install", host, "--uninstall", "--goal-id", "x", *place)
        assert (code, kept["changed"], kept["goals_removed"]) == (0, False, []), kept
        code, removed = turn_hooks(repo, "install", host, "--uninstall", *place)
        assert (code, removed["goals_removed"]) == (0, ["shop-api"]), removed
    assert not (home / "settings.json").exists() and not patch.exists()


def test_doctor_fails_loudly_when_an_installed_hook_no_longer_resolves(repo, tmp_path):
    home = tmp_path / "claude"
    assert turn_hooks(repo, "install", "claude-code", "--home", str(home), "--recall-only")[0] == 0
    settings = home / "settings.json"
    gone = str(tmp_path / "deleted-venv" / "bin" / "python")
    settings.write_text(settings.read_text().replace(sys.executable, gone))
    code, doctor = turn_hooks(tmp_path, "doctor", "claude-code", "--home", str(home))
    assert (code, doctor["ok"], doctor["reason_code"]) == (2, False, "hook_command_unresolvable")
    assert str(tmp_path) not in json.dumps(doctor)


def test_doctor_checks_the_tool_server_as_it_checks_the_hooks(repo, tmp_path):
    """The record_reflection tool server runs, or is switched off for the project or
    not there (warnings: reflections come in the answer's block), or is gone (a
    failure: every session fails)."""
    home = tmp_path / "claude"
    assert turn_hooks(repo, "install", "claude-code", "--home", str(home), "--recall-only")[0] == 0

    def tool_channel():
        code, doctor = turn_hooks(repo, "doctor", "claude-code", "--home", str(home))
        [found] = [c for c in doctor["checks"] if c["check"] == "tool_channel"]
        assert str(tmp_path) not in json.dumps(doctor)
        return code, (found["ok"], found["warning"], found["reason_code"])

    assert tool_channel() == (0, (True, False, None))
    servers = home / ".claude.json"
    wired = servers.read_text()
    switched_off = {
        **json.loads(wired),
        "projects": {str(repo): {"disabledMcpServers": ["turn_hooks"]}},
    }
    servers.write_text(json.dumps(switched_off))  # what Claude Code's `/mcp` writes
    assert tool_channel() == (0, (True, True, "tool_channel_disabled"))
    servers.write_text(wired)
    gone = str(tmp_path / "deleted-venv" / "bin" / "python")
    servers.write_text(servers.read_text().replace(json.dumps(sys.executable), json.dumps(gone)))
    assert tool_channel() == (2, (False, False, "tool_channel_unresolvable"))
    servers.write_text("{}")
    assert tool_channel() == (0, (True, True, "tool_channel_absent"))


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

    from hosts.setup.install import validation_argv
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


def test_the_binding_is_checked_before_the_codex_binary(repo, tmp_path):
    # Outside any bound repository, the first thing wrong is the binding: install runs
    # doctor's checks first, binding first, before it looks for a host binary.
    home = tmp_path / "codex-home"
    code, refused = turn_hooks(
        tmp_path, "install", "codex", "--codex-home", str(home),
        "--codex-bin", str(tmp_path / "no-codex"), "--recall-only",
    )  # fmt: skip
    assert (code, refused["reason_code"]) == (2, "goal_not_discovered"), refused
    assert not home.exists()


@pytest.mark.parametrize(
    "flags",
    [
        ["--recall-only", "--validate-with", "make test"],
        ["--recall-only", "--validation-command-json", json.dumps(VALIDATE)],
        ["--validate-with", "make test", "--validation-command-json", json.dumps(VALIDATE)],
    ],
)
def test_a_validator_and_recall_only_are_alternatives(repo, tmp_path, flags):
    home = tmp_path / "claude"
    code, refused = turn_hooks(repo, "install", "claude-code", "--home", str(home), *flags)
    assert (code, refused["reason_code"]) == (2, "usage_invalid"), refused
    assert not home.exists()


def test_validate_with_resolves_the_project_command_at_install(repo, tmp_path):
    home = tmp_path / "claude"
    install = ["install", "claude-code", "--home", str(home)]
    code, refused = turn_hooks(repo, *install, "--validate-with", "no-such-prog-x test")
    assert (code, refused["reason_code"]) == (2, "validator_not_found"), refused
    assert not home.exists()
    code, report = turn_hooks(repo, *install, "--validate-with", "git status")
    assert code == 0, report
    [validator] = [c for c in report["checks"] if c["check"] == "validator"]
    assert validator["message"] == "runs git status", validator
    stop = json.loads((home / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert json.dumps(shutil.which("git"))[1:-1] in stop["command"], "the absolute program"
    code, doctor = turn_hooks(tmp_path, "doctor", "claude-code", "--home", str(home))
    assert code == 0, doctor
    assert "runs git status" in [c["message"] for c in doctor["checks"]], doctor


@pytest.mark.parametrize(
    ("host", "name", "reason"),
    [
        ("codex", "hooks.json", "hooks_json_symlink"),
        ("claude-code", "settings.json", "settings_json_symlink"),
        ("gemini", "settings.json", "settings_json_symlink"),
        ("dsh", "layer.json", "patch_file_symlink"),
    ],
)
def test_a_linked_host_file_is_refused_and_left_alone(repo, tmp_path, host, name, reason):
    # Dotfiles often link these files: replacing the link with a file (or writing
    # through it) would be a surprise either way, so the link is refused, typed.
    home = tmp_path / "home"
    home.mkdir()
    target = tmp_path / "dotfiles.json"
    for content in ("{}", "not json"):
        target.write_text(content)
        (home / name).unlink(missing_ok=True)
        (home / name).symlink_to(target)
        place = ["--patch-file", str(home / name)] if host == "dsh" else ["--home", str(home)]
        extra = ["--codex-bin", str(CODEX)] if host == "codex" else []
        for action in ([], ["--uninstall", "--all"]):
            code, refused = turn_hooks(
                repo, "install", host, *place, *extra, "--recall-only", *action
            )
            assert (code, refused["reason_code"]) == (2, reason), refused
            assert "replace the link" in refused["message"]
            assert (home / name).is_symlink() and target.read_text() == content


def hooks_listed(home: Path, cwd: Path) -> dict[str, str]:
    """What the real Codex computes: each hooks.json handler's command -> trust status."""
    from hosts.facts.codex_rpc import AppServer

    server = AppServer(str(CODEX), {**os.environ, "CODEX_HOME": str(home)})
    try:
        server.request("initialize", {"clientInfo": {"name": "test", "version": "0"}})
        server.notify("initialized")
        listed = server.request("hooks/list", {"cwds": [str(cwd)]})
    finally:
        server.close()
    return {h["command"]: h["trustStatus"] for e in listed["data"] for h in e["hooks"]}


def test_two_bindings_in_one_codex_home_stay_trusted_through_reinstall_and_uninstall(
    repo, tmp_path
):
    # Codex keys trust by a handler's position: a reinstall that moved ours to the end,
    # or an uninstall that left the others to move up, made the other Goal's handlers
    # `modified` while install, status and doctor all said installed.
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    billing = tmp_path / "billing"
    billing.mkdir()
    subprocess.run(["git", "init", "-q", str(billing)], check=True)
    assert turn_hooks(billing, "init")[0] == 0
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "fake-model"\n')
    install = ["install", "codex", "--codex-home", str(home), "--recall-only"]
    steps = ((repo, []), (billing, []), (repo, []), (repo, ["--no-prompt-in-recall"]))
    for step, (where, extra) in enumerate(steps):
        code, report = turn_hooks(where, *install, "--codex-bin", str(CODEX), *extra)
        assert (code, report["trust_statuses"]) == (0, ["trusted", "trusted"]), report
        listed = hooks_listed(home, repo)
        assert list(listed.values()) == ["trusted"] * (2 if step == 0 else 4), listed
    assert len(trust_state(home)) == 4
    code, doctor = turn_hooks(repo, "doctor", "codex", "--codex-home", str(home),
                              "--codex-bin", str(CODEX))  # fmt: skip
    assert code == 0, doctor
    assert [c["ok"] for c in doctor["checks"] if c["check"] == "trust"] == [True], doctor

    # What the old reinstall left: billing's handlers where shop-api's were trusted.
    document = json.loads((home / "hooks.json").read_text())
    for groups in document["hooks"].values():
        groups.reverse()
    (home / "hooks.json").write_text(json.dumps(document))
    code, doctor = turn_hooks(repo, "doctor", "codex", "--codex-home", str(home),
                              "--codex-bin", str(CODEX))  # fmt: skip
    assert (code, doctor["reason_code"]) == (2, "hook_untrusted"), doctor
    # status reads what Codex computes too (the codex on PATH), not only the entries.
    code, seen = turn_hooks(repo, "status", "--codex-home", str(home), path=CODEX.parent)
    [view] = [v for v in seen["hosts"] if v["host"] == "codex_cli"]
    assert (code, view["reason_code"], view["untrusted_count"]) == (0, "hook_untrusted", 4)
    for groups in document["hooks"].values():
        groups.reverse()
    (home / "hooks.json").write_text(json.dumps(document))

    # Uninstall needs no codex binary, and by default takes only the named Goal's hooks.
    uninstall = ["install", "codex", "--uninstall", "--codex-home", str(home)]
    before = (home / "hooks.json").read_bytes()
    code, refused = turn_hooks(tmp_path, *uninstall)
    assert (code, refused["reason_code"]) == (2, "goal_not_discovered"), refused
    assert "--all" in refused["message"] and (home / "hooks.json").read_bytes() == before
    code, removed = turn_hooks(repo, *uninstall)
    assert (code, removed["goals_removed"], removed["trust_entries_removed"]) == (
        0,
        ["shop-api"],
        2,
    ), removed
    listed = hooks_listed(home, billing)
    assert list(listed.values()) == ["trusted"] * 2 and all("billing" in c for c in listed)
    code, removed = turn_hooks(tmp_path, *uninstall, "--all")
    assert (code, removed["goals_removed"], removed["trust_entries_removed"]) == (
        0,
        ["billing"],
        2,
    ), removed
    assert not (home / "hooks.json").exists(), "it held only our handlers: it goes"
    assert trust_state(home) == {}


def test_trust_entries_follow_their_handlers_or_nothing_is_written(tmp_path):
    # The edit uninstall makes without a codex binary: an entry moves with its handler
    # (its hash is its content), a removed handler's goes; a form Codex does not write,
    # or a linked config.toml, is refused with config.toml as it was.
    from hosts.setup import codex_trust
    from turn_hooks.errors import InvalidInputError

    a, b, c = ({"type": "command", "command": name} for name in "abc")
    before = {"hooks": {"Stop": [{"hooks": [a]}, {"hooks": [b]}, {"hooks": [c]}]}}
    after = {"hooks": {"Stop": [{"hooks": [b]}, {"hooks": [c]}]}}

    def key(group):
        return f"{tmp_path / 'hooks.json'}:stop:{group}:0"

    config = 'model = "m"\n\n[hooks.state]\n\n' + "".join(
        f'[hooks.state.{json.dumps(key(g))}]\ntrusted_hash = "h{g}"\n\n' for g in range(3)
    )
    (tmp_path / "config.toml").write_text(config)
    assert codex_trust.follow(tmp_path, before, after) == 1
    assert trust_state(tmp_path) == {key(0): {"trusted_hash": "h1"}, key(1): {"trusted_hash": "h2"}}
    assert tomllib.loads((tmp_path / "config.toml").read_text())["model"] == "m"
    inline = f'hooks = {{ state = {{ {json.dumps(key(0))} = {{ trusted_hash = "h0" }} }} }}\n'
    real = tmp_path / "dotfiles.toml"
    for content, link, reason in (
        (inline, False, "config_toml_unrecognised"),
        (config, True, "config_toml_symlink"),
    ):
        (tmp_path / "config.toml").unlink()
        (real if link else tmp_path / "config.toml").write_text(content)
        if link:
            (tmp_path / "config.toml").symlink_to(real)
        with pytest.raises(InvalidInputError) as caught:
            codex_trust.follow(tmp_path, before, after)
        assert caught.value.reason_code == reason
        assert (tmp_path / "config.toml").read_text() == content


def test_the_validator_row_says_whose_python_runs_the_check(repo, tmp_path):
    """A Python project's tests need its own interpreter: the row says whether the
    check runs a virtual environment's python or the one on PATH, without a path."""
    venv = repo / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    home = tmp_path / "claude"
    install = ["install", "claude-code", "--home", str(home), "--skip-validator-run"]
    code, report = turn_hooks(repo, *install, "--validate-with", ".venv/bin/python -m pytest -q")
    assert code == 0, report
    [validator] = [c for c in report["checks"] if c["check"] == "validator"]
    assert validator["message"] == "runs python -m pytest -q (python: a virtual environment's)"
    assert str(repo) not in json.dumps(report)
    from hosts.setup.doctor import validator_check

    plain = validator_check("codex", ["/usr/bin/python3", "-m", "pytest"], recall_only=False)
    if os.path.isfile("/usr/bin/python3") and not Path("/usr/pyvenv.cfg").exists():
        assert plain["message"].endswith("(python3: the one on PATH, no virtual environment)")


def test_install_after_init_takes_the_validator_the_repository_records(repo, tmp_path):
    """The fresh-user walk of issue 42: `init --validate-with` recorded the check, and a
    bare `install claude-code` then refused it as missing."""
    code, done = turn_hooks(repo, "init", "--validate-with", "git status")
    assert code == 0, done
    home = tmp_path / "claude"
    code, report = turn_hooks(repo, "install", "claude-code", "--home", str(home))
    assert code == 0, report
    assert report["validator_source"] == "repository"
    [validator] = [c for c in report["checks"] if c["check"] == "validator"]
    assert validator["message"] == "runs git status", validator
    stop = json.loads((home / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert "validate command" in stop["command"] or "validate" in stop["command"]
    code, given = turn_hooks(
        repo, "install", "claude-code", "--home", str(home), "--validate-with", "git status --short"
    )
    assert code == 0 and "validator_source" not in given, "an option given wins"
