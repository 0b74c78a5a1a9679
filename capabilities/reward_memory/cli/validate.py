"""``turn-hooks validate command -- ARGV``: the built-in independent validator.

A host runs its validator after a settled Turn, with the Turn's result on stdin
(``turn-lifecycle.md`` §8: ``{reward_memory_reflection_json, host, host_turn_id}``;
the Codex App sends a ``reward_memory_reflection_validation_request_v0`` with the
digest). This validator runs ARGV (the project's tests, say) in its working
directory, which is the Turn's (also for a Turn that wrote no reflection but said
which recalled memories it applied: that verdict is their outcome), bounded by
``--timeout-seconds`` (ten minutes by default), with the user's own ``PATH`` and
interpreter (never turn-hooks' virtual environment:
:func:`turn_hooks.user_environment`), and prints the
attestation (``reward_memory_reflection_validation_v0``: the exact reflection
digest and the reflection's own evidence refs, as §13.3 requires) only when ARGV
exits 0. Otherwise, or without a reflection, it prints nothing: the Turn is
settled, nothing is learned.

Its own evidence is the run: ``validation:command:<hex20>``, a digest of ARGV, the
exit status and the digest of the output. The attestation has no room for it (its
keys are fixed), so it goes to stderr and, inside a git repository, into the private
record ``.local/turn-hooks/validations/<hex20>.json``: argv, exit status, reason,
duration, output digest and size, and the last few kilobytes of the output (stdout
and stderr as a terminal shows them, secrets redacted: ``turn_hooks.output_tail``),
so a failing check says why without being run again by hand. A failing run prints
that tail to stderr too, where a host that keeps its validator's stderr finds it.

``--check`` runs ARGV once with no Turn (``turn-hooks install`` and ``doctor
--run-validator`` do, before anything is written) and prints how it went, the tail
included; it keeps no record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from capabilities.reward_memory.cli._common import add_format

RECORD_SCHEMA = "turn_hooks_command_validation_v0"
CHECK_SCHEMA = "turn_hooks_command_check_v0"
DEFAULT_TIMEOUT = 600
"""Ten minutes: room for an ordinary project's whole suite (this project's takes about
13), yet a hung suite is cut off well before the next working session. Hosts that
settle detached (Codex CLI, Claude Code, DSH) give the validator this and a margin
for its own start (``turn-hooks host --validation-timeout-seconds``, 630 by default),
so this deadline ends the run first and its reason is recorded."""
MAX_TIMEOUT = 3600
"""An hour: the longest deadline a user may choose (the issue asks for 30 minutes at
least); longer suites want a narrower target for the validator."""


def _reflection(request: Any) -> tuple[str, list[str]] | None:
    """(reflection digest, its evidence refs), or ``None`` when there is nothing to attest.

    Hosts hand over the canonical reflection (the plugin's ``read_result``), so this
    digest, kept in the run's private record, is the digest of the normalised reflection
    the journal keeps: a learned memory finds the run that attested it by that digest.
    """
    from capabilities.reward_memory.contract.identities import reflection_digest

    if not isinstance(request, dict):
        return None
    if isinstance(request.get("reflection"), dict):  # the Codex App's request names the digest
        digest, reflection = request.get("reflection_digest"), request["reflection"]
    else:
        raw = request.get("reward_memory_reflection_json")
        if not isinstance(raw, str) or not raw.strip():
            return None
        try:
            reflection = json.loads(raw)
            digest = reflection_digest(raw)
        except ValueError:  # not JSON: a reflection the plugin refuses anyway
            return None
    refs = reflection.get("evidence_refs") if isinstance(reflection, dict) else None
    if not isinstance(digest, str) or not isinstance(refs, list) or not refs:
        return None
    if not all(isinstance(ref, str) for ref in refs):
        return None
    return digest, refs


def _applied_memory(request: Any) -> bool:
    """Whether the settled Turn answered which recalled memories it used."""
    answer = request.get("reward_memory_application_json") if isinstance(request, dict) else None
    return isinstance(answer, str) and bool(answer.strip())


FAILURE_CODES = {
    "external_failed": "validated_command_failed",
    "external_timeout": "validated_command_timeout",
    "external_unavailable": "validated_command_unavailable",
    "external_output_too_large": "validated_command_output_too_large",
}
"""Why a check attested nothing, by the runner's reason (``turn_hooks.run_external``)."""


def evidence_ref(argv: list[str], exit_status: int | None, output: bytes) -> str:
    """``validation:command:`` + hex20 over ARGV, the exit status and the output digest."""
    identity = [argv, exit_status, hashlib.sha256(output).hexdigest()]
    canonical = json.dumps(identity, separators=(",", ":"), ensure_ascii=False)
    return "validation:command:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:20]


def _record(ref: str, digest: str, argv: list[str], run: Run) -> None:
    """Keep the run's private record in the repository's state, when there is one."""
    import contextlib
    from datetime import UTC, datetime

    from capabilities.reward_memory.binding.setup import find_repository
    from sidecars import SidecarStore, sidecar_root
    from turn_hooks import InvalidInputError, TurnHooksError

    with contextlib.suppress(InvalidInputError, TurnHooksError, OSError):
        store = SidecarStore(sidecar_root(find_repository(Path.cwd())))
        store.write(
            store.path("validations", ref.rsplit(":", 1)[1] + ".json"),
            {
                "schema_version": RECORD_SCHEMA,
                "evidence_ref": ref,
                "reflection_digest": digest or None,
                "argv": argv,
                "exit_status": run.exit_status,
                "output_sha256": hashlib.sha256(run.output).hexdigest(),
                "output_bytes": len(run.output),
                "observed_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "reason_code": run.reason_code,
                "duration_ms": run.duration_ms,
                "output_tail": run.tail,
            },
        )


class Run:
    """One run of ARGV: its exit status, reason code, output, its tail and duration."""

    def __init__(self, argv: list[str], timeout: float, pass_fds: tuple[int, ...] = ()) -> None:
        from turn_hooks import TAIL_BYTES, output_tail, run_external

        started = time.monotonic()
        # stderr merged: the tail reads as the terminal would show it, and a Python
        # error (`No module named pytest`) is where the failing assertion would be.
        run = run_external(
            argv, None, timeout=timeout, stderr="merge", tail=TAIL_BYTES, pass_fds=pass_fds
        )
        self.duration_ms = round((time.monotonic() - started) * 1000)
        self.reason = run.reason
        self.exit_status = (
            run.exit_code if run.reason == "external_failed" else 0 if run.reason is None else None
        )
        self.reason_code = (
            None
            if run.reason is None
            else FAILURE_CODES.get(run.reason, "validated_command_failed")
        )
        self.output = run.stdout
        self.tail = output_tail(run.tail)


def _check(argv: list[str], timeout: float) -> tuple[dict[str, Any], str]:
    """``--check``: run ARGV once, no Turn needed; exit 1 when it does not pass."""
    run = Run(argv, timeout)
    document = {
        "ok": run.reason is None,
        "schema_version": CHECK_SCHEMA,
        "status": "passed" if run.reason is None else "failed",
        "reason_code": run.reason_code,
        "exit_status": run.exit_status,
        "duration_ms": run.duration_ms,
        "timeout_seconds": timeout,
        "output_tail": run.tail,
    }
    return document, "Check passed" if run.reason is None else "Check failed"


def _handed_down() -> tuple[int, ...]:
    """The descriptors the host handed this validator beyond the standard streams (a
    host's lock that one validator runs at a time): the project's command inherits
    them, so the lock is held while any of it runs, even once this process is gone.
    Descriptors Python opens are not inheritable (PEP 446), so only handed ones count."""
    import os

    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # no /proc: the command runs unguarded, as before
        return ()
    handed = []
    for name in names:
        descriptor = int(name)
        try:
            if descriptor > 2 and os.get_inheritable(descriptor):
                handed.append(descriptor)
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return tuple(handed)


def validate_command(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    """Attest the reflection on stdin when ARGV exits 0; otherwise exit 1 with why.

    Exit 1 is the validator protocol's "failed": the Turn's task is not validated.
    """
    import sys

    from capabilities.reward_memory.cli._common import read_input
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.contract.experience import ATTESTATION_SCHEMA

    argv = [arg for arg in args.argv if arg != "--"] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        v.fail("argv", "name the command to run after --", "validate_command_missing")
    if not 1 <= args.timeout_seconds <= MAX_TIMEOUT:
        v.fail(
            "timeout_seconds",
            f"must be between 1 and {MAX_TIMEOUT} seconds",
            "validate_timeout_invalid",
        )
    if args.check:
        document, title = _check(argv, args.timeout_seconds)
        args.failure_exit = 1
        return document, title
    request = read_input("-")
    target = _reflection(request)
    if target is None and not _applied_memory(request):
        return None, "No reflection to attest"  # nothing printed, exit 0
    # A Turn that answered which memories it used is validated without a reflection
    # too: its verdict is the outcome the memories are judged by (issue 39). Passing,
    # it attests nothing (there is no reflection) and exits 0; failing, exit 1.
    digest, refs = target if target is not None else ("", [])
    run = Run(argv, args.timeout_seconds, _handed_down())
    ref = evidence_ref(argv, run.exit_status, run.output)
    _record(ref, digest, argv, run)
    outcome = run.reason or "external_passed"
    print(f"turn-hooks validate: {ref} {outcome} (exit status {run.exit_status})", file=sys.stderr)
    if run.reason is not None:
        # The check failed, timed out or could not start: the Turn's task is not
        # validated (a non-zero exit is the protocol's "failed"), nothing is learned.
        # Its tail goes to stderr, where the host that ran this validator keeps it.
        if run.tail:
            print(run.tail, end="" if run.tail.endswith("\n") else "\n", file=sys.stderr)
        args.failure_exit = 1
        return {
            "ok": False,
            "status": "not_attested",
            "reason_code": run.reason_code,
            "evidence_ref": ref,
            "exit_status": run.exit_status,
        }, "Not attested"
    if target is None:
        return None, "Memory application validated"  # nothing printed, exit 0
    return {
        "schema_version": ATTESTATION_SCHEMA,
        "status": "validated",
        "reflection_digest": digest,
        "evidence_refs": refs,
    }, "Reflection attested"


def add_validate(commands: argparse._SubParsersAction[Any]) -> None:
    """``turn-hooks validate command -- ARGV``."""
    group = commands.add_parser("validate", help="built-in independent validators")
    sub = group.add_subparsers(dest="validate_command", required=True)
    command = sub.add_parser(
        "command",
        help="attest the reflection on stdin only when ARGV exits 0",
        description=(
            "Reads the settled Turn on stdin, runs ARGV in the working directory and "
            "prints a reward_memory_reflection_validation_v0 attestation of the exact "
            "reflection digest only when ARGV exits 0 within the timeout. ARGV runs "
            "with your PATH and interpreter: turn-hooks' own virtual environment is "
            "taken out of PATH (and VIRTUAL_ENV), so python3 is your project's."
        ),
    )
    add_format(command)
    command.add_argument(
        "--timeout-seconds",
        type=int,
        default=DEFAULT_TIMEOUT,
        metavar=f"1..{MAX_TIMEOUT}",
        help=f"ARGV's deadline in seconds (default {DEFAULT_TIMEOUT}, ten minutes: room "
        "for a real test suite). Hooks settle in a child of their own and give the "
        "validator all of it (generic hosts and Gemini wait for that child a while, "
        "then let it run on); with TURN_HOOKS_SETTLE=inline the hook settles itself "
        "and cuts the validator off at 20 s (logged validation_timeout_clamped when you "
        "chose longer), and the next Turn's worker runs it again in full",
    )
    command.add_argument(
        "--check",
        action="store_true",
        help="run ARGV once now, with no Turn on stdin, and print whether it passed with "
        "the tail of its output (what `turn-hooks install` does first); keeps no record",
    )
    command.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the command to run")
    command.set_defaults(handler=validate_command)
