"""Enable reward memory for one Agent: preflight, canary write, verified receipt (§5.2).

Preview never writes. ``--execute`` writes one fresh canary per private corpus,
accepts it only after exact readback, removes it again (canaries are never
recallable: they are not active records), and then commits the binding and a
verified enablement receipt to the registry under a lock, atomically.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from capabilities.providers.base import Provider
from capabilities.providers.factory import build_provider
from capabilities.providers.sync import stored_form
from capabilities.reward_memory.binding.registry import (
    RECEIPT_SCHEMA,
    find_goal,
    load_registry,
    registered_agents,
    resolve,
)
from capabilities.reward_memory.binding.validated import keep_validated
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.config import (
    goal_agent_scope,
    normalise_config,
    read_config_bytes,
)
from capabilities.reward_memory.contract.identities import config_digest
from capabilities.reward_memory.contract.values import now_timestamp
from sidecars import SidecarStore, atomic_write_text, sidecar_root
from turn_hooks import InvalidInputError, ProviderError, loads_bounded

CONFIGURATION_SCHEMA = "reward_memory_configuration_v0"
PROBE_SCHEMA = "reward_memory_enablement_probe_v0"
REGISTRY_LOCK_TIMEOUT = 5.0


def _probe_corpus(
    entry: dict[str, Any], provider: Provider, *, execute: bool, observed_at: str
) -> dict[str, Any]:
    binding = entry["provider_binding"]
    peer = binding.get("actor_peer_id")
    timeout = float(binding["timeout_seconds"])
    result: dict[str, Any] = {
        "corpus_id": entry["corpus"]["corpus_id"],
        "status": "unavailable",
        "reason_code": None,
        "canary_written": False,
        "exact_readback_verified": False,
    }
    preflight = provider.preflight(timeout=timeout)
    if not preflight.ok:
        result["reason_code"] = preflight.reason_code
        return result
    try:
        provider.list(binding["scope_ref"], limit=1, actor_peer_id=peer, timeout=timeout)
    except ProviderError as exc:
        result.update(status="preflight_incomplete", reason_code=exc.reason_code)
        return result
    result["status"] = "preflight_ready"
    if not execute:
        return result
    nonce = secrets.token_hex(8)
    target = binding["scope_ref"].rstrip("/") + f"/turn-hooks-canary-{nonce}.json"
    body = json.dumps(
        {
            "schema_version": PROBE_SCHEMA,
            "nonce": nonce,
            "observed_at": observed_at,
            "recallable": False,
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    try:
        provider.write(target, body, actor_peer_id=peer, timeout=timeout)
        result["canary_written"] = True
        readback = provider.read_exact(target, actor_peer_id=peer, timeout=timeout)
    except ProviderError as exc:
        result.update(status="blocked", reason_code=exc.reason_code)
        return result
    if readback is None or stored_form(readback) != stored_form(body):
        result.update(status="blocked", reason_code="canary_readback_mismatch")
        return result
    try:
        provider.delete(target, actor_peer_id=peer, timeout=timeout)
    except ProviderError:
        pass  # a left-over canary is harmless: recall only accepts active records
    result.update(status="verified", exact_readback_verified=True)
    return result


def _write_registry(path: Path, registry: dict[str, Any]) -> None:
    mode = stat.S_IMODE(os.stat(path).st_mode)
    atomic_write_text(path, json.dumps(registry, indent=2, ensure_ascii=False) + "\n", mode=mode)


def _locked_update(path: Path, change: Any) -> dict[str, Any]:
    import filelock

    lock = filelock.FileLock(str(path) + ".lock", timeout=REGISTRY_LOCK_TIMEOUT, mode=0o600)
    try:
        with lock:
            registry = load_registry(path)
            change(registry)
            _write_registry(path, registry)
            return registry
    except filelock.Timeout:
        v.fail("registry", "is locked by another process", "registry_lock_timeout")


def _shared_binding(registry: dict[str, Any], goal_id: str) -> dict[str, Any]:
    goal = find_goal(registry, goal_id)
    control = goal.setdefault("control_plane", {})
    if not isinstance(control, dict):
        v.fail("registry", "control_plane must be an object", "registry_invalid")
    binding = control.setdefault("reward_memory", {})
    if not isinstance(binding, dict):
        v.fail("registry", "reward_memory must be an object", "registry_invalid")
    return binding


def configure_binding(
    *,
    registry_path: Path,
    goal_id: str,
    agent_id: str,
    config_path: str | None,
    execute: bool,
    clear: bool,
) -> dict[str, Any]:
    """Preview, execute or clear one Agent's binding; returns a public receipt."""
    registry = load_registry(registry_path)
    goal = find_goal(registry, goal_id)
    agent = v.normalise_agent_id(agent_id)
    if agent not in registered_agents(goal):
        v.fail("agent_id", "is not registered for this Goal", "agent_not_registered")
    document: dict[str, Any] = {
        "ok": True,
        "schema_version": CONFIGURATION_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent,
        "mode": "clear" if clear else "execute" if execute else "preview",
        "binding_committed": False,
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }
    if clear:

        def disable(current: dict[str, Any]) -> None:
            binding = _shared_binding(current, goal_id)
            agents = [a for a in binding.get("enabled_agents") or [] if a != agent]
            binding["enabled_agents"] = agents
            receipts = binding.get("enablement_receipts")
            if isinstance(receipts, dict):
                receipts.pop(agent, None)
            if not agents:
                binding["enabled"] = False

        _locked_update(registry_path, disable)
        document.update(status="cleared", binding_committed=True)
        document["experiment"] = resolve(load_registry(registry_path), goal_id, agent).status
        return document

    shared = _shared_binding(registry, goal_id)
    path = config_path or shared.get("config_path")
    if not isinstance(path, str) or not path.strip():
        v.fail("config", "is required (--config) when the binding has none", "config_missing")
    repo = Path(str(goal.get("repo") or "."))
    raw = read_config_bytes(repo, path)
    try:
        parsed = loads_bounded(raw)
    except InvalidInputError:
        v.fail("config", "is not a JSON document", "config_not_json")
    config = normalise_config(parsed)
    scope = goal_agent_scope(config, goal_id, agent)
    digest = config_digest(raw)
    observed_at = now_timestamp()
    probes = [
        _probe_corpus(
            entry,
            build_provider(entry["provider_binding"], repo=repo),
            execute=execute and entry["corpus"]["privacy"]["visibility"] == "private",
            observed_at=observed_at,
        )
        for entry in config["corpora"].values()
    ]
    statuses = {probe["status"] for probe in probes}
    writes = sum(probe["canary_written"] for probe in probes)
    document.update(
        {
            "config_digest": digest,
            "provider_id": config["project_provider_binding"]["provider_id"],
            "isolation_mode": scope["isolation_mode"],
            "corpora": probes,
            v.EXTERNAL_WRITES: writes > 0,
        }
    )
    for worst in ("unavailable", "blocked", "preflight_incomplete"):
        if worst in statuses:
            document["status"] = worst
            break
    else:
        document["status"] = "verified" if execute else "preflight_ready"
    if document["status"] != "verified":
        return document
    receipt = {
        "schema_version": RECEIPT_SCHEMA,
        "status": "verified",
        "goal_id": goal_id,
        "agent_id": agent,
        "config_digest": digest,
        "provider_id": document["provider_id"],
        "isolation_mode": scope["isolation_mode"],
        "actor_binding_verified": scope["actor_binding_verified"],
        "writability_verified": True,
        "exact_readback_verified": True,
        "probe_count": len(probes),
        "write_count": writes,
        v.EXTERNAL_WRITES: writes > 0,
        "provider_preflight_performed": True,
        "observed_at": observed_at,
        "reason_codes": [],
        "probe_records_recallable": False,
    }

    def commit(current: dict[str, Any]) -> None:
        binding = _shared_binding(current, goal_id)
        agents = [a for a in binding.get("enabled_agents") or [] if a != agent]
        binding.update(
            enabled=True,
            experimental=True,
            config_path=path.strip(),
            config_digest=digest,
            enabled_agents=[*agents, agent],
        )
        receipts = binding.get("enablement_receipts")
        binding["enablement_receipts"] = {
            **(receipts if isinstance(receipts, dict) else {}),
            agent: receipt,
        }

    _locked_update(registry_path, commit)
    # Validated above; Turns use this form while the config keeps these bytes.
    keep_validated(SidecarStore(sidecar_root(repo)), path, digest, config)
    document["binding_committed"] = True
    document["experiment"] = resolve(load_registry(registry_path), goal_id, agent).status
    return document
