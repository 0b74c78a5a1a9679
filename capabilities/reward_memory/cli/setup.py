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
    evaluator = _evaluator_argv(args)  # so is an empty evaluator command
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
        document = {
            **document,
            "validator_config": f".local/turn-hooks/{VALIDATOR_FILE}",
            # The check is recorded: install takes it from the repository.
            "next_step": "install the hooks, which take the check recorded here: "
            "turn-hooks install codex (or claude-code, gemini or dsh), or add the "
            "turn-hooks plugin in Claude Code; a generic host needs no install: its "
            "`turn-hooks host generic` commands run this check (docs/generic-cli.md)",
        }
    if document.get("ok", True) and document.get("goal_id") and document.get("agent_id"):
        settings = _settings(document["goal_id"], document["agent_id"], args, evaluator)
        switched = [
            name for name in ("ranking", "utility_evaluator") if settings[f"{name}_changed"]
        ]
        if switched:  # the receipt's status and changed list say so too
            status = document.get("status")
            document = {
                **document,
                "status": "updated" if status == "unchanged" else status,
                "changed": [*document.get("changed", []), *switched],
            }
        document.update(settings)
    return document, "turn-hooks init"


def _evaluator_argv(args: argparse.Namespace) -> list[str] | None:
    """The ``--utility-evaluator`` command as argv (``None``: not given)."""
    import shlex
    import shutil

    from capabilities.reward_memory.contract import values as v

    if args.utility_evaluator is None:
        return None
    try:
        argv = shlex.split(args.utility_evaluator)
    except ValueError:
        argv = []
    if not argv:
        v.fail("utility_evaluator", "must name a command", "utility_evaluator_invalid")
    if shutil.which(argv[0]) is None:
        v.fail(
            "utility_evaluator",
            f"names {argv[0]!r}, which is not an executable program here: give the "
            "command as the hooks would run it (an absolute path, or a program on PATH)",
            "utility_evaluator_not_found",
        )
    return argv


def _settings(
    goal_id: str, agent_id: str, args: argparse.Namespace, evaluator_argv: list[str] | None
) -> dict[str, Any]:
    """Switch the binding's ranking and utility evaluator when asked; always say which
    are in force (issue 39)."""
    from capabilities.reward_memory.binding.setup import find_repository
    from capabilities.reward_memory.turn.settings import (
        ranking_of,
        read_settings,
        set_ranking,
        set_setting,
    )
    from sidecars import SidecarStore, sidecar_root

    store = SidecarStore(sidecar_root(find_repository(Path.cwd())))
    changed = args.ranking is not None and set_ranking(store, goal_id, agent_id, args.ranking)
    evaluator_changed = False
    if evaluator_argv is not None:
        declared = {"argv": evaluator_argv}
        evaluator_changed = set_setting(store, goal_id, agent_id, "utility_evaluator", declared)
    elif args.no_utility_evaluator:
        evaluator_changed = set_setting(store, goal_id, agent_id, "utility_evaluator", None)
    evaluator = read_settings(store, goal_id, agent_id).get("utility_evaluator")
    return {
        "ranking": ranking_of(store, goal_id, agent_id),
        "ranking_changed": changed,
        "utility_evaluator": "declared" if evaluator else "none",
        "utility_evaluator_changed": evaluator_changed,
    }


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
    parser.add_argument(
        "--ranking",
        choices=("relevance", "utility"),
        help="how recall orders the memories that passed the relevance floor: relevance "
        "alone (the default), or relevance times a bounded factor from their verified "
        "utility (it re-orders, never adds or drops a memory). `status` shows "
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
