"""``turn-hooks init``: bind one Goal and Agent of the current repository in one step.

It derives what a user would otherwise write by hand (issue 16): the registry entry,
a ``reward_memory_experiment_config_v1`` with the canonical peer token, the
``goals/<goal>`` scope and its digest, and then runs the verified enablement of
``configure --execute`` (canary write, exact readback, receipt). Everything is
checked before anything is written; a second run that would change nothing writes
nothing and says so.

Where things go: the registry outside the working tree (``sidecars.default_registry``
unless one is named), the config and the embedded store in the repository's
``.local/turn-hooks/``, which gets a ``.gitignore`` of ``*`` so git never sees it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from capabilities.providers.factory import build_provider
from capabilities.reward_memory.binding.enablement import configure_binding
from capabilities.reward_memory.binding.registry import load_registry, registered_agents, resolve
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.config import goal_agent_scope, normalise_config
from capabilities.reward_memory.contract.identities import peer_token
from sidecars import DIR_MODE, FILE_MODE, atomic_write_text, registry_goal

INIT_SCHEMA = "reward_memory_init_v0"
STATE_DIR = (".local", "turn-hooks")
CONFIG_PATH = ".local/turn-hooks/reward-memory/experiment.json"
DEFAULT_AGENT = "agent"
"""One Agent for every host installed in the repository, so they share what is learned."""
SURFACE = "agent_workflow.turn_admission"
CORPUS = "experience"
PROVIDERS = {"embedded": "embedded_sqlite", "openviking": "openviking"}
LOCAL_USER = "local"
"""The user segment of an embedded store's scope (the store is the repository's own)."""
IGNORE_TEXT = "# written by turn-hooks init: local state, never committed\n*\n"
GOAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
REGISTRY_LOCK_TIMEOUT = 5.0


def find_repository(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding ``.git`` (a worktree's
    ``.git`` file counts); ``not_a_git_repository`` when there is none."""
    here = start.resolve()
    for directory in (here, *here.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    v.fail("repository", "init runs inside a git repository", "not_a_git_repository")


def goal_id_for(repo: Path, explicit: str | None) -> str:
    """``--goal-id`` as given (checked), else the repository's directory name made an
    id: lowercased, every other run of characters one ``-``."""
    if explicit is not None:
        if not GOAL_ID.fullmatch(explicit):
            v.fail("goal_id", "must be 1-64 of A-Z a-z 0-9 . _ - (no /)", "goal_id_invalid")
        return explicit
    name = re.sub(r"[^a-z0-9]+", "-", repo.name.lower()).strip("-")[:64].rstrip("-")
    return name or "goal"


def _scope_user(provider_id: str) -> str:
    if provider_id == "embedded_sqlite":
        return LOCAL_USER
    from capabilities.providers.client import OpenVikingSettings

    settings = OpenVikingSettings.resolve()
    if settings is None:
        v.fail(
            "provider",
            "openviking needs a server: set OPENVIKING_URL or write ~/.openviking/ovcli.conf",
            "provider_endpoint_unconfigured",
        )
    return settings.user or "default"


def build_config(goal: str, agent: str, provider_id: str, user: str) -> dict[str, Any]:
    """The standard config: one private ``experience`` corpus on the Agent's peer,
    below ``goals/<goal>``, written by validated Turns, recalled at Turn admission."""
    peer = peer_token(goal, agent)
    scope_ref = f"viking://user/{user}/peers/{peer}/memories/reward-memory/goals/{goal}/{CORPUS}"
    owner = f"owner:{goal}"
    scope = {
        "workspace_ref": f"workspace:{goal}",
        "project_ref": f"project:{goal}",
        "surface_ids": [SURFACE],
        "peer_ref": f"agent:{agent}",
    }
    corpus = {
        "corpus_id": CORPUS,
        "class_id": "procedural_experience",
        "provider_id": provider_id,
        "owner_ref": owner,
        "source_of_truth": "validated_turn_outcomes",
        "read_authority": "actor_scoped",
        "write_authority": "provider_managed",
        "scope": scope,
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
            "retirement_authority": owner,
        },
        "privacy": {"visibility": "private", "raw_content_in_registry": False},
        "provider_scope_ref_digest": hashlib.sha256(scope_ref.encode()).hexdigest()[:16],
    }
    policy = {
        "schema_version": "reward_memory_standing_policy_v0",
        "policy_id": f"policy:{CORPUS}",
        "enabled": True,
        "auto_activate": True,
        "owner_ref": owner,
        "reviewer_ref": f"reviewer:{goal}",
        "authority_source_ref": f"registry:{goal}:reward-memory",
        "scope": dict(scope),
        "allowed_target_classes": ["procedural_experience"],
        "allowed_source_kinds": ["engineering_review", "research_review"],
        "allowed_actor_roles": ["validated_goal_agent"],
        "allowed_action_scopes": [],
        v.RAW_CONTENT: False,
    }
    return {
        "schema_version": "reward_memory_experiment_config_v1",
        "project_provider_binding": {
            "provider_id": provider_id,
            "namespace": "reward_memory",
            "actor_peer_id": peer,
            "corpus_scopes": [{"corpus_id": CORPUS, "scope_ref": scope_ref}],
        },
        "corpora": [{"corpus": corpus, "standing_policy": policy}],
        "surfaces": [
            {
                "surface_id": SURFACE,
                "adapter": "scoped_feedback",
                "corpus_ids": [CORPUS],
                "ingest_corpus_id": CORPUS,
                "recall_profile": {
                    "profile_id": "turn-admission",
                    "mode": "function_boundary",
                    "max_queries": 1,
                    "limit": 5,
                },
            }
        ],
    }


def _real_directories(repo: Path) -> None:
    """The state directories, where they exist, are directories and not links."""
    path = repo
    for part in (*STATE_DIR, "reward-memory"):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(mode):
            what = "a symbolic link" if stat.S_ISLNK(mode) else "not a directory"
            v.fail(
                "repository",
                f"{part} must be a real directory inside the repository, and is {what}: "
                "replace it with the directory itself (a link: the directory it points to), "
                "then run init again",
                "state_dir_not_directory",
            )


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


def _goal_entry(
    registry: dict[str, Any] | None, goal: str, agent: str, repo: Path
) -> dict[str, Any] | None:
    """The existing entry for ``goal``, after refusing a registry that binds this
    repository or this Goal elsewhere (discovery would then be ambiguous)."""
    if registry is None:
        return None
    for other in registry["goals"]:
        if not isinstance(other, dict) or other.get("id") == goal:
            continue
        if isinstance(other.get("repo"), str) and Path(other["repo"]).resolve() == repo:
            v.fail(
                "goal_id",
                f"cannot be a second Goal of this repository (it is {other.get('id')}): "
                f"pass --goal-id {other.get('id')}",
                "repository_has_goal",
            )
    entry = registry_goal(registry, goal)
    if entry is None:
        return None
    if Path(str(entry.get("repo") or "")).resolve() != repo:
        v.fail("goal_id", "names a Goal of another repository", "goal_repository_conflict")
    # One config per Goal, and a private corpus is one Agent's peer: a second Agent
    # would take the first one's binding away.
    control = entry.get("control_plane")
    shared = control.get("reward_memory") if isinstance(control, dict) else None
    enabled = shared.get("enabled_agents") if isinstance(shared, dict) else None
    others = [a for a in enabled or [] if a != agent] if isinstance(enabled, list) else []
    if others:
        v.fail(
            "agent_id",
            f"differs from the Agent this Goal is bound to ({others[0]}): pass --agent-id "
            f"{others[0]}",
            "goal_has_other_agent",
        )
    return entry


def _write_entry(path: Path, goal: str, agent: str, repo: Path) -> None:
    """Create the registry (0600, in a 0700 directory) or add the Goal and Agent."""
    import filelock

    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    lock = filelock.FileLock(str(path) + ".lock", timeout=REGISTRY_LOCK_TIMEOUT, mode=FILE_MODE)
    try:
        with lock:
            registry = load_registry(path) if os.path.lexists(path) else {"goals": []}
            entry = registry_goal(registry, goal)
            if entry is None:
                entry = {"id": goal, "repo": str(repo)}
                registry["goals"].append(entry)
            coordination = entry.setdefault("coordination", {})
            agents = coordination.setdefault("registered_agents", [])
            if agent not in agents:
                agents.append(agent)
            entry.setdefault("control_plane", {}).setdefault("reward_memory", {"enabled": False})
            text = json.dumps(registry, indent=2, ensure_ascii=False) + "\n"
            atomic_write_text(path, text, mode=FILE_MODE)
    except filelock.Timeout:
        v.fail("registry", "is locked by another process", "registry_lock_timeout")


def init_binding(
    *, cwd: Path, registry: Path, goal_id: str | None, agent_id: str | None, provider: str
) -> dict[str, Any]:
    """Bind (Goal, Agent) in the repository around ``cwd``; a public receipt.

    Idempotent: with the entry, the config bytes and a verified enablement already
    in place it writes nothing (``status: unchanged``). A provider that fails its
    preflight stops it before any write (``provider_unavailable``).
    """
    repo = find_repository(cwd)
    goal = goal_id_for(repo, goal_id)
    agent = v.normalise_agent_id(agent_id if agent_id is not None else DEFAULT_AGENT)
    provider_id = PROVIDERS[provider]
    if registry.is_symlink():
        # init replaces the registry atomically, which would swap the link for a file
        # (or write through a dangling one): a link is refused, as every store file is.
        v.fail(
            "registry",
            "is a symbolic link: init writes a regular file only",
            "registry_not_regular",
        )
    existing = load_registry(registry) if os.path.lexists(registry) else None
    entry = _goal_entry(existing, goal, agent, repo)
    _real_directories(repo)
    config = build_config(goal, agent, provider_id, _scope_user(provider_id))
    goal_agent_scope(normalise_config(config), goal, agent)  # the rules, before any write
    text = json.dumps(config, indent=2) + "\n"
    config_file = repo / CONFIG_PATH
    document: dict[str, Any] = {
        "ok": True,
        "schema_version": INIT_SCHEMA,
        "goal_id": goal,
        "agent_id": agent,
        "provider_id": provider_id,
        "config_path": CONFIG_PATH,
        "git_ignored": "/".join(STATE_DIR) + "/",
        v.RAW_CONTENT: False,
    }
    state = repo.joinpath(*STATE_DIR)
    same_config = _read_bytes(config_file) == text.encode()
    ignored = _read_bytes(state / ".gitignore") == IGNORE_TEXT.encode()
    if existing is not None and entry is not None and same_config and ignored:
        registered = agent in registered_agents(entry)
        if registered and resolve(existing, goal, agent).status.get("status") == "available":
            document.update(status="unchanged", changed=[])
            document[v.EXTERNAL_WRITES] = False
            return _with_next_step(document, repo)
    binding = normalise_config(config)["corpora"][CORPUS]["provider_binding"]
    preflight = build_provider(binding, repo=repo, dry_run=True).preflight(
        timeout=float(binding["timeout_seconds"])
    )
    if not preflight.ok:
        v.fail("provider", f"{provider} is not reachable", "provider_unavailable")
    changed = ["config"] if not same_config else []
    directory = repo
    for part in (*STATE_DIR, "reward-memory"):  # each one 0700, as the stores require
        directory = directory / part
        if not directory.is_dir():
            directory.mkdir(mode=DIR_MODE)
    if not ignored:
        atomic_write_text(state / ".gitignore", IGNORE_TEXT, mode=0o644)
    if not same_config:
        atomic_write_text(config_file, text, mode=FILE_MODE)
    if entry is None or agent not in registered_agents(entry):
        changed.insert(0, "registry_entry")
    _write_entry(registry, goal, agent, repo)
    enabled = configure_binding(
        registry_path=registry,
        goal_id=goal,
        agent_id=agent,
        config_path=CONFIG_PATH,
        execute=True,
        clear=False,
    )
    document.update(
        status="initialised" if enabled["status"] == "verified" else enabled["status"],
        changed=[*changed, "enablement"] if enabled["binding_committed"] else changed,
        enablement=enabled["status"],
    )
    document[v.EXTERNAL_WRITES] = enabled[v.EXTERNAL_WRITES]
    if enabled["status"] != "verified":
        reasons = [p["reason_code"] for p in enabled["corpora"] if p["reason_code"]]
        document.update(ok=False, reason_code=reasons[0] if reasons else "enablement_failed")
        return document
    return _with_next_step(document, repo)


def _with_next_step(document: dict[str, Any], repo: Path) -> dict[str, Any]:
    """The next command: install with a check this repository has, or say none was found."""
    import shlex

    from capabilities.reward_memory.binding.checks import suggest_check

    found = suggest_check(repo)
    if found is None:
        document["suggested_check"] = None
        document["next_step"] = (
            "no test command found here (no Makefile test or check target, pytest, "
            "npm test, cargo or go tests): install the hooks with the check that says "
            "this project's work is right, e.g. turn-hooks install codex --validate-with "
            "'YOUR CHECK' (or install claude-code, gemini or dsh), or with --recall-only "
            "to learn nothing"
        )
        return document
    check, source = found
    document["suggested_check"] = {"command": check, "found_in": source}
    document["next_step"] = (
        f"install the hooks with this repository's check ({source}): "
        f"turn-hooks install codex --validate-with {shlex.quote(check)} (or install "
        "claude-code, gemini or dsh)"
    )
    return document
