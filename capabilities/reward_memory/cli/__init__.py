"""The ``turn-hooks reward-memory`` and ``turn-hooks codex-app`` commands.

One module per sub-package adds that sub-package's commands; ``_common`` holds what
they share, the binding options above all. Handlers import the core lazily, so
registering the commands costs nothing on the per-Turn hook path. Each returns
``(document, title)`` or raises a typed error; the CLI prints JSON errors with exit
code 2, as upstream does.
"""

from __future__ import annotations

import argparse
from typing import Any

from capabilities.reward_memory.cli import (
    binding,
    curation,
    memory,
    memory_changes,
    memory_views,
    reports,
    setup,
    status,
    turn,
    utility,
    validate,
)
from capabilities.reward_memory.cli._common import own_errors


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``reward-memory``, ``memory``, ``status``, ``codex-app``, ``init`` and
    ``validate`` and their sub-commands."""
    turn.add_codex_app(commands)
    everyday = commands.add_parser(
        "memory", help="see, search, forget, restore, export and import what was learned"
    )
    views = everyday.add_subparsers(dest="memory_command", required=True)
    memory_views.add_views(views)
    memory_changes.add_changes(views)
    own_errors(everyday)
    status.add_status(commands)
    own_errors(commands.choices["status"])
    group = commands.add_parser("reward-memory", help="reward memory: status, ingest, recall")
    sub = group.add_subparsers(dest="reward_memory_command", required=True)
    # The order is the --help order that tests/golden/help.txt pins, not grouped by
    # sub-package: listing a command elsewhere would change what users read.
    for add in (
        binding.add_experiment_status,
        memory.add_ingest_event,
        memory.add_recall,
        turn.add_reconcile,
        binding.add_configure,
        reports.add_corpus_registry,
        reports.add_health_check,
        reports.add_architecture,
        reports.add_dogfood_evaluate,
        reports.add_evaluate,
        curation.add_candidate_review,
        curation.add_operator_control,
        curation.add_retire,
        utility.add_utility_project,
        utility.add_utility_observe,
        reports.add_route_check,
    ):
        add(sub)
    setup.add_init(commands)
    validate.add_validate(commands)
    for name in ("init", "validate"):
        own_errors(commands.choices[name])
