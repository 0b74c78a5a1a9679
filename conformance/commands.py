"""``turn-hooks conformance run|report|list``, added to the CLI through ``register_commands``.

It is no entry point, so no Turn imports it: the ``turn-hooks`` command line
registers it when it builds its parser. The runner itself is imported only when the
command runs. Where a run's report is kept (the latest per host) belongs to the
hosts' state directory: the command line hands that store to these commands as
``args.conformance_reports`` (``hosts.setup.conformance_reports``), so this package
imports no host.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from turn_hooks import hookimpl
from turn_hooks.errors import InvalidInputError

EXIT_SCENARIO_FAILED = 3
"""``conformance run``: the report was printed and at least one scenario failed."""
LATEST_SCHEMA = "turn_hooks_conformance_latest_v0"
"""``conformance report``: the latest saved report per host, with a summary of each."""
EXIT_CODES = (
    "exit codes: 0 every scenario that ran passed or was skipped; 2 bad input (one typed "
    "error: unknown scenario or event, unusable --binary), nothing run; 3 the report was "
    "printed and at least one scenario failed"
)


def _events(host: str) -> tuple[str, ...]:
    from conformance.drivers import host_events

    return host_events(host)


def _binary(args: argparse.Namespace) -> tuple[str | None, dict[str, str] | None]:
    """The host binary to drive and what it says its version is (``None``: none)."""
    import shutil

    from conformance.drivers import REAL_DRIVERS
    from conformance.report import probe_binary
    from conformance.runner import DEFAULT_BINARIES

    if args.host not in REAL_DRIVERS:
        if args.binary:
            raise InvalidInputError(
                f"--binary is not used for host {args.host!r}: it has no real-binary driver",
                reason_code="conformance_binary_unused",
                field="binary",
            )
        return None, None
    binary = args.binary or shutil.which(DEFAULT_BINARIES[args.host])
    if binary is None:
        return None, None
    return binary, probe_binary(args.host, binary)


def _progress(total_label: str) -> Any:
    def report(index: int, total: int, row: dict[str, Any]) -> None:
        seconds = row.get("seconds")
        took = f" ({seconds} s)" if seconds is not None else ""
        line = f"conformance {total_label} [{index}/{total}] {row['scenario']}: {row['result']}"
        sys.stderr.write(line + took + "\n")
        sys.stderr.flush()

    return report


def _wants_progress(args: argparse.Namespace) -> bool:
    if args.progress:
        return True
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (OSError, ValueError):
        return False


def _run(args: argparse.Namespace) -> tuple[Any, str]:
    from conformance.report import identity
    from conformance.runner import run
    from conformance.scenarios import CATALOGUE

    unknown = sorted(set(args.scenario or ()) - {s.id for s in CATALOGUE})
    if unknown:
        raise InvalidInputError(
            f"unknown scenario {unknown[0]!r} (see `turn-hooks conformance list`)",
            reason_code="conformance_scenario_unknown",
            field="scenario",
        )
    events = _events(args.host)
    strange = sorted(set(args.without_event or ()) - set(events))
    if strange:
        valid = ", ".join(events) or "none (this host has no driver)"
        raise InvalidInputError(
            f"unknown event {strange[0]!r} for host {args.host!r}; valid: {valid}",
            reason_code="conformance_event_unknown",
            field="without_event",
        )
    binary, probed = _binary(args)
    store = getattr(args, "conformance_reports", None) if not args.no_save else None
    if store is not None:
        store.prepare(args.host)  # a report that cannot be kept is refused before the run
    label = args.host + (f" {probed['version']}" if probed else "")
    if _wants_progress(args):
        chosen = len(set(args.scenario or ())) or len(CATALOGUE)
        sys.stderr.write(f"conformance {label}: {chosen} scenario(s)\n")
    try:
        report = run(
            args.host,
            binary=binary,
            provider=args.provider,
            without_events=frozenset(args.without_event or ()),
            scenario_ids=frozenset(args.scenario or ()),
            progress=_progress(label) if _wants_progress(args) else None,
        )
    except ValueError as exc:
        raise InvalidInputError(str(exc), reason_code="conformance_input_invalid") from exc
    arguments = list(getattr(args, "command_line", None) or sys.argv[1:])
    report["identity"] = identity(
        args.host,
        probed=probed,
        provider=args.provider,
        arguments=arguments,
        partial=report["partial"],
    )
    report["exit_code"] = 0 if report["ok"] else EXIT_SCENARIO_FAILED
    if store is not None:
        store.save(report)
    return report, f"Host coverage: {args.host}"


def _report(args: argparse.Namespace) -> tuple[Any, str]:
    """``conformance report``: the latest saved report of one host or of each."""
    from conformance.public_safety import public_safety_violations
    from conformance.report import to_markdown

    store = args.conformance_reports
    reports = store.latest(args.host)
    for report in reports:
        # A saved file is ours, but anyone can edit it: what is shown must still be a
        # report a run wrote (it renders) and public-safe (it is meant to be pasted).
        try:
            to_markdown(report, report["exit_code"])
        except (KeyError, TypeError, ValueError, AttributeError):
            problem = "does not have the shape a run writes"
        else:
            problem = "is not public-safe" if public_safety_violations(report) else ""
        if problem:
            host = report["identity"]["host"]
            raise InvalidInputError(
                f"the saved conformance report for host {host!r} {problem}; run "
                f"`turn-hooks conformance run --host {host}` again to replace it",
                reason_code="conformance_report_invalid",
                field="host",
            )
    return {
        "ok": True,
        "schema_version": LATEST_SCHEMA,
        "hosts": [store.summary(r["identity"]["host"], r) for r in reports],
        "reports": reports,
    }, "Latest conformance reports"


def _reports_markdown(document: dict[str, Any]) -> str:
    from conformance.report import to_markdown

    return "\n".join(to_markdown(r, r["exit_code"]) for r in document["reports"])


def _markdown(document: dict[str, Any]) -> str:
    from conformance.report import to_markdown

    return to_markdown(document, document["exit_code"])


def _list(args: argparse.Namespace) -> tuple[Any, str]:
    from conformance.report import catalogue_digest
    from conformance.scenarios import CATALOGUE, CATALOGUE_VERSION

    return {
        "ok": True,
        "schema_version": "turn_hooks_conformance_catalogue_v0",
        "catalogue_version": CATALOGUE_VERSION,
        "catalogue_digest": catalogue_digest(),
        "scenarios": [s.describe() for s in CATALOGUE],
    }, ("Conformance scenarios")


def register(commands: Any) -> None:
    """Add ``conformance`` and its sub-commands (the catalogue loads only when run)."""
    from conformance import HOSTS

    group = commands.add_parser(
        "conformance", help="run the host conformance scenarios; report real coverage"
    )
    sub = group.add_subparsers(dest="conformance_command", required=True)
    runner = sub.add_parser(
        "run",
        help="run the scenarios against one host and print turn_hooks_host_coverage_v0",
        description="Real hosts (codex-cli, claude-code, dsh, gemini) run their own binary "
        "offline against a fake model server on 127.0.0.1, and codex-app drives `codex "
        "app-server` over JSON-RPC and settles through codex-app refresh-state and "
        "spend-slot; generic replays its documented hook payloads, and so does gemini when "
        "no gemini binary is given or on PATH. An edge is reported connected "
        "only if every delivery scenario it needs ran and passed in this run and none of its "
        "scenarios failed; a run narrowed with --scenario is marked partial.",
        epilog=EXIT_CODES,
    )
    runner.add_argument("--host", required=True, choices=HOSTS)
    runner.add_argument(
        "--binary", help="the host binary (default: found on PATH); it must answer --version"
    )
    runner.add_argument("--provider", choices=("embedded", "openviking"), default="embedded")
    runner.add_argument(
        "--without-event",
        action="append",
        metavar="EVENT",
        help="leave this host event out of the install (e.g. Stop) to see what it costs; "
        "codex-cli, claude-code: UserPromptSubmit, Stop; codex-app: UserPromptSubmit, "
        "turn/completed (its refresh and spend); dsh: agent/pre-step, turn/end; "
        "gemini: BeforeAgent, AfterAgent; generic: pre-turn, post-settlement",
    )
    runner.add_argument(
        "--scenario",
        action="append",
        metavar="ID",
        help="run only this scenario (repeatable; see `conformance list`); the report is "
        "then partial",
    )
    runner.add_argument(
        "--progress",
        action="store_true",
        help="one line per scenario on stderr (the default when stderr is a terminal)",
    )
    runner.add_argument(
        "--no-save",
        action="store_true",
        help="do not keep this report as the host's latest (by default every run, full "
        "or partial, replaces it)",
    )
    runner.set_defaults(markdown=_markdown, failure_exit=EXIT_SCENARIO_FAILED)
    shown = sub.add_parser(
        "report",
        help="show the latest saved report of each host (or of --host)",
        description="Every `conformance run` without --no-save keeps its report as the "
        "latest one for its host, in the state directory ($TURN_HOOKS_STATE_DIR, else "
        "$XDG_STATE_HOME/turn-hooks): the run that finished last, full or partial (its "
        "partial flag says which). This shows that document, as the run printed it.",
        epilog="exit codes: 0 shown; 2 nothing saved (conformance_report_missing, with "
        "the command that saves one) or a saved file that cannot be read",
    )
    shown.add_argument("--host", choices=HOSTS, help="only this host (default: every saved one)")
    shown.set_defaults(markdown=_reports_markdown)
    listing = sub.add_parser("list", help="the scenario catalogue: ids and what each proves")
    for parser, handler in ((runner, _run), (shown, _report), (listing, _list)):
        parser.add_argument("--format", choices=("json", "markdown"), default="json")
        parser.set_defaults(handler=handler)


class ConformanceCommands:
    """Only adds CLI commands; it takes no part in a Turn."""

    @hookimpl
    def register_commands(self, commands: Any) -> None:
        """Add ``turn-hooks conformance ...``."""
        register(commands)


plugin = ConformanceCommands()
"""The object ``hosts.cli.command`` registers while it builds the command tree."""
