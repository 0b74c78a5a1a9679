"""What every ``turn-hooks reward-memory`` command shares: binding options and input.

The one helper that adds ``--registry/--goal-id/--agent-id`` lives here, with the
bounded ``--input`` reader and the registry resolution every bound command runs.
Importing it costs only argparse: the core is imported inside the helpers that need
it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

REGISTRY_ENV = "TURN_HOOKS_REGISTRY"
Result = tuple[dict[str, Any], str]
"""What a handler returns: the document and the title of its Markdown rendering."""


def registry_path(args: argparse.Namespace) -> str:
    """``--registry``, else ``$TURN_HOOKS_REGISTRY``; a typed error when neither is set."""
    from capabilities.reward_memory.contract import values as v

    path = args.registry or os.environ.get(REGISTRY_ENV)
    if not path:
        v.fail("registry", f"is required (--registry or {REGISTRY_ENV})", "registry_missing")
    return str(path)


def read_input(source: str) -> Any:
    """The ``--input`` file (``-``: stdin) through the package's bounded readers: at
    most one byte over the bound is read, a FIFO or device is refused without
    blocking. Every refusal is a ``reward_memory_error_v0``."""
    from capabilities.reward_memory.contract import values as v
    from sidecars import read_source
    from turn_hooks import InvalidInputError, loads_bounded

    try:
        return loads_bounded(read_source(source))
    except InvalidInputError as exc:
        raise v.RewardMemoryInputError(
            exc.message, reason_code=exc.reason_code, field="input"
        ) from exc


def json_argv(text: str, field: str, reason_code: str) -> list[str]:
    """A JSON argv option (a non-empty list of strings), refused with ``reason_code``."""
    from capabilities.reward_memory.contract import values as v
    from turn_hooks import InvalidInputError, argv_from_json

    try:
        return argv_from_json(text, reason_code=reason_code, field=field)
    except InvalidInputError as exc:
        raise v.RewardMemoryInputError(
            f"{field} must be a JSON list of strings", reason_code=reason_code, field=field
        ) from exc


def resolve_binding(args: argparse.Namespace) -> Any:
    """The ``Resolution`` of ``--registry/--goal-id/--agent-id`` (typed errors)."""
    from capabilities.reward_memory.binding.registry import load_registry, resolve

    return resolve(load_registry(registry_path(args)), args.goal_id, args.agent_id)


def add_format(parser: argparse.ArgumentParser) -> None:
    """``--format``, which every command has."""
    parser.add_argument(
        "--format",
        choices=("json", "markdown"),
        default="json",
        help="json: one compact document; markdown: tables for people",
    )


def add_binding_arguments(
    parser: argparse.ArgumentParser,
    *,
    required: bool = True,
    before_ids: Callable[[argparse.ArgumentParser], object] | None = None,
) -> None:
    """``--format``, ``--registry``, ``--goal-id`` and ``--agent-id`` of a bound command.

    The ids are required unless ``required`` is false (``ingest-event``, which runs a
    full fixture without them). ``before_ids`` adds the command's own options between
    ``--registry`` and the ids: ``ingest-event`` has always listed its ``--input``
    there, and the ``--help`` output is pinned.
    """
    add_format(parser)
    parser.add_argument("--registry", help=f"binding registry file (or ${REGISTRY_ENV})")
    if before_ids is not None:
        before_ids(parser)
    parser.add_argument("--goal-id", required=required)
    parser.add_argument("--agent-id", required=required)
