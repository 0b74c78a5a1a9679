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
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.reports.route import builtin_case
    from capabilities.reward_memory.reports.route import route_check as check

    if (args.input is None) == (args.case is None):
        v.fail("input", "or --case is required (exactly one)", "usage_invalid")
    source = read_input(args.input) if args.input else builtin_case(args.case)
    return check(source), "Pilot/meta route check"


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
    """``reward-memory route-check``."""
    route = sub.add_parser(
        "route-check",
        help="route a proposed change: pilot_fix, meta_design_gate or hold_for_evidence",
        description="The input is a reward_memory_route_check_input_v0 change description "
        "(behavior, surfaces_touched, semantic_contract_change, generic_boundary_leakage, "
        "edge_case_complexity, reproduction_named, validation_named, change{user_visible, "
        "hot_path_or_storage, retrieval_quality_claim}, evidence{effect, ux, performance, "
        "benchmark}, optional case_id and prior_memory_hit{recommended_route}).",
    )
    add_format(route)
    route.add_argument("--input", help="the change description (JSON file)")
    route.add_argument("--case", help="a built-in case instead of --input (pr-3237)")
    route.set_defaults(handler=route_check)
