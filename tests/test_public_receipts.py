"""Every public receipt the CLI prints is scanned: no paths, scope refs, secrets or raw text.

The matrix drives each command that prints a receipt, on a real Goal repository in a
temporary directory (whose path must never appear), with an event whose summary
and experience text must never appear either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1

from conformance.public_safety import public_safety_violations

VALIDATOR = Path(__file__).parent.parent / "scripts" / "demo" / "validator.py"
RAW = (
    f1.REFLECTION["content_summary"],
    f1.EXPERIENCE["attribution"],
    f1.EXPERIENCE["future_behavior"]["action"],
)


@pytest.fixture(scope="module")
def goal(tmp_path_factory):
    root = tmp_path_factory.mktemp("receipts")
    registry = f1.write_goal(root, f1.config("embedded_sqlite"))
    event = root / "event.json"
    event.write_text(json.dumps({"event": f1.event(), "observed_at": f1.OBSERVED_AT}))
    blocked = root / "blocked.json"
    blocked_event = f1.event()
    blocked_event["source"]["actor_role"] = "maintainer"
    blocked.write_text(json.dumps({"event": blocked_event, "observed_at": f1.OBSERVED_AT}))
    return {"registry": str(registry), "event": str(event), "blocked": str(blocked), "root": root}


def commands(goal):
    binding = ["--registry", goal["registry"], "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    sidecar_root = str(goal["root"] / "repo" / ".local" / "turn-hooks")
    return [
        ["plugins"],
        # First, so the statuses below point to a saved report (issue 18).
        ["conformance", "run", "--host", "generic", "--scenario", "hook.fail_open"],
        ["conformance", "report"],
        ["reward-memory", "experiment-status", *binding],
        ["reward-memory", "configure", *binding, "--config", f1.CONFIG_PATH],
        ["reward-memory", "configure", *binding, "--config", f1.CONFIG_PATH, "--execute"],
        ["reward-memory", "ingest-event", *binding, "--input", goal["event"]],
        ["reward-memory", "ingest-event", *binding, "--input", goal["event"], "--execute"],
        ["reward-memory", "ingest-event", *binding, "--input", goal["event"], "--execute"],
        ["reward-memory", "ingest-event", *binding, "--input", goal["blocked"], "--execute"],
        ["reward-memory", "recall", *binding, "--query", "focused test module"],
        ["reward-memory", "ingest-event", *binding, "--input", str(goal["root"] / "missing")],
        [
            "reward-memory",
            "experiment-status",
            *binding[:2],
            "--goal-id",
            "nope",
            "--agent-id",
            "x",
        ],
        ["sidecar", "check", "--root", sidecar_root],
        ["reward-memory", "reconcile", *binding],
        [
            "codex-app",
            "refresh-state",
            *binding,
            "--todo-id",
            "todo-1",
            "--turn-id",
            "turn-1",
            "--reward-memory-reflection-json",
            json.dumps(f1.REFLECTION),
            "--validation-command-json",
            json.dumps([sys.executable, str(VALIDATOR)]),
        ],
        [
            "codex-app",
            "spend-slot",
            *binding,
            "--todo-id",
            "todo-1",
            "--turn-id",
            "turn-1",
            "--execute",
        ],
        # The memory views print private text by design; these commands print receipts.
        ["memory", "export", *binding, "--output", str(goal["root"] / "export.jsonl")],
        ["memory", "import", str(goal["root"] / "export.jsonl"), *binding, "--dry-run"],
        ["memory", "import", str(goal["root"] / "export.jsonl"), *binding],
        ["memory", "forget", _candidate_ref(), *binding, "--dry-run"],
        ["memory", "forget", _candidate_ref(), *binding],
        ["memory", "forget", "provider-000000", *binding],
        # After the forget: restored, so a later Turn may learn the lesson again.
        ["memory", "restore", _candidate_ref(), *binding, "--dry-run"],
        ["memory", "restore", _candidate_ref(), *binding],
        ["memory", "restore", "provider-000000", *binding],
        ["status", *binding],
        ["log"],
    ]


def _candidate_ref():
    from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event

    return build_candidate(normalise_event(f1.event()))["candidate"]["candidate_ref"]


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_no_public_receipt_leaks(goal, fmt):
    leaks = {}
    for argv in commands(goal):
        result = subprocess.run(
            [sys.executable, "-m", "hosts.cli", *argv, "--format", fmt],
            capture_output=True,
            text=True,
            check=False,
        )
        assert "Traceback" not in result.stdout + result.stderr, argv
        output = result.stdout
        problems = public_safety_violations(output, raw_texts=RAW)
        if str(goal["root"]) in output:
            problems.append("temporary path")
        if problems:
            leaks[" ".join(argv[:2])] = problems
    assert leaks == {}


def test_the_scanner_catches_each_kind_of_leak():
    assert public_safety_violations({"p": "/home/u/x"}) == ["local path"]
    assert public_safety_violations({"s": f1.SCOPE_REF}) == ["provider scope ref"]
    assert public_safety_violations("Bearer abcdefghijklmnopqrstuvwx") == ["secret"]
    assert public_safety_violations({"t": RAW[0]}, raw_texts=RAW) == [f"raw text {RAW[0][:20]!r}"]
    assert public_safety_violations({"ok": True, "ref": "provider-967043053432713a5e4b"}) == []


def test_host_settlement_receipts_leak_nothing(goal):
    binding = ["--registry", goal["registry"], "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    message = (
        "done <reward_memory_reflection_json>"
        + json.dumps(f1.REFLECTION)
        + "</reward_memory_reflection_json>"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hosts.cli",
            "host",
            "generic",
            "post-settlement",
            *binding,
            "--validation-command-json",
            json.dumps([sys.executable, str(VALIDATOR)]),
        ],
        input=json.dumps(
            {
                "turn_id": "receipt-turn",
                "last_assistant_message": message,
                "cwd": str(goal["root"] / "repo"),
            }
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    receipt = json.loads(result.stdout)
    assert receipt["results"]["reward-memory.outcome-ingest"]["status"] in {
        "activated",
        "evidence_validation_required",
    }
    assert public_safety_violations(result.stdout, raw_texts=RAW) == []
    assert str(goal["root"]) not in result.stdout
