"""`turn-hooks reward-memory ...` end to end on the embedded store."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from fixtures import f1
from rm_support import operator_checkpoint, unenabled_goal

from conformance.public_safety import public_safety_violations
from hosts.cli import command as cli


@pytest.fixture
def goal(tmp_path):
    """An embedded-store Goal whose Agent is registered but not yet enabled."""
    registry = unenabled_goal(tmp_path)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"event": f1.event(), "observed_at": f1.OBSERVED_AT}))
    return {
        "registry": str(registry),
        "event": str(event),
        "repo": tmp_path / "repo",
        "root": tmp_path,
    }


def run(capsys, *argv, private=False):
    code = cli.main(list(argv))
    out = capsys.readouterr().out
    document = json.loads(out)
    if not private:
        problems = public_safety_violations(document, raw_texts=(f1.REFLECTION["content_summary"],))
        assert not problems, problems
    return code, document


def binding(goal, *more):
    return ("--registry", goal["registry"], "--goal-id", f1.GOAL, "--agent-id", f1.AGENT, *more)


def configure(capsys, goal):
    """``reward-memory configure --execute`` with the fixture's config."""
    return run(
        capsys,
        "reward-memory",
        "configure",
        *binding(goal),
        "--config",
        f1.CONFIG_PATH,
        "--execute",
    )


def test_configure_ingest_recall_loop(capsys, goal):
    code, status = run(capsys, "reward-memory", "experiment-status", *binding(goal))
    assert (code, status["status"]) == (0, "disabled")

    code, preview = run(
        capsys, "reward-memory", "configure", *binding(goal), "--config", f1.CONFIG_PATH
    )
    assert (code, preview["status"], preview["binding_committed"]) == (0, "preflight_ready", False)
    registry = json.loads(Path(goal["registry"]).read_text())
    assert registry["goals"][0]["control_plane"]["reward_memory"]["enabled"] is False, (
        "preview never commits"
    )

    code, configured = configure(capsys, goal)
    assert (configured["status"], configured["binding_committed"]) == ("verified", True)
    assert configured["experiment"]["status"] == "available"
    assert configured["corpora"][0]["canary_written"] is True

    code, first = run(
        capsys,
        "reward-memory",
        "ingest-event",
        *binding(goal),
        "--input",
        goal["event"],
        "--execute",
    )
    assert (code, first["status"], first["exact_readback_verified"]) == (0, "activated", True)
    assert first["experiment"]["status"] == "available"
    code, second = run(
        capsys,
        "reward-memory",
        "ingest-event",
        *binding(goal),
        "--input",
        goal["event"],
        "--execute",
    )
    assert (second["status"], second["deduplicated"]) == ("activated", True)

    code, recalled = run(
        capsys, "reward-memory", "recall", *binding(goal), "--query", "focused test module"
    )
    assert (code, recalled["status"]) == (0, "applied")
    assert recalled["output"]["guidance"] == [
        {"candidate_ref": "candidate:6916d2a6fb7a59fefa81", "target_class": "procedural_experience"}
    ]
    code, private = run(
        capsys,
        "reward-memory",
        "recall",
        *binding(goal),
        "--query",
        "focused test module",
        "--show-guidance",
        private=True,
    )
    assert private["output"]["guidance"][0]["content_summary"] == f1.REFLECTION["content_summary"]

    database = goal["repo"] / ".local" / "turn-hooks" / "memory.sqlite3"
    assert stat.S_IMODE(os.stat(database).st_mode) == 0o600

    code, cleared = run(capsys, "reward-memory", "configure", *binding(goal), "--clear")
    assert (cleared["status"], cleared["experiment"]["status"]) == ("cleared", "disabled")


def test_changed_config_makes_the_binding_stale(capsys, goal):
    configure(capsys, goal)
    config = goal["repo"] / f1.CONFIG_PATH
    config.write_text(config.read_text() + "\n")
    code, status = run(capsys, "reward-memory", "experiment-status", *binding(goal))
    assert (status["status"], status["reason_code"]) == (
        "enablement_stale",
        "config_digest_missing_or_drifted",
    )
    code, refused = run(
        capsys,
        "reward-memory",
        "ingest-event",
        *binding(goal),
        "--input",
        goal["event"],
        "--execute",
    )
    assert (code, refused["reason_code"]) == (2, "experiment_unavailable")


def test_dry_run_ingest_writes_nothing(capsys, goal):
    configure(capsys, goal)
    code, receipt = run(
        capsys, "reward-memory", "ingest-event", *binding(goal), "--input", goal["event"]
    )
    assert (code, receipt["status"]) == (0, "preflight_ready")
    code, recalled = run(capsys, "reward-memory", "recall", *binding(goal), "--query", "focused")
    assert recalled["status"] == "not_available"


def test_full_fixture_form_never_writes(capsys, goal, monkeypatch):
    from capabilities.reward_memory.contract.config import normalise_config

    entry = normalise_config(f1.config("embedded_sqlite"))["corpora"]["experience"]
    fixture = goal["root"] / "fixture.json"
    fixture.write_text(
        json.dumps(
            {
                "adapter": "scoped_feedback",
                "event": f1.event(),
                "corpus": f1.corpus("embedded_sqlite"),
                "standing_policy": f1.standing_policy(),
                "provider_binding": entry["provider_binding"],
                "observed_at": f1.OBSERVED_AT,
            }
        )
    )
    monkeypatch.setenv("TURN_HOOKS_SQLITE_PATH", str(goal["root"] / "fixture.sqlite3"))
    code, receipt = run(capsys, "reward-memory", "ingest-event", "--input", str(fixture))
    assert (code, receipt["status"]) == (0, "preflight_ready")
    assert receipt["candidate_ref"] == "candidate:6916d2a6fb7a59fefa81"
    code, error = run(capsys, "reward-memory", "ingest-event", "--input", str(fixture), "--execute")
    assert (code, error["status"]) == (2, "invalid_request")


def _fixture_with_binding(root, change):
    from capabilities.reward_memory.contract.config import normalise_config

    entry = normalise_config(f1.config("embedded_sqlite"))["corpora"]["experience"]
    binding = dict(entry["provider_binding"])
    change(binding)
    fixture = root / "fixture.json"
    fixture.write_text(
        json.dumps(
            {
                "adapter": "scoped_feedback",
                "event": f1.event(),
                "corpus": f1.corpus("embedded_sqlite"),
                "standing_policy": f1.standing_policy(),
                "provider_binding": binding,
                "observed_at": f1.OBSERVED_AT,
            }
        )
    )
    return str(fixture)


def test_a_fixture_binding_without_timeout_or_hints_takes_the_defaults(capsys, goal, monkeypatch):
    """LoopX 2.1.1 defaults a fixture binding's timeout to 30 s (issue 19: it crashed)."""
    monkeypatch.setenv("TURN_HOOKS_SQLITE_PATH", str(goal["root"] / "fixture.sqlite3"))
    full = _fixture_with_binding(goal["root"], lambda b: b.update(timeout_seconds=30))
    code, expected = run(capsys, "reward-memory", "ingest-event", "--input", full)
    assert (code, expected["status"]) == (0, "preflight_ready")
    expected["write"].pop("telemetry")  # latency
    for drop in (("timeout_seconds",), ("timeout_seconds", "setup_hints")):
        bare = _fixture_with_binding(
            goal["root"], lambda b, drop=drop: [b.pop(key) for key in drop]
        )
        code, receipt = run(capsys, "reward-memory", "ingest-event", "--input", bare)
        receipt["write"].pop("telemetry")
        assert (code, receipt) == (0, expected)


@pytest.mark.parametrize("timeout", [0, 0.5, 121, True, "5", None])
def test_a_fixture_timeout_out_of_range_is_an_input_error(capsys, goal, timeout):
    fixture = _fixture_with_binding(goal["root"], lambda b: b.update(timeout_seconds=timeout))
    code, error = run(capsys, "reward-memory", "ingest-event", "--input", fixture)
    assert (code, error["status"], error["field"]) == (
        2,
        "invalid_request",
        "input.provider_binding.timeout_seconds",
    )


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (
            ("reward-memory", "experiment-status", "--goal-id", "g", "--agent-id", "a"),
            "registry_missing",
        ),
        (
            ("reward-memory", "ingest-event", "--input", "/nonexistent/file.json"),
            "input_unreadable",
        ),
        (("reward-memory", "nope"), "usage_invalid"),
    ],
)
def test_bad_invocations_are_json_errors_with_exit_2(capsys, argv, reason):
    code, error = run(capsys, *argv)
    assert (code, error["reason_code"]) == (2, reason)


@pytest.mark.parametrize(
    "payload",
    [
        "{",
        "[]",
        json.dumps({"event": f1.event()}),
        json.dumps({"event": f1.event(), "observed_at": f1.OBSERVED_AT, "adapter": "other"}),
        json.dumps(
            {
                "event": {**f1.event(), "surface_id": "unknown.surface"},
                "observed_at": f1.OBSERVED_AT,
            }
        ),
        json.dumps({"event": f1.event(), "observed_at": "yesterday"}),
        json.dumps(
            {
                "event": {**f1.event(), "content_summary": "see /home/me/notes"},
                "observed_at": f1.OBSERVED_AT,
            }
        ),
    ],
)
def test_bad_events_write_nothing(capsys, goal, payload):
    configure(capsys, goal)
    database = goal["repo"] / ".local" / "turn-hooks" / "memory.sqlite3"
    before = database.read_bytes()
    bad = goal["root"] / "bad.json"
    bad.write_text(payload)
    code, error = run(
        capsys, "reward-memory", "ingest-event", *binding(goal), "--input", str(bad), "--execute"
    )
    assert (code, error["ok"], error["status"]) == (2, False, "invalid_request")
    assert database.read_bytes() == before


def test_unregistered_agent_cannot_configure(capsys, goal):
    code, error = run(
        capsys,
        "reward-memory",
        "configure",
        "--registry",
        goal["registry"],
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        "stranger",
        "--config",
        f1.CONFIG_PATH,
    )
    assert (code, error["reason_code"]) == (2, "agent_not_registered")


def test_registry_from_the_environment(capsys, goal, monkeypatch):
    monkeypatch.setenv("TURN_HOOKS_REGISTRY", goal["registry"])
    code, status = run(
        capsys, "reward-memory", "experiment-status", "--goal-id", f1.GOAL, "--agent-id", f1.AGENT
    )
    assert (code, status["status"]) == (0, "disabled")


def test_markdown_receipt(capsys, goal):
    assert (
        cli.main(["reward-memory", "experiment-status", *binding(goal), "--format", "markdown"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("## Reward memory experiment status")
    assert "| status | disabled |" in out


def test_the_status_declares_host_coverage_and_points_to_conformance(capsys, goal):
    """The fixed upstream table stays in the JSON (oracle-compared) but is never shown
    as coverage: the Markdown says it is a declaration and where earned coverage is."""
    code, status = run(capsys, "reward-memory", "experiment-status", *binding(goal))
    assert code == 0 and status["host_coverage"][3] == {
        "host_id": "codex_app_quota",
        "automatic_recall": "connected",
        "automatic_ingest": "connected_refresh_spend_post_settlement",
    }
    cli.main(["reward-memory", "experiment-status", *binding(goal), "--format", "markdown"])
    out = capsys.readouterr().out
    heading = "### host_coverage (declared source wiring, not verified coverage)"
    assert heading in out and "### host_coverage\n" not in out
    note = out.split(heading, 1)[1].split("| host_id |", 1)[0]
    assert "Upstream LoopX" in note and "turn-hooks conformance run --host" in note
    assert "No conformance run is saved on this machine yet" in note
    assert "host_conformance" not in status and "host_conformance" not in out


def test_the_status_points_to_the_latest_saved_conformance_run(capsys, goal):
    """Issue 18: beside the declared table, what a saved run saw: per host its edges,
    date, partial flag and identity. The upstream part of the JSON is unchanged."""
    _, upstream = run(capsys, "reward-memory", "experiment-status", *binding(goal))
    assert (
        cli.main(["conformance", "run", "--host", "generic", "--scenario", "hook.fail_open"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    code, status = run(capsys, "reward-memory", "experiment-status", *binding(goal))
    keys = list(status)
    assert keys[keys.index("host_coverage") + 1] == "host_conformance", "beside the declaration"
    pointer = status.pop("host_conformance")
    assert (code, status) == (0, upstream), "only the pointer is added"
    assert (pointer["host_coverage_basis"], pointer["show_command"]) == (
        "declared_source_wiring",
        "turn-hooks conformance report",
    )
    [line] = pointer["latest"]
    assert (line["host"], line["automatic_recall"], line["automatic_ingest"]) == (
        "generic",
        "uncovered",
        "uncovered",
    )
    assert (line["partial"], line["date"]) == (True, report["identity"]["date"])
    assert line["turn_hooks_version"] == report["identity"]["turn_hooks_version"]
    assert line["report_digest"].startswith("sha256:")
    cli.main(["reward-memory", "experiment-status", *binding(goal), "--format", "markdown"])
    out = capsys.readouterr().out
    declared = out.index("### host_coverage (declared source wiring, not verified coverage)")
    earned = out.index("### host_conformance (latest saved conformance run per host)")
    assert declared < earned and "#### host_conformance" not in out[:declared]
    assert "follows, under host_conformance" in out[declared:earned]
    assert "turn-hooks conformance report --host HOST" in out[earned:]
    assert report["identity"]["date"] in out[earned:] and "| partial | true |" in out[earned:]
    assert not public_safety_violations(out)


def test_stdin_is_not_read_by_reward_memory_commands(capsys, goal, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("should not be read"))
    code, _ = run(capsys, "reward-memory", "experiment-status", *binding(goal))
    assert code == 0


def test_candidate_review_command_records_each_decision(capsys, tmp_path):
    # the record under review is the corpus owner's private input: not a public receipt
    from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
    from capabilities.reward_memory.curation.review import review_candidate

    packet = build_candidate(normalise_event(f1.event()))
    rev = {"reviewer_ref": "reviewer:demo", "review_ref": "review:1", "reasoning_summary": "fits"}
    source = tmp_path / "review.json"
    for decision, status in (
        ("accept", "active"),
        ("reject", "rejected"),
        ("no_write", "no_write"),
    ):
        source.write_text(json.dumps({"candidate": packet, "review": rev}))
        code, document = run(capsys, *review_args(source, decision), private=True)
        assert (code, document["status"]) == (0, status)
        assert document == review_candidate(packet, {**rev, "decision": decision})
        assert document["provider_write_performed"] is False
    accepted = review_candidate(packet, {**rev, "decision": "accept"})
    source.write_text(json.dumps({"candidate": accepted, "review": rev}))
    code, retired = run(capsys, *review_args(source, "retire"), private=True)
    assert (code, retired["status"]) == (0, "retired")
    source.write_text(json.dumps({"candidate": packet, "review": {**rev, "decision": "accept"}}))
    code, error = run(capsys, *review_args(source, "accept"))
    assert (code, error["reason_code"]) == (2, "unknown_key")


def test_a_review_reads_its_own_fields_and_ignores_others_as_upstream_does():
    # tests/oracle/regressions/review-extra-key.json: LoopX reviews a record whose
    # review carries an unknown key; we refused it as unknown_key. A missing field is
    # still refused.
    from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
    from capabilities.reward_memory.contract.values import RewardMemoryInputError
    from capabilities.reward_memory.curation.review import review_candidate

    packet = build_candidate(normalise_event(f1.event()))
    rev = {"reviewer_ref": "reviewer:demo", "review_ref": "review:1", "reasoning_summary": "fits"}
    plain = review_candidate(packet, {**rev, "decision": "accept"})
    assert review_candidate(packet, {**rev, "decision": "accept", "note": []}) == plain
    with pytest.raises(RewardMemoryInputError) as raised:
        review_candidate(packet, {"decision": "accept", "review_ref": "review:1"})
    assert (raised.value.reason_code, raised.value.field) == (
        "missing_key",
        "review.reasoning_summary",
    )


def review_args(source, decision):
    return ("reward-memory", "candidate-review", "--input", str(source), "--decision", decision)


def operator_input(tmp_path, **checkpoint):
    from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
    from capabilities.reward_memory.curation.review import review_candidate

    packet = build_candidate(normalise_event(f1.event()))
    rev = {"reviewer_ref": "reviewer:demo", "review_ref": "review:1", "reasoning_summary": "fits"}
    document = {
        "reviewed_record": review_candidate(packet, {"decision": "accept", **rev}),
        "corpus": f1.corpus("embedded_sqlite"),
        "operator_checkpoint": operator_checkpoint(**checkpoint),
    }
    source = tmp_path / "control.json"
    source.write_text(json.dumps(document))
    return ("reward-memory", "operator-control", "--input", str(source), "--control-ref", "c:1")


def test_operator_retire_needs_the_retirement_authority_and_writes_nothing(capsys, tmp_path):
    args = operator_input(tmp_path)
    code, control = run(
        capsys, *args, "--action", "retire", "--reasoning-summary", "stale", private=True
    )
    assert (code, control["status"], control["decision"]["status"]) == (
        0,
        "control_ready",
        "retired",
    )
    receipt = control["receipt"]
    assert (receipt["next_step"], receipt["provider_write_performed"]) == (
        "owner_write_retirement_then_exact_readback",
        False,
    )
    assert not public_safety_violations(receipt, raw_texts=(f1.REFLECTION["content_summary"],))
    for change, reason in (
        ({"authority_ref": "owner:other"}, "operator_authority_mismatch"),
        ({"corpus_id": "other"}, "operator_authority_mismatch"),
        ({"project_ref": "project:x"}, "operator_authority_mismatch"),
        ({"verified": False}, "operator_checkpoint_unverified"),
    ):
        args = operator_input(tmp_path, **change)
        code, error = run(capsys, *args, "--action", "retire", "--reasoning-summary", "stale")
        assert (code, error["reason_code"]) == (2, reason)


def test_operator_edit_needs_the_corpus_owner(capsys, tmp_path):
    args = operator_input(tmp_path, action="edit")
    edit = ("--action", "edit", "--reasoning-summary", "clearer", "--edited-content-summary", "x y")
    code, control = run(capsys, *args, *edit, private=True)
    assert (code, control["receipt"]["result_state"]) == (0, "candidate")
    assert (
        control["receipt"]["prior_candidate_ref_digest"]
        != control["receipt"]["result_candidate_ref_digest"]
    )


def test_retire_refuses_what_was_not_decided_and_finds_nothing_to_retire(capsys, tmp_path):
    from capabilities.reward_memory.curation.operator import operator_control

    registry = f1.write_goal(tmp_path, f1.config("embedded_sqlite"))
    args = ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    control_args = operator_input(tmp_path)
    document = json.loads(Path(control_args[3]).read_text())
    control = operator_control(
        document, action="retire", control_ref="c:1", reasoning_summary="stale"
    )
    decided = tmp_path / "decided.json"
    decided.write_text(json.dumps(control))
    code, missing = run(
        capsys, "reward-memory", "retire", *args, "--input", str(decided), "--execute"
    )
    assert (code, missing["status"], missing["provider_write_performed"]) == (0, "not_found", False)
    decided.write_text(json.dumps({**control, "status": "other"}))
    code, error = run(capsys, "reward-memory", "retire", *args, "--input", str(decided))
    assert (code, error["reason_code"]) == (2, "retirement_control_invalid")
    control["receipt"]["authority_ref"] = "owner:someone-else"
    decided.write_text(json.dumps(control))
    code, error = run(capsys, "reward-memory", "retire", *args, "--input", str(decided))
    assert (code, error["reason_code"]) == (2, "operator_authority_mismatch")
