"""``candidate-review``, ``operator-control`` and ``retire``: decisions about memories.

The commands of :mod:`capabilities.reward_memory.curation`; only ``retire --execute``
writes, as the corpus owner.
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


def candidate_review(args: argparse.Namespace) -> Result:
    """``candidate-review``: one review decision as a record; never a write."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.curation.review import review_candidate

    source = v.exact_keys(read_input(args.input), "input", frozenset({"candidate", "review"}))
    review = v.mapping(source["review"], "input.review")
    if "decision" in review:
        v.fail("input.review.decision", "comes from --decision", "unknown_key")
    return review_candidate(source["candidate"], {**review, "decision": args.decision}), (
        "Reward memory candidate review"
    )


def operator_control(args: argparse.Namespace) -> Result:
    """``operator-control``: an authorised edit or retirement, as a decision (no write)."""
    from capabilities.reward_memory.curation.operator import operator_control as control

    return control(
        read_input(args.input),
        action=args.action,
        control_ref=args.control_ref,
        reasoning_summary=args.reasoning_summary,
        edited_content_summary=args.edited_content_summary,
    ), "Reward memory operator control"


def retire_memory(args: argparse.Namespace) -> Result:
    """``retire``: the owner's retirement write for a decided operator control."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.curation.retirement import retire

    resolution = resolve_binding(args)
    return retire(
        resolution,
        read_input(args.input),
        provider_for=lambda binding: build_provider(binding, repo=resolution.repo),
        execute=args.execute,
    ), "Reward memory retirement"


def add_candidate_review(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory candidate-review``."""
    review = sub.add_parser(
        "candidate-review",
        help="record one review decision for a candidate (the decision, never the write)",
        description="The input is {candidate, review}: candidate is a reward_memory_candidate_v0 "
        "packet (or a previous review, to retire what was accepted) and review is "
        "{reviewer_ref, review_ref, reasoning_summary[, edited_content_summary]}. The "
        "declared corpus owner performs any write afterwards, with exact readback.",
    )
    add_format(review)
    review.add_argument("--input", required=True, help="{candidate, review} (JSON file)")
    review.add_argument(
        "--decision", required=True, choices=("accept", "edit", "reject", "retire", "no_write")
    )
    review.set_defaults(handler=candidate_review)


def add_operator_control(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory operator-control``."""
    control = sub.add_parser(
        "operator-control",
        help="an operator's edit or retirement of an active memory, checked against the corpus",
        description="The input is {reviewed_record, corpus, operator_checkpoint}: an accepted "
        "review, the corpus declaration, and a verified checkpoint {verified, action, "
        "operator_ref, authority_ref, source_ref, corpus_id, project_ref}. The authority must "
        "be the corpus owner (edit) or its retirement authority (retire). Prints the decision "
        "and a receipt naming the owner's next step; writes nothing.",
    )
    add_format(control)
    control.add_argument("--input", required=True, help="the JSON file described above")
    control.add_argument("--action", required=True, choices=("edit", "retire"))
    control.add_argument("--control-ref", required=True, help="this control's reference")
    control.add_argument("--reasoning-summary", required=True, help="why (compact, public-safe)")
    control.add_argument("--edited-content-summary", help="edit: the replacement summary")
    control.set_defaults(handler=operator_control)


def add_retire(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory retire``."""
    retirement = sub.add_parser(
        "retire",
        help="the corpus owner's retirement write for an operator-control decision",
        description="The input is the output of `operator-control --action retire`. Checks "
        "the live corpus declaration, reads the stored record exactly, replaces it with the "
        "same record marked retired and reads that back (--execute); otherwise plans only.",
    )
    add_binding_arguments(retirement)
    retirement.add_argument("--input", required=True, help="the operator-control result")
    retirement.add_argument("--execute", action="store_true", help="write and read back exactly")
    retirement.set_defaults(handler=retire_memory)
