"""The settlement pipeline every CLI-style host shares (hosts.md §1.4, turn-lifecycle §8).

On a successful Turn: run the binding's independent validator, record the settled
Turn in a spool sidecar and read it back (that readback is the writeback evidence),
then dispatch ``post_settlement`` and store its receipt in the spool. Hosts have no
quota owner here, so quota evidence is ``None``: absent, never fabricated.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pluggy

from hosts.hook_log import reasons_in, record
from hosts.render import extract_reflection
from sidecars import SidecarStore, goal_agent_parts, path_token, sidecar_root
from turn_hooks import (
    Settlement,
    SettlementEvidence,
    TurnContext,
    WritebackEvent,
    call_post_settlement,
    call_post_writeback,
)

SPOOL_SCHEMA = "turn_hooks_settlement_v0"
VALIDATION_TIMEOUT = 20
ATTESTATION_KEY = "reward_memory_reflection_validation"


def run_validator(
    argv: list[str] | None, *, request: dict[str, Any], cwd: str | None, timeout: int
) -> dict[str, Any]:
    """``task_validation`` from the declared validator (§8 table); never raises."""
    if not argv:
        return {"ok": False, "status": "unavailable", "validator_kind": "none"}
    try:
        result = subprocess.run(
            argv,
            input=json.dumps(request, separators=(",", ":"), ensure_ascii=False),
            capture_output=True,
            text=True,
            cwd=cwd or None,
            timeout=timeout,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {"ok": False, "status": "inconclusive"}
    if result.returncode != 0:
        return {"ok": False, "status": "failed", "exit_code": result.returncode}
    validation: dict[str, Any] = {"ok": True, "status": "passed", "validator_kind": "command"}
    stdout = result.stdout.strip()
    if stdout and len(stdout.encode("utf-8")) <= 4096:
        try:
            attestation = json.loads(stdout)
        except json.JSONDecodeError:
            attestation = None
        if isinstance(attestation, dict):
            # The plugin checks that it attests exactly this reflection.
            validation[ATTESTATION_KEY] = attestation
    return validation


def goal_repository(registry: str | None, goal_id: str | None) -> Path | None:
    """The Goal repository a registry names (where the Goal's sidecars live)."""
    if not registry or not goal_id:
        return None
    try:
        document = json.loads(Path(registry).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for goal in document.get("goals", []) if isinstance(document, dict) else []:
        if (
            isinstance(goal, dict)
            and goal.get("id") == goal_id
            and isinstance(goal.get("repo"), str)
        ):
            return Path(goal["repo"])
    return None


def spool_path(store: SidecarStore, turn: TurnContext) -> Path:
    """``settlements/T(goal)/T(agent)/T(turn_key).json``."""
    return store.path(
        *goal_agent_parts("settlements", turn.goal_id, turn.agent_id),
        path_token(turn.turn_key, "turn") + ".json",
    )


def settle(
    pm: pluggy.PluginManager,
    turn: TurnContext,
    *,
    final_message: str | None,
    validation_argv: list[str] | None,
    validation_timeout: int = VALIDATION_TIMEOUT,
) -> dict[str, Any]:
    """Run the whole settlement of one successful Turn; returns the dispatcher receipt.

    Why anything was not learned (a repeated reflection block, a plugin's reason code)
    goes to the local hook log.
    """
    reflection, reflection_fault = extract_reflection(final_message)
    repo = goal_repository(turn.registry, turn.goal_id) or Path(turn.cwd or ".")
    store = SidecarStore(sidecar_root(repo))
    path = spool_path(store, turn)
    previous = store.read(path) or {}
    entry = {
        "schema_version": SPOOL_SCHEMA,
        "host": turn.host,
        "turn_key": turn.turn_key,
        "host_session_id": turn.host_session_id,
        "observed_at": previous.get("observed_at", turn.observed_at),
        "cwd": turn.cwd,
        "reward_memory_reflection_json": reflection or "",
        "last_message_sha256": hashlib.sha256((final_message or "").encode("utf-8")).hexdigest(),
    }
    if "post_settlement" in previous:
        entry["post_settlement"] = previous["post_settlement"]
    store.write(path, entry)
    appended = store.read(path) == entry
    host_result = {"reward_memory_reflection_json": reflection or ""}
    validation = run_validator(
        validation_argv,
        request={**host_result, "host": turn.host, "host_turn_id": turn.host_turn_id},
        cwd=turn.cwd,
        timeout=validation_timeout,
    )
    settlement = Settlement(
        host_result=host_result,
        evidence=SettlementEvidence(
            task_validation=validation,
            writeback={"ok": appended, "appended": appended},
            quota_spend=None,
            previous_post_settlement=entry.get("post_settlement"),
        ),
    )
    receipt = call_post_settlement(pm, turn, settlement)
    entry["post_settlement"] = receipt
    store.write(path, entry)
    call_post_writeback(
        pm, turn, WritebackEvent(turn_key=turn.turn_key, host=turn.host, spool=entry)
    )
    reasons = reasons_in(receipt.get("results") or {})
    if reflection_fault:
        reasons.insert(0, ("adapter", reflection_fault))
    record(turn.host, "post_settlement", reasons)
    return receipt
