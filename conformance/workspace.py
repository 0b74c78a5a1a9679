"""A scratch Goal for conformance runs: a bound registry, its config and the evidence.

The identities are fixture F1 of identities.md §2 (our own tests pin them), so a
report's digests can be compared across runs. Everything lives under one directory
that the runner creates and removes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

GOAL = "demo-goal"
AGENT = "explorer"
SURFACE = "agent_workflow.turn_admission"
OBSERVED_AT = "2026-08-15T00:00:00+00:00"
PEER = "loopx-demo-goal-explorer-bead5d4a47eca8769aee"
SCOPE_REF = f"viking://user/alice/peers/{PEER}/memories/reward-memory/goals/demo-goal/experience"
CONFIG_PATH = ".loopx/config/reward-memory/experiment.json"

EXPERIENCE: dict[str, Any] = {
    "schema_version": "procedural_experience_contract_v0",
    "applicability": ["python repository with a slow full test suite"],
    "observed_outcome": "The focused run failed fast and the fix landed sooner.",
    "attribution": "Running the touched module first isolated the failing test.",
    "future_behavior": {
        "trigger": "a change touches one module",
        "action": "run that module's tests first",
        "validation": "focused tests pass before the full suite",
        "stop_condition": "the change spans several modules",
    },
    "limitations": ["not useful when the failure is cross-module"],
    "evidence_refs": ["evidence:ci-run-17"],
}

REFLECTION: dict[str, Any] = {
    "schema_version": "turn_reward_memory_reflection_v1",
    "status": "eligible",
    "surface_id": SURFACE,
    "outcome_kind": "engineering",
    "content_summary": "Run the focused test module before the full suite.",
    "reasoning_summary": "The focused run caught the regression in seconds.",
    "confidence": "medium",
    "evidence_refs": ["evidence:ci-run-17"],
    "experience": EXPERIENCE,
}

SCOPE: dict[str, Any] = {
    "workspace_ref": "workspace:demo",
    "project_ref": "project:demo",
    "surface_ids": [SURFACE],
    "peer_ref": f"agent:{AGENT}",
}


def corpus(provider_id: str = "openviking") -> dict[str, Any]:
    return {
        "corpus_id": "experience",
        "class_id": "procedural_experience",
        "provider_id": provider_id,
        "owner_ref": "owner:demo",
        "source_of_truth": "validated_turn_outcomes",
        "read_authority": "actor_scoped",
        "write_authority": "provider_managed",
        "scope": copy.deepcopy(SCOPE),
        "freshness": {"mode": "source_truth_bound"},
        "lifecycle": {"state": "active"},
        "retrieval": {
            "index_required": True,
            "readback_required": True,
            "application_receipt_required": True,
        },
        "maintenance": {
            "writeback_triggers": ["validated_turn_outcome"],
            "closure_policy": "provider_write_then_exact_readback",
            "retirement_authority": "owner:demo",
        },
        "privacy": {"visibility": "private", "raw_content_in_registry": False},
        "provider_scope_ref_digest": hashlib.sha256(SCOPE_REF.encode()).hexdigest()[:16],
    }


def standing_policy() -> dict[str, Any]:
    return {
        "schema_version": "reward_memory_standing_policy_v0",
        "policy_id": "policy:experience",
        "enabled": True,
        "auto_activate": True,
        "owner_ref": "owner:demo",
        "reviewer_ref": "reviewer:demo",
        "authority_source_ref": "registry:demo-goal:reward-memory",
        "scope": copy.deepcopy(SCOPE),
        "allowed_target_classes": ["procedural_experience"],
        "allowed_source_kinds": ["engineering_review", "research_review"],
        "allowed_actor_roles": ["validated_goal_agent"],
        "allowed_action_scopes": [],
        "raw_content_captured": False,
    }


def config(provider_id: str = "openviking", **automation: bool) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": "reward_memory_experiment_config_v1",
        "project_provider_binding": {
            "provider_id": provider_id,
            "namespace": "reward_memory",
            "actor_peer_id": PEER,
            "corpus_scopes": [{"corpus_id": "experience", "scope_ref": SCOPE_REF}],
        },
        "corpora": [{"corpus": corpus(provider_id), "standing_policy": standing_policy()}],
        "surfaces": [
            {
                "surface_id": SURFACE,
                "adapter": "scoped_feedback",
                "corpus_ids": ["experience"],
                "ingest_corpus_id": "experience",
                "recall_profile": {
                    "profile_id": "turn-admission",
                    "mode": "function_boundary",
                    "max_queries": 1,
                    "limit": 5,
                },
            }
        ],
    }
    if automation:
        document["automation"] = automation
    return document


def write_goal(root: Path, config_document: dict[str, Any] | None = None, **binding: Any) -> Path:
    """A Goal repository with the config and a registry with a verified receipt."""
    repo = root / "repo"
    config_file = repo / CONFIG_PATH
    config_file.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(config_document or config(), indent=2).encode()
    config_file.write_bytes(raw)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    provider = (config_document or config())["project_provider_binding"]["provider_id"]
    receipt = {
        "schema_version": "reward_memory_enablement_receipt_v0",
        "status": "verified",
        "goal_id": GOAL,
        "agent_id": AGENT,
        "config_digest": digest,
        "provider_id": provider,
        "isolation_mode": "goal_scoped_agent_private",
        "actor_binding_verified": True,
        "writability_verified": True,
        "exact_readback_verified": True,
        "probe_count": 1,
        "write_count": 1,
        "external_writes_performed": True,
        "provider_preflight_performed": True,
        "observed_at": OBSERVED_AT,
        "reason_codes": [],
        "probe_records_recallable": False,
    }
    reward_memory = {
        "enabled": True,
        "experimental": True,
        "config_path": CONFIG_PATH,
        "config_digest": digest,
        "enabled_agents": [AGENT],
        "enablement_receipts": {AGENT: receipt},
    }
    reward_memory.update(binding)
    registry = {
        "goals": [
            {
                "id": GOAL,
                "repo": str(repo),
                "coordination": {"registered_agents": [AGENT]},
                "control_plane": {"reward_memory": reward_memory},
            }
        ]
    }
    path = root / "registry.json"
    path.write_text(json.dumps(registry, indent=2))
    return path


SIDECAR_DIR = (".local", "turn-hooks")
STORE_FILE = "memory.sqlite3"
JOURNAL_DIR = "reward-memory-outcomes"
PASSED_EVIDENCE = "evidence:ci-run-17"


class Workspace:
    """One scratch Goal: registry, repository, work directory and validator."""

    def __init__(
        self, root: Path, provider: str = "embedded", automation: dict[str, bool] | None = None
    ) -> None:
        self.root = root
        self.provider_id = "embedded_sqlite" if provider == "embedded" else provider
        self.registry = write_goal(root, config(self.provider_id, **(automation or {})))
        self.repo = root / "repo"
        self.sidecars = self.repo.joinpath(*SIDECAR_DIR)
        # The host runs inside the Goal's repository: installed hooks act only there.
        self.work = self.repo / "work"
        self.work.mkdir(exist_ok=True)
        self.evidence = root / "evidence.json"
        self.evidence.write_text(json.dumps({"passed_checks": [PASSED_EVIDENCE]}))
        self.validator = [sys.executable, "-m", "conformance.validator", str(self.evidence)]

    def journals(self) -> list[dict[str, Any]]:
        """Every reward-memory outcome journal, oldest name first."""
        directory = self.sidecars / JOURNAL_DIR
        paths = sorted(directory.rglob("*.json")) if directory.is_dir() else []
        return [json.loads(path.read_text(encoding="utf-8")) for path in paths]

    def settled(self) -> list[dict[str, Any]]:
        """The journals that hold a public receipt (settlement finished)."""
        return [j for j in self.journals() if isinstance(j.get("public_receipt"), dict)]

    def stored_records(self) -> int | None:
        """Records in the embedded store (read-only); ``None`` for another provider."""
        if self.provider_id != "embedded_sqlite":
            return None
        path = self.sidecars / STORE_FILE
        if not path.exists():
            return 0
        connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            (count,) = connection.execute("SELECT COUNT(*) FROM records").fetchone()
        except sqlite3.OperationalError:  # created but the schema never got written
            return 0
        finally:
            connection.close()
        return int(count)

    def store_fingerprint(self) -> tuple[tuple[str, int, int], ...] | None:
        """Size and modification time of the embedded store's database and non-empty
        write-ahead log (a reader may create an empty log, and touches -shm);
        unchanged means no write reached the store."""
        if self.provider_id != "embedded_sqlite":
            return None
        paths = (self.sidecars / STORE_FILE, self.sidecars / (STORE_FILE + "-wal"))
        return tuple(
            (p.name, p.stat().st_size, p.stat().st_mtime_ns)
            for p in paths
            if p.exists() and p.stat().st_size
        )

    def sidecar_files(self) -> list[Path]:
        """Every JSON sidecar below the Goal's sidecar root."""
        return sorted(self.sidecars.rglob("*.json")) if self.sidecars.is_dir() else []


def reflection(summary: str = REFLECTION["content_summary"], **changes: Any) -> dict[str, Any]:
    """A reflection v1 document; ``changes`` replace top-level fields."""
    document = copy.deepcopy(REFLECTION)
    document["content_summary"] = summary
    document.update(changes)
    return document


def final_message(document: dict[str, Any] | None) -> str:
    """A final assistant message that ends with the reflection block."""
    block = json.dumps(document) if document is not None else ""
    return f"Done.\n<reward_memory_reflection_json>{block}</reward_memory_reflection_json>"
