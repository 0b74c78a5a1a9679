"""The Codex App two-phase path: refresh-state stages, spend-slot finalizes (§9)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from fixtures import f1
from turn_support import RAW, bound_goal

from conformance.public_safety import public_safety_violations
from hosts.adapters import codex_app
from hosts.cli import command as cli
from turn_hooks import (
    Settlement,
    SettlementEvidence,
    SettlementRegistration,
    TurnContext,
    hookimpl,
    make_plugin_manager,
)

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


# --- the App host: its ledger, and settlement through post_settlement ----------------


class Recorder:
    """A plugin that shows what the App host hands ``post_settlement``."""

    registrations = {
        "post_settlement": SettlementRegistration(hook_id="recorder", capability_id="recorder")
    }

    @hookimpl
    def post_settlement(self, turn, settlement):
        return {
            "status": "observed",
            "host": turn.host,
            "turn_key": turn.turn_key,
            "todo": turn.host_session_id,
            "writeback": settlement.evidence.writeback,
            "quota_spend": settlement.evidence.quota_spend,
            "external_writes_performed": False,
        }


def recording_manager():
    pm = make_plugin_manager()
    pm.register(Recorder(), name="recorder")
    return pm


def effect_turn(registry, effect="effect:spend:7"):
    return codex_app.app_turn(
        registry=str(registry),
        goal_id=f1.GOAL,
        agent_id=f1.AGENT,
        todo_id="todo-1",
        turn_id="turn-2026-01",
        effect_id=effect,
    )


def test_the_app_settles_through_post_settlement_with_quota_spend_evidence(tmp_path):
    turn = effect_turn(bound_goal(tmp_path))
    pm = recording_manager()
    assert codex_app.settle_if_spent(pm, turn) is None, "nothing recorded yet"
    assert codex_app.record_step(turn, "writeback") == (True, True)
    assert codex_app.settle_if_spent(pm, turn) is None, "no settlement before the spend"
    assert codex_app.record_step(turn, "spend") == (True, True)
    assert codex_app.record_step(turn, "spend") == (True, False), "no second charge"
    receipt = codex_app.settle_if_spent(pm, turn)
    assert receipt["results"]["recorder"] == {
        "status": "observed",
        "host": "codex_app",
        "turn_key": "effect:spend:7",
        "todo": "todo-1",
        "writeback": {"ok": True, "appended": True},
        "quota_spend": {"ok": True, "appended": True},
        "external_writes_performed": False,
    }


def test_the_ledger_key_and_path_are_the_candidates(tmp_path):
    # identities.md §9: the ledger of an effect sits under the App candidate's key, so
    # ledgers written before the ledger moved to the host are still found.
    from capabilities.reward_memory.contract.identities import app_candidate_id
    from sidecars import SidecarStore

    ids = ("demo-goal", "explorer", "todo-1", "turn-2026-01", "effect:spend:7")
    assert codex_app.effect_key(*ids) == app_candidate_id(*ids) == "app:c87d5767567f6843a55e"
    store = SidecarStore(tmp_path / ".local" / "turn-hooks")
    path = codex_app.ledger_path(store, "demo-goal", "explorer", codex_app.effect_key(*ids))
    assert path.relative_to(tmp_path).as_posix() == (
        ".local/turn-hooks/codex-app-settlements/demo-goal-1bf74ace4b64/"
        "explorer-1c467339c960/app-c87d5767567f6843a55e-c2b56cf33ff1.json"
    )


def test_the_refresh_records_the_writeback_in_the_hosts_ledger(capsys, tmp_path):
    registry = bound_goal(tmp_path)
    app(capsys, registry, "refresh-state")
    turn = effect_turn(registry, effect="writeback:turn-2026-01")
    store = registry.parent / "repo" / ".local" / "turn-hooks"
    [ledger] = (store / "codex-app-settlements").rglob("*.json")
    assert json.loads(ledger.read_text())["schema_version"] == "turn_hooks_app_settlement_v0"
    assert codex_app.ledger_state(turn) == {"writeback": True, "spend": False}
    _code, spent = app(capsys, registry, "spend-slot", "--execute")
    assert spent["finalize"]["status"] == "activated"


def test_app_server_turns_without_a_quota_owner_take_the_ordinary_ingest():
    from capabilities.reward_memory.plugin import _is_app_settlement

    turn = TurnContext(host="codex_app", host_turn_id="t1", observed_at="2026-01-01T00:00:00Z")
    spent = Settlement(evidence=SettlementEvidence(quota_spend={"ok": True, "appended": True}))
    assert _is_app_settlement(turn, spent)
    assert not _is_app_settlement(turn, Settlement())
    assert not _is_app_settlement(dataclasses.replace(turn, host="codex_cli"), spent)


def test_an_app_command_without_the_app_host_is_a_typed_error(tmp_path):
    from capabilities.reward_memory.cli.turn import app_spend_slot
    from capabilities.reward_memory.contract.values import RewardMemoryInputError

    args = argparse.Namespace(registry=str(bound_goal(tmp_path)), goal_id=f1.GOAL)
    with pytest.raises(RewardMemoryInputError) as raised:
        app_spend_slot(args)
    assert raised.value.reason_code == "app_host_missing"


def test_the_app_command_reads_the_result_the_plugin_registers():
    from capabilities.reward_memory.plugin import plugin
    from capabilities.reward_memory.turn.app import INGEST_HOOK_ID

    assert plugin.registrations["post_settlement"].hook_id == INGEST_HOOK_ID
