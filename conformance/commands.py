"""``turn-hooks conformance run|list``, added to the CLI through ``register_commands``.

It is no entry point, so no Turn imports it: the ``turn-hooks`` command line
registers it when it builds its parser. The runner itself is imported only when the
command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from turn_hooks import hookimpl
from turn_hooks.errors import InvalidInputError


def _run(args: argparse.Namespace) -> tuple[Any, str]:
    from conformance.runner import run
    from conformance.scenarios import CATALOGUE

    unknown = sorted(set(args.scenario or ()) - {s.id for s in CATALOGUE})
    if unknown:
        raise InvalidInputError(
            f"unknown scenario {unknown[0]!r} (see `turn-hooks conformance list`)",
            reason_code="conformance_scenario_unknown",
        )

    try:
        report = run(
            args.host,
            binary=args.binary,
            provider=args.provider,
            without_events=frozenset(args.without_event or ()),
            scenario_ids=frozenset(args.scenario or ()),
        )
    except ValueError as exc:
        raise InvalidInputError(str(exc), reason_code="conformance_input_invalid") from exc
    return report, f"Host coverage: {args.host}"


def _list(args: argparse.Namespace) -> tuple[Any, str]:
    from conformance.scenarios import CATALOGUE

    rows = [
        {
            "scenario": s.id,
            "edges": list(s.edges),
            "real_host_only": s.real_host_only,
            "proves": s.proves,
        }
        for s in CATALOGUE
    ]
    return {
        "ok": True,
        "schema_version": "turn_hooks_conformance_catalogue_v0",
        "scenarios": rows,
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
        description="Real hosts (codex-cli, claude-code, dsh) run their own binary offline "
        "against a fake model server on 127.0.0.1; gemini and generic replay their "
        "documented hook payloads. An edge is reported connected only if its scenarios "
        "passed in this run.",
    )
    runner.add_argument("--host", required=True, choices=HOSTS)
    runner.add_argument("--binary", help="the host binary (default: found on PATH)")
    runner.add_argument("--provider", choices=("embedded", "openviking"), default="embedded")
    runner.add_argument(
        "--without-event",
        action="append",
        metavar="EVENT",
        help="leave this host event out of the install (e.g. Stop) to see what it costs",
    )
    runner.add_argument(
        "--scenario",
        action="append",
        metavar="ID",
        help="run only this scenario (repeatable; see `conformance list`)",
    )
    listing = sub.add_parser("list", help="the scenario catalogue: ids and what each proves")
    for parser, handler in ((runner, _run), (listing, _list)):
        parser.add_argument("--format", choices=("json", "markdown"), default="json")
        parser.set_defaults(handler=handler)


class ConformanceCommands:
    """Only adds CLI commands; it takes no part in a Turn."""

    @hookimpl
    def register_commands(self, commands: Any) -> None:
        """Add ``turn-hooks conformance ...``."""
        register(commands)


plugin = ConformanceCommands()
"""The object ``hosts.cli`` registers while it builds the command tree."""
