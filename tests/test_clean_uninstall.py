"""`install --uninstall` leaves nothing of ours in the host's files (issue 36).

Real installs (the real Codex CLI trusts our handlers through its app-server), then
uninstalls: the user's files come back byte for byte, files install created for us
are gone, emptied containers Codex or we made (``[hooks.state]``, ``{"hooks": {}}``)
go with them, the receipt says what was removed (the tool server's wiring included),
and `doctor` then says "nothing installed" and exits 0.
"""

from __future__ import annotations

import json
import os

import pytest
from test_codex_real import CODEX
from test_install_hosts import repo, turn_hooks  # noqa: F401 (fixture)

from hosts.setup.codex_trust import _without_bare_tables


@pytest.fixture
def project(request):
    """A scratch git repository after `turn-hooks init` (test_install_hosts' ``repo``)."""
    return request.getfixturevalue("repo")


USER_CONFIG = 'model = "fake-model"\n\n[features]\nweb_search = false\n'


def install_codex(project, home):
    argv = ["install", "codex", "--codex-home", str(home), "--codex-bin", str(CODEX)]
    code, report = turn_hooks(project, *argv, "--recall-only")
    assert (code, report["trust_statuses"]) == (0, ["trusted", "trusted"]), report
    return argv


@pytest.mark.parametrize("config", [USER_CONFIG, None], ids=["user-config", "fresh-home"])
def test_codex_uninstall_leaves_the_home_as_it_was(project, tmp_path, config):
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    home = tmp_path / "codex-home"
    home.mkdir()
    if config is not None:
        (home / "config.toml").write_text(config)
    argv = install_codex(project, home)
    assert "[hooks.state]" in (home / "config.toml").read_text(), "Codex wrote its table"

    code, removed = turn_hooks(project, *argv[:2], "--uninstall", "--codex-home", str(home))
    assert code == 0, removed
    assert (removed["handlers_removed"], removed["trust_entries_removed"]) == (2, 2)
    assert removed["mcp_removed"] == {"server": "turn_hooks"}, "it says the tool server went"
    assert not (home / "hooks.json").exists(), 'no {"hooks": {}} left behind'
    if config is None:
        assert removed["files_removed"] == ["hooks.json", "config.toml"]
        assert not (home / "config.toml").exists()
    else:
        assert removed["files_removed"] == ["hooks.json"]
        assert (home / "config.toml").read_text() == config, "no empty [hooks.state] left"
    assert str(tmp_path) not in json.dumps(removed)

    code, doctor = turn_hooks(project, "doctor", "codex", "--codex-home", str(home))
    assert (code, doctor["ok"], doctor["status"], doctor["installed"]) == (
        0,
        True,
        "nothing_installed",
        {},
    ), doctor
    assert (
        "nothing installed"
        in next(c for c in doctor["checks"] if c["check"] == "installed")["message"]
    )


def test_codex_uninstall_keeps_what_the_user_has(project, tmp_path):
    home = tmp_path / "codex-home"
    home.mkdir()
    foreign = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    (home / "hooks.json").write_text(json.dumps(foreign))
    (home / "config.toml").write_text(USER_CONFIG)
    argv = install_codex(project, home)
    code, removed = turn_hooks(project, *argv[:2], "--uninstall", "--codex-home", str(home))
    assert (code, removed["files_removed"]) == (0, []), removed
    assert json.loads((home / "hooks.json").read_text()) == foreign
    assert (home / "config.toml").read_text() == USER_CONFIG


@pytest.mark.parametrize("user", [False, True], ids=["fresh-home", "user-settings"])
def test_claude_code_uninstall_leaves_the_home_as_it_was(project, tmp_path, user):
    home = tmp_path / "claude"
    settings = {"theme": "dark", "permissions": {"allow": ["Bash(ls)"]}}
    state = {"numStartups": 3, "mcpServers": {"mine": {"type": "stdio", "command": "x"}}}
    if user:
        home.mkdir()
        (home / "settings.json").write_text(json.dumps(settings))
        (home / ".claude.json").write_text(json.dumps(state))
    place = ["--home", str(home)]
    assert turn_hooks(project, "install", "claude-code", *place, "--recall-only")[0] == 0
    code, removed = turn_hooks(project, "install", "claude-code", "--uninstall", *place)
    assert code == 0, removed
    assert removed["handlers_removed"] == 2
    assert removed["mcp_removed"] == {
        "server": "turn_hooks",
        "permission_rule": True,
        "plugin_permission_rule": False,  # no plugin rule was added: none to remove
    }
    if user:
        assert removed["files_removed"] == []
        assert json.loads((home / "settings.json").read_text()) == settings
        assert json.loads((home / ".claude.json").read_text()) == state
    else:
        assert removed["files_removed"] == ["settings.json", ".claude.json"]
        assert sorted(path.name for path in home.iterdir()) == []
    code, doctor = turn_hooks(project, "doctor", "claude-code", *place)
    assert (code, doctor["status"]) == (0, "nothing_installed"), doctor


def test_gemini_uninstall_takes_away_the_file_it_made(project, tmp_path):
    place = ["--home", str(tmp_path / "gemini")]
    assert turn_hooks(project, "install", "gemini", *place, "--recall-only")[0] == 0
    code, removed = turn_hooks(project, "install", "gemini", "--uninstall", *place)
    assert (code, removed["files_removed"], "mcp_removed" in removed) == (
        0,
        ["settings.json"],
        False,
    )
    code, doctor = turn_hooks(project, "doctor", *place)
    assert (code, doctor["installed"]) == (0, {})


def test_doctor_with_nothing_installed_still_checks_a_validator_it_is_given(project, tmp_path):
    code, doctor = turn_hooks(
        project,
        "doctor",
        "--validation-command-json",
        json.dumps(["/nonexistent/check"]),
        home=tmp_path / "home",
    )
    assert (code, doctor["reason_code"]) == (2, "validator_not_found")


def test_doctor_with_nothing_installed_checks_the_check_init_recorded(project, tmp_path):
    """A generic host's hooks run the check `init --validate-with` recorded: doctor
    checks that one too, rather than pass a typo no Turn could ever run."""
    home = tmp_path / "home"
    assert turn_hooks(project, "init", "--validate-with", "nosuchcmd --run", home=home)[0] == 0
    code, doctor = turn_hooks(project, "doctor", home=home)
    assert (code, doctor["reason_code"]) == (2, "validator_not_found"), doctor
    [row] = [check for check in doctor["checks"] if check["check"] == "validator"]
    assert "`nosuchcmd`" in row["message"]
    assert turn_hooks(project, "init", "--validate-with", "true", home=home)[0] == 0
    code, doctor = turn_hooks(project, "doctor", "--run-validator", home=home)
    assert (code, doctor["status"]) == (0, "nothing_installed"), doctor
    assert any(check["check"] == "validator_run" and check["ok"] for check in doctor["checks"])


def test_doctor_names_a_recorded_check_it_cannot_read(project, tmp_path):
    home = tmp_path / "home"
    assert turn_hooks(project, "init", "--validate-with", "true", home=home)[0] == 0
    record = project / ".local" / "turn-hooks" / "validator.json"
    record.unlink()
    os.mkfifo(record)
    code, doctor = turn_hooks(project, "doctor", home=home)
    assert (code, doctor["reason_code"]) == (2, "sidecar_not_regular"), doctor
    [row] = [check for check in doctor["checks"] if check["check"] == "validator"]
    assert "validator.json" in row["message"] and "init --validate-with" in row["message"]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        pytest.param("a = 1\n\n[hooks.state]\n", "a = 1\n", id="bare-at-end"),
        pytest.param("[hooks]\n[hooks.state]\n\n[x]\nb = 2\n", "[x]\nb = 2\n", id="both-bare"),
        pytest.param(
            "[hooks.state]\n# mine\n", "[hooks.state]\n# mine\n", id="a-comment-is-the-user-s"
        ),
        pytest.param("[hooks]\nk = 1\n", "[hooks]\nk = 1\n", id="a-key-is-the-user-s"),
    ],
)
def test_only_bare_hook_tables_go(text, kept):
    assert "".join(_without_bare_tables(text.splitlines(keepends=True))) == kept


def test_dsh_uninstall_says_it_removed_the_layer_it_wrote(project, tmp_path):
    place = ["--patch-file", str(tmp_path / "layer.json")]
    assert turn_hooks(project, "install", "dsh", *place, "--recall-only")[0] == 0
    code, removed = turn_hooks(project, "install", "dsh", "--uninstall", *place)
    assert (code, removed["files_removed"]) == (0, ["layer.json"])
    assert not (tmp_path / "layer.json").exists()
