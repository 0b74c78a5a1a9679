"""Validators that explain themselves (issue 36).

A real scratch git repository, bound by `turn-hooks init`, with a real Makefile whose
`test` target runs a real Python check that passes or fails. `install` runs the
validator once before it writes anything and refuses one that fails or cannot run
here; a command line that needs a shell runs through `sh -c`, knowingly; every
validation keeps the tail of its output privately, and `turn-hooks status` alone
says why the last one failed, with `--validation-output` to read that tail.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_host_generic import message
from test_install_hosts import TURN_HOOKS

from conformance.public_safety import public_safety_violations
from hosts.setup.install import shell_syntax
from sidecars import default_registry
from turn_hooks import output_tail, run_external

FAILING = "AssertionError: expected 2 got 3 in test_totals"
NPM_DEFAULT = 'echo "Error: no test specified" && exit 1'
CHECK = f"{sys.executable} -c \"import sys; print('ran tests'); sys.exit(0)\""


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`turn-hooks ARGV` as a person runs it, in ``cwd``; never a traceback."""
    assert TURN_HOOKS
    env = {**os.environ, "PATH": f"{Path(TURN_HOOKS).parent}:{os.environ['PATH']}"}
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    result = subprocess.run(
        [TURN_HOOKS, *argv], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def makefile(repo: Path, *, passing: bool, target: str = "test") -> None:
    """A Makefile whose target runs a real Python check (recipes need tabs)."""
    script = "print('ran tests')" if passing else f"import sys; print({FAILING!r}); sys.exit(3)"
    (repo / "check.py").write_text(script + "\n")
    (repo / "Makefile").write_text(f"{target}:\n\t{sys.executable} check.py\n")


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "shop-api"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    result = run(path, "init")
    assert result.returncode == 0, result.stdout
    return path


def install(repo: Path, home: Path, *extra: str, fmt: str = "json"):
    return run(repo, "install", "claude-code", "--home", str(home), *extra, "--format", fmt)


def stop_command(home: Path) -> str:
    document = json.loads((home / "settings.json").read_text())
    return document["hooks"]["Stop"][0]["hooks"][0]["command"]


def rows(report: dict, check: str) -> list[dict]:
    return [row for row in report["checks"] if row["check"] == check]


# --- install runs the validator once, before anything is written ------------------------


def test_install_refuses_a_failing_check_and_shows_why(repo, tmp_path):
    makefile(repo, passing=False)
    home = tmp_path / "claude"
    result = install(repo, home, "--validate-with", "make test")
    assert result.returncode == 2
    refused = json.loads(result.stdout)
    assert (refused["ok"], refused["reason_code"]) == (False, "validator_run_failed")
    assert not home.exists(), "nothing written"
    [ran] = rows(refused, "validator_run")
    assert (ran["status"], ran["exit_status"]) == ("failed", 2)
    assert isinstance(ran["duration_ms"], int)
    assert "--skip-validator-run" in ran["message"] and "make test" in ran["message"]
    # The JSON receipt is public: no output, no path.
    assert FAILING not in result.stdout and str(tmp_path) not in result.stdout
    assert public_safety_violations(result.stdout) == []
    # The person is told it started, and for how long it may run.
    assert "running the validator once (make test), up to" in result.stderr
    # Markdown, for the person: the tail of what the check printed.
    shown = install(repo, home, "--validate-with", "make test", fmt="markdown")
    assert shown.returncode == 2 and not home.exists()
    assert "### Validator output" in shown.stdout and FAILING in shown.stdout


def test_install_runs_a_passing_check_then_writes(repo, tmp_path):
    makefile(repo, passing=True)
    home = tmp_path / "claude"
    result = install(repo, home, "--validate-with", "make test")
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    [ran] = rows(report, "validator_run")
    assert (ran["ok"], ran["status"], ran["exit_status"]) == (True, "passed", 0)
    assert ran["message"].startswith("ran `make test` here: passed in ")
    assert '"validate", "command", "--", "' in stop_command(home)


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        pytest.param(None, "validator_makefile_missing", id="no-makefile"),
        pytest.param("build", "validator_make_target_missing", id="no-test-target"),
    ],
)
def test_a_make_target_that_does_not_exist_is_refused(repo, tmp_path, setup, reason):
    if setup is not None:
        makefile(repo, passing=True, target=setup)
    home = tmp_path / "claude"
    result = install(repo, home, "--validate-with", "make test")
    refused = json.loads(result.stdout)
    assert (result.returncode, refused["reason_code"]) == (2, reason), refused
    assert "--validate-with 'python3 -m pytest'" in refused["checks"][-1]["message"]
    assert not home.exists()


def test_skip_validator_run_installs_a_slow_or_failing_suite_unrun(repo, tmp_path):
    makefile(repo, passing=False)
    home = tmp_path / "claude"
    result = install(repo, home, "--validate-with", "make test", "--skip-validator-run")
    assert result.returncode == 0, result.stdout
    assert rows(json.loads(result.stdout), "validator_run") == []
    assert "running the validator" not in result.stderr
    # doctor --run-validator runs the installed one later, and says why it fails.
    doctor = run(repo, "doctor", "claude-code", "--home", str(home), "--run-validator")
    checked = json.loads(doctor.stdout)
    assert (doctor.returncode, checked["reason_code"]) == (2, "validator_run_failed"), checked
    makefile(repo, passing=True)
    doctor = run(repo, "doctor", "claude-code", "--home", str(home), "--run-validator")
    assert doctor.returncode == 0, doctor.stdout
    assert [r["status"] for r in rows(json.loads(doctor.stdout), "validator_run")] == ["passed"]


def test_doctor_runs_the_validator_it_would_install(repo, tmp_path):
    makefile(repo, passing=False)
    home = ["--home", str(tmp_path / "claude")]
    quiet = run(repo, "doctor", "claude-code", *home, "--validate-with", "make test")
    assert quiet.returncode == 0 and "running the validator" not in quiet.stderr
    asked = run(repo, "doctor", "claude-code", *home, "--validate-with", "make test",
                "--run-validator", "--format", "markdown")  # fmt: skip
    assert asked.returncode == 2 and "validator_run_failed" in asked.stdout
    assert FAILING in asked.stdout
    # doctor has no --skip-validator-run: it names only what doctor takes.
    assert "--skip-validator-run" not in asked.stderr + asked.stdout
    assert "doctor --run-validator again" in asked.stdout


def test_a_missing_program_is_refused_before_any_run(repo, tmp_path):
    home = tmp_path / "claude"
    result = install(repo, home, "--validate-with", "no-such-check-x --all")
    refused = json.loads(result.stdout)
    assert (result.returncode, refused["reason_code"]) == (2, "validator_not_found")
    [declared] = rows(refused, "validator")
    assert "`no-such-check-x` is no executable program here" in declared["message"]
    assert "running the validator" not in result.stderr and not home.exists()


def test_a_custom_validator_that_cannot_pass_is_refused(repo, tmp_path):
    home = tmp_path / "claude"
    failing = json.dumps([sys.executable, "-c", "import sys; sys.exit('no evidence file')"])
    result = install(repo, home, "--validation-command-json", failing, fmt="markdown")
    assert result.returncode == 2 and not home.exists()
    assert "validator_run_failed" in result.stdout and "no evidence file" in result.stdout


def test_a_timeout_is_refused_with_the_way_out(repo, tmp_path):
    # The deadline the hooks would give the check: install runs it under the same one
    # (a short one here, so the test does not wait ten minutes for the default).
    home = tmp_path / "claude"
    result = install(repo, home, "--validate-with", "sleep 60", "--validation-timeout-seconds", "2")
    refused = json.loads(result.stdout)
    assert (result.returncode, refused["reason_code"]) == (2, "validator_run_timeout")
    assert "--skip-validator-run" in refused["checks"][-1]["message"]
    assert "running the validator once (sleep 60), up to 2 s" in result.stderr
    assert "within its 2 s deadline" in refused["checks"][-1]["message"], "the deadline given"
    assert not home.exists(), "nothing written"


# --- a command line that needs a shell runs through sh -c, knowingly ---------------------


@pytest.mark.parametrize(
    ("line", "construct"),
    [
        ("make test", None),
        ("python3 -m pytest -q && echo done", "&&"),
        ("pytest -q | tee log", "|"),
        ("pytest > log", ">"),
        ("pytest; ruff check .", ";"),
        ('echo "$(date)"', "$("),
        ("pytest tests/*.py", "*"),
        ("FOO=1 make test", "FOO="),
        ("pytest -k 'a and b || c'", None),
        ('pytest -k "x or y"', None),
        ("pytest -k name=value", None),
        (r"echo \&\&", None),
    ],
)
def test_shell_syntax_is_found_outside_quotes_only(line, construct):
    assert shell_syntax(line) == construct


def test_a_shell_command_line_runs_through_sh_and_says_so(repo, tmp_path):
    home = tmp_path / "claude"
    line = f"{CHECK} && echo done"
    result = install(repo, home, "--validate-with", line)
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    [declared] = rows(report, "validator")
    assert declared["message"].startswith("runs sh -c ")
    assert declared["message"].endswith("(shell syntax: run through sh -c)")
    [ran] = rows(report, "validator_run")
    assert ran["status"] == "passed"
    assert " -c " in stop_command(home) and "&&" in stop_command(home)
    doctor = json.loads(run(repo, "doctor", "claude-code", "--home", str(home)).stdout)
    assert any("shell syntax: run through sh -c" in r["message"] for r in doctor["checks"])
    from hosts.setup.status import settings_hooks

    assert settings_hooks("claude_code", home / "settings.json")["validator_through_shell"]
    # As the hook runs it: the whole line through the shell, `&&` included.
    failing = install(repo, tmp_path / "other", "--validate-with", "true && false")
    assert json.loads(failing.stdout)["reason_code"] == "validator_run_failed"


# --- every validation keeps its tail; status says why the last one failed ----------------


def settle(repo: Path, validator: list[str], answer: str | None = None, turn: str = "t1") -> None:
    """One settled Turn through the real generic Stop hook, in the repository: its
    final message ``answer``, or one with a reflection."""
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", "post-settlement"]
    argv += ["--goal-id", repo.name, "--agent-id", "agent", "--registry", str(default_registry())]
    result = subprocess.run(
        [*argv, "--validation-command-json", json.dumps(validator)],
        input=json.dumps(
            {
                "turn_id": turn,
                "last_assistant_message": message() if answer is None else answer,
                "cwd": str(repo),
            }
        ),
        capture_output=True,
        text=True,
        cwd=repo,
        check=False,
    )
    assert result.returncode == 0, "a hook always exits 0"


def built_in(*words: str) -> list[str]:
    return [sys.executable, "-m", "hosts._entry", "validate", "command", "--", *words]


def test_a_failing_validation_keeps_its_tail_and_status_says_why(repo, tmp_path):
    makefile(repo, passing=False)
    settle(repo, built_in("make", "test"))
    # The built-in validator's private record holds the tail of make's output.
    records = list((repo / ".local" / "turn-hooks" / "validations").glob("*.json"))
    [record] = [json.loads(path.read_text()) for path in records]
    assert stat.S_IMODE(records[0].stat().st_mode) == 0o600
    assert (record["exit_status"], record["reason_code"]) == (2, "validated_command_failed")
    assert FAILING in record["output_tail"] and isinstance(record["duration_ms"], int)

    result = run(repo, "status")
    document = json.loads(result.stdout)
    last = document["binding"]["last_turn_settlement"]
    assert (last["validator_status"], last["validator_reason_code"]) == (
        "failed",
        "validated_command_failed",
    )
    assert (last["validator_exit_code"], last["check_exit_status"]) == (1, 2)
    assert last["validated_at"] and isinstance(last["validator_duration_ms"], int)
    assert "--validation-output" in document["binding"]["next_step"]
    assert FAILING not in result.stdout and "validator_output_tail" not in last
    assert public_safety_violations(result.stdout) == []

    assert document["binding"]["last_validation"]["validator_reason_code"] == (
        "validated_command_failed"
    )
    asked = json.loads(run(repo, "status", "--validation-output").stdout)
    assert FAILING in asked["binding"]["last_validation"]["validator_output_tail"]
    shown = run(repo, "status", "--validation-output", "--format", "markdown").stdout
    assert "### Validator output (its last lines, private)" in shown and FAILING in shown

    log = run(repo, "log", "--format", "markdown").stdout
    assert "validated_command_failed" in log and "status --validation-output" in log
    last = json.loads(run(repo, "log").stdout)["last_validation"]
    assert (last["validator_reason_code"], last["check_exit_status"]) == (
        "validated_command_failed",
        2,
    )
    assert last["validated_at"] and FAILING not in json.dumps(last)


def test_another_validator_s_stderr_is_kept_in_the_spool(repo, tmp_path):
    complaint = "evidence.json: no such file"
    validator = [sys.executable, "-c", f"import sys; sys.exit({complaint!r})"]
    settle(repo, validator)
    binding = json.loads(run(repo, "status", "--validation-output").stdout)["binding"]
    assert binding["last_turn_settlement"]["validator_status"] == "failed"
    last = binding["last_validation"]
    assert (last["validator_status"], last["validator_exit_code"]) == ("failed", 1)
    assert complaint in last["validator_output_tail"]


def test_the_tail_is_safe_to_print():
    secret = "token=ghp_" + "a" * 30
    raw = b"x" * 5000 + b"\ncut here\n\x1b[31mFAILED\x1b[0m test_a\x07\r\n" + secret.encode()
    tail = output_tail(raw)
    assert tail.startswith("cut here\n") and "FAILED test_a\ufffd\n" in tail
    assert "ghp_" not in tail and tail.endswith("[redacted]")


def test_a_timed_out_run_keeps_what_it_printed():
    script = "import sys, time; print('collected 3 items', flush=True); time.sleep(30)"
    run_ = run_external([sys.executable, "-c", script], None, timeout=2, stderr="merge", tail=64)
    assert run_.reason == "external_timeout" and b"collected 3 items" in run_.tail


# --- init suggests a check this repository has --------------------------------------------


@pytest.mark.parametrize(
    ("files", "check"),
    [
        pytest.param({"Makefile": "lint:\n\ttrue\ncheck:\n\ttrue\n"}, "make check", id="make"),
        pytest.param(
            {"pyproject.toml": "[tool.pytest.ini_options]\n"}, "python3 -m pytest", id="pyproject"
        ),
        pytest.param({"tests/test_app.py": "def test(): pass\n"}, "python3 -m pytest", id="tests"),
        pytest.param(
            {"tests/test_app.py": "", ".venv/pyvenv.cfg": "home = /usr\n", ".venv/bin/python": ""},
            ".venv/bin/python -m pytest",
            id="its-own-venv",
        ),
        pytest.param(
            {"conftest.py": "", "venv/pyvenv.cfg": "home = /usr\n", "venv/bin/python": ""},
            "venv/bin/python -m pytest",
            id="venv",
        ),
        pytest.param(
            {"conftest.py": "", ".venv/bin/python": ""}, "python3 -m pytest", id="not-a-venv"
        ),
        pytest.param({"package.json": '{"scripts": {"test": "jest"}}'}, "npm test", id="npm"),
        pytest.param({"Cargo.toml": "[package]\n"}, "cargo test", id="cargo"),
        pytest.param({"go.mod": "module x\n"}, "go test ./...", id="go"),
        pytest.param({"Makefile": "build:\n\ttrue\n"}, None, id="no-test-target"),
        pytest.param(
            {"package.json": json.dumps({"scripts": {"test": NPM_DEFAULT}})},
            None,
            id="npm-placeholder",
        ),
        pytest.param({}, None, id="nothing"),
    ],
)
def test_init_suggests_a_check_that_exists_here(tmp_path, files, check):
    repo = tmp_path / "project"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    result = run(repo, "init")
    document = json.loads(result.stdout)
    assert result.returncode == 0, document
    if check is None:
        assert document["suggested_check"] is None
        assert document["next_step"].startswith("no test command found here")
        assert "make test" not in document["next_step"]
    else:
        assert document["suggested_check"]["command"] == check
        assert check in document["next_step"] and "install codex" in document["next_step"]


def test_a_turn_with_nothing_to_attest_runs_no_validator_and_hides_no_failure(repo, tmp_path):
    """The fresh-user walk of issue 36: a question Turn after a failing one reported a
    validator "passed" that never ran the suite, and the failure was gone from status."""
    makefile(repo, passing=False)
    runs = repo / "runs.txt"
    (repo / "Makefile").write_text(f"test:\n\techo run >> {runs}\n\t{sys.executable} check.py\n")
    settle(repo, built_in("make", "test"))
    assert runs.read_text().count("run") == 1
    settle(repo, built_in("make", "test"), answer="Paris is the capital of France.", turn="t2")
    assert runs.read_text().count("run") == 1, "no result, so no run of the suite"

    binding = json.loads(run(repo, "status").stdout)["binding"]
    newest = binding["last_turn_settlement"]
    assert (newest["turn_key"] != binding["last_validation"]["turn_key"]) is True
    assert (newest["validator_status"], newest["validator_reason_code"]) == (
        "unavailable",
        "no_result_to_validate",
    )
    assert binding["last_validation"]["validator_reason_code"] == "validated_command_failed"
    assert "--validation-output" in binding["next_step"]
    log = json.loads(run(repo, "log").stdout)
    assert log["last_validation"]["validator_reason_code"] == "validated_command_failed"


def test_a_passing_validation_shows_the_check_exited_0(repo, tmp_path):
    # A tester saw `check_exit_status: null` after a pass: the validator prints its
    # inner command's status only when it fails, so a pass left nothing to show.
    makefile(repo, passing=True)
    settle(repo, built_in("make", "test"))
    last = json.loads(run(repo, "status").stdout)["binding"]["last_turn_settlement"]
    assert last["validator_status"] == "passed"
    assert (last["validator_exit_code"], last["check_exit_status"]) == (0, 0)
