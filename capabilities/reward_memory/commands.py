"""The ``turn-hooks reward-memory`` commands.

Handlers import the core lazily, so registering the commands costs nothing on the
per-Turn hook path. Each returns ``(document, title)`` or raises a typed error; the
CLI prints JSON errors with exit code 2, as upstream does.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

REGISTRY_ENV = "TURN_HOOKS_REGISTRY"

Result = tuple[dict[str, Any], str]


def _registry_path(args: argparse.Namespace) -> str:
    from capabilities.reward_memory import values as v

    path = args.registry or os.environ.get(REGISTRY_ENV)
    if not path:
        v.fail("registry", f"is required (--registry or {REGISTRY_ENV})", "registry_missing")
    return str(path)


def _read_input(source: str) -> Any:
    from capabilities.reward_memory import values as v

    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        v.fail("input", "cannot be read", "input_unreadable")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        v.fail("input", "is not JSON", "input_not_json")


def _resolve(args: argparse.Namespace) -> Any:
    from capabilities.reward_memory.registry import load_registry, resolve

    return resolve(load_registry(_registry_path(args)), args.goal_id, args.agent_id)


def experiment_status(args: argparse.Namespace) -> Result:
    """``experiment-status``: resolve one binding, read-only, no provider call."""
    return _resolve(args).status, "Reward memory experiment status"


_ROUTE_KEYS = frozenset({"event", "observed_at"})
_FIXTURE_KEYS = frozenset(
    {"adapter", "event", "corpus", "standing_policy", "provider_binding", "observed_at"}
)


def ingest_event(args: argparse.Namespace) -> Result:
    """``ingest-event``: a configured Goal/Agent route, or a full fixture (no write)."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory import values as v
    from capabilities.reward_memory.config import normalise_corpus, normalise_standing_policy
    from capabilities.reward_memory.ingest import ingest_scoped_event

    source = _read_input(args.input)
    if (args.goal_id is None) != (args.agent_id is None):
        v.fail("goal_id", "and --agent-id go together", "usage_invalid")
    if args.goal_id is None:
        if args.execute:
            v.fail("execute", "needs --goal-id and --agent-id", "usage_invalid")
        fixture = v.exact_keys(source, "input", _FIXTURE_KEYS)
        if fixture["adapter"] != "scoped_feedback":
            v.fail(
                "input.adapter", "is unsupported; routing is never inferred", "adapter_unsupported"
            )
        binding = v.mapping(fixture["provider_binding"], "input.provider_binding")
        receipt = ingest_scoped_event(
            fixture["event"],
            corpus=normalise_corpus(fixture["corpus"], "input.corpus"),
            standing_policy=normalise_standing_policy(
                fixture["standing_policy"], "input.standing_policy"
            ),
            provider_binding=binding,
            observed_at=v.timestamp(fixture["observed_at"], "input.observed_at"),
            execute=False,
            provider=build_provider(binding, repo=None),
        )
        return receipt, "Reward memory ingest (fixture, no write)"
    route = v.exact_keys(source, "input", _ROUTE_KEYS, frozenset({"adapter"}))
    resolution = _resolve(args)
    status = resolution.status
    if not status["available"] or resolution.config is None:
        v.fail(
            "agent_id",
            f"has no available experiment ({status['status']})",
            "experiment_unavailable",
        )
    config = resolution.config
    event = v.mapping(route["event"], "input.event")
    surface = config["surfaces"].get(event.get("surface_id"))
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
        observed_at=v.timestamp(route["observed_at"], "input.observed_at"),
        execute=args.execute,
        provider=build_provider(entry["provider_binding"], repo=resolution.repo),
        automatic_recall=status["automatic_recall"],
    )
    receipt["experiment"] = status
    return receipt, "Reward memory ingest"


def recall(args: argparse.Namespace) -> Result:
    """``recall``: the automatic recall hook for one surface of a bound Goal/Agent."""
    from capabilities.reward_memory import values as v
    from capabilities.reward_memory.runtime import run_automatic_recall

    resolution = _resolve(args)
    if not resolution.status["available"] or resolution.config is None:
        v.fail(
            "agent_id",
            f"has no available experiment ({resolution.status['status']})",
            "experiment_unavailable",
        )
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
    guidance = document.get("output", {}).get("guidance", [])
    if not args.show_guidance:
        # Recalled text is private memory: the default output carries refs only.
        document["output"] = {
            "guidance": [
                {"candidate_ref": item["candidate_ref"], "target_class": item["target_class"]}
                for item in guidance
            ]
        }
        document["application"] = {**document["application"], "output": document["output"]}
    return document, "Reward memory recall"


def configure(args: argparse.Namespace) -> Result:
    """``configure``: preview or commit a verified binding (canary write + readback)."""
    from capabilities.reward_memory.enablement import configure_binding

    document = configure_binding(
        registry_path=Path(_registry_path(args)),
        goal_id=args.goal_id,
        agent_id=args.agent_id,
        config_path=args.config,
        execute=args.execute,
        clear=args.clear,
    )
    return document, "Reward memory configuration"


def _common(parser: argparse.ArgumentParser, *, binding: bool = True) -> None:
    parser.add_argument(
        "--format",
        choices=("json", "markdown"),
        default="json",
        help="json: one compact document; markdown: tables for people",
    )
    if binding:
        parser.add_argument("--registry", help=f"binding registry file (or ${REGISTRY_ENV})")


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``reward-memory`` and its sub-commands to the CLI."""
    group = commands.add_parser("reward-memory", help="reward memory: status, ingest, recall")
    sub = group.add_subparsers(dest="reward_memory_command", required=True)

    status = sub.add_parser("experiment-status", help="resolve one binding (no provider call)")
    _common(status)
    status.add_argument("--goal-id", required=True)
    status.add_argument("--agent-id", required=True)
    status.set_defaults(handler=experiment_status)

    ingest = sub.add_parser(
        "ingest-event", help="plan or execute one standing-policy write with exact readback"
    )
    _common(ingest)
    ingest.add_argument(
        "--input",
        required=True,
        help="with --goal-id/--agent-id: {event, observed_at[, adapter]}; without: a full "
        "fixture {adapter, event, corpus, standing_policy, provider_binding, observed_at} "
        "evaluated without writing",
    )
    ingest.add_argument("--goal-id")
    ingest.add_argument("--agent-id")
    ingest.add_argument("--execute", action="store_true", help="write and read back exactly")
    ingest.set_defaults(handler=ingest_event)

    recall_parser = sub.add_parser("recall", help="run the recall hook for one surface")
    _common(recall_parser)
    recall_parser.add_argument("--goal-id", required=True)
    recall_parser.add_argument("--agent-id", required=True)
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

    conf = sub.add_parser(
        "configure", help="enable reward memory for one Agent (preview unless --execute)"
    )
    _common(conf)
    conf.add_argument("--goal-id", required=True)
    conf.add_argument("--agent-id", required=True)
    conf.add_argument("--config", help="repo-relative path of the v1 experiment config")
    conf.add_argument(
        "--execute", action="store_true", help="canary write, exact readback, commit the binding"
    )
    conf.add_argument("--clear", action="store_true", help="disable the binding")
    conf.set_defaults(handler=configure)
