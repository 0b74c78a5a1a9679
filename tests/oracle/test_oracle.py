"""Side-by-side comparison with LoopX 2.1.1 on our own fixtures (shared/spec/oracle.md)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import utility_cases
from fixtures import f1
from rm_support import operator_checkpoint, recording

from capabilities.reward_memory.binding.registry import load_registry, resolve
from capabilities.reward_memory.contract.candidate import (
    build_candidate,
    normalise_event,
    scoped_feedback_candidate,
)
from capabilities.reward_memory.contract.config import normalise_config
from capabilities.reward_memory.contract.values import RewardMemoryInputError
from capabilities.reward_memory.curation.review import review_candidate
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from capabilities.reward_memory.memory.request import build_recall_request
from capabilities.reward_memory.utility.proposal import build_observation
from capabilities.reward_memory.utility.reducer import project
from oracle.driver import run_cli, run_python
from oracle.memprovider import MEM_PROVIDER
from turn_hooks.errors import TurnHooksError

pytestmark = pytest.mark.oracle


def ours_or_error(call):
    try:
        return call()
    except TurnHooksError as exc:  # RewardMemoryInputError, UtilityError
        return {"error": exc.reason_code}


def same_verdict(ours, theirs):
    if "error" in ours or "error" in theirs:
        return ("error" in ours) == ("error" in theirs)
    return ours == theirs


def changed(document, change):
    copied = copy.deepcopy(document)
    change(copied)
    return copied


CONFIGS = {
    "f1": f1.config(),
    "explicit-ingest-off": f1.config(automatic_ingest=False),
    "hints": changed(
        f1.config(),
        lambda d: d["project_provider_binding"].update(
            timeout_seconds=12.5, setup_hints={"install": " pip  install x ", "configure": ""}
        ),
    ),
    "fail-open-false": changed(f1.config(), lambda d: d.update(automation={"fail_open": False})),
    "unknown-key": changed(f1.config(), lambda d: d.update(extra=1)),
    "bad-digest": changed(
        f1.config(), lambda d: d["corpora"][0]["corpus"].update(provider_scope_ref_digest="0" * 16)
    ),
    "wrong-peer": changed(
        f1.config(), lambda d: d["project_provider_binding"].update(actor_peer_id="other")
    ),
    "policy-owner": changed(
        f1.config(), lambda d: d["corpora"][0]["standing_policy"].update(owner_ref="owner:x")
    ),
    "bool-timeout": changed(
        f1.config(), lambda d: d["project_provider_binding"].update(timeout_seconds=True)
    ),
}

LOAD_CONFIGS = """
from loopx.capabilities.reward_memory import experiment as e
import tempfile
out = {}
for name, document in request.items():
    directory = Path(tempfile.mkdtemp()); (directory / "c.json").write_text(json.dumps(document))
    try:
        out[name] = e.load_reward_memory_experiment_config(project=directory, config_path="c.json")
    except Exception as exc:
        out[name] = {"error": type(exc).__name__}
print(json.dumps(out))
"""


def test_config_normalisation_matches():
    theirs = run_python(LOAD_CONFIGS, CONFIGS)
    for name, document in CONFIGS.items():
        assert same_verdict(ours_or_error(lambda d=document: normalise_config(d)), theirs[name]), (
            name
        )


def event_with(change):
    return changed(f1.event(), change)


EVENTS = {
    "f1": f1.event(),
    "no-experience": event_with(lambda e: e.pop("experience")),
    "stale": event_with(
        lambda e: e["guard_context"].update(
            source_freshness="stale", conflict_state="unresolved", current_artifact_verified=False
        )
    ),
    "scopes": event_with(lambda e: e.update(requested_action_scopes=["deploy", "a"])),
    "hard": event_with(lambda e: e.update(target_class="hard_policy")),
    "unicode": event_with(lambda e: e.update(content_summary="  先运行  聚焦测试，再跑全量。 ")),  # noqa: RUF001 - Chinese text by design
    "long": event_with(lambda e: e.update(content_summary="word " * 200)),
    "path": event_with(lambda e: e.update(content_summary="see /home/u/x")),
    "extra-key": event_with(lambda e: e.update(extra=1)),
    "raw": event_with(lambda e: e.update(raw_content_captured=True)),
    "user-ref": event_with(lambda e: e.update(user_ref="user:lin", session_ref="")),
    "wrong-role": event_with(lambda e: e["source"].update(actor_role="maintainer")),
}

CANDIDATES = """
from loopx.capabilities.reward_memory import scoped_feedback
build = scoped_feedback.build_scoped_feedback_reward_memory_candidate
out = {}
for name, event in request.items():
    try:
        out[name] = build(event)
    except Exception as exc:
        out[name] = {"error": type(exc).__name__}
print(json.dumps(out))
"""


def test_candidate_packets_match():
    theirs = run_python(CANDIDATES, EVENTS)
    for name, event in EVENTS.items():
        ours = ours_or_error(lambda e=event: scoped_feedback_candidate(normalise_event(e)))
        assert same_verdict(ours, theirs[name]), name


INGEST = (
    MEM_PROVIDER
    + """
from loopx.capabilities.reward_memory import scoped_feedback
ingest = scoped_feedback.ingest_scoped_feedback_reward_memory_event
out = {}
for name, event in request["events"].items():
    provider = MemProvider()
    kwargs = dict(corpus=request["corpus"], standing_policy=request["policy"],
                  provider_binding=request["binding"], observed_at=request["observed_at"],
                  provider=provider)
    try:
        out[name] = {"dry": ingest(event, **kwargs), "first": ingest(event, execute=True, **kwargs),
                     "second": ingest(event, execute=True, **kwargs), "store": provider.store}
    except Exception as exc:
        out[name] = {"error": type(exc).__name__}
print(json.dumps(out))
"""
)
PROVIDER_SPECIFIC = {"write", "readback", "destination_recall", "provider_ref"}


def test_ingest_receipts_and_stored_bytes_match(tmp_path):
    entry = normalise_config(f1.config())["corpora"]["experience"]
    request = {
        "events": EVENTS,
        "corpus": entry["corpus"],
        "policy": entry["standing_policy"],
        "binding": entry["provider_binding"],
        "observed_at": f1.OBSERVED_AT,
    }
    theirs = run_python(INGEST, request)
    for name, event in EVENTS.items():
        provider = recording(tmp_path / name)
        kwargs = {
            "corpus": entry["corpus"],
            "standing_policy": entry["standing_policy"],
            "provider_binding": {**entry["provider_binding"]},
            "observed_at": f1.OBSERVED_AT,
            "provider": provider,
        }
        if "error" in theirs[name]:
            with pytest.raises(RewardMemoryInputError):
                ingest_scoped_event(copy.deepcopy(event), **kwargs)
            continue
        for phase, execute in (("dry", False), ("first", True), ("second", True)):
            ours = ingest_scoped_event(copy.deepcopy(event), execute=execute, **kwargs)
            mask = {k: v for k, v in ours.items() if k not in PROVIDER_SPECIFIC}
            expected = {k: v for k, v in theirs[name][phase].items() if k not in PROVIDER_SPECIFIC}
            assert mask == expected, (name, phase)
        for uri, text in theirs[name]["store"].items():
            assert provider.inner.read_exact(uri, actor_peer_id=f1.PEER) == text, name


RECALL_REQUESTS = """
from loopx.capabilities.reward_memory.application import build_reward_memory_recall_request as build
out = {}
for name, (corpus, req, checkpoint) in request.items():
    try:
        out[name] = build(corpus, req, read_authority_checkpoint=checkpoint)
    except Exception as exc:
        out[name] = {"error": type(exc).__name__}
print(json.dumps(out))
"""


def test_recall_requests_match():
    corpus = normalise_config(f1.config())["corpora"]["experience"]["corpus"]
    base = {
        "workspace_ref": "workspace:demo",
        "project_ref": "project:demo",
        "peer_ref": "agent:explorer",
        "surface_id": f1.SURFACE,
        "revision_ref": "turn-0001",
        "mode": "function_boundary",
        "queries": [{"query": "q", "query_summary": "s"}],
        "limit": 5,
        "observed_at": f1.OBSERVED_AT,
        "conflict_state": "clear",
        "freshness_context": {"source_truth_current": True},
        "raw_content_captured": False,
    }
    checkpoint = {
        "verified": True,
        "corpus_id": "experience",
        "workspace_ref": "workspace:demo",
        "project_ref": "project:demo",
        "surface_id": f1.SURFACE,
        "read_authority": "actor_scoped",
        "source_ref": "registry:x",
        "peer_ref": "agent:explorer",
    }
    cases = {
        "base": (corpus, base, checkpoint),
        "no-peer": (corpus, {k: v for k, v in base.items() if k != "peer_ref"}, checkpoint),
        "wrong": (
            corpus,
            {**base, "workspace_ref": "w:x", "conflict_state": "unresolved"},
            {**checkpoint, "verified": False, "source_ref": None},
        ),
        "no-freshness": (
            corpus,
            {k: v for k, v in base.items() if k != "freshness_context"},
            checkpoint,
        ),
        "no-checkpoint": (corpus, base, None),
    }
    theirs = run_python(RECALL_REQUESTS, cases)
    for name, (c, r, cp) in cases.items():
        ours = ours_or_error(
            lambda c=c, r=r, cp=cp: build_recall_request(c, r, read_authority_checkpoint=cp)
        )
        assert same_verdict(ours, theirs[name]), name


EDITED = "Run the focused module first."
REVIEWS = (
    f"EDITED = {EDITED!r}\n"
    + """
from loopx.capabilities.reward_memory import scoped_feedback
build = scoped_feedback.build_scoped_feedback_reward_memory_candidate
from loopx.capabilities.reward_memory import candidate_review
review = candidate_review.review_reward_memory_candidate
packet = build(request["event"])["shared_candidate"]
out = {}
for decision in ["accept", "edit", "reject", "retire", "no_write"]:
    extra = {"edited_content_summary": EDITED} if decision == "edit" else {}
    try:
        out[decision] = review(packet, {"decision": decision, **request["review"], **extra})
    except Exception as exc:
        out[decision] = {"error": type(exc).__name__}
out["retire_after_accept"] = review(out["accept"], {"decision": "retire", **request["review"]})
print(json.dumps(out))
"""
)


def test_review_decisions_match():
    rev = {"reviewer_ref": "reviewer:demo", "review_ref": "review:1", "reasoning_summary": "fits"}
    theirs = run_python(REVIEWS, {"event": f1.event(), "review": rev})
    packet = build_candidate(normalise_event(f1.event()))
    for decision in ["accept", "edit", "reject", "retire", "no_write"]:
        extra = (
            {"edited_content_summary": "Run the focused module first."}
            if decision == "edit"
            else {}
        )
        ours = ours_or_error(
            lambda d=decision, x=extra: review_candidate(packet, {"decision": d, **rev, **x})
        )
        assert same_verdict(ours, theirs[decision]), decision
    accepted = review_candidate(packet, {"decision": "accept", **rev})
    assert (
        review_candidate(accepted, {"decision": "retire", **rev}) == theirs["retire_after_accept"]
    )


STATUS_VARIANTS = {
    "available": None,
    "disabled": lambda b: b.update(enabled=False),
    "agent-not-enabled": lambda b: b.update(enabled_agents=["other"]),
    "config-missing": lambda b: b.pop("config_path"),
    "drift": lambda b: b.update(config_digest="sha256:" + "0" * 64),
    "receipt-blocked": lambda b: b["enablement_receipts"]["explorer"].update(status="blocked"),
}


@pytest.mark.parametrize("name", sorted(STATUS_VARIANTS))
def test_experiment_status_cli_matches(tmp_path, name):
    registry = f1.write_goal(tmp_path)
    document = json.loads(registry.read_text())
    if STATUS_VARIANTS[name]:
        STATUS_VARIANTS[name](document["goals"][0]["control_plane"]["reward_memory"])
    registry.write_text(json.dumps(document))
    code, theirs = run_cli(
        "--registry",
        str(registry),
        "reward-memory",
        "experiment-status",
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        "--format",
        "json",
    )
    ours = resolve(load_registry(registry), f1.GOAL, f1.AGENT).status
    for document in (ours, theirs):
        for key in ("instruction", "preview_command", "apply_command", "verify_command"):
            document.get("repair", {}).pop(key, None)  # tool-specific commands and prose
    assert (code, ours) == (0, theirs)


LIFECYCLE = (
    MEM_PROVIDER
    + """
from loopx.capabilities.reward_memory import outcome_lifecycle as lifecycle
registry = Path(request["registry"])
common = dict(registry_path=registry, goal_id="demo-goal", agent_id="explorer",
              turn_key="turn-0001", observed_at="2026-08-15T00:00:00+00:00")
reflection = {"reward_memory_reflection_json": request["raw"]}
failing = MemProvider(fail_write=True)
out = {}
out["unvalidated"] = lifecycle.run_configured_turn_outcome_ingest(
    host_result=reflection, settlement_evidence=request["unattested"], provider=failing, **common)
out["no_evidence"] = lifecycle.run_configured_turn_outcome_ingest(
    host_result={"reward_memory_reflection_json": request["no_evidence"]},
    settlement_evidence=request["evidence"], provider=failing, **common)
out["fail"] = lifecycle.run_configured_turn_outcome_ingest(
    host_result=reflection, settlement_evidence=request["evidence"], provider=failing, **common)
path = lifecycle.turn_outcome_ingest_sidecar_path(
    registry.parent / "repo", goal_id="demo-goal", agent_id="explorer",
    source_event_id="ccacaaa758c25c7958af")
out["journal_pending"] = json.loads(path.read_text())
working = MemProvider()
out["reconcile"] = lifecycle.reconcile_pending_turn_outcome_ingests(
    registry_path=registry, goal_id="demo-goal", agent_id="explorer", provider=working,
    observed_at="2026-08-16T00:00:00+00:00")
out["journal_completed"] = json.loads(path.read_text())
out["reconcile_again"] = lifecycle.reconcile_pending_turn_outcome_ingests(
    registry_path=registry, goal_id="demo-goal", agent_id="explorer", provider=working)
out["replay"] = lifecycle.run_configured_turn_outcome_ingest(
    host_result=reflection, settlement_evidence=request["evidence"], provider=working, **common)
print(json.dumps(out))
"""
)


def loopx_evidence(ours: dict) -> dict:
    """The same settlement evidence as LoopX's hosts build it.

    Our hosts keep the validator's output under the capability-neutral
    ``task_validation.attestation`` (issue 14); LoopX's put it under
    ``reward_memory_reflection_validation``, which our plugin also reads.
    """
    validation = dict(ours["task_validation"])
    validation["reward_memory_reflection_validation"] = validation.pop("attestation")
    return {**ours, "task_validation": validation}


def test_turn_ingest_journal_and_reconciliation_match(tmp_path):
    from rm_support import UNAVAILABLE
    from turn_support import RAW, evidence, resolution, store_provider

    from capabilities.reward_memory.turn.journal import journal_files_of
    from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open as run
    from capabilities.reward_memory.turn.reconcile import reconcile

    # The oracle needs an openviking config and a quota readback; ours is the same binding.
    theirs_registry = f1.write_goal(tmp_path / "theirs")
    quota = {"ok": True, "appended": True}
    no_evidence = json.dumps(
        {"schema_version": "turn_reward_memory_reflection_v1", "status": "no_evidence"}
    )
    theirs = run_python(
        LIFECYCLE,
        {
            "registry": str(theirs_registry),
            "raw": RAW,
            "no_evidence": no_evidence,
            "evidence": loopx_evidence(evidence(quota=quota)),
            "unattested": evidence(attested=False, quota=quota),
        },
    )

    registry = f1.write_goal(tmp_path / "ours")
    bound = resolution(registry)
    provider = store_provider(registry)
    common = {
        "turn_key": "turn-0001",
        "observed_at": f1.OBSERVED_AT,
        "provider_for": lambda binding: provider,
    }
    ours = {
        "unvalidated": run(
            bound,
            host_result={"reward_memory_reflection_json": RAW},
            evidence=evidence(attested=False, quota=quota),
            **common,
        ),
        "no_evidence": run(
            bound,
            host_result={"reward_memory_reflection_json": no_evidence},
            evidence=evidence(quota=quota),
            **common,
        ),
    }
    provider.fail["write"] = UNAVAILABLE
    ours["fail"] = run(
        bound,
        host_result={"reward_memory_reflection_json": RAW},
        evidence=evidence(quota=quota),
        **common,
    )
    [journal] = journal_files_of(registry.parent / "repo")
    ours["journal_pending"] = json.loads(journal.read_text())
    provider.fail.clear()
    ours["reconcile"] = reconcile(
        bound, provider_for=common["provider_for"], observed_at="2026-08-16T00:00:00+00:00"
    )
    ours["journal_completed"] = json.loads(journal.read_text())
    ours["reconcile_again"] = reconcile(bound, provider_for=common["provider_for"])
    ours["replay"] = run(
        bound,
        host_result={"reward_memory_reflection_json": RAW},
        evidence=evidence(quota=quota),
        **common,
    )
    for key, value in ours.items():
        assert value == theirs[key], key


def _utility_cli(tmp_path, name, document):
    source = tmp_path / f"{name}.json"
    source.write_text(json.dumps(document))
    return source, run_cli(
        "reward-memory", "utility-project", "--input", str(source), "--format", "json"
    )


# LoopX accepts an item observation with two digests, then fails its own projection
# check (invalid_request). We reject the observation itself, with a reason code; both
# exit 2. Documented in the README's differences table.
KNOWN_DIFFERENCES = {"item_with_two_digests"}


@pytest.mark.parametrize("name", sorted(utility_cases.cases()))
def test_utility_projections_match(tmp_path, name):
    document = utility_cases.cases()[name]
    _source, (code, theirs) = _utility_cli(tmp_path, name, document)
    ours = project(document)
    if name in KNOWN_DIFFERENCES:
        assert (code, ours["ok"], theirs["status"]) == (2, False, "invalid_request")
        return
    assert (0 if ours["ok"] else 2, ours) == (code, theirs)


@pytest.mark.parametrize("name", sorted(utility_cases.SHAPE_ERRORS))
def test_utility_input_shape_errors_match(tmp_path, name):
    _source, (code, theirs) = _utility_cli(tmp_path, name, utility_cases.SHAPE_ERRORS[name])
    with pytest.raises(RewardMemoryInputError) as raised:
        project(utility_cases.SHAPE_ERRORS[name])
    ours = raised.value.to_public()
    assert (code, theirs["schema_version"], theirs["status"]) == (
        2,
        ours["schema_version"],
        ours["status"],
    )


BUILD = """
from loopx.capabilities.reward_memory import memory_utility as m
out = {}
for name, (receipt, verified, context, proposal) in request.items():
    try:
        out[name] = m.build_reward_memory_utility_observation(
            receipt, verified, context, proposal, created_at="2026-08-16T00:00:00Z")
    except ValueError as exc:
        out[name] = {"error": type(exc).__name__}
print(json.dumps(out))
"""


def test_utility_observations_built_from_the_same_facts_match():
    base = (
        utility_cases.RECEIPT,
        utility_cases.VERIFIED,
        utility_cases.CONTEXT,
        utility_cases.PROPOSAL,
    )
    variants = {
        "u1": base,
        "set": (*base[:3], {**base[3], "attribution_level": "set"}),
        "ignored_receipt": ({**base[0], "outcome": "ignored"}, *base[1:]),
        "receipt_snapshot": ({**base[0], "retrieval_snapshot_ref": "snapshot:r1"}, *base[1:]),
        "wrong_item": (*base[:3], {**base[3], "memory_ref_digests": ["1111111111111111"]}),
        "wrong_outcome": (*base[:3], {**base[3], "outcome_status": "failed"}),
        "unverified": (base[0], {**base[1], "verified": False}, *base[2:]),
    }
    theirs = run_python(BUILD, variants)
    for name, (receipt, verified, context, proposal) in variants.items():
        ours = ours_or_error(
            lambda r=receipt, v=verified, c=context, p=proposal: build_observation(
                r, v, c, p, created_at=utility_cases.CREATED_AT
            )
        )
        assert same_verdict(ours, theirs[name]), name
        if "error" not in ours:
            assert ours == theirs[name], name


def _operator_input():
    packet = build_candidate(normalise_event(f1.event()))
    rev = {"reviewer_ref": "reviewer:demo", "review_ref": "review:1", "reasoning_summary": "fits"}
    return {
        "reviewed_record": review_candidate(packet, {"decision": "accept", **rev}),
        "corpus": f1.corpus("embedded_sqlite"),
    }


OPERATOR_VARIANTS = {
    "retire": ("retire", {}),
    "edit": ("edit", {}),
    "wrong_authority": ("retire", {"authority_ref": "owner:other"}),
    "wrong_corpus": ("retire", {"corpus_id": "other"}),
    "wrong_project": ("retire", {"project_ref": "project:x"}),
    "wrong_action": ("edit", {"action": "retire"}),
    "unverified": ("retire", {"verified": False}),
}


@pytest.mark.parametrize("name", sorted(OPERATOR_VARIANTS))
def test_operator_controls_match(tmp_path, name):
    action, change = OPERATOR_VARIANTS[name]
    document = _operator_input()
    document["operator_checkpoint"] = operator_checkpoint(**{"action": action, **change})
    source = tmp_path / "control.json"
    source.write_text(json.dumps(document))
    flags = ["--input", str(source), "--action", action, "--control-ref", "control:1"]
    flags += ["--reasoning-summary", "stale memory"]
    if action == "edit":
        flags += ["--edited-content-summary", "Run the focused module first."]
    code, theirs = run_cli("reward-memory", "operator-control", *flags, "--format", "json")
    result = cli_run_json("reward-memory", "operator-control", *flags)
    assert (result[0], result[1]["ok"], result[1].get("status")) == (
        code,
        theirs["ok"],
        theirs["status"],
    )
    if theirs["ok"]:
        assert result[1] == theirs


def cli_run_json(*argv):
    """Our command in a new process, as a user runs it: exit code and JSON."""
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode, json.loads(result.stdout)


@pytest.mark.parametrize(
    "name", sorted(utility_cases.dogfood_cases()) + sorted(utility_cases.DOGFOOD_ERRORS)
)
def test_dogfood_batches_match(tmp_path, name):
    document = {**utility_cases.dogfood_cases(), **utility_cases.DOGFOOD_ERRORS}[name]
    source = tmp_path / "batch.json"
    source.write_text(json.dumps(document))
    args = ("reward-memory", "dogfood-evaluate", "--input", str(source))
    code, theirs = run_cli(*args, "--format", "json")
    ours_code, ours = cli_run_json(*args)
    assert ours_code == code
    if theirs["schema_version"] == "reward_memory_error_v0":
        assert (ours["schema_version"], ours["status"]) == (
            theirs["schema_version"],
            "invalid_request",
        )
    else:
        assert ours == theirs
