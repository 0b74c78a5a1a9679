"""Naming the binding: which registry, Goal and Agent a command works on.

One rule for every command, so none needs flags once ``turn-hooks init`` has run:

- the registry is ``--registry``, else ``$TURN_HOOKS_REGISTRY``, else
  ``$XDG_CONFIG_HOME/turn-hooks/registry.json`` (``~/.config/...``) when it exists;
- the Goal is ``--goal-id``, else ``$TURN_HOOKS_GOAL``, else the Goal whose
  registered ``repo`` is the nearest directory enclosing the working directory;
- the Agent is ``--agent-id``, else ``$TURN_HOOKS_AGENT``, else the Goal's only
  ``coordination.registered_agents`` entry.

An explicit name always wins. A discovery that finds nothing, or more than one
candidate, is a typed error: a command never picks one binding of several.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecars.registry import read_registry, registry_goal
from turn_hooks.errors import InvalidInputError

REGISTRY_ENV = "TURN_HOOKS_REGISTRY"
GOAL_ENV = "TURN_HOOKS_GOAL"
AGENT_ENV = "TURN_HOOKS_AGENT"
REGISTRY_FILE = "registry.json"


def config_home() -> Path:
    """``$XDG_CONFIG_HOME/turn-hooks`` (``~/.config/turn-hooks``): where ``init``
    keeps the registry. A relative ``$XDG_CONFIG_HOME`` is ignored, as the XDG
    base directory specification says."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "turn-hooks"


def default_registry() -> Path:
    """The registry a command uses when none is named (it may not exist yet)."""
    return config_home() / REGISTRY_FILE


@dataclass(frozen=True)
class NamedBinding:
    """A named binding; ``sources`` says how each part was named (for ``doctor``):
    ``flag``, ``env``, ``default`` (the registry) or ``discovered``. An id nothing
    named (only without discovery) is ``""``."""

    registry: str
    goal_id: str
    agent_id: str
    sources: dict[str, str]


def name_registry(registry: str | None) -> tuple[str, str]:
    """(path, source) of the registry to use.

    :raises InvalidInputError: ``registry_missing`` when none is named and the
        default one does not exist.
    """
    if registry:
        return registry, "flag"
    named = os.environ.get(REGISTRY_ENV)
    if named:
        return named, "env"
    default = default_registry()
    if os.path.lexists(default):
        return str(default), "default"
    raise InvalidInputError(
        f"no binding registry is named: pass --registry, set ${REGISTRY_ENV}, "
        "or run `turn-hooks init` in the repository",
        reason_code="registry_missing",
        field="registry",
    )


def _repository_goals(document: dict[str, Any], cwd: Path) -> list[str]:
    """The ids of the Goals whose repository is the nearest one enclosing ``cwd``."""
    here = cwd.resolve()
    found: dict[int, list[str]] = {}
    for goal in document["goals"]:
        repo = goal.get("repo") if isinstance(goal, dict) else None
        if not isinstance(repo, str) or not repo or not isinstance(goal.get("id"), str):
            continue
        try:
            path = Path(repo).resolve()
        except (OSError, RuntimeError):  # a link loop names no directory
            continue
        if path == here or path in here.parents:
            found.setdefault(len(path.parts), []).append(goal["id"])
    return found[max(found)] if found else []


def serves_directory(registry: str | None, goal_id: str | None, cwd: object) -> bool:
    """Whether a hook of ``goal_id`` acts in the working directory ``cwd``.

    Installed hooks are machine-wide (one ``~/.codex/hooks.json`` or ``settings.json``
    holds the handlers of every Goal installed), so each Goal's hook acts only where
    discovery would name its Goal: its registered ``repo`` must be the nearest Goal
    repository enclosing ``cwd``, by the rule of :func:`name_binding` (links resolved
    the same way). A Turn in another Goal's repository, nested in this one or not, or
    in an unrelated directory is not this Goal's.

    ``cwd`` is the host event's ``cwd`` (never the process's: the resident server's
    is not the Turn's). Every host we install into sends it (Codex, Claude Code,
    Gemini, and DSH's plugin); an event of the generic contract that names none
    (``cwd`` is optional there) says nothing about where the Turn runs, so it is not
    scoped and acts as before. A Goal that registers no ``repo`` (older registries)
    and a registry this cannot read keep acting everywhere too: the hook's own
    checks then report what is wrong, as before. A ``cwd`` that names no possible
    directory serves no Goal.
    """
    if not registry or not goal_id or not isinstance(cwd, str) or not cwd:
        return True
    try:
        document = read_registry(registry)
    except InvalidInputError:
        return True
    goal = registry_goal(document, goal_id)
    repo = goal.get("repo") if goal is not None else None
    if not isinstance(repo, str) or not repo:
        return True
    try:  # a relative cwd is taken from the process's directory, as a host would
        return goal_id in _repository_goals(document, Path(cwd))
    except (OSError, RuntimeError, ValueError):  # no directory, or a NUL in its name
        return False


def _one(candidates: list[str], what: str, flag: str, env: str, reason: str) -> str:
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise InvalidInputError(
            f"no {what} could be discovered: pass --{flag}, set ${env}, "
            "or run `turn-hooks init` in the repository",
            reason_code=reason,
            field=flag.replace("-", "_"),
        )
    raise InvalidInputError(
        f"{len(candidates)} {what}s match ({', '.join(sorted(candidates))}): "
        f"pass --{flag} or set ${env}",
        reason_code="binding_ambiguous",
        field=flag.replace("-", "_"),
    )


def name_binding(
    registry: str | None,
    goal_id: str | None,
    agent_id: str | None,
    *,
    cwd: Path | None = None,
    discover: bool = True,
) -> NamedBinding:
    """The binding a command names, by the rule in the module docstring.

    The registry is read only when something must be discovered, so a fully named
    binding keeps the errors of whatever reads it next. With ``discover`` false,
    only flags and the environment name the Goal and Agent (``""`` when neither).

    :raises InvalidInputError: ``registry_missing`` (:func:`name_registry`), the
        :func:`~sidecars.read_registry` refusals, ``goal_not_discovered``,
        ``goal_not_found``, ``agent_not_discovered`` and ``binding_ambiguous``.
    """
    path, registry_source = name_registry(registry)
    sources = {"registry": registry_source}
    goal, agent = goal_id or None, agent_id or None
    for name, value, env in (("goal_id", goal, GOAL_ENV), ("agent_id", agent, AGENT_ENV)):
        if value:
            sources[name] = "flag"
        elif os.environ.get(env):
            sources[name] = "env"
    goal = goal or os.environ.get(GOAL_ENV) or None
    agent = agent or os.environ.get(AGENT_ENV) or None
    if discover and (goal is None or agent is None):
        document = read_registry(path)
        if goal is None:
            goal = _one(
                _repository_goals(document, cwd or Path.cwd()),
                "Goal for this repository",
                "goal-id",
                GOAL_ENV,
                "goal_not_discovered",
            )
            sources["goal_id"] = "discovered"
        if agent is None:
            entry = registry_goal(document, goal)
            if entry is None:
                raise InvalidInputError(
                    "the registry names no such Goal", reason_code="goal_not_found"
                )
            coordination = entry.get("coordination")
            listed = coordination.get("registered_agents") if isinstance(coordination, dict) else []
            listed = listed if isinstance(listed, list) else []
            agents = sorted({a for a in listed if isinstance(a, str) and a.strip()})
            agent = _one(agents, "registered Agent", "agent-id", AGENT_ENV, "agent_not_discovered")
            sources["agent_id"] = "discovered"
    return NamedBinding(registry=path, goal_id=goal or "", agent_id=agent or "", sources=sources)
