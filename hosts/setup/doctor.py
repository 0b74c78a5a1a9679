"""`turn-hooks doctor`, and the checks `install` runs before it writes anything.

Three checks, each a ``turn_hooks_check_v0`` row with a reason code:

- ``binding``: the registry reads, names the Goal with an existing repository (the
  row names it, by its directory's name: the only place the hook acts), and
  registers the Agent (whether a capability has enabled it is the capability's own
  status command, e.g. ``reward-memory experiment-status``);
- ``validator``: the declared validator's program resolves to an executable, and
  so does the project command inside the built-in one, which the row names (none
  declared is ``validator_missing`` unless the hooks are installed recall-only);
- ``hook_command``: the interpreter a hook calls imports the package and loads its
  plugins, in a child process as the host would start it. A warning (not a failure)
  says when that interpreter runs an editable install inside a git clone: moving or
  deleting the clone would break every installed hook;
- ``validator_run`` (``install``, and ``doctor --run-validator``): the validator run
  once, now, in the Goal's repository and within its deadline, as a Turn would run
  it: passed, or why not (exit status, timeout, no such program, no such make
  target). The row says how long it took; the tail of what it printed goes to the
  person (Markdown) only, never into the row.

Installed hooks are found in the host's own files and checked by the commands
written there (for Codex, a ``trust`` row too: ``hosts.setup.install.codex_trust_check``),
so a hook whose interpreter is gone fails loudly here, not quietly on every Turn.
Rows never hold paths: this is a public receipt.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from sidecars import SidecarStore, read_registry, registry_goal, sidecar_root
from turn_hooks import (
    TAIL_BYTES,
    InvalidInputError,
    SidecarError,
    output_tail,
    run_external,
    user_environment,
)

CHECK_SCHEMA = "turn_hooks_check_v0"
DOCTOR_SCHEMA = "turn_hooks_doctor_v0"
PROBE_TIMEOUT = 25.0
PROBE = """
import json
out = {"imports": False}
try:
    import hosts.cli.command
    from turn_hooks import make_plugin_manager
    out["load_failures"] = len(make_plugin_manager().load_failures)
    out["imports"] = True
    import importlib.metadata as metadata
    try:
        url = json.loads(metadata.distribution("turn-hooks").read_text("direct_url.json") or "{}")
    except Exception:
        url = {}
    out["editable"] = bool((url.get("dir_info") or {}).get("editable"))
    from pathlib import Path
    here = Path(hosts.cli.command.__file__).resolve().parents[2]
    out["in_git_clone"] = any((d / ".git").exists() for d in (here, *here.parents))
except Exception as exc:
    out["error"] = type(exc).__name__
print(json.dumps(out))
"""


def row(
    check: str, subject: str, reason: str | None, message: str, *, warning: bool = False
) -> dict[str, Any]:
    """One check's result: failed when ``reason`` is set, unless it is a warning."""
    return {
        "schema_version": CHECK_SCHEMA,
        "check": check,
        "subject": subject,
        "ok": reason is None or warning,
        "warning": warning,
        "reason_code": reason,
        "message": message,
    }


def binding_check(subject: str, registry: str, goal_id: str, agent_id: str) -> dict[str, Any]:
    """The registry names the Goal, its repository exists, the Agent is registered."""
    try:
        goal = registry_goal(read_registry(registry), goal_id)
    except InvalidInputError as exc:
        return row("binding", subject, exc.reason_code, exc.message)
    if goal is None:
        return row("binding", subject, "goal_not_found", "the registry names no such Goal")
    repo = goal.get("repo")
    if not isinstance(repo, str) or not Path(repo).is_dir():
        return row(
            "binding", subject, "goal_repository_missing", "the Goal's repository is not there"
        )
    coordination = goal.get("coordination")
    agents = coordination.get("registered_agents") if isinstance(coordination, dict) else None
    if not isinstance(agents, list) or agent_id not in agents:
        return row("binding", subject, "agent_not_registered", "the Agent is not registered")
    state = state_directory_problem(Path(repo))
    if state is not None:
        return row("binding", subject, *state)
    # Hooks are machine-wide; say where this one acts (the directory's name: no paths).
    where = f"acts only in repository {Path(repo).name}"
    return row("binding", subject, None, f"Goal {goal_id}, Agent {agent_id}, {where}")


def state_directory_problem(repo: Path) -> tuple[str, str] | None:
    """Why the repository's ``.local/turn-hooks`` cannot hold memories, or None.

    Every read and write of the store and the sidecars refuses a linked or widened
    tree, so a hook there recalls and learns nothing while the binding looks whole:
    doctor says so, with the fix. Nothing is created or read.
    """
    store = SidecarStore(sidecar_root(repo))
    # The config's directory, and the embedded store's file (a FIFO there would hang
    # every reader were it not refused).
    for parts in (("reward-memory", "experiment.json"), ("memory.sqlite3",)):
        try:
            store.check_writable(store.path(*parts))
        except SidecarError as exc:
            # A file refused for its own mode is named, not a directory above it.
            path = store.path(*parts)
            own = exc.path == str(path) and (
                exc.reason_code != "sidecar_symlink" or os.path.islink(path)
            )
            return exc.reason_code, _state_fix(exc.reason_code, "/".join(parts), file=own)
    return None


def _state_fix(reason_code: str, name: str, *, file: bool = False) -> str:
    """What to do about ``.local/turn-hooks`` (``name``: the file refused in it;
    ``file``: refused for its own mode, not a directory's)."""
    if reason_code == "sidecar_permission_widened" and file:
        return (
            f".local/turn-hooks/{name} is open to other users or not yours, so turn-hooks "
            f"refuses it; check who changed it, then `chmod 600 .local/turn-hooks/{name}`"
        )
    if reason_code == "sidecar_symlink" and file:
        return (
            f".local/turn-hooks/{name} is a symbolic link, which turn-hooks refuses: move "
            "the link aside (not the directory: it holds the memories) and run "
            "`turn-hooks init` again"
        )
    if reason_code == "sidecar_symlink":
        return (
            ".local or .local/turn-hooks is a symbolic link; turn-hooks keeps memories "
            "only in a real directory inside the repository, so here it recalls and "
            "learns nothing: replace the link with the directory it points to"
        )
    if reason_code == "sidecar_permission_widened":
        return (
            "a directory under .local/turn-hooks is open to other users, so turn-hooks "
            "refuses it: `chmod -R go-rwx .local/turn-hooks`"
        )
    return (
        f"turn-hooks cannot use .local/turn-hooks/{name} (a file where a directory should "
        "be, a FIFO or device where a file should be, or one that is not yours): move "
        "that one aside (not the directory: it holds the memories) and run "
        "`turn-hooks init` again"
    )


def project_command(argv: list[str]) -> int | None:
    """Where the project's own command starts in a built-in validator's argv
    (``... validate command [--timeout-seconds N] -- make test``), or ``None`` for any
    other validator."""
    for at in range(1, len(argv) - 3):
        if argv[at : at + 2] == ["validate", "command"] and "--" in argv[at + 2 :]:
            start = argv.index("--", at + 2) + 1
            return start if start < len(argv) else None
    return None


def _resolve(program: str, path: str | None = None) -> str:
    if os.sep in program:
        return str(Path(program).absolute())
    return shutil.which(program, path=path) or program


def resolve_validator(argv: list[str]) -> list[str]:
    """``argv`` with its program, and the project command's program inside the
    built-in validator, made absolute when ``PATH`` finds them: hooks run with the
    host's ``PATH``, not the installing shell's. The project's program is looked up
    on the user's ``PATH`` (:func:`turn_hooks.user_environment`), as the validator
    runs it: ``python3`` is the project's, never turn-hooks' own venv's."""
    resolved = [_resolve(argv[0]), *argv[1:]]
    start = project_command(resolved)
    if start is not None:
        resolved[start] = _resolve(resolved[start], user_environment().get("PATH"))
    return resolved


def _runs(program: str) -> bool:
    return os.path.isabs(program) and os.path.isfile(program) and os.access(program, os.X_OK)


def validator_check(subject: str, argv: list[str] | None, *, recall_only: bool) -> dict[str, Any]:
    """The validator's program is an executable file (or none is needed); for the
    built-in validator, the project command's program too, and it is what is named."""
    if not argv:
        if recall_only:
            return row("validator", subject, None, "recall only: nothing will be learned")
        return row(
            "validator",
            subject,
            "validator_missing",
            "no validator: nothing can ever be learned; pass your project's check, "
            "--validate-with 'CHECK' (`turn-hooks init` prints the one it found as "
            "suggested_check; or --validation-command-json), or --recall-only; or record "
            "it once for the repository: `turn-hooks init --validate-with 'CHECK'`",
        )
    start = project_command(argv)
    programs = [argv[0]] if start is None else [argv[0], argv[start]]
    missing = [Path(program).name for program in programs if not _runs(program)]
    if missing:
        return row(
            "validator",
            subject,
            "validator_not_found",
            f"the validator does not resolve: `{missing[-1]}` is no executable program here "
            "(not on PATH, or not executable); install it, or name the check by a program "
            "that is",
        )
    named = argv if start is None else argv[start:]
    # A public row: programs by name, and no absolute path among the arguments.
    # A receipt names no local path: a path is shown by its file name, and a word
    # that only holds one (a `-c` program, say) as an ellipsis.
    through = " (shell syntax: run through sh -c)" if is_shell(named) else ""
    return row("validator", subject, None, f"runs {_words(named)}{through}{_whose(named[0])}")


def _whose(program: str) -> str:
    """Whose interpreter a Python check runs, said without its path: the project's
    tests need the virtual environment they were installed into, not any python3."""
    name = Path(program).name
    if not name.startswith("python"):
        return ""
    if (Path(program).parent.parent / "pyvenv.cfg").is_file():
        return f" ({name}: a virtual environment's)"
    return f" ({name}: the one on PATH, no virtual environment)"


def is_shell(command: list[str]) -> bool:
    """Whether a project command is a shell running a command line (``sh -c '...'``)."""
    return (
        len(command) == 3 and Path(command[0]).name in ("sh", "bash", "dash") and command[1] == "-c"
    )


HOST_IDS = {"codex": "codex_cli", "claude-code": "claude_code", "gemini": "gemini", "dsh": "dsh"}
"""The Turn's host id a validator sees in its request, by the host installed."""
CHECK_TURN = "turn-hooks-validator-check"
"""The ``host_turn_id`` of the request a validator gets when it is run as a check."""
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")


def _words(argv: list[str]) -> str:
    """An argv as a public receipt names it: programs by file name, no local path."""
    return shlex.join(
        [
            Path(argv[0]).name,
            *(Path(w).name if os.path.isabs(w) else "..." if "/" in w else w for w in argv[1:]),
        ]
    )


def make_target_missing(argv: list[str], cwd: Path) -> dict[str, Any] | None:
    """A ``make`` project command with no makefile in ``cwd`` to read: a check that
    cannot pass here, said before anything runs (``-f``/``-C`` name another place:
    then only the run can tell)."""
    start = project_command(argv)
    command = argv[start:] if start is not None else argv
    if Path(command[0]).name not in ("make", "gmake"):
        return None
    if any(w.startswith(("-f", "-C", "--file", "--makefile", "--directory")) for w in command):
        return None
    if any((cwd / name).is_file() for name in MAKEFILES):
        return None
    return {
        "reason_code": "validator_makefile_missing",
        "message": f"`{_words(command)}` cannot run here: the repository has no Makefile. "
        "Add one with that target, or name the check itself, such as "
        "--validate-with 'python3 -m pytest'",
    }


def validator_run_check(
    subject: str,
    argv: list[str],
    *,
    cwd: Path,
    deadline: float,
    host: str | None = None,
    during_install: bool = True,
) -> tuple[dict[str, Any], str]:
    """Run the validator once, now, as a Turn would (its deadline, the Goal's
    repository); the ``validator_run`` row and the tail of what it printed.

    The built-in validator runs its project command through ``validate command
    --check``, which needs no Turn and reports the command's own exit status. Any
    other validator gets a request with empty result fields, as after a Turn that
    learned nothing, and passes when it exits 0. A line on stderr says the run
    started and how long it may take: a test suite can run for minutes.
    """
    start = project_command(argv)
    missing = make_target_missing(argv, cwd)
    if missing is not None:
        return row("validator_run", subject, missing["reason_code"], missing["message"]), ""
    if start is not None:
        # `--check` goes before the `--` that starts the project command.
        run_argv, request = [*argv[: start - 1], "--check", *argv[start - 1 :]], None
        named = argv[start:]
    else:
        run_argv, named = argv, argv
        request = {**_empty_result_fields(), "host": HOST_IDS.get(host or "", "generic_cli")}
        request["host_turn_id"] = CHECK_TURN
    skip = "; --skip-validator-run skips this" if during_install else ""
    sys.stderr.write(
        f"turn-hooks: running the validator once ({_words(named)}), up to {deadline:g} s{skip}\n"
    )
    sys.stderr.flush()
    started = time.monotonic()
    run = run_external(run_argv, request, cwd=cwd, timeout=deadline, stderr="tail", tail=TAIL_BYTES)
    seconds = time.monotonic() - started
    outcome = _check_outcome(run) if start is not None else None
    if outcome is None:  # another validator, or the built-in one said nothing usable
        status = "passed" if run.reason is None else run.reason.removeprefix("external_")
        exit_status = run.exit_code
        tail = output_tail(run.stderr + run.tail)
    else:
        status, exit_status, tail = outcome
    checked = row(
        "validator_run",
        subject,
        *_run_verdict(status, exit_status, _words(named), seconds, deadline, tail, during_install),
    )
    checked.update(status=status, exit_status=exit_status, duration_ms=round(seconds * 1000))
    return checked, tail


def _check_outcome(run: Any) -> tuple[str, int | None, str] | None:
    """(status, exit status, tail) from ``validate command --check``'s JSON report."""
    try:
        report = run.json() if run.reason in (None, "external_failed") else None
    except InvalidInputError:
        return None
    if not isinstance(report, dict) or not isinstance(report.get("output_tail"), str):
        return None
    reason = report.get("reason_code")
    status = {
        None: "passed",
        "validated_command_timeout": "timeout",
        "validated_command_unavailable": "unavailable",
        "validated_command_output_too_large": "output_too_large",
    }.get(reason, "failed")
    exit_status = report.get("exit_status")
    return status, exit_status if isinstance(exit_status, int) else None, report["output_tail"]


def _run_verdict(
    status: str,
    exit_status: int | None,
    words: str,
    seconds: float,
    deadline: float,
    tail: str,
    during_install: bool = True,
) -> tuple[str | None, str]:
    """The row's reason code and message: what happened, and what to do about it."""
    took = f"in {seconds:.1f} s"
    again = (
        "then install again; --skip-validator-run installs without this run"
        if during_install
        else "then run doctor --run-validator again"
    )
    if status == "passed":
        return None, f"ran `{words}` here: passed {took}"
    if status == "timeout":
        return "validator_run_timeout", (
            f"`{words}` did not finish within its {deadline:g} s deadline: raise the "
            f"deadline or name a faster check; {again}"
        )
    if status == "unavailable":
        return "validator_run_unavailable", (
            f"`{words}` could not be started here (no such program, or not executable): "
            f"fix the command; {again}"
        )
    if status == "output_too_large":
        return "validator_run_output_too_large", (
            f"`{words}` printed more than a validator may: make it quieter; {again}"
        )
    # GNU make's words for a target it has no rule for (not a missing prerequisite,
    # which is "needed by" one).
    missing = "No rule to make target" in tail and "needed by" not in tail
    if missing or "No targets specified" in tail:
        return "validator_make_target_missing", (
            f"`{words}` failed: make has no such target here. Add the target to the "
            "Makefile, or name the check itself, such as --validate-with 'python3 -m pytest'"
        )
    return "validator_run_failed", (
        f"`{words}` failed here (exit status {exit_status}) {took}: a reflection is learned "
        f"only when it passes. Make it pass, or name another check; {again}"
    )


def _empty_result_fields() -> dict[str, str]:
    """Each result field the loaded plugins declare, empty: a Turn that reflected nothing."""
    from turn_hooks import make_plugin_manager, settlement_result_fields

    return dict.fromkeys(settlement_result_fields(make_plugin_manager()), "")


def hook_checks(subject: str, interpreter: str) -> list[dict[str, Any]]:
    """The hook's interpreter imports the package; a warning for a fragile install."""
    run = run_external([interpreter, "-c", PROBE], None, timeout=PROBE_TIMEOUT)
    try:
        probe = run.json() if run.reason is None else {}
    except InvalidInputError:
        probe = {}
    if not isinstance(probe, dict) or probe.get("imports") is not True:
        return [
            row(
                "hook_command",
                subject,
                "hook_command_unresolvable",
                "the hook's interpreter cannot run turn-hooks: reinstall, then install again",
            )
        ]
    rows = [row("hook_command", subject, None, "the hook command resolves")]
    if probe.get("editable") and probe.get("in_git_clone"):
        rows.append(
            row(
                "stable_installation",
                subject,
                "editable_install_in_clone",
                "the hooks run an editable install inside a git clone: moving or deleting "
                "the clone breaks them; install from a virtual environment of its own",
                warning=True,
            )
        )
    return rows


def hook_binding(parts: list[str]) -> dict[str, Any]:
    """Interpreter, binding and validator of an installed hook's argv."""

    def flag(name: str) -> str | None:
        return parts[parts.index(name) + 1] if name in parts[:-1] else None

    validator = flag("--validation-command-json")
    try:
        argv = json.loads(validator) if validator else None
    except ValueError:
        argv = ["<not json>"]
    return {
        "interpreter": parts[0],
        "registry": flag("--registry") or "",
        "goal_id": flag("--goal-id") or "",
        "agent_id": flag("--agent-id") or "",
        "validation_argv": argv if isinstance(argv, list) or argv is None else ["<bad>"],
        "validation_timeout": flag("--validation-timeout-seconds"),
        "event": "post-settlement" if "post-settlement" in parts else "pre-turn",
    }


def installed_checks(subject: str, commands: list[str]) -> list[dict[str, Any]]:
    """Every check for the hook commands installed in one host."""
    rows: list[dict[str, Any]] = []
    probed: set[str] = set()
    for command in commands:
        try:
            hook = hook_binding(shlex.split(command))
        except (ValueError, IndexError):
            rows.append(row("hook_command", subject, "hook_command_unresolvable", "unparsable"))
            continue
        if hook["interpreter"] not in probed:  # one child process per interpreter
            probed.add(hook["interpreter"])
            rows += hook_checks(subject, hook["interpreter"])
        rows.append(binding_check(subject, hook["registry"], hook["goal_id"], hook["agent_id"]))
        if hook["event"] == "post-settlement":
            rows.append(validator_check(subject, hook["validation_argv"], recall_only=True))
    unique: list[dict[str, Any]] = []
    for item in rows:  # both hooks of one binding say the same: say it once
        if item not in unique:
            unique.append(item)
    return unique


def report(checks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """``turn_hooks_doctor_v0``: ok when every check is; the first failure's reason."""
    failed = [check for check in checks if not check["ok"]]
    document: dict[str, Any] = {"ok": not failed, "schema_version": DOCTOR_SCHEMA, **extra}
    if failed:
        document["reason_code"] = failed[0]["reason_code"]
    document["checks"] = checks
    return document
