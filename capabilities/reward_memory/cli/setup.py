"""``turn-hooks init``: the registry entry, config and verified enablement in one step."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from capabilities.reward_memory.cli._common import REGISTRY_ENV, Result, add_format


def init(args: argparse.Namespace) -> Result:
    """``init``: bind one Goal and Agent of the current repository (idempotent)."""
    import os
    import sys

    from capabilities.reward_memory.binding.setup import init_binding
    from sidecars import default_registry

    registry = args.registry or os.environ.get(REGISTRY_ENV) or str(default_registry())
    declared = _declared_validator(args)  # refused before anything is written
    if sys.stderr is not None and sys.stderr.isatty():  # progress for people, never for pipes
        print(
            "turn-hooks init: checking, then a canary write and exact readback...", file=sys.stderr
        )
    document = init_binding(
        cwd=Path.cwd(),
        registry=Path(registry).absolute(),
        goal_id=args.goal_id,
        agent_id=args.agent_id,
        provider=args.provider,
    )
    if declared is not None and document.get("ok") is not False:
        from capabilities.reward_memory.binding.setup import find_repository
        from sidecars import VALIDATOR_FILE, record_validator

        if record_validator(find_repository(Path.cwd()), declared):
            status = document.get("status")
            document = {
                **document,
                "status": "updated" if status == "unchanged" else status,
                "changed": [*document.get("changed", []), "validator"],
            }
        document = {**document, "validator_config": f".local/turn-hooks/{VALIDATOR_FILE}"}
    return document, "turn-hooks init"


def _declared_validator(args: argparse.Namespace) -> dict[str, Any] | None:
    """The repository's validator declaration ``--validate-with`` or ``--recall-only``
    asks for (:mod:`sidecars.validator`), or ``None`` to leave it as it is."""
    from sidecars import validator_document

    if args.validate_with is not None:
        return validator_document(validate_with=args.validate_with)
    return validator_document(recall_only=True) if args.recall_only else None


def add_init(commands: argparse._SubParsersAction[Any]) -> None:
    """``turn-hooks init``."""
    from capabilities.reward_memory.binding.setup import DEFAULT_AGENT

    parser = commands.add_parser(
        "init",
        help="bind this repository: registry entry, config, verified enablement",
        description=(
            "Run inside a git repository. Creates or updates the registry entry (default "
            "$XDG_CONFIG_HOME/turn-hooks/registry.json) and the experiment config in "
            ".local/turn-hooks/ (git-ignored), then enables the Agent with a canary write "
            "and exact readback. Running it again changes nothing."
        ),
    )
    add_format(parser)
    parser.add_argument("--registry", help=f"binding registry file (or ${REGISTRY_ENV})")
    parser.add_argument("--goal-id", help="the Goal (default: the repository's directory name)")
    parser.add_argument("--agent-id", help=f"the Agent (default: {DEFAULT_AGENT})")
    parser.add_argument(
        "--provider",
        choices=("embedded", "openviking"),
        default="embedded",
        help="embedded: SQLite in .local/turn-hooks; openviking: the configured server",
    )
    declared = parser.add_mutually_exclusive_group()
    declared.add_argument(
        "--validate-with",
        metavar="COMMAND",
        help="the project's check, such as 'make test', recorded in "
        ".local/turn-hooks/validator.json for hooks that carry no validator of their own "
        "(the Claude Code plugin's): a reflection is learned only when it exits 0",
    )
    declared.add_argument(
        "--recall-only",
        action="store_true",
        help="record that this repository has no validator: memories are recalled, "
        "nothing is learned",
    )
    parser.set_defaults(handler=init)
