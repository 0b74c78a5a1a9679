"""Issue 36: a validator fits a real test suite and runs in the user's environment.

- Deadlines: the built-in validator takes up to an hour (ten minutes by default);
  a host that settles detached grants it in full, one that settles inside its hook
  cuts a longer deadline to its own bound and says so in the hook log.
- One validator at a time per Goal: the next Turn's settlement queues behind the
  running one (its marker stays, its attempts are not spent), a PreTurn's worker
  that finds it busy ends at once, and a validator whose settler was killed keeps
  the Goal's validator lock while it lives, so it is run again later, never beside
  itself.
- The user's environment: turn-hooks' own virtual environment is taken out of the
  validator's ``PATH`` (and ``VIRTUAL_ENV``), through the Stop hook as installed.

The validators here wait on gate files and log their start and end, so "one at a
time" is read from what they did, never from a timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest
from fixtures import f1
from test_detached_settlement import (
    _lock_holder,
    pre_turn_argv,
    slot_free,
    stop_argv,
    stop_event,
    wait_for,
)
from test_settlement_faults import EVIDENCE, journal_states, queue, stored_records
from turn_support import ROOT, bound_goal, hook_argv, journals_after_settlement
from turn_support import reflection_message as message
from turn_support import run_process as run

from hosts.settlement import settlement
from sidecars import lock_path

TURN_HOOKS = str(Path(sys.executable).parent / "turn-hooks")
OUR_BIN = Path(sys.executable).parent
"""The bin directory of the virtual environment the tests run turn-hooks from."""


# --- deadlines ----------------------------------------------------------------------


def test_the_built_in_validator_takes_a_deadline_of_up_to_an_hour(tmp_path):
    def validate(*options):
        return subprocess.run(
            [TURN_HOOKS, "validate", "command", *options, "--", sys.executable, "-c", "pass"],
            input="{}",
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )

    assert validate("--timeout-seconds", "3600").returncode == 0, "an hour is the user's choice"
    for bad in ("0", "3601"):
        refused = validate("--timeout-seconds", bad, "--format", "json")
        assert refused.returncode == 2
        assert json.loads(refused.stdout)["reason_code"] == "validate_timeout_invalid"
    assert not (tmp_path / ".local").exists(), "a refusal writes nothing"
    shown = subprocess.run(
        [TURN_HOOKS, "validate", "command", "--help"], capture_output=True, text=True
    ).stdout
    assert "default 600" in " ".join(shown.split()), "the default is said in --help"


BUILT_IN = [sys.executable, "-m", "hosts._entry", "validate", "command"]


@pytest.mark.parametrize(
    ("argv", "given", "deadline"),
    [
        ([*BUILT_IN, "--timeout-seconds", "1800", "--", "make", "test"], None, 1830),
        ([*BUILT_IN, "--timeout-seconds=1800", "--", "make", "test"], None, 1830),
        ([*BUILT_IN, "--timeout-seconds", "1800", "--", "make", "test"], 99, 99),
        ([*BUILT_IN, "--", "make", "--timeout-seconds", "5"], None, None),
        ([*BUILT_IN, "--", "make", "test"], None, None),
        (["/usr/local/bin/check"], None, None),
    ],
    ids=["own-option", "own-option-equals", "hook-wins", "project-words", "default", "other"],
)
def test_the_hook_grants_the_built_in_validator_its_own_deadline(argv, given, deadline):
    assert settlement.declared_deadline(argv, given) == deadline


@pytest.mark.parametrize(
    ("declared", "inline", "granted", "clamped"),
    [
        (1830, False, 1830, False),
        (1830, True, settlement.INLINE_VALIDATION_TIMEOUT, True),
        (15, True, 15, False),
        (None, False, settlement.VALIDATION_TIMEOUT, False),
        (None, True, settlement.INLINE_VALIDATION_TIMEOUT, False),
    ],
    ids=["detached", "inline-cut", "inline-fits", "default-detached", "default-inline"],
)
def test_only_a_hook_that_settles_inline_cuts_the_deadline_and_says_so(
    declared, inline, granted, clamped
):
    notes: list[tuple[str, str]] = []
    timeout = settlement.validation_timeout(
        {"argv": ["x"], "timeout_seconds": declared}, inline=inline, notes=notes
    )
    assert timeout == granted
    assert notes == ([("adapter", "validation_timeout_clamped")] if clamped else [])


def test_the_default_deadlines_agree():
    from capabilities.reward_memory.cli import validate

    assert settlement.VALIDATION_TIMEOUT == validate.DEFAULT_TIMEOUT + settlement.BUILT_IN_MARGIN
    assert settlement.MAX_VALIDATION_TIMEOUT == validate.MAX_TIMEOUT + settlement.BUILT_IN_MARGIN
    assert validate.MAX_TIMEOUT >= 30 * 60, "at least 30 minutes where settlement is detached"


def test_an_inline_host_cuts_a_longer_deadline_logs_it_and_still_settles(monkeypatch, tmp_path):
    registry = bound_goal(tmp_path)
    argv = [*hook_argv(registry), "--validation-timeout-seconds", "900"]
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    result = run(argv, json.dumps(event))
    ingest = json.loads(result.stdout)["results"]["reward-memory.outcome-ingest"]
    assert ingest["status"] == "activated", "the hook waited for its settling child"
    assert logged() == [], "the child kept the declared deadline: nothing was cut"
    monkeypatch.setenv(settlement.ENV_SETTLE, "inline")  # settled inside the hook itself
    registry = bound_goal(tmp_path / "inline")
    argv = [*hook_argv(registry), "--validation-timeout-seconds", "900"]
    event["cwd"] = str(tmp_path / "inline" / "repo")
    result = run(argv, json.dumps(event))
    ingest = json.loads(result.stdout)["results"]["reward-memory.outcome-ingest"]
    assert ingest["status"] == "activated", "a quick validator passes within the cut deadline"
    assert ("adapter", "validation_timeout_clamped") in logged()


def test_a_validator_longer_than_the_hooks_wait_runs_once_and_its_verdict_is_kept(tmp_path):
    """The generic contract prints the receipt, so the hook waits for the child that
    settles its Turn, but not past the inline deadline. A project's test suite that
    takes longer is not cut off and run again by a later Turn's worker: the child
    carries it to its end and learns from its verdict."""
    registry = bound_goal(tmp_path)
    marks = logging_validator_marks(tmp_path)
    (marks / "gate-t1").touch()
    argv = hook_argv(registry, validator=logging_validator(marks))
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    result = run(argv, json.dumps(event))  # returns once the wait is over
    assert json.loads(result.stdout)["reason_code"] == "validation_pending"
    assert runs(marks) == ["start t1"] and len(queue(registry)) == 1, "it runs on, queued"
    (marks / "gate-t1").unlink()
    wait_for(lambda: queue(registry) == [], "the child did not settle the Turn")
    assert runs(marks) == ["start t1", "end t1"], "run once, to its end"
    assert journal_states(registry) == ["completed"] and len(stored_records(registry)) == 1
    assert ("validator", "external_timeout") not in logged()


def test_install_writes_the_checks_deadline_into_the_built_in_validator(tmp_path):
    repo = initialised(tmp_path)
    (repo / "Makefile").write_text("test:\n\ttrue\n")
    home = tmp_path / "claude"
    code, report = turn_hooks(
        repo, "install", "claude-code", "--home", str(home),
        "--validate-with", "make test", "--validation-timeout-seconds", "1800",
    )  # fmt: skip
    assert code == 0, report
    validator = installed_validator(home)
    at = validator.index("command")
    assert validator[at + 1 : at + 4] == ["--timeout-seconds", "1800", "--"]
    assert validator[at + 5 :] == ["test"] and Path(validator[at + 4]).name == "make"
    assert settlement.declared_deadline(validator, None) == 1800 + settlement.BUILT_IN_MARGIN
    [row] = [c for c in report["checks"] if c["check"] == "validator"]
    assert row["message"] == "runs make test", "doctor still finds the project's command"
    other = tmp_path / "other"
    code, refused = turn_hooks(
        repo, "install", "claude-code", "--home", str(other),
        "--validation-command-json", '["/bin/true"]', "--validation-timeout-seconds", "60",
    )  # fmt: skip
    assert (code, refused["reason_code"]) == (2, "usage_invalid"), refused
    assert not other.exists()


def test_the_codex_app_refuses_a_deadline_its_call_cannot_hold(capsys, tmp_path):
    from test_codex_app import app, candidates

    registry = bound_goal(tmp_path)
    code, refused = app(capsys, registry, "refresh-state", "--validation-timeout-seconds", "60")
    assert (code, refused["reason_code"]) == (2, "validation_timeout_invalid"), refused
    assert candidates(registry) == [], "nothing staged"
    code, _ = app(capsys, registry, "refresh-state", "--validation-timeout-seconds", "29")
    assert code == 0


def test_the_settle_receipt_says_why_a_replayed_turn_taught_nothing(tmp_path):
    """A Turn whose validator was cut off is carried on by `settle --pending`; when
    the check then fails, the receipt names the validator's and the plugin's codes
    rather than an empty list beside `settled_count: 1`."""
    registry = bound_goal(tmp_path)
    slow = tmp_path / "slow"
    slow.touch()
    validator = ["sh", "-c", f'if [ -f "{slow}" ]; then sleep 5; fi; exit 1']
    argv = [*hook_argv(registry, validator=validator), "--validation-timeout-seconds", "1"]
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    result = run(argv, json.dumps(event))
    assert json.loads(result.stdout)["reason_code"] == "validation_pending"
    slow.unlink()
    wait_for(lambda: slot_free(registry), "the cut-off validator kept the lock")
    settle = [TURN_HOOKS, "settle", "--pending", "--registry", str(registry)]
    settle += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    receipt = json.loads(run(settle).stdout)
    assert receipt["settled_count"] == 1 and receipt["failed_count"] == 0
    assert "validator_failed" in receipt["reason_codes"], receipt
    store = Path(registry).parent / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"
    assert not store.exists(), "a failed check teaches nothing"


# --- one validator at a time per Goal ------------------------------------------------


def test_the_next_turns_settlement_queues_behind_the_running_validator(tmp_path):
    registry = bound_goal(tmp_path)
    marks = logging_validator_marks(tmp_path)
    validator = logging_validator(marks)
    for turn in ("t1", "t2"):
        (marks / f"gate-{turn}").touch()
    assert (
        run(stop_argv(registry, "codex-cli", validator), stop_event(tmp_path, "t1")).returncode == 0
    )
    wait_for(lambda: runs(marks) == ["start t1"], "t1's validator never started")
    assert (
        run(stop_argv(registry, "codex-cli", validator), stop_event(tmp_path, "t2")).returncode == 0
    )
    wait_for(lambda: ("adapter", "validator_busy") in logged(), "t2's settler never gave way")
    assert runs(marks) == ["start t1"] and len(queue(registry)) == 2, "queued, not lost"
    # The next PreTurn's worker finds the Goal's validator busy and ends: no pile-up.
    next_turn(registry, tmp_path, "t3")
    wait_for(lambda: workers(registry) == [], "the worker did not end")
    assert runs(marks) == ["start t1"] and len(queue(registry)) == 2
    [t2_entry] = [e for e in spool_entries(registry) if e["turn"]["host_turn_id"] == "t2"]
    assert t2_entry["settlement_attempt_count"] == 0, "waiting spends none of its attempts"
    for turn_id in ("t1", "t2"):
        (marks / f"gate-{turn_id}").unlink()
    wait_for(lambda: len(queue(registry)) == 1, "t1 was not settled")
    wait_for(lambda: slot_free(registry), "t1's validator kept the Goal's lock")
    next_turn(registry, tmp_path, "t4")
    wait_for(lambda: queue(registry) == [], "the worker did not carry t2 on")
    assert runs(marks) == ["start t1", "end t1", "start t2", "end t2"], "one at a time"
    assert journal_states(registry) == ["completed", "completed"]


def test_a_validator_whose_settler_was_killed_runs_again_later_never_beside_itself(tmp_path):
    registry = bound_goal(tmp_path)
    marks = logging_validator_marks(tmp_path)
    validator = logging_validator(marks)
    (marks / "gate-t1").touch()
    assert (
        run(stop_argv(registry, "codex-cli", validator), stop_event(tmp_path, "t1")).returncode == 0
    )
    wait_for(lambda: runs(marks) == ["start t1"], "the validator never started")
    os.kill(_lock_holder(registry, tmp_path), signal.SIGKILL)  # kill -9 mid-validation
    wait_for(lambda: _lock_holder(registry, tmp_path) is None, "the killed settler kept its lock")
    # The orphaned validator still runs and still holds the Goal's validator lock.
    next_turn(registry, tmp_path, "t2")
    wait_for(lambda: workers(registry) == [], "the worker did not end")
    assert runs(marks) == ["start t1"] and len(queue(registry)) == 1, "not run twice at once"
    assert not slot_free(registry)
    (marks / "gate-t1").unlink()
    wait_for(lambda: runs(marks) == ["start t1", "end t1"], "the orphan did not end")
    wait_for(lambda: slot_free(registry), "the ended orphan kept the lock")
    assert journal_states(registry) == [], "its verdict died with its settler: nothing learned yet"
    next_turn(registry, tmp_path, "t3")
    wait_for(lambda: queue(registry) == [], "the killed settlement was not carried on")
    assert runs(marks) == ["start t1", "end t1", "start t1", "end t1"], "run again, in full"
    assert journal_states(registry) == ["completed"] and len(stored_records(registry)) == 1


def test_a_check_its_validator_left_behind_still_holds_the_goals_validator(tmp_path):
    """Cut off inside an inline hook, the built-in validator dies; the project's check
    it started runs on, in a process group of its own. It inherited the Goal's
    validator lock, so the worker does not start the check a second time beside it."""
    registry = bound_goal(tmp_path)
    marks = logging_validator_marks(tmp_path)
    check = marks / "check.py"
    check.write_text(
        textwrap.dedent(
            f"""
            import pathlib, time
            here = pathlib.Path({str(marks)!r})
            with open(here / "runs", "a") as log:
                log.write("start\\n")
            limit = time.monotonic() + 120
            while (here / "gate").exists() and time.monotonic() < limit:
                time.sleep(0.05)
            with open(here / "runs", "a") as log:
                log.write("end\\n")
            """
        )
    )
    (marks / "gate").touch()
    validator = [TURN_HOOKS, "validate", "command", "--", sys.executable, str(check)]
    argv = [*hook_argv(registry, validator=validator), "--validation-timeout-seconds", "2"]
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    run(argv, json.dumps(event))
    assert ("validator", "external_timeout") in logged(), "the validator was cut off"
    assert ("adapter", "validation_pending") in logged(), "and nothing was delivered yet"
    shown = run([TURN_HOOKS, "log", "--format", "markdown"]).stdout
    assert "A validator ran past its deadline" in shown, "cut off is not failed"
    assert runs(marks) == ["start"] and len(queue(registry)) == 1, "its check runs on"
    settle = [TURN_HOOKS, "settle", "--pending", "--registry", str(registry)]
    settle += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    busy = json.loads(run(settle).stdout)
    assert busy["busy_count"] == 1 and runs(marks) == ["start"], "never beside itself"
    (marks / "gate").unlink()
    wait_for(lambda: slot_free(registry), "the orphaned check kept the lock")
    settled = json.loads(run(settle).stdout)
    assert settled["settled_count"] == 1 and queue(registry) == []
    assert runs(marks) == ["start", "end", "start", "end"]
    assert journal_states(registry) == ["completed"]


def test_a_lock_held_past_the_longest_deadline_stops_no_validator(tmp_path):
    """A process a suite left running holds the inherited lock for ever: once it is
    held longer than any validator may run, the next validator runs without it."""
    registry = bound_goal(tmp_path)
    store = settlement.settlement_store(str(registry), f1.GOAL)
    slot = settlement._slot_path(store, f1.GOAL)
    with store.lock(slot):  # its directories as the store makes them (0700)
        pass
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_path(slot)), str(tmp_path / "held")],
        stdin=subprocess.PIPE,
    )
    try:
        wait_for((tmp_path / "held").exists, "the holder never took the lock")
        long_ago = time.time() - settlement.MAX_VALIDATION_TIMEOUT - 2 * settlement.STALE_SLOT_GRACE
        os.utime(lock_path(slot), (long_ago, long_ago))
        event = {"turn_id": "t1", "last_assistant_message": message()}
        event["cwd"] = str(tmp_path / "repo")
        result = run(hook_argv(registry), json.dumps(event))
        ingest = json.loads(result.stdout)["results"]["reward-memory.outcome-ingest"]
        assert ingest["status"] == "activated", "the validator ran and attested"
        assert ("adapter", "validator_lock_stale") in logged()
    finally:
        holder.communicate(b"", timeout=30)


HOLD = (
    "import filelock, pathlib, sys\n"
    "lock = filelock.FileLock(sys.argv[1]); lock.acquire()\n"
    "pathlib.Path(sys.argv[2]).touch(); sys.stdin.read()\n"
)
"""Hold a lock until stdin ends (a process a test suite left behind)."""


# --- the user's environment -----------------------------------------------------------


def test_user_environment_takes_out_only_our_own_virtual_environment(tmp_path):
    ours = make_venv(tmp_path / "ours")
    project = make_venv(tmp_path / "project")
    code = "import json, turn_hooks; print(json.dumps(turn_hooks.user_environment()))"
    imports = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])

    def environment(interpreter, *flags, **env):
        result = subprocess.run(
            [str(interpreter), *flags, "-c", code],
            env={"PYTHONPATH": imports, "KEEP": "1", **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(result.stdout)

    path = f"{ours}/bin:/usr/local/bin:{project}/bin:{ours}/bin/:/usr/bin:"
    for flags in ((), ("-S",)):  # hooks start their interpreter with -S
        seen = environment(ours / "bin" / "python", *flags, PATH=path, VIRTUAL_ENV=str(ours))
        assert seen["PATH"] == f"/usr/local/bin:{project}/bin:/usr/bin:", flags
        assert "VIRTUAL_ENV" not in seen and seen["PYTHONPATH"] == imports and seen["KEEP"] == "1"
    mine = environment(ours / "bin" / "python", PATH=path, VIRTUAL_ENV=str(project))
    assert mine["VIRTUAL_ENV"] == str(project), "the user's own virtual environment stays"
    system = Path(sys.base_prefix) / "bin" / "python3"
    assert environment(system, PATH=path, VIRTUAL_ENV=str(ours))["PATH"] == path, (
        "a system interpreter has no environment of its own to take out"
    )


def test_a_validator_named_by_a_program_only_ours_has_still_starts(tmp_path):
    """validators.md spells the built-in validator `turn-hooks validate command -- ...`.
    The user's PATH (ours taken out) does not find `turn-hooks`, so our own bin does;
    a program the user's PATH finds (`python3`) is still theirs."""
    ours = make_venv(tmp_path / "ours")
    project = make_venv(tmp_path / "project")
    only_ours = ours / "bin" / "only-ours"
    only_ours.write_text('#!/bin/sh\necho \'{"ran": "ours"}\'\n')
    only_ours.chmod(0o755)
    code = (
        "import json, sys\n"
        "from turn_hooks._external import run_external\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    run = run_external(argv, {}, timeout=60)\n"
        "    print(json.dumps([run.reason, run.stdout.decode()]))\n"
    )
    prefix = "import json, sys; print(json.dumps({'ran': sys.prefix}))"
    argvs = [["only-ours"], ["python3", "-c", prefix], ["no-such-program-anywhere"]]
    imports = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    result = subprocess.run(
        [str(ours / "bin" / "python"), "-S", "-c", code, json.dumps(argvs)],
        env={"PYTHONPATH": imports, "PATH": f"{ours}/bin:{project}/bin:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    seen = [json.loads(line) for line in result.stdout.splitlines()]
    assert seen[0] == [None, '{"ran": "ours"}\n'], "our own program starts from our bin"
    assert seen[1][0] is None and json.loads(seen[1][1]) == {"ran": str(project)}
    assert seen[2] == ["external_unavailable", ""]


def test_the_installed_stop_hook_runs_the_users_python3_not_ours(tmp_path):
    """The README's venv route: our venv's bin first on PATH, as its `export PATH`
    leaves it. The project's `make test` still runs the project's python3."""
    project = make_venv(tmp_path / "project-venv")
    repo = initialised(tmp_path)
    (repo / "Makefile").write_text(
        'test:\n\tpython3 -c \'import sys; open("seen-prefix", "w").write(sys.prefix)\'\n'
    )
    home = tmp_path / "claude"
    code, report = turn_hooks(repo, "install", "claude-code", "--home", str(home),
                              "--validate-with", "make test")  # fmt: skip
    assert code == 0, report
    stop = json.loads((home / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    env = {
        **os.environ,
        "PATH": f"{OUR_BIN}:{project}/bin:{os.environ['PATH']}",
        "VIRTUAL_ENV": str(OUR_BIN.parent),
    }
    event = {"prompt_id": "p1", "session_id": "s1", "cwd": str(repo)}
    event["last_assistant_message"] = message()
    hook = subprocess.run(
        stop["command"], shell=True, input=json.dumps(event), env=env, cwd=repo,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert hook.returncode == 0, hook.stderr
    [journal] = journals_after_settlement(repo)
    assert journal["public_receipt"]["status"] == "activated"
    assert (repo / "seen-prefix").read_text() == str(project), "the project's python3 ran"


# --- helpers ------------------------------------------------------------------------


def turn_hooks(cwd: Path, *argv: str) -> tuple[int, dict]:
    """``turn-hooks ARGV`` with our venv's bin first on PATH (the README's venv route)."""
    env = {**os.environ, "PATH": f"{OUR_BIN}:{os.environ['PATH']}"}
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    result = subprocess.run(
        [TURN_HOOKS, *argv], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )
    assert "Traceback" not in result.stdout + result.stderr
    return result.returncode, json.loads(result.stdout)


def initialised(tmp_path: Path) -> Path:
    repo = tmp_path / "shop-api"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code, done = turn_hooks(repo, "init")
    assert code == 0, done
    return repo


def installed_validator(home: Path) -> list[str]:
    import shlex

    stop = json.loads((home / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    words = shlex.split(stop["command"])
    return json.loads(words[words.index("--validation-command-json") + 1])


def make_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def logged() -> list[tuple[str, str]]:
    log = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    if not log.exists():
        return []
    entries = json.loads(log.read_text())["entries"]
    return [(entry["source"], entry["reason_code"]) for entry in entries]


def logging_validator_marks(tmp_path: Path) -> Path:
    marks = tmp_path / "marks"
    marks.mkdir()
    return marks


def logging_validator(marks: Path) -> list[str]:
    """The demo validator; it logs its start and end, and waits while ``gate-<turn>``
    exists. An orphan whose reader died still says it ended."""
    script = marks / "validator.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import io, json, pathlib, sys, time
            from conformance.validator import main
            here = pathlib.Path({str(marks)!r})
            text = sys.stdin.read()
            sys.stdin = io.StringIO(text)
            turn = json.loads(text)["host_turn_id"]
            with open(here / "runs", "a") as log:
                log.write(f"start {{turn}}\\n")
            limit = time.monotonic() + 120
            while (here / ("gate-" + turn)).exists() and time.monotonic() < limit:
                time.sleep(0.05)
            try:
                code = main(pathlib.Path({str(EVIDENCE)!r}))
                sys.stdout.flush()
            except BrokenPipeError:  # an orphan: the settler that read it is gone
                code = 1
            finally:
                with open(here / "runs", "a") as log:
                    log.write(f"end {{turn}}\\n")
            sys.exit(code)
            """
        )
    )
    return [sys.executable, str(script)]


def runs(marks: Path) -> list[str]:
    path = marks / "runs"
    return path.read_text().splitlines() if path.exists() else []


def next_turn(registry: Path, tmp_path: Path, turn_id: str) -> None:
    """A PreTurn: it starts the worker that carries queued settlements on."""
    event = {"turn_id": turn_id, "prompt": "next", "cwd": str(tmp_path / "repo")}
    assert run(pre_turn_argv(registry), json.dumps(event)).returncode == 0


def workers(registry: Path) -> list[int]:
    """Live ``settle --pending`` workers of this registry."""
    needle = os.fsencode(str(Path(registry).absolute()))
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--pending" in argv and needle in argv:
            found.append(int(pid))
    return found


def spool_entries(registry: Path) -> list[dict]:
    directory = registry.parent / "repo" / ".local" / "turn-hooks" / "settlements"
    return [json.loads(path.read_text()) for path in sorted(directory.rglob("*.json"))]


def test_a_system_interpreter_leaves_the_environment_as_it_is(monkeypatch, tmp_path):
    from turn_hooks import user_environment

    interpreter = tmp_path / "usr" / "bin" / "python3"  # no pyvenv.cfg beside or above
    interpreter.parent.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    monkeypatch.setattr(sys, "executable", str(interpreter))
    environ = {"PATH": f"{interpreter.parent}:/bin", "VIRTUAL_ENV": str(tmp_path)}
    assert user_environment(environ) == environ
    monkeypatch.setattr(sys, "executable", "")  # an embedded interpreter names none
    assert user_environment(environ) == environ


def test_our_virtual_env_is_dropped_and_a_missing_path_stays_missing(monkeypatch, tmp_path):
    from turn_hooks import user_environment

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python3"))
    theirs = {"VIRTUAL_ENV": str(tmp_path / "project-venv"), "HOME": "/h"}
    assert user_environment(theirs) == theirs  # the user's own venv stays named
    assert user_environment({"VIRTUAL_ENV": str(venv), "HOME": "/h"}) == {"HOME": "/h"}
