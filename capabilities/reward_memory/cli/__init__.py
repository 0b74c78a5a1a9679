"""The ``turn-hooks reward-memory`` commands.

Handlers import the core lazily, so registering the commands costs nothing on the
per-Turn hook path. Each returns ``(document, title)`` or raises a typed error; the
CLI prints JSON errors with exit code 2, as upstream does.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

REGISTRY_ENV = "TURN_HOOKS_REGISTRY"

Result = tuple[dict[str, Any], str]


def _registry_path(args: argparse.Namespace) -> str:
    from capabilities.reward_memory.contract import values as v

    path = args.registry or os.environ.get(REGISTRY_ENV)
    if not path:
        v.fail("registry", f"is required (--registry or {REGISTRY_ENV})", "registry_missing")
    return str(path)


def _read_input(source: str) -> Any:
    """The ``--input`` file through the package's bounded JSON reader; at most one byte
    over the bound is read. Every refusal is a ``reward_memory_error_v0``."""
    from capabilities.reward_memory.contract import values as v
    from turn_hooks import MAX_JSON_SIZE, InvalidInputError, loads_bounded

    try:
        with open(source, "rb") as handle:
            data = handle.read(MAX_JSON_SIZE + 1)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        v.fail("input", "cannot be read", "input_unreadable")
    try:
        return loads_bounded(data)
    except InvalidInputError as exc:
        raise v.RewardMemoryInputError(
            exc.message, reason_code=exc.reason_code, field="input"
        ) from exc


def _argv(text: str, field: str, reason_code: str) -> list[str]:
    """A JSON argv option (a non-empty list of strings), refused with ``reason_code``."""
    from capabilities.reward_memory.contract import values as v
    from turn_hooks import InvalidInputError, argv_from_json

    try:
        return argv_from_json(text, reason_code=reason_code, field=field)
    except InvalidInputError as exc:
        raise v.RewardMemoryInputError(
            f"{field} must be a JSON list of strings", reason_code=reason_code, field=field
        ) from exc


def _resolve(args: argparse.Namespace) -> Any:
    from capabilities.reward_memory.binding.registry import load_registry, resolve

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
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.contract.corpus import (
        normalise_corpus,
        normalise_standing_policy,
    )
    from capabilities.reward_memory.memory.ingest import ingest_scoped_event

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
            # A fixture is a preview: it must not leave a store behind in the cwd.
            provider=build_provider(binding, repo=None, dry_run=True),
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
        # A preview writes nothing anywhere, not even an empty store.
        provider=build_provider(
            entry["provider_binding"], repo=resolution.repo, dry_run=not args.execute
        ),
        automatic_recall=status["automatic_recall"],
    )
    receipt["experiment"] = status
    return receipt, "Reward memory ingest"


def recall(args: argparse.Namespace) -> Result:
    """``recall``: the automatic recall hook for one surface of a bound Goal/Agent."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.memory.hook import run_automatic_recall

    resolution = _resolve(args)
    if not resolution.status["available"] or resolution.config is None:
        v.fail(
            "agent_id",
            f"has no available experiment ({resolution.status['status']})",
            "experiment_unavailable",
        )
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


def reconcile_journals(args: argparse.Namespace) -> Result:
    """``reconcile``: retry pending Turn journals of the current binding (at most 3)."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.turn.reconcile import reconcile

    resolution = _resolve(args)
    return reconcile(
        resolution,
        provider_for=lambda binding: build_provider(binding, repo=resolution.repo),
        limit=args.limit,
    ), "Reward memory reconciliation"


def configure(args: argparse.Namespace) -> Result:
    """``configure``: preview or commit a verified binding (canary write + readback)."""
    from capabilities.reward_memory.binding.enablement import configure_binding

    document = configure_binding(
        registry_path=Path(_registry_path(args)),
        goal_id=args.goal_id,
        agent_id=args.agent_id,
        config_path=args.config,
        execute=args.execute,
        clear=args.clear,
    )
    return document, "Reward memory configuration"


def corpus_registry(args: argparse.Namespace) -> Result:
    """``corpus-registry``: the declared corpora of the bound config; no provider call."""
    from capabilities.reward_memory.reports.corpora import corpus_registry as project

    return project(_resolve(args)), "Reward memory corpus registry"


def health_check(args: argparse.Namespace) -> Result:
    """``health-check``: the five health states of each corpus; read calls only."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.reports.corpora import corpus_health

    resolution = _resolve(args)
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
    source = _read_input(args.input) if args.input else builtin_case(args.case)
    return check(source), "Pilot/meta route check"


def architecture(args: argparse.Namespace) -> Result:
    """``architecture``: the machine-readable contract (classes, precedence, stages)."""
    from capabilities.reward_memory.reports.architecture import architecture as contract

    return contract(), "Reward memory architecture"


def dogfood_evaluate(args: argparse.Namespace) -> Result:
    """``dogfood-evaluate``: settle a bounded batch; exit 2 unless it is ready."""
    from capabilities.reward_memory.reports.dogfood import evaluate_batch
    from capabilities.reward_memory.reports.evaluation import evaluate as stage4

    return evaluate_batch(_read_input(args.input), stage4=stage4), "Reward memory dogfood batch"


def evaluate(args: argparse.Namespace) -> Result:
    """``evaluate``: the Stage 4 contract suite and release gate; exit 2 unless it passes."""
    from capabilities.reward_memory.reports.evaluation import evaluate as run_suite

    return run_suite(), "Reward memory evaluation"


def candidate_review(args: argparse.Namespace) -> Result:
    """``candidate-review``: one review decision as a record; never a write."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.curation.review import review_candidate

    source = v.exact_keys(_read_input(args.input), "input", frozenset({"candidate", "review"}))
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
        _read_input(args.input),
        action=args.action,
        control_ref=args.control_ref,
        reasoning_summary=args.reasoning_summary,
        edited_content_summary=args.edited_content_summary,
    ), "Reward memory operator control"


def retire_memory(args: argparse.Namespace) -> Result:
    """``retire``: the owner's retirement write for a decided operator control."""
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.curation.retirement import retire

    resolution = _resolve(args)
    return retire(
        resolution,
        _read_input(args.input),
        provider_for=lambda binding: build_provider(binding, repo=resolution.repo),
        execute=args.execute,
    ), "Reward memory retirement"


def utility_project(args: argparse.Namespace) -> Result:
    """``utility-project``: reduce an observation stream; exit 2 unless ``ok``."""
    from capabilities.reward_memory.utility.reducer import project

    return project(_read_input(args.input)), "Memory utility projection"


def utility_observe(args: argparse.Namespace) -> Result:
    """``utility-observe``: one observation from trusted facts and an evaluator's proposal."""
    from capabilities.reward_memory.utility.evaluator import observe

    argv = None
    if args.evaluator_command_json:
        argv = _argv(args.evaluator_command_json, "evaluator_command_json", "usage_invalid")
    return observe(
        _read_input(args.input), evaluator_argv=argv, timeout=args.evaluator_timeout_seconds
    ), "Memory utility observation"


def _app_ids(args: argparse.Namespace, resolution: Any) -> tuple[str, str]:
    from capabilities.reward_memory.contract.identities import app_candidate_id

    effect = args.effect_id or f"writeback:{args.turn_id}"
    status = resolution.status
    return effect, app_candidate_id(
        status["goal_id"], status["agent_id"], args.todo_id, args.turn_id, effect
    )


def _finalize_if_settled(resolution: Any, candidate: str) -> dict[str, Any] | None:
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.turn.app import finalize, ledger_state

    state = ledger_state(resolution, candidate)
    if not (state["writeback"] and state["spend"]):
        return None
    return finalize(
        resolution,
        candidate_id=candidate,
        writeback_appended=True,
        spend_appended=True,
        provider_for=lambda binding: build_provider(binding, repo=resolution.repo),
    )


def _refuse_unbounded_reflection(text: str | None) -> None:
    """Refuse, as ``reflection_invalid``, reflection argv that nests too deeply or holds
    a number literal too long for any reader; everything else is the stage's to judge."""
    from capabilities.reward_memory.contract import values as v
    from capabilities.reward_memory.contract.experience import MAX_REFLECTION_BYTES
    from turn_hooks import InvalidInputError, loads_bounded

    if not text or len(text.encode("utf-8")) > MAX_REFLECTION_BYTES:
        return
    try:
        loads_bounded(text)
    except InvalidInputError as exc:
        if exc.reason_code in {"input_too_deep", "input_number_too_long"}:
            v.fail("reward_memory_reflection_json", "is not bounded JSON", "reflection_invalid")


def app_refresh_state(args: argparse.Namespace) -> Result:
    """``codex-app refresh-state``: record the settled Turn, stage and validate its reflection."""
    from capabilities.reward_memory.turn.app import declaration, record_step, stage

    resolution = _resolve(args)
    effect, candidate = _app_ids(args, resolution)
    argv = None
    if args.validation_command_json:
        argv = _argv(
            args.validation_command_json,
            "validation_command_json",
            "validation_declaration_invalid",
        )
    declared = declaration(argv, args.validation_timeout_seconds) if argv else None
    _refuse_unbounded_reflection(args.reward_memory_reflection_json)
    workspace = Path(args.validation_workspace) if args.validation_workspace else resolution.repo
    staged = stage(
        resolution,
        todo_id=args.todo_id,
        turn_instance_id=args.turn_id,
        effect_id=effect,
        reflection_json=args.reward_memory_reflection_json,
        declared=declared,
        workspace=workspace,
        restage=args.restage,
    )
    if resolution.status["available"]:
        record_step(resolution, candidate, "writeback")
    return {
        "ok": True,
        "schema_version": "turn_hooks_codex_app_refresh_v0",
        "stage": staged,
        "finalize": _finalize_if_settled(resolution, candidate),
    }, "Codex App refresh"


def app_spend_slot(args: argparse.Namespace) -> Result:
    """``codex-app spend-slot``: record the spend once, then finalize a staged candidate."""
    from capabilities.reward_memory.turn.app import ledger_state, record_step

    resolution = _resolve(args)
    _effect, candidate = _app_ids(args, resolution)
    if not args.execute:
        state = ledger_state(resolution, candidate)
        return {
            "ok": True,
            "schema_version": "turn_hooks_codex_app_spend_v0",
            "mode": "preview",
            "already_charged": state["spend"],
            "charged": False,
            "finalize": None,
        }, ("Codex App spend (preview)")
    appended, charged = record_step(resolution, candidate, "spend")
    return {
        "ok": True,
        "schema_version": "turn_hooks_codex_app_spend_v0",
        "mode": "execute",
        "already_charged": appended and not charged,
        "charged": charged,
        "spend_read_back": appended,
        "finalize": _finalize_if_settled(resolution, candidate),
    }, "Codex App spend"


def _app_parser(commands: argparse._SubParsersAction[Any]) -> None:
    app = commands.add_parser("codex-app", help="Codex App two-phase settlement: stage, then spend")
    sub = app.add_subparsers(dest="codex_app_command", required=True)
    refresh = sub.add_parser("refresh-state", help="record the settled Turn; stage its reflection")
    spend = sub.add_parser("spend-slot", help="record the spend once; finalize a staged candidate")
    for parser in (refresh, spend):
        _common(parser)
        parser.add_argument("--goal-id", required=True)
        parser.add_argument("--agent-id", required=True)
        parser.add_argument("--todo-id", required=True, help="the Todo (or thread) id")
        parser.add_argument("--turn-id", required=True, help="the App turn id")
        parser.add_argument("--effect-id", help="settlement effect id (default writeback:<turn>)")
    refresh.add_argument("--reward-memory-reflection-json", help="the v1 reflection JSON text")
    refresh.add_argument("--validation-command-json", help="the Todo's validator argv as JSON")
    refresh.add_argument("--validation-timeout-seconds", type=int, default=20)
    refresh.add_argument("--validation-workspace", help="validator cwd (default: Goal repository)")
    refresh.add_argument(
        "--restage",
        action="store_true",
        help="accept a changed validator declaration for this identity",
    )
    refresh.set_defaults(handler=app_refresh_state)
    spend.add_argument("--execute", action="store_true", help="record the spend (once)")
    spend.set_defaults(handler=app_spend_slot)


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
    """Add ``reward-memory`` and ``codex-app`` and their sub-commands to the CLI."""
    _app_parser(commands)
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

    again = sub.add_parser("reconcile", help="retry pending Turn journals of this binding")
    _common(again)
    again.add_argument("--goal-id", required=True)
    again.add_argument("--agent-id", required=True)
    again.add_argument("--limit", type=int, default=3, help="journals to retry (1..3)")
    again.set_defaults(handler=reconcile_journals)

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

    inventory = sub.add_parser(
        "corpus-registry",
        help="the bound config's corpora: owner, authority, freshness, isolation, surfaces",
    )
    health = sub.add_parser(
        "health-check",
        help="probe each corpus (read calls only): present, indexed, searchable, read, applied",
    )
    for parser, handler in ((inventory, corpus_registry), (health, health_check)):
        _common(parser)
        parser.add_argument("--goal-id", required=True)
        parser.add_argument("--agent-id", required=True)
        parser.set_defaults(handler=handler)

    contract = sub.add_parser(
        "architecture", help="the machine-readable contract: classes, precedence, stages"
    )
    _common(contract, binding=False)
    contract.set_defaults(handler=architecture)

    dogfood = sub.add_parser(
        "dogfood-evaluate",
        help="settle a bounded dogfood batch and decide its readiness (exit 2 unless ready)",
        description="The input is {observations, operator_controls}: up to 24 settled "
        "applications (domain_family, domain_id, application_receipt, module_outcome, cost, "
        "intervention, optional bot_feedback and utility_attribution) and up to 8 "
        "operator-control receipts. Runs the Stage 4 suite for its gate.",
    )
    _common(dogfood, binding=False)
    dogfood.add_argument("--input", required=True, help="the batch (JSON file)")
    dogfood.set_defaults(handler=dogfood_evaluate)

    suite = sub.add_parser(
        "evaluate",
        help="run the eight-case contract suite over the real core; print the release gate",
    )
    _common(suite, binding=False)
    suite.set_defaults(handler=evaluate)

    review = sub.add_parser(
        "candidate-review",
        help="record one review decision for a candidate (the decision, never the write)",
        description="The input is {candidate, review}: candidate is a reward_memory_candidate_v0 "
        "packet (or a previous review, to retire what was accepted) and review is "
        "{reviewer_ref, review_ref, reasoning_summary[, edited_content_summary]}. The "
        "declared corpus owner performs any write afterwards, with exact readback.",
    )
    _common(review, binding=False)
    review.add_argument("--input", required=True, help="{candidate, review} (JSON file)")
    review.add_argument(
        "--decision", required=True, choices=("accept", "edit", "reject", "retire", "no_write")
    )
    review.set_defaults(handler=candidate_review)

    control = sub.add_parser(
        "operator-control",
        help="an operator's edit or retirement of an active memory, checked against the corpus",
        description="The input is {reviewed_record, corpus, operator_checkpoint}: an accepted "
        "review, the corpus declaration, and a verified checkpoint {verified, action, "
        "operator_ref, authority_ref, source_ref, corpus_id, project_ref}. The authority must "
        "be the corpus owner (edit) or its retirement authority (retire). Prints the decision "
        "and a receipt naming the owner's next step; writes nothing.",
    )
    _common(control, binding=False)
    control.add_argument("--input", required=True, help="the JSON file described above")
    control.add_argument("--action", required=True, choices=("edit", "retire"))
    control.add_argument("--control-ref", required=True, help="this control's reference")
    control.add_argument("--reasoning-summary", required=True, help="why (compact, public-safe)")
    control.add_argument("--edited-content-summary", help="edit: the replacement summary")
    control.set_defaults(handler=operator_control)

    retirement = sub.add_parser(
        "retire",
        help="the corpus owner's retirement write for an operator-control decision",
        description="The input is the output of `operator-control --action retire`. Checks "
        "the live corpus declaration, reads the stored record exactly, replaces it with the "
        "same record marked retired and reads that back (--execute); otherwise plans only.",
    )
    _common(retirement)
    retirement.add_argument("--goal-id", required=True)
    retirement.add_argument("--agent-id", required=True)
    retirement.add_argument("--input", required=True, help="the operator-control result")
    retirement.add_argument("--execute", action="store_true", help="write and read back exactly")
    retirement.set_defaults(handler=retire_memory)

    projection = sub.add_parser(
        "utility-project",
        help="reduce utility observations into memory_utility_projection_v0 (exit 2 unless ok)",
    )
    _common(projection, binding=False)
    projection.add_argument(
        "--input",
        required=True,
        help="{observations, scope, retrieval_snapshot_ref, policy_snapshot_ref"
        "[, reducer_version, previous_projection]}",
    )
    projection.set_defaults(handler=utility_project)

    observation = sub.add_parser(
        "utility-observe",
        help="build one memory_utility_observation_v0 from trusted facts and an evaluator",
        description="The input holds the trusted facts {application_receipt, verified_outcome, "
        "attribution_context, created_at} and, unless --evaluator-command-json names an "
        "evaluator to run, the evaluator_proposal. An absent, failing, timed-out or "
        "malformed evaluator yields status not_observed and changes nothing.",
    )
    _common(observation, binding=False)
    observation.add_argument("--input", required=True, help="the trusted facts (JSON file)")
    observation.add_argument(
        "--evaluator-command-json",
        help='the evaluator argv, e.g. ["cmd", "arg"]: facts on stdin, proposal on stdout',
    )
    observation.add_argument(
        "--evaluator-timeout-seconds", type=int, default=20, choices=range(1, 121), metavar="1..120"
    )
    observation.set_defaults(handler=utility_observe)

    route = sub.add_parser(
        "route-check",
        help="route a proposed change: pilot_fix, meta_design_gate or hold_for_evidence",
        description="The input is a reward_memory_route_check_input_v0 change description "
        "(behavior, surfaces_touched, semantic_contract_change, generic_boundary_leakage, "
        "edge_case_complexity, reproduction_named, validation_named, change{user_visible, "
        "hot_path_or_storage, retrieval_quality_claim}, evidence{effect, ux, performance, "
        "benchmark}, optional case_id and prior_memory_hit{recommended_route}).",
    )
    _common(route, binding=False)
    route.add_argument("--input", help="the change description (JSON file)")
    route.add_argument("--case", help="a built-in case instead of --input (pr-3237)")
    route.set_defaults(handler=route_check)
