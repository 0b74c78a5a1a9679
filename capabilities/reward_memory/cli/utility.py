"""``utility-project`` and ``utility-observe``: utility observations and their projection.

The commands of :mod:`capabilities.reward_memory.utility`; neither needs a binding.
"""

from __future__ import annotations

import argparse
from typing import Any

from capabilities.reward_memory.cli._common import Result, add_format, json_argv, read_input


def utility_project(args: argparse.Namespace) -> Result:
    """``utility-project``: reduce an observation stream; exit 2 unless ``ok``."""
    from capabilities.reward_memory.utility.reducer import project

    return project(read_input(args.input)), "Memory utility projection"


def utility_observe(args: argparse.Namespace) -> Result:
    """``utility-observe``: one observation from trusted facts and an evaluator's proposal."""
    from capabilities.reward_memory.utility.evaluator import observe

    argv = None
    if args.evaluator_command_json:
        argv = json_argv(args.evaluator_command_json, "evaluator_command_json", "usage_invalid")
    return observe(
        read_input(args.input), evaluator_argv=argv, timeout=args.evaluator_timeout_seconds
    ), "Memory utility observation"


def add_utility_project(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory utility-project``."""
    projection = sub.add_parser(
        "utility-project",
        help="reduce utility observations into memory_utility_projection_v0 (exit 2 unless ok)",
    )
    add_format(projection)
    projection.add_argument(
        "--input",
        required=True,
        help="{observations, scope, retrieval_snapshot_ref, policy_snapshot_ref"
        "[, reducer_version, previous_projection]}",
    )
    projection.set_defaults(handler=utility_project)


def add_utility_observe(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory utility-observe``."""
    observation = sub.add_parser(
        "utility-observe",
        help="build one memory_utility_observation_v0 from trusted facts and an evaluator",
        description="The input holds the trusted facts {application_receipt, verified_outcome, "
        "attribution_context, created_at} and, unless --evaluator-command-json names an "
        "evaluator to run, the evaluator_proposal. An absent, failing, timed-out or "
        "malformed evaluator yields status not_observed and changes nothing.",
    )
    add_format(observation)
    observation.add_argument("--input", required=True, help="the trusted facts (JSON file)")
    observation.add_argument(
        "--evaluator-command-json",
        help='the evaluator argv, e.g. ["cmd", "arg"]: facts on stdin, proposal on stdout',
    )
    observation.add_argument(
        "--evaluator-timeout-seconds", type=int, default=20, choices=range(1, 121), metavar="1..120"
    )
    observation.set_defaults(handler=utility_observe)
