"""Helpers for the Turn lifecycle tests: a bound Goal on the embedded store."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import filelock
from fixtures import f1
from rm_support import Recording

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.binding.registry import load_registry, resolve
from capabilities.reward_memory.contract.identities import reflection_digest
from capabilities.reward_memory.turn.journal import journal_files_of
from sidecars import lock_path
from turn_hooks import TurnContext

RAW = json.dumps(f1.REFLECTION)


def bound_goal(root: Path, **automation: bool) -> Path:
    """A registry whose Agent is enabled and verified on an embedded-store config."""
    return f1.write_goal(root, f1.config("embedded_sqlite", **automation))


def resolution(registry: Path) -> Any:
    return resolve(load_registry(registry), f1.GOAL, f1.AGENT)


def store_provider(registry: Path) -> Recording:
    """A counting wrapper around the Goal's real embedded store."""
    repo = registry.parent / "repo"
    return Recording(EmbeddedSqliteProvider(repo / ".local" / "turn-hooks" / "memory.sqlite3"))


def attestation(raw: str = RAW, refs: list[str] | None = None) -> dict[str, Any]:
    return {
        "schema_version": "reward_memory_reflection_validation_v0",
        "status": "validated",
        "reflection_digest": reflection_digest(raw),
        "evidence_refs": refs or ["evidence:ci-run-17"],
    }


def evidence(raw: str = RAW, *, attested: bool = True, quota: Any = None) -> dict[str, Any]:
    validation: dict[str, Any] = {"ok": True, "status": "passed", "validator_kind": "command"}
    if attested:
        validation["attestation"] = attestation(raw)
    return {
        "schema_version": "turn_post_settlement_evidence_v0",
        "task_validation": validation,
        "writeback": {"ok": True, "appended": True},
        "quota_spend": quota,
    }


def turn(
    registry: Path,
    turn_id: str = "turn-0001",
    prompt: str | None = None,
    recall: bool = True,
    ingest: bool = True,
) -> TurnContext:
    envelope = {
        "goal_id": f1.GOAL,
        "agent_id": f1.AGENT,
        "boundary": {
            "capabilities": {
                "reward_memory": {"automatic_recall": recall, "automatic_ingest": ingest}
            }
        },
    }
    return TurnContext(
        host="generic_cli",
        host_turn_id=turn_id,
        goal_id=f1.GOAL,
        agent_id=f1.AGENT,
        observed_at=f1.OBSERVED_AT,
        prompt=prompt,
        turn_envelope=envelope,
        payload={"turn_envelope": envelope},
        registry=str(registry),
    )


def journal_files(registry: Path) -> list[Path]:
    return journal_files_of(registry.parent / "repo")


def settled_spools(repo: Path, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The repository's settlement spool entries, once no one is settling them.

    Codex CLI's and Claude Code's Stop hooks hand settlement to a detached child that
    holds the entry's lock until it is done (and the hook returns only once it does),
    so taking each lock once is enough to wait for them, as a next Turn would.
    """
    directory = repo / ".local" / "turn-hooks" / "settlements"
    entries = []
    for path in sorted(directory.rglob("*.json")) if directory.is_dir() else []:
        with filelock.FileLock(str(lock_path(path)), timeout=timeout):
            entries.append(json.loads(path.read_text()))
    return entries


def journals_after_settlement(repo: Path, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The repository's journals once every spooled settlement is over."""
    settled_spools(repo, timeout)
    return [json.loads(path.read_text()) for path in journal_files_of(repo)]


# --- real hook processes ------------------------------------------------------------
# The settlement fault tests and the kill -9 run start the same post-settlement hook.

ROOT = Path(__file__).parent.parent
DEMO_VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]


def reflection_message(reflection: str = RAW) -> str:
    """A final message with one reflection block."""
    return f"Done.\n<reward_memory_reflection_json>{reflection}</reward_memory_reflection_json>"


def hook_argv(
    registry: Path | str,
    event: str = "post-settlement",
    validator: list[str] | None = DEMO_VALIDATOR,
) -> list[str]:
    """``turn-hooks host generic <event>`` bound to the fixture's Goal and Agent."""
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", event]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    if event == "post-settlement" and validator:
        argv += ["--validation-command-json", json.dumps(validator)]
    return argv


def run_process(argv: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run a ``turn-hooks`` process to its end; no traceback ever reaches a user."""
    result = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, cwd=ROOT, check=False, timeout=60
    )
    assert "Traceback" not in result.stdout + result.stderr
    return result


def start_hook(
    argv: list[str], event: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start a hook process, hand it its event and close its stdin; it runs on."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        text=True,
        env=env,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(event))
    process.stdin.close()
    return process


def hook_turn(
    registry: Path | str, cwd: Path | None, turn_id: str = "t1", host: str = "generic_cli"
) -> TurnContext:
    """The Turn a host's hook builds for the fixture's Goal and Agent."""
    from hosts.adapters.generic import build_turn

    event = {"turn_id": turn_id} if cwd is None else {"turn_id": turn_id, "cwd": str(cwd)}
    return build_turn(
        event,
        host=host,
        goal_id=f1.GOAL,
        agent_id=f1.AGENT,
        registry=str(registry),
    )


UNRELATED = "Dark mode toggles persist the chosen palette in local storage."


def ingest_memory(
    registry: Path,
    turn_key: str,
    ref: str,
    unrelated: bool = False,
    *,
    goal: str = f1.GOAL,
    provider_for: Any = None,
) -> None:
    """A validated memory written as a settled Turn would write it: F1's lesson with
    other evidence (a twin, as relevant), or a lesson about something else entirely."""
    from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open

    reflection = copy.deepcopy(f1.REFLECTION)
    reflection["evidence_refs"] = [ref]
    experience = reflection["experience"]
    experience["evidence_refs"] = [ref]
    reflection["reasoning_summary"] += " Seen again."
    if unrelated:
        reflection["content_summary"] = UNRELATED
        reflection["reasoning_summary"] = "Users kept losing their palette on reload."
        experience.update(
            applicability=["web frontend with a settings page"],
            observed_outcome="The palette survived reloads.",
            attribution="Local storage kept the palette between sessions.",
            limitations=["not for server rendered pages"],
            future_behavior={
                "trigger": "a settings page gains a dark mode toggle",
                "action": "persist the palette in local storage",
                "validation": "the palette survives a reload",
                "stop_condition": "the page has no client script",
            },
        )
    raw = json.dumps(reflection)
    proof = evidence(raw)
    proof["task_validation"]["attestation"] = attestation(raw, [ref])
    receipt = run_turn_ingest_fail_open(
        resolve(load_registry(registry), goal, f1.AGENT),
        turn_key=turn_key,
        host_result={"reward_memory_reflection_json": raw},
        evidence=proof,
        provider_for=provider_for or (lambda binding: store_provider(registry)),
        observed_at=f1.OBSERVED_AT,
    )
    assert receipt["status"] == "activated", receipt
