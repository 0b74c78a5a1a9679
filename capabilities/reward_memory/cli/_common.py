"""What every ``turn-hooks reward-memory`` command shares: binding options and input.

The one helper that adds ``--registry/--goal-id/--agent-id`` lives here, with the
bounded ``--input`` reader and the registry resolution every bound command runs.
The three options are optional: :func:`bind` names what they leave out by the rule
of :mod:`sidecars.naming` (environment, then discovery from the repository), after
parsing, so every command names its binding the same way. Importing it costs only
argparse: the core is imported inside the helpers that need it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

REGISTRY_ENV = "TURN_HOOKS_REGISTRY"
GOAL_ENV = "TURN_HOOKS_GOAL"
AGENT_ENV = "TURN_HOOKS_AGENT"
Result = tuple[dict[str, Any], str]
"""What a handler returns: the document and the title of its Markdown rendering."""


def bind(args: argparse.Namespace) -> argparse.Namespace:
    """Fill in ``args.registry``, ``args.goal_id`` and ``args.agent_id`` where the
    command line left them out (:func:`sidecars.name_binding`); explicit flags win.

    Idempotent, and returns ``args``. A parser built with ``required=False``
    (``ingest-event``, whose ids choose its mode) keeps its ids as the flags gave
    them; only its registry is named by the rule.

    :raises RewardMemoryInputError: ``registry_missing``, ``goal_not_discovered``,
        ``agent_not_discovered``, ``binding_ambiguous`` or a registry refusal.
    """
    from capabilities.reward_memory.contract import values as v
    from sidecars import name_binding
    from turn_hooks import InvalidInputError

    if getattr(args, "binding_sources", None) is not None:
        return args
    discover = getattr(args, "discover_binding", True)
    try:
        named = name_binding(
            args.registry,
            getattr(args, "goal_id", None),
            getattr(args, "agent_id", None),
            discover=discover,
        )
    except InvalidInputError as exc:
        raise v.RewardMemoryInputError(
            exc.message, reason_code=exc.reason_code, field=exc.field or "registry"
        ) from exc
    args.registry = named.registry
    if discover:
        args.goal_id, args.agent_id = named.goal_id, named.agent_id
    args.binding_sources = named.sources
    return args


def registry_path(args: argparse.Namespace) -> str:
    """The registry :func:`bind` names: ``--registry``, ``$TURN_HOOKS_REGISTRY`` or
    the default one ``turn-hooks init`` writes; ``registry_missing`` otherwise."""
    return str(bind(args).registry)


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
    """The ``Resolution`` of the binding :func:`bind` names (typed errors)."""
    from capabilities.reward_memory.binding.registry import load_registry, resolve

    bind(args)
    return resolve(load_registry(args.registry), args.goal_id, args.agent_id)


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

    None of them is required by argparse: :func:`bind` names what is left out after
    parsing. With ``required`` false (``ingest-event``, which runs a full fixture
    without ids) only the flags name the ids. ``before_ids`` adds the command's own options
    between ``--registry`` and the ids: ``ingest-event`` has always listed its
    ``--input`` there, and the ``--help`` output is pinned.
    """
    add_format(parser)
    parser.add_argument("--registry", help=f"binding registry file (or ${REGISTRY_ENV})")
    if before_ids is not None:
        before_ids(parser)
    # Without discovery the ids choose the command's mode: only flags name them.
    parser.add_argument(
        "--goal-id", help=f"(or ${GOAL_ENV} or found from the repository)" if required else None
    )
    parser.add_argument(
        "--agent-id", help=f"(or ${AGENT_ENV} or found from the repository)" if required else None
    )
    parser.set_defaults(discover_binding=required)


def own_errors(parser: argparse.ArgumentParser) -> None:
    """Give every command below ``parser`` the package's own error object.

    The ``reward-memory`` and ``codex-app`` commands print LoopX's
    ``reward_memory_error_v0`` (the oracle compares it); the everyday commands
    (``memory``, ``status``, ``init``, ``validate``) are ours and print
    ``turn_hooks_error_v0`` like every core command, so one command never prints two
    shapes. The reason code and field stay as they were.
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                own_errors(child)
    handler = parser.get_default("handler")
    if handler is not None and not getattr(handler, "own_errors", False):
        parser.set_defaults(handler=_with_own_errors(handler))


def _with_own_errors(handler: Callable[[argparse.Namespace], Any]) -> Any:
    def run(args: argparse.Namespace) -> Any:
        from capabilities.reward_memory.contract.values import RewardMemoryInputError
        from turn_hooks import InvalidInputError

        try:
            return handler(args)
        except RewardMemoryInputError as exc:
            raise InvalidInputError(
                exc.message, reason_code=exc.reason_code, field=exc.field
            ) from exc

    run.own_errors = True  # type: ignore[attr-defined]  # a marker, so wrapping is idempotent
    run.__doc__ = handler.__doc__
    return run
