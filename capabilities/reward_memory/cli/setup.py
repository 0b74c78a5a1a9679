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
    return document, "turn-hooks init"


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
    parser.set_defaults(handler=init)
