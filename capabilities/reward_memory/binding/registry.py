"""The binding registry and ``reward_memory_experiment_status_v1`` (contracts.md §5).

Resolution is read-only and makes no provider call. The first failing check wins, in
the fixed order: disabled → agent_not_enabled → config_missing → config_invalid →
enablement_stale → enablement_unverified → available.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capabilities.reward_memory.binding.validated import validated_config
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.config import goal_agent_scope, read_config_bytes
from capabilities.reward_memory.contract.identities import binding_revision, config_digest
from sidecars import SidecarStore, read_registry, registry_goal, sidecar_root
from turn_hooks import InvalidInputError

if TYPE_CHECKING:
    from capabilities.reward_memory.contract.documents import ExperimentStatus

STATUS_SCHEMA = "reward_memory_experiment_status_v1"
ROUTE_SCHEMA = "reward_memory_config_runtime_route_v0"
REPAIR_SCHEMA = "reward_memory_enablement_repair_v0"
RECEIPT_SCHEMA = "reward_memory_enablement_receipt_v0"
REGISTRY_PLACEHOLDER = "<invoked-registry>"

HOST_COVERAGE = (
    ("codex_cli_turn", "connected", "connected_post_settlement"),
    ("generic_cli_turn", "connected", "connected_post_settlement"),
    ("dsh_turn", "connected", "connected_post_settlement"),
    ("codex_app_quota", "connected", "connected_refresh_spend_post_settlement"),
    ("lark", "status_projection_only", "uncovered"),
)
"""Upstream's fixed source-wiring table, kept byte-identical (contracts.md §17)."""


def host_coverage() -> list[dict[str, str]]:
    """The static ``host_coverage`` list embedded in every experiment status."""
    return [
        {"host_id": host, "automatic_recall": recall, "automatic_ingest": ingest}
        for host, recall, ingest in HOST_COVERAGE
    ]


@dataclass(frozen=True)
class Resolution:
    """A resolved binding: the public status plus, when available, the private config."""

    status: ExperimentStatus
    config: dict[str, Any] | None
    goal: dict[str, Any]
    binding: dict[str, Any]

    @property
    def repo(self) -> Path:
        """The Goal repository (private: never in a receipt)."""
        return Path(str(self.goal.get("repo") or "."))

    @property
    def sidecars(self) -> SidecarStore:
        """The Goal's sidecar store (``<repo>/.local/turn-hooks``)."""
        return SidecarStore(sidecar_root(self.repo))


def load_registry(path: str | Path) -> dict[str, Any]:
    """Read a registry file (the hosts' own rule, ``sidecars.read_registry``); a typed
    error when it is missing or not a registry."""
    try:
        return read_registry(path)
    except InvalidInputError as exc:
        raise v.RewardMemoryInputError(
            exc.message, reason_code=exc.reason_code, field="registry"
        ) from exc


def find_goal(registry: dict[str, Any], goal_id: str) -> dict[str, Any]:
    """The Goal entry with ``id == goal_id`` (the one ``sidecars.goal_repository`` finds)."""
    goal = registry_goal(registry, goal_id)
    if goal is None:
        v.fail("goal_id", "is not in the registry", "goal_not_found")
    return goal


def registered_agents(goal: dict[str, Any]) -> list[str]:
    """The Goal's registered agents, normalised (invalid entries dropped)."""
    coordination = goal.get("coordination")
    agents = coordination.get("registered_agents") if isinstance(coordination, dict) else None
    normal = []
    for agent in agents if isinstance(agents, list) else []:
        try:
            normal.append(v.normalise_agent_id(agent))
        except v.RewardMemoryInputError:
            continue
    return normal


def select_binding(goal: dict[str, Any], agent: str) -> dict[str, Any]:
    """The shared binding, or the Agent's exact override (never a fallback from it)."""
    control = goal.get("control_plane")
    shared = control.get("reward_memory") if isinstance(control, dict) else None
    shared = shared if isinstance(shared, dict) else {}
    if "agent_bindings" not in shared:
        return shared
    overrides = shared["agent_bindings"]
    if not isinstance(overrides, dict):
        return {}
    if agent not in overrides:
        return shared
    override = overrides[agent]
    override = dict(override) if isinstance(override, dict) else {}
    path = override.get("config_path")
    digest = override.get("config_digest")
    override["binding_agent_id"] = agent
    override["binding_revision"] = binding_revision(
        agent, path if isinstance(path, str) else None, digest if isinstance(digest, str) else None
    )
    return override


def _enabled_agents(binding: dict[str, Any]) -> list[str]:
    agents = binding.get("enabled_agents")
    normal: list[str] = []
    for agent in agents if isinstance(agents, list) else []:
        try:
            name = v.normalise_agent_id(agent)
        except v.RewardMemoryInputError:
            continue
        if name not in normal:
            normal.append(name)
    return normal


GLOBAL_LOCAL = "global-local"
"""The role of a registry shared by every project on the machine."""


def registry_role(registry: dict[str, Any]) -> str:
    """The role a registry declares in its ``registry_role``; ``project-local`` when none.

    Read as LoopX 2.1.1 reads it: any non-empty value, as its text, trimmed. The role
    is printed in a public receipt, so a declared text holding a local path or a
    secret-shaped word is printed without them (docs/compatibility.md).
    """
    declared = registry.get("registry_role")
    if not declared:
        return "project-local"
    text = str(declared).strip()
    return text if v.is_public_safe(text) else v.redact(text)


def _route(role: str, readback_status: str) -> dict[str, Any]:
    return {
        "schema_version": ROUTE_SCHEMA,
        "registry_source": "invoked_registry",
        "registry_role": role,
        # A global registry's Goals share one runtime; a project's registry has its own.
        "runtime_scope": "shared_runtime" if role == GLOBAL_LOCAL else "project_runtime",
        "goal_source": "registry.goals",
        "config_source": "goal_repo_relative_config_pointer",
        "readback_status": readback_status,
        "exact_readback_verified": readback_status == "verified",
    }


def repair_plan(goal_id: str, agent_id: str) -> dict[str, Any]:
    """Template commands to re-enable a stale or unverified binding."""
    registry = f"--registry '{REGISTRY_PLACEHOLDER}'"
    target = f"--goal-id {goal_id} --agent-id {agent_id}"
    return {
        "schema_version": REPAIR_SCHEMA,
        "kind": "requalify_existing_binding",
        "owner": "configure-goal",
        "registry_context": "reuse_invoked_registry",
        "commands_are_templates": True,
        "required_bindings": {REGISTRY_PLACEHOLDER: "invoked_registry_path"},
        "automatic_apply": False,
        "instruction": (
            f"Replace {REGISTRY_PLACEHOLDER} with the registry this command was invoked with "
            "(never a default one). Preview the configuration, then apply it: apply performs "
            "a fresh canary write with exact readback and records a new receipt. Never copy "
            "a new digest into an old receipt. Ordinary work keeps running meanwhile."
        ),
        "preview_command": f"turn-hooks reward-memory configure {registry} {target}",
        "apply_command": f"turn-hooks reward-memory configure {registry} {target} --execute",
        "verify_command": f"turn-hooks reward-memory experiment-status {registry} {target}",
        "success_status": "available",
    }


def _receipt_verified(
    receipt: dict[str, Any],
    goal_id: str,
    agent: str,
    digest: str,
    config: dict[str, Any],
    scope: dict[str, Any],
) -> bool:
    private = scope["isolation_mode"] == "goal_scoped_agent_private"
    # The receipt's schema_version is not one of the checks (contracts.md §5.3, check 7):
    # LoopX reports a Goal available whatever it holds, and so do we (issue 19).
    return (
        receipt.get("status") == "verified"
        and receipt.get("goal_id") == goal_id
        and receipt.get("agent_id") == agent
        and receipt.get("config_digest") == digest
        and receipt.get("provider_id") == config["project_provider_binding"]["provider_id"]
        and receipt.get("isolation_mode") == scope["isolation_mode"]
        and receipt.get("writability_verified") is True
        and receipt.get("exact_readback_verified") is True
        and (receipt.get("actor_binding_verified") is True or not private)
    )


def _canonical_pointer(repo: Path, config_path: str) -> tuple[str, bool]:
    """The pointer with ``..`` resolved lexically against ``repo``, and whether it had any.

    A pointer with ``..`` that stays inside the repository names the config, but it
    is not the pointer a configure run registers: upstream reports it as digest
    drift to requalify (issue 19). One that leaves the repository stays refused.
    """
    relative = Path(config_path.strip())
    if ".." not in relative.parts or relative.is_absolute():
        return config_path, False
    base = os.path.normpath(repo)
    target = os.path.normpath(os.path.join(base, relative))
    if os.path.commonpath([base, target]) != base or target == base:
        return config_path, False  # leaves the repository: read_config_bytes refuses it
    return os.path.relpath(target, base), True


def resolve(registry: dict[str, Any], goal_id: str, agent_id: str) -> Resolution:
    """Resolve the experiment status of one (Goal, Agent) (§5.3); no provider call."""
    goal = find_goal(registry, goal_id)
    role = registry_role(registry)
    agent = v.normalise_agent_id(agent_id)
    if agent not in registered_agents(goal):
        v.fail("agent_id", "is not registered for this Goal", "agent_not_registered")
    binding = select_binding(goal, agent)
    enabled = binding.get("enabled") is True and binding.get("experimental") is True
    enabled_agents = _enabled_agents(binding)
    # Any non-empty value is a registered pointer, read as its text (90 names the
    # file "90"), as LoopX reads it; an empty one is no pointer (issue 19).
    config_path = str(binding.get("config_path") or "").strip()
    status: ExperimentStatus = {
        "ok": True,
        "schema_version": STATUS_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent,
        "experimental": binding.get("experimental") is True,
        "enabled": enabled,
        "configured_for_agent": agent in enabled_agents,
        "config_pointer_registered": bool(config_path),
        "automatic_ingest": False,
        "automatic_recall": False,
        "fail_open": True,
        "config_runtime_route": _route(role, "not_attempted"),
        v.EXTERNAL_WRITES: False,
        "host_coverage": host_coverage(),
    }
    if "binding_revision" in binding:
        status["binding_revision"] = binding["binding_revision"]

    def stop(
        name: str,
        reason: str | None = None,
        route: str | None = None,
        scope: dict[str, Any] | None = None,
    ) -> Resolution:
        status["status"] = name
        status["available"] = False
        if reason is not None:
            status["reason_code"] = reason
        if route is not None:
            status["config_runtime_route"] = _route(role, route)
        if scope is not None:
            # A config that resolved but is not enabled: how to repair, then its scope
            # (LoopX's key order).
            status.update(
                {
                    "repair": repair_plan(goal_id, agent),
                    "isolation_mode": scope["isolation_mode"],
                    "actor_binding_verified": scope["actor_binding_verified"],
                    "writability_verified": False,
                    "exact_readback_verified": False,
                }
            )
        return Resolution(status=status, config=None, goal=goal, binding=binding)

    if not enabled:
        return stop("disabled")
    if agent not in enabled_agents:
        return stop("agent_not_enabled")
    if not config_path:
        return stop("config_missing")
    repo = Path(str(goal.get("repo") or "."))
    pointer, dotted = _canonical_pointer(repo, str(config_path))
    try:
        raw = read_config_bytes(repo, pointer)
        digest = config_digest(raw)
        # Validated when the binding was configured, unless the bytes changed since.
        config = validated_config(SidecarStore(sidecar_root(repo)), config_path, raw, digest)
    except InvalidInputError:  # RewardMemoryInputError is one too
        return stop("config_invalid", "config_unavailable_or_invalid", "rejected")
    try:
        scope = goal_agent_scope(config, goal_id, agent)
    except v.RewardMemoryInputError:
        return stop("config_invalid", "goal_agent_provider_scope_mismatch", "rejected")
    receipts = binding.get("enablement_receipts")
    receipt = receipts.get(agent) if isinstance(receipts, dict) else None
    receipt = receipt if isinstance(receipt, dict) else None
    if (
        receipt is None
        or dotted
        or binding.get("config_digest") != digest
        or receipt.get("config_digest") != digest
    ):
        return stop(
            "enablement_stale",
            "config_digest_missing_or_drifted",
            "drifted",
            scope,
        )
    if not _receipt_verified(receipt, goal_id, agent, digest, config, scope):
        return stop(
            "enablement_unverified",
            "provider_write_preflight_missing_or_unverified",
            "unverified",
            scope,
        )
    automation = config["automation"]
    # Corpora and surfaces are listed sorted by id, not as declared, as LoopX lists them.
    surfaces = [config["surfaces"][name] for name in sorted(config["surfaces"])]
    status.update(
        {
            "automatic_ingest": automation["automatic_ingest"],
            "automatic_recall": automation["automatic_recall"],
            "config_runtime_route": _route(role, "verified"),
            "status": "available",
            "available": True,
            "config_schema_version": config["schema_version"],
            "provider_id": config["project_provider_binding"]["provider_id"],
            "corpus_count": len(config["corpora"]),
            "corpus_ids": sorted(config["corpora"]),
            "surface_ids": sorted(config["surfaces"]),
            "surface_profiles": [
                {
                    "surface_id": surface["surface_id"],
                    "adapter": surface["adapter"],
                    "corpus_count": len(surface["corpus_ids"]),
                    "recall_profile_id": surface["recall_profile"]["profile_id"],
                }
                for surface in surfaces
            ],
            "automation_intent": config["automation_intent"],
            v.RAW_CONTENT: False,
            "isolation_mode": scope["isolation_mode"],
            "actor_binding_verified": scope["actor_binding_verified"],
            "writability_verified": True,
            "exact_readback_verified": True,
            "enablement_receipt_status": "verified",
        }
    )
    if len(surfaces) == 1:
        status["adapter"] = surfaces[0]["adapter"]
        status["corpus_id"] = surfaces[0]["ingest_corpus_id"]
    return Resolution(status=status, config=config, goal=goal, binding=binding)
