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
        document.update(_ranking(document["goal_id"], document["agent_id"], args.ranking))
    return document, "turn-hooks init"


def _ranking(goal_id: str, agent_id: str, wanted: str | None) -> dict[str, Any]:
    """Switch the binding's ranking when asked; always say which is in force."""
    from capabilities.reward_memory.binding.setup import find_repository
    from capabilities.reward_memory.turn.ranking import ranking_of, set_ranking
    from sidecars import SidecarStore, sidecar_root

    store = SidecarStore(sidecar_root(find_repository(Path.cwd())))
    changed = wanted is not None and set_ranking(store, goal_id, agent_id, wanted)
    return {"ranking": ranking_of(store, goal_id, agent_id), "ranking_changed": changed}


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
    parser.set_defaults(handler=init)
