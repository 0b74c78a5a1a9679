"""Every place of every JSON input given a value of the wrong type (issue 37).

The random fuzzing of ``test_fuzz_entry_points`` found three ``internal_error``s only
after thousands of inputs: a value used as a dict key, or sorted, before its type was
checked. This sweep is exhaustive instead: for each command that reads a JSON
document, it starts from a valid document and replaces each place in it, one at a
time, with an object, a list, a mixed-type list, a list of objects and a number. Each run
must end as the command's own typed answer (exit 0, or exit 2 with a typed error),
never as ``internal_error``; a host hook exits 0 and logs no ``internal_error``.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
import utility_cases as uc
from document_paths import paths, replaced
from fixtures import f1
from rm_support import operator_checkpoint
from turn_support import DEMO_VALIDATOR, RAW, bound_goal

from hosts.cli import command as cli

WRONG_TYPES = {
    "object": {"k": 1},  # unhashable: a dict key lookup with it raises TypeError
    "list": ["a", "b"],  # a homogeneous list where a scalar is expected: unhashable too
    "mixed-list": ["b", "a", 1],  # unsortable
    "object-list": [{"k": 1}, {"k": 2}],  # unsortable and unhashable items
    "number": 1.5,  # not iterable, not a string
}
TYPED = re.compile(r"[a-z][a-z0-9_.:-]{0,79}")


def places(document):
    """Every place below the root of ``document``."""
    return list(paths(document))[1:]


def run(argv, stdin: bytes):
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        code = cli.main(argv)
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue()


def hook_log_reasons(state: Path) -> list[str]:
    path = state / "hook-log.json"
    return (
        [e["reason_code"] for e in json.loads(path.read_text())["entries"]] if path.exists() else []
    )


@pytest.fixture
def bound(tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(state))
    registry = bound_goal(tmp_path / "goal")
    binding = ["--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    return {"binding": binding, "state": state, "repo": tmp_path / "goal" / "repo"}


def documents(binding):
    """(argv, a valid input) for every command that reads a JSON document."""
    from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
    from capabilities.reward_memory.curation.operator import operator_control
    from capabilities.reward_memory.curation.review import review_candidate

    packet = build_candidate(normalise_event(f1.event()))
    review = {"reviewer_ref": "reviewer:demo", "review_ref": "review:1", "reasoning_summary": "ok"}
    control_input = {
        "reviewed_record": review_candidate(packet, {"decision": "accept", **review}),
        "corpus": f1.corpus("embedded_sqlite"),
        "operator_checkpoint": operator_checkpoint(),
    }
    control = operator_control(
        control_input, action="retire", control_ref="c:1", reasoning_summary="stale"
    )
    facts = {
        "application_receipt": uc.RECEIPT,
        "verified_outcome": uc.VERIFIED,
        "attribution_context": uc.CONTEXT,
        "created_at": uc.CREATED_AT,
        "evaluator_proposal": uc.PROPOSAL,
    }
    ingest = ["reward-memory", "ingest-event", *binding, "--execute"]
    return {
        # First: it stores the record the retirement below then finds.
        "ingest-event": (ingest, {"event": f1.event(), "observed_at": f1.OBSERVED_AT}),
        "retire": (["reward-memory", "retire", *binding, "--execute"], control),
        "utility-observe": (["reward-memory", "utility-observe"], facts),
        "utility-project": (["reward-memory", "utility-project"], uc.projection_input(uc.obs())),
        "candidate-review": (
            ["reward-memory", "candidate-review", "--decision", "accept"],
            {"candidate": packet, "review": review},
        ),
        "operator-control": (
            [
                "reward-memory",
                "operator-control",
                "--action",
                "retire",
                "--control-ref",
                "c:1",
                "--reasoning-summary",
                "stale",
            ],
            control_input,
        ),
    }


@pytest.mark.slow
def test_no_command_crashes_on_a_value_of_the_wrong_type_anywhere(bound):
    crashes = []
    runs = 0
    for name, (argv, valid) in documents(bound["binding"]).items():
        code, out = run([*argv, "--input", "-"], json.dumps(valid).encode())
        assert code == 0 and json.loads(out)["ok"] is True, (name, out)  # the base is valid
        for path in places(valid):
            for kind, value in WRONG_TYPES.items():
                stdin = json.dumps(replaced(valid, path, value)).encode()
                code, out = run([*argv, "--input", "-"], stdin)
                runs += 1
                document = json.loads(out)
                if code not in (0, 2) or document.get("reason_code") == "internal_error":
                    crashes.append((name, path, kind, document.get("message")))
                elif code == 2 and document.get("status") != "rejected":  # not a projection's
                    assert TYPED.fullmatch(document["reason_code"]), (name, path, kind, out)
    assert runs > 1000  # every place of six documents, five times
    assert crashes == []


@pytest.mark.slow
def test_an_import_never_crashes_on_a_record_value_of_the_wrong_type(bound, tmp_path):
    ingest = ["reward-memory", "ingest-event", *bound["binding"], "--execute", "--input", "-"]
    assert (
        run(ingest, json.dumps({"event": f1.event(), "observed_at": f1.OBSERVED_AT}).encode())[0]
        == 0
    )
    exported = tmp_path / "export.jsonl"
    assert run(["memory", "export", *bound["binding"], "--output", str(exported)], b"")[0] == 0
    record = json.loads(exported.read_text().splitlines()[0])
    argv = ["memory", "import", "-", *bound["binding"], "--dry-run"]
    crashes = []
    for path in places(record):
        for kind, value in WRONG_TYPES.items():
            code, out = run(argv, json.dumps(replaced(record, path, value)).encode() + b"\n")
            document = json.loads(out)
            if code not in (0, 2) or document.get("reason_code") == "internal_error":
                crashes.append((path, kind, document.get("message")))
    assert crashes == []


@pytest.mark.slow
def test_a_stop_hook_never_crashes_on_a_reflection_value_of_the_wrong_type(bound):
    reflection = json.loads(RAW)
    argv = ["host", "generic", "post-settlement", *bound["binding"]]
    argv += ["--validation-command-json", json.dumps(DEMO_VALIDATOR)]
    refused, crashes = 0, []
    for number, path in enumerate(places(reflection)):
        for kind, value in WRONG_TYPES.items():
            block = json.dumps(replaced(reflection, path, value))
            message = (
                f"Done.\n<reward_memory_reflection_json>{block}</reward_memory_reflection_json>"
            )
            event = {
                "turn_id": f"t-{number}-{kind}",
                "cwd": str(bound["repo"]),
                "last_assistant_message": message,
            }
            before = len(hook_log_reasons(bound["state"]))
            code, out = run(argv, json.dumps(event).encode())
            logged = hook_log_reasons(bound["state"])[before:]
            assert code == 0
            if "internal_error" in logged or "internal_error" in out:
                crashes.append((path, kind, logged))
            refused += bool(logged)
    assert crashes == []
    assert refused > 0  # the sweep reached the reflection's checks


HOOK_EVENT = {
    "turn_id": "t1",
    "session_id": "s1",
    "prompt_id": "p1",
    "prompt": "fix the tests",
    "hook_event_name": "Stop",
    "timestamp": "2026-11-29T10:00:00Z",
    "transcript_path": "transcript.jsonl",
    "model": "m",
    "stop_hook_active": False,
}


@pytest.mark.slow
@pytest.mark.parametrize("host", ["generic", "codex-cli", "dsh"])
@pytest.mark.parametrize("event", ["pre-turn", "post-settlement"])
def test_a_hook_never_crashes_on_an_event_value_of_the_wrong_type(bound, monkeypatch, host, event):
    monkeypatch.setenv("TURN_HOOKS_SETTLE", "inline")  # settled here, not in a forked child
    message = f"Done.\n<reward_memory_reflection_json>{RAW}</reward_memory_reflection_json>"
    valid = {**HOOK_EVENT, "cwd": str(bound["repo"]), "last_assistant_message": message}
    argv = ["host", host, event, *bound["binding"]]
    if event == "post-settlement":
        argv += ["--validation-command-json", json.dumps(DEMO_VALIDATOR)]
    crashes = []
    for path in places(valid):
        for kind, value in WRONG_TYPES.items():
            before = len(hook_log_reasons(bound["state"]))
            code, out = run(argv, json.dumps(replaced(valid, path, value)).encode())
            logged = hook_log_reasons(bound["state"])[before:]
            assert code == 0
            if "internal_error" in logged or "internal_error" in out:
                crashes.append((path, kind, logged))
    assert crashes == []


STORED_RECEIPT = {
    "status": "observed",
    "results": {
        "reward_memory": {"status": "activated", "reconciliation_state": "completed"},
        "second": {"status": "runtime_unavailable", "reconciliation_state": "pending"},
    },
}


@pytest.mark.parametrize("function", ["settlement_is_final", "settlement_is_taken"])
def test_a_stored_receipt_of_the_wrong_shape_is_not_final_nor_a_crash(function):
    # The fuzzer (benchmarks/fuzz_entry_points.py) found a list as a result's
    # ``status`` raising ``unhashable type`` in the retryable-status lookup; a spooled
    # receipt is read back from disk, so every place may hold any JSON value.
    import turn_hooks

    check = getattr(turn_hooks, function)
    for path in places(STORED_RECEIPT):
        for value in WRONG_TYPES.values():
            assert check(replaced(STORED_RECEIPT, path, value)) in (True, False), path
    # A status that is not a string is not a known final one: deliver again.
    receipt = replaced(STORED_RECEIPT, ("results", "second"), {"status": ["activated"]})
    assert turn_hooks.settlement_is_final(receipt) is False
