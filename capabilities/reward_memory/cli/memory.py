"""``ingest-event`` and ``recall``: one scoped-feedback write and one surface's recall.

The commands of :mod:`capabilities.reward_memory.memory`: they check the caller's own
arguments as input errors (exit 2) before the core makes any provider call.
"""

from __future__ import annotations

import argparse
from typing import Any

from capabilities.reward_memory.cli._common import (
    Result,
    add_binding_arguments,
    read_input,
    resolve_binding,
)

_ROUTE_KEYS = frozenset({"event"})
_FIXTURE_KEYS = frozenset({"adapter", "event", "corpus", "standing_policy", "provider_binding"})
# observed_at dates the record a passing guard activates; the core checks it there,
# so a blocked event needs none (as LoopX 2.1.1 answers).
_OBSERVED_AT = frozenset({"observed_at"})


def ingest_event(args: argparse.Namespace) -> Result:
    """``ingest-event``: a configured Goal/Agent route, or a full fixture (no write)."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.contract.corpus import (
        normalise_corpus,
        normalise_standing_policy,
    )
    from capabilities.reward_memory.contract.fixture import normalise_fixture_binding
    from capabilities.reward_memory.memory.ingest import ingest_scoped_event
    from capabilities.reward_memory.memory.inventory import bound_config

    source = read_input(args.input)
    if (args.goal_id is None) != (args.agent_id is None):
        v.fail("goal_id", "and --agent-id go together", "usage_invalid")
    if args.goal_id is None:
        if args.execute:
            v.fail("execute", "needs --goal-id and --agent-id", "usage_invalid")
        fixture = v.exact_keys(source, "input", _FIXTURE_KEYS, _OBSERVED_AT)
        if fixture["adapter"] != "scoped_feedback":
            v.fail(
                "input.adapter", "is unsupported; routing is never inferred", "adapter_unsupported"
            )
        corpus = normalise_corpus(fixture["corpus"], "input.corpus")
        binding = normalise_fixture_binding(
            fixture["provider_binding"], corpus, "input.provider_binding"
        )
        receipt = ingest_scoped_event(
            fixture["event"],
            corpus=corpus,
            standing_policy=normalise_standing_policy(
                fixture["standing_policy"], "input.standing_policy"
            ),
            provider_binding=binding,
            observed_at=fixture.get("observed_at"),
            execute=False,
            # A fixture is a preview: it must not leave a store behind in the cwd.
            provider=build_provider(binding, repo=None, dry_run=True),
        )
        return dict(receipt), "Reward memory ingest (fixture, no write)"
    route = v.exact_keys(source, "input", _ROUTE_KEYS, frozenset({"adapter"}) | _OBSERVED_AT)
    resolution = resolve_binding(args)
    status = resolution.status
    config = bound_config(resolution)
    event = v.mapping(route["event"], "input.event")
    surface = v.lookup(config["surfaces"], event.get("surface_id"))
    if surface is None:
        v.fail("input.event.surface_id", "is not a configured surface", "surface_not_configured")
    if route.get("adapter") not in (None, surface["adapter"]):
        v.fail("input.adapter", "does not match the configured route", "adapter_mismatch")
    if surface["adapter"] != "scoped_feedback":
        v.fail("input.adapter", "is not supported by this package", "adapter_unsupported")
    entry = config["corpora"][surface["ingest_corpus_id"]]
    receipt = ingest_scoped_event(
        event,
        corpus=entry["corpus"],
        standing_policy=entry["standing_policy"],
        provider_binding=entry["provider_binding"],
        observed_at=route.get("observed_at"),
        execute=args.execute,
        # A preview writes nothing anywhere, not even an empty store.
        provider=build_provider(
            entry["provider_binding"], repo=resolution.repo, dry_run=not args.execute
        ),
        automatic_recall=status["automatic_recall"],
    )
    receipt["experiment"] = status
    return dict(receipt), "Reward memory ingest"


def recall(args: argparse.Namespace) -> Result:
    """``recall``: the automatic recall hook for one surface of a bound Goal/Agent."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.memory.hook import run_automatic_recall
    from capabilities.reward_memory.memory.inventory import bound_config

    resolution = resolve_binding(args)
    bound_config(resolution)
    # The caller's own arguments are refused as input errors (exit 2) before any
    # provider call, rather than surfacing as a guard rejection without a receipt.
    if args.surface_id not in resolution.config["surfaces"]:
        v.fail("surface_id", "is not a configured surface", "surface_not_configured")
    v.compact(args.query, 500, "query")
    v.compact(args.query_summary, 220, "query_summary")
    v.optional_token(args.turn_key, "turn_key")
    observed_at = v.timestamp(args.observed_at, "observed_at") if args.observed_at else None
    result = run_automatic_recall(
        resolution,
        surface_id=args.surface_id,
        query=args.query,
        query_summary=args.query_summary,
        revision_ref=args.turn_key,
        observed_at=observed_at,
    )
    document = dict(result.public())
    if document["status"] == "guard_rejected":
        reason = document.get("boundary_detail_code") or document["reason_code"]
        v.fail("request", "was rejected by the recall guard", reason)
    guidance = document.get("output", {}).get("guidance", [])
    attempts = document.get("recall_attempts") or []
    if not guidance and attempts and all(a.get("status") == "empty" for a in attempts):
        # Markdown only: the JSON stays the reference's document, byte for byte.
        args.markdown_note = "No memory yet: the provider answered and nothing matched."
    if not args.show_guidance:
        # Recalled text is private memory: the default output carries refs only.
        document["output"] = {
            "guidance": [
                {"candidate_ref": item["candidate_ref"], "target_class": item["target_class"]}
                for item in guidance
            ]
        }
        if "application" in document:  # a disabled recall applies nothing
            document["application"] = {**document["application"], "output": document["output"]}
    return document, "Reward memory recall"


def add_ingest_event(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory ingest-event``."""
    ingest = sub.add_parser(
        "ingest-event", help="plan or execute one standing-policy write with exact readback"
    )
    add_binding_arguments(
        ingest,
        required=False,
        before_ids=lambda parser: parser.add_argument(
            "--input",
            required=True,
            help="with --goal-id/--agent-id: {event, observed_at[, adapter]}; without: a full "
            "fixture {adapter, event, corpus, standing_policy, provider_binding, observed_at} "
            "evaluated without writing",
        ),
    )
    ingest.add_argument("--execute", action="store_true", help="write and read back exactly")
    ingest.set_defaults(handler=ingest_event)


def add_recall(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory recall``."""
    recall_parser = sub.add_parser("recall", help="run the recall hook for one surface")
    add_binding_arguments(recall_parser)
    recall_parser.add_argument("--surface-id", default="agent_workflow.turn_admission")
    recall_parser.add_argument("--query", required=True, help="the function-boundary query")
    recall_parser.add_argument("--query-summary", default="operator recall")
    recall_parser.add_argument("--turn-key", help="revision ref of the request")
    recall_parser.add_argument("--observed-at", help="ISO 8601 timestamp (default: now)")
    recall_parser.add_argument(
        "--show-guidance",
        action="store_true",
        help="print the recalled guidance text itself (private: do not paste publicly)",
    )
    recall_parser.set_defaults(handler=recall)
