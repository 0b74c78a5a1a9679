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
    if document.get("ok", True) and document.get("goal_id") and document.get("agent_id"):
        document.update(_settings(document["goal_id"], document["agent_id"], args))
    return document, "turn-hooks init"


def _settings(goal_id: str, agent_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """Switch the binding's ranking and utility evaluator when asked; always say which
    are in force (issue 39)."""
    import shlex

    from capabilities.reward_memory.binding.setup import find_repository
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.turn.ranking import (
        ranking_of,
        read_settings,
        set_ranking,
        set_setting,
    )
    from sidecars import SidecarStore, sidecar_root

    store = SidecarStore(sidecar_root(find_repository(Path.cwd())))
    changed = args.ranking is not None and set_ranking(store, goal_id, agent_id, args.ranking)
    if args.utility_evaluator is not None:
        argv = shlex.split(args.utility_evaluator)
        if not argv:
            v.fail("utility_evaluator", "must name a command", "utility_evaluator_invalid")
        set_setting(store, goal_id, agent_id, "utility_evaluator", {"argv": argv})
    elif args.no_utility_evaluator:
        set_setting(store, goal_id, agent_id, "utility_evaluator", None)
    evaluator = read_settings(store, goal_id, agent_id).get("utility_evaluator")
    return {
        "ranking": ranking_of(store, goal_id, agent_id),
        "ranking_changed": changed,
        "utility_evaluator": "declared" if evaluator else "none",
    }


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
    parser.add_argument(
        "--ranking",
        choices=("relevance", "utility"),
        help="how recall orders the memories that passed the relevance floor: relevance "
        "alone (the default), or relevance times a bounded factor from their verified "
        "utility (issue 39; it re-orders, never adds or drops a memory). `status` shows "
        "which is in force",
    )
    evaluator = parser.add_mutually_exclusive_group()
    evaluator.add_argument(
        "--utility-evaluator",
        metavar="CMD",
        help="a command that judges whether the memories a Turn applied helped: it reads "
        "the application receipt and the validator's verdict on stdin (digests only) and "
        "prints an observation proposal (protocol and worked example: python3 -m "
        "capabilities.reward_memory.utility.reference_evaluator). It runs after the "
        "Turn settled, within 10 s, and fails open: without one, outcomes record lineage "
        "and move nothing",
    )
    evaluator.add_argument(
        "--no-utility-evaluator", action="store_true", help="remove the declared evaluator"
    )
    parser.set_defaults(handler=init)
