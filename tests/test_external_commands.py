"""The one runner of validators and evaluators (issue 13's follow-up item 3; issue 14
part 3): argv only, JSON on stdin, a deadline, and a bounded stdout.

Before it, each of three callers used ``subprocess.run(capture_output=True)``: a
validator that printed without end (``yes``) was buffered whole until its timeout,
and a timeout killed only the command itself, so a shell's children lived on.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from fixtures import f1
from test_store_faults import promptly

from capabilities.reward_memory.turn.app import run_todo_validator
from capabilities.reward_memory.utility.evaluator import _run as run_evaluator
from hosts.settlement.settlement import run_validator
from turn_hooks import ExternalRun, InvalidInputError, run_external

PY = sys.executable
ECHO = [PY, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"]


def test_the_request_goes_in_as_compact_json_and_stdout_comes_back():
    run = run_external(ECHO, {"b": "é", "a": [1]}, timeout=20)
    assert run == ExternalRun(None, exit_code=0, stdout='{"b":"é","a":[1]}'.encode())
    assert run.json() == {"b": "é", "a": [1]}
    assert run_external(ECHO, {"b": 1, "a": 2}, timeout=20, sort_keys=True).stdout == (
        b'{"a":2,"b":1}'
    )


def test_a_request_larger_than_one_write_goes_in_whole():
    # Several chunks: each write takes at most one, and the next goes when the
    # command has read it (deterministic, where a command that exits early is not).
    request = {"m": "x" * 300_000}
    run = run_external(ECHO, request, timeout=20)
    assert (run.reason, run.json()) == (None, request)


def test_the_environment_keeps_python_from_writing_caches():
    script = "import os; print(os.environ.get('PYTHONDONTWRITEBYTECODE'))"
    assert run_external([PY, "-c", script], None, timeout=20).stdout == b"1\n"


def test_stdout_that_is_not_json_is_a_typed_refusal():
    run = run_external([PY, "-c", "print('[' * 3000)"], {}, timeout=20)
    with pytest.raises(InvalidInputError) as info:
        run.json()
    assert info.value.reason_code == "external_output_too_deep"


def test_endless_output_is_cut_at_the_bound_and_the_command_killed():
    outcome = promptly(lambda: run_external(["yes"], {}, timeout=60), seconds=30)
    assert outcome["value"] == ExternalRun("external_output_too_large")
    assert run_external(["yes"], {}, timeout=60, max_output=10).reason == (
        "external_output_too_large"
    )


def test_the_bound_is_exact():
    script = "import sys; sys.stdout.write('x' * 10)"
    assert run_external([PY, "-c", script], {}, timeout=20, max_output=10).stdout == b"x" * 10
    assert run_external([PY, "-c", script], {}, timeout=20, max_output=9).reason == (
        "external_output_too_large"
    )


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["sleep", "60"], id="silent"),
        pytest.param(["sh", "-c", "sleep 60 & sleep 60"], id="grandchild"),
        # Stdout closed at once, the process lives on: the deadline covers the exit too.
        pytest.param(["sh", "-c", "exec >&-; sleep 60"], id="closed-stdout"),
    ],
)
def test_the_deadline_covers_the_whole_run(argv):
    outcome = promptly(lambda: run_external(argv, {}, timeout=0.5), seconds=30)
    assert outcome["value"] == ExternalRun("external_timeout")


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_timeout_kills_the_commands_children_too(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    outcome = promptly(lambda: run_external(["sh", "-c", script], {}, timeout=1), seconds=30)
    assert outcome["value"] == ExternalRun("external_timeout")
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # SIGKILL is delivered, not awaited: give it a moment
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(child), "the shell's child outlived the run"


def test_a_non_zero_exit_is_failed_with_its_code():
    run = run_external(["sh", "-c", "echo out; exit 3"], {}, timeout=20)
    assert run == ExternalRun("external_failed", exit_code=3, stdout=b"out\n")


def test_a_command_that_reads_nothing_still_gets_its_exit_judged():
    # A request far beyond the pipe's buffer: the write meets a closed pipe.
    assert run_external(["true"], {"m": "x" * 1_000_000}, timeout=20).reason is None
    assert run_external(["false"], {"m": "x" * 1_000_000}, timeout=20).exit_code == 1


@pytest.mark.parametrize(
    ("argv", "request_"),
    [
        pytest.param(["/nonexistent/validator"], {}, id="absent"),
        pytest.param(["a\0b"], {}, id="nul"),
        pytest.param(["true"], {"m": "\udcff"}, id="surrogate"),
        pytest.param(["true"], {"m": object()}, id="not-json"),
    ],
)
def test_a_command_that_cannot_start_is_unavailable(argv, request_):
    assert run_external(argv, request_, timeout=20) == ExternalRun("external_unavailable")


def test_the_working_directory_is_the_callers(tmp_path):
    run = run_external([PY, "-c", "import os; print(os.getcwd())"], {}, timeout=20, cwd=tmp_path)
    assert Path(run.stdout.decode().strip()) == tmp_path


# --- the three callers --------------------------------------------------------------------


def test_the_settlement_validator_that_never_stops_printing_is_inconclusive():
    outcome = promptly(lambda: run_validator(["yes"], request={}, cwd=None, timeout=60), seconds=30)
    assert outcome["value"] == {
        "ok": False,
        "status": "inconclusive",
        "reason_code": "external_output_too_large",
    }


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["sh", "-c", "exit 4"], {"ok": False, "status": "failed", "exit_code": 4}),
        pytest.param(
            ["sleep", "60"],
            {"ok": False, "status": "inconclusive", "reason_code": "external_timeout"},
            id="timeout",
        ),
        pytest.param(
            [PY, "-c", "import sys; sys.stdout.buffer.write(b'\\xff')"],
            {"ok": False, "status": "inconclusive", "reason_code": "validator_output_not_text"},
            id="not-text",
        ),
        pytest.param(
            [PY, "-c", "print('{\"k\": 1}')"],
            {"ok": True, "status": "passed", "validator_kind": "command", "attestation": {"k": 1}},
            id="attested",
        ),
    ],
)
def test_the_settlement_validator_verdicts_are_unchanged(argv, expected):
    assert run_validator(argv, request={}, cwd=None, timeout=1) == expected


def test_the_todo_validator_that_never_stops_printing_is_inconclusive(tmp_path):
    declared = {"validation_command_argv": ["yes"], "validation_timeout_seconds": 20}
    outcome = promptly(
        lambda: run_todo_validator(
            declared, request={}, workspace=tmp_path, raw_digest="d", evidence_refs=[]
        ),
        seconds=30,
    )
    assert outcome["value"] == {
        "ok": False,
        "status": "inconclusive",
        "validator_kind": "todo_declared_command",
    }


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        pytest.param(["sh", "-c", "exit 2"], "failed", id="failed"),
        pytest.param([PY, "-c", "import sys; sys.stdout.buffer.write(b'\\xff')"], "inconclusive"),
    ],
)
def test_the_todo_validator_verdicts_are_unchanged(tmp_path, argv, status):
    declared = {"validation_command_argv": argv}
    result = run_todo_validator(
        declared, request={}, workspace=tmp_path, raw_digest="d", evidence_refs=[]
    )
    assert result["status"] == status


def test_the_evaluator_that_never_stops_printing_is_malformed():
    outcome = promptly(lambda: run_evaluator(["yes"], {}, 60), seconds=30)
    assert outcome["value"] == (None, "utility_evaluator_malformed")


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        pytest.param(["sleep", "60"], "utility_evaluator_timeout", id="timeout"),
        pytest.param(["sh", "-c", "exit 1"], "utility_evaluator_failed", id="failed"),
        pytest.param(["true"], "utility_evaluator_absent", id="absent"),
        pytest.param(["/nonexistent/evaluator"], "utility_evaluator_unavailable", id="missing"),
    ],
)
def test_the_evaluator_reasons_are_unchanged(argv, reason):
    assert run_evaluator(argv, {}, 1) == (None, reason)


def test_the_evaluator_gets_the_facts_as_json():
    assert run_evaluator(ECHO, {"goal": f1.GOAL}, 20) == ({"goal": f1.GOAL}, None)


def test_a_program_only_our_installation_has_starts_from_our_bin(monkeypatch, tmp_path):
    """A bare name the user's PATH does not find runs from our own bin when it is an
    executable file there (`turn-hooks`, as validators.md spells the validator)."""
    from turn_hooks import _external

    ours = tmp_path / "venv" / "bin"
    ours.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ours / "only-ours").write_text("#!/bin/sh\n")
    (ours / "only-ours").chmod(0o755)
    (ours / "not-executable").write_text("")
    monkeypatch.setattr(sys, "executable", str(ours / "python3"))
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    assert _external._program("only-ours", str(tmp_path / "none")) == str(ours / "only-ours")
    assert _external._program("not-executable", str(tmp_path / "none")) == "not-executable"
    assert _external._program("sh", os.environ["PATH"]) == "sh", "the user's PATH finds it"
    assert _external._program("./only-ours", None) == "./only-ours", "a path is as written"
