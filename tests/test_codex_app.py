"""The Codex App two-phase path: refresh-state stages, spend-slot finalizes (§9)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from fixtures import f1
from turn_support import RAW, bound_goal

from conformance.public_safety import public_safety_violations
from hosts import cli

ROOT = Path(__file__).parent.parent
VALIDATOR = json.dumps([sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")])
FAILING = json.dumps([sys.executable, "-c", "import sys; sys.exit(1)"])
SILENT = json.dumps([sys.executable, "-c", "print('all good')"])


def app(capsys, registry, command, *extra, reflection=RAW, validator=VALIDATOR):
    argv = [
        "codex-app",
        command,
        "--registry",
        str(registry),
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        "--todo-id",
        "todo-1",
        "--turn-id",
        "turn-2026-01",
        *extra,
    ]
    if command == "refresh-state":
        if reflection is not None:
            argv += ["--reward-memory-reflection-json", reflection]
        if validator is not None:
            argv += ["--validation-command-json", validator]
    code = cli.main(argv)
    document = json.loads(capsys.readouterr().out)
    assert not public_safety_violations(document, raw_texts=(f1.REFLECTION["content_summary"],))
    return code, document


def candidates(registry):
    root = registry.parent / "repo" / ".local" / "turn-hooks" / "reward-memory-app-outcomes"
    return sorted(root.rglob("*.json"))


def test_stage_then_spend_activates_with_exact_readback(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    code, refreshed = app(capsys, registry, "refresh-state")
    staged = refreshed["stage"]
    assert (code, staged["status"], staged["validation_bound"]) == (0, "validation_bound", True)
    assert staged["provider_sync_count"] == 0 and refreshed["finalize"] is None
    [sidecar] = candidates(registry)
    assert stat.S_IMODE(os.stat(sidecar).st_mode) == 0o600
    assert sidecar.with_name(sidecar.name + ".lock").exists()
    stored = json.loads(sidecar.read_text())
    assert stored["task_validation"]["validator_kind"] == "todo_declared_command"

    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    assert (spent["charged"], spent["already_charged"]) == (True, False)
    final = spent["finalize"]
    assert (final["status"], final["exact_readback_verified"], final["host_wiring"]) == (
        "activated",
        True,
        "codex_app_refresh_spend_post_settlement",
    )

    _code, again = app(capsys, registry, "spend-slot", "--execute")
    assert (again["charged"], again["already_charged"]) == (False, True), "no second charge"
    assert again["finalize"]["sidecar_receipt_reused"] is True


def test_without_an_attestation_the_candidate_waits_and_nothing_is_written(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    _code, refreshed = app(capsys, registry, "refresh-state", validator=SILENT)
    assert refreshed["stage"]["status"] == "awaiting_evidence_validation"
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    assert spent["finalize"]["status"] == "evidence_validation_required"
    store = registry.parent / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"
    assert not store.exists(), "zero provider calls"


def test_a_retry_after_spend_finalizes_in_the_refresh_itself(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    app(capsys, registry, "refresh-state", reflection=None)
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    assert spent["finalize"] is None, "nothing staged yet"
    _code, retried = app(capsys, registry, "refresh-state")
    assert retried["finalize"]["status"] == "activated"


def test_a_changed_reflection_is_rejected(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    app(capsys, registry, "refresh-state")
    changed = json.dumps({**f1.REFLECTION, "confidence": "high"})
    code, error = app(capsys, registry, "refresh-state", reflection=changed)
    assert (code, error["reason_code"]) == (2, "app_outcome_reflection_changed")


def test_an_explicit_retry_reruns_validation(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    assert app(capsys, registry, "refresh-state")[1]["stage"]["status"] == "validation_bound"
    _code, error = app(capsys, registry, "refresh-state", validator=FAILING)
    assert error["reason_code"] == "app_outcome_validation_changed"
    _code, retried = app(capsys, registry, "refresh-state", "--restage", validator=FAILING)
    assert retried["stage"]["status"] == "awaiting_evidence_validation", (
        "an earlier pass never masks a current failure"
    )
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    assert spent["finalize"]["status"] == "evidence_validation_required"


def test_spend_preview_charges_nothing(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    _code, preview = app(capsys, registry, "spend-slot")
    assert (preview["mode"], preview["charged"], preview["already_charged"]) == (
        "preview",
        False,
        False,
    )


@pytest.mark.parametrize(
    "reflection",
    [
        "",
        json.dumps({"schema_version": "turn_reward_memory_reflection_v1", "status": "no_evidence"}),
    ],
)
def test_no_evidence_stages_nothing(capsys, tmp_path, reflection):
    registry = bound_goal(tmp_path)
    _code, refreshed = app(capsys, registry, "refresh-state", reflection=reflection)
    assert (refreshed["stage"]["status"], refreshed["stage"]["reason_code"]) == (
        "no_eligible_evidence",
        "app_refresh_declared_no_reward_evidence",
    )
    assert candidates(registry) == []


@pytest.mark.parametrize("bad", ["{", "[]", json.dumps(["ok", 1])])
def test_bad_validator_declarations_are_typed_errors(capsys, tmp_path, bad):
    registry = bound_goal(tmp_path)
    code, error = app(capsys, registry, "refresh-state", validator=bad)
    assert (code, error["reason_code"]) == (2, "validation_declaration_invalid")
    assert candidates(registry) == []


def test_candidate_sidecar_path_vector(tmp_path):
    from capabilities.reward_memory.turn.app import candidate_path
    from sidecars import SidecarStore

    store = SidecarStore(tmp_path / ".local" / "turn-hooks")
    path = candidate_path(store, "demo-goal", "explorer", "app:c87d5767567f6843a55e")
    assert path.relative_to(tmp_path).as_posix() == (
        ".local/turn-hooks/reward-memory-app-outcomes/demo-goal-1bf74ace4b64/"
        "explorer-1c467339c960/app-c87d5767567f6843a55e-c2b56cf33ff1.json"
    )


@pytest.mark.parametrize("command", ["spend-slot", "refresh-state"])
@pytest.mark.parametrize(
    ("option", "value"),
    [("--todo-id", ""), ("--turn-id", " "), ("--effect-id", "")],
    ids=["todo", "turn", "effect"],
)
def test_an_empty_app_id_is_a_typed_error_that_writes_nothing(
    capsys, tmp_path, command, option, value
):
    registry = bound_goal(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    extra = (option, value) if option == "--effect-id" else ()
    argv = [
        *("codex-app", command, "--registry", str(registry)),
        *("--goal-id", f1.GOAL, "--agent-id", f1.AGENT),
        *("--todo-id", value if option == "--todo-id" else "todo-1"),
        *("--turn-id", value if option == "--turn-id" else "turn-1"),
        *extra,
        "--execute" if command == "spend-slot" else "--restage",
    ]
    code = cli.main(argv)
    error = json.loads(capsys.readouterr().out)
    assert (code, error["reason_code"], error["field"]) == (
        2,
        "app_id_empty",
        option[2:].replace("-", "_"),
    )
    assert sorted(tmp_path.rglob("*")) == before
