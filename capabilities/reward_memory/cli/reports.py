"""``corpus-registry``, ``health-check``, ``architecture``, ``dogfood-evaluate``,
``evaluate`` and ``route-check``: the read models and suites.

The commands of :mod:`capabilities.reward_memory.reports`, the only way a report is
reached: no hook imports them.
"""

from __future__ import annotations

import argparse
from typing import Any

from capabilities.reward_memory.cli._common import (
    Result,
    add_binding_arguments,
    add_format,
    read_input,
    resolve_binding,
)


def corpus_registry(args: argparse.Namespace) -> Result:
    """``corpus-registry``: the declared corpora of the bound config; no provider call."""
    from capabilities.reward_memory.reports.corpora import corpus_registry as project

    return project(resolve_binding(args)), "Reward memory corpus registry"


def health_check(args: argparse.Namespace) -> Result:
    """``health-check``: the five health states of each corpus; read calls only."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.reports.corpora import corpus_health

    resolution = resolve_binding(args)
    return corpus_health(
        resolution,
        provider_for=lambda binding: build_provider(binding, repo=resolution.repo, read_only=True),
    ), "Reward memory corpus health"


def route_check(args: argparse.Namespace) -> Result:
    """``route-check``: pilot_fix, meta_design_gate or hold_for_evidence for a change."""
    from capabilities.reward_memory.reports.route import FLAGS, builtin_case
    from capabilities.reward_memory.reports.route import route_check as check

    if args.case is not None:
        # As upstream: a built-in case is the whole observation; other flags are unread.
        return check(builtin_case(args.case)), "Pilot/meta route check"
    observation = {
        "behavior_status": args.behavior_status,
        "surface_count": args.surface_count,
        "edge_case_complexity": args.edge_case_complexity,
        **{name: getattr(args, name) for name in FLAGS},
    }
    return check(observation), "Pilot/meta route check"


def architecture(args: argparse.Namespace) -> Result:
    """``architecture``: the machine-readable contract (classes, precedence, stages)."""
    from capabilities.reward_memory.reports.architecture import architecture as contract

    return contract(), "Reward memory architecture"


def dogfood_evaluate(args: argparse.Namespace) -> Result:
    """``dogfood-evaluate``: settle a bounded batch; exit 2 unless it is ready."""
    from capabilities.reward_memory.reports.dogfood import evaluate_batch
    from capabilities.reward_memory.reports.evaluation import evaluate as stage4

    return evaluate_batch(read_input(args.input), stage4=stage4), "Reward memory dogfood batch"


def evaluate(args: argparse.Namespace) -> Result:
    """``evaluate``: the Stage 4 contract suite and release gate; exit 2 unless it passes."""
    from capabilities.reward_memory.reports.evaluation import evaluate as run_suite

    return run_suite(), "Reward memory evaluation"


def add_corpus_registry(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory corpus-registry``."""
    inventory = sub.add_parser(
        "corpus-registry",
        help="the bound config's corpora: owner, authority, freshness, isolation, surfaces",
    )
    add_binding_arguments(inventory)
    inventory.set_defaults(handler=corpus_registry)


def add_health_check(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory health-check``."""
    health = sub.add_parser(
        "health-check",
        help="probe each corpus (read calls only): present, indexed, searchable, read, applied",
    )
    add_binding_arguments(health)
    health.set_defaults(handler=health_check)


def add_architecture(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory architecture``."""
    contract = sub.add_parser(
        "architecture", help="the machine-readable contract: classes, precedence, stages"
    )
    add_format(contract)
    contract.set_defaults(handler=architecture)


def add_dogfood_evaluate(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory dogfood-evaluate``."""
    dogfood = sub.add_parser(
        "dogfood-evaluate",
        help="settle a bounded dogfood batch and decide its readiness (exit 2 unless ready)",
        description="The input is {observations, operator_controls}: up to 24 settled "
        "applications (domain_family, domain_id, application_receipt, module_outcome, cost, "
        "intervention, optional bot_feedback and utility_attribution) and up to 8 "
        "operator-control receipts. Runs the Stage 4 suite for its gate.",
    )
    add_format(dogfood)
    dogfood.add_argument("--input", required=True, help="the batch (JSON file)")
    dogfood.set_defaults(handler=dogfood_evaluate)


def add_evaluate(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory evaluate``."""
    suite = sub.add_parser(
        "evaluate",
        help="run the eight-case contract suite over the real core; print the release gate",
    )
    add_format(suite)
    suite.set_defaults(handler=evaluate)


def add_route_check(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory route-check``: LoopX 2.1.1's options, defaults and choices (the
    route module's constants, written out so registering costs no import)."""
    route = sub.add_parser(
        "route-check",
        help="route a proposed change: pilot_fix, meta_design_gate or hold_for_evidence",
        description="The change is described by flags: a flag left out is false, the "
        "behaviour defaults to bug_confirmed, one surface and low complexity. --case "
        "answers a built-in observation instead and ignores the other flags.",
    )
    add_format(route)
    route.add_argument(
        "--case", choices=("pr-3237",), help="a built-in public regression observation"
    )
    route.add_argument(
        "--behavior-status",
        choices=("bug_confirmed", "by_design", "uncertain"),
        default="bug_confirmed",
    )
    route.add_argument("--surface-count", type=int, default=1, help="surfaces touched (1-20)")
    for flag in (
        "semantic-contract-change",
        "generic-boundary-for-specific-policy",
        "user-visible-behavior-change",
        "hot-path-or-storage-change",
        "retrieval-or-memory-quality-claim",
    ):
        route.add_argument(f"--{flag}", action="store_true")
    route.add_argument("--edge-case-complexity", choices=("low", "medium", "high"), default="low")
    route.add_argument("--named-reproduction", action="store_true")
    route.add_argument("--named-validation", action="store_true")
    for name in ("effect", "ux", "benchmark", "performance"):
        route.add_argument(f"--{name}-evidence", action="store_true")
    route.set_defaults(handler=route_check)
