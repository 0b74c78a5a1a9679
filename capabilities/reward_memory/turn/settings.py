"""A binding's private settings: which ranking it uses, and its utility evaluator.

``turn-hooks init --ranking utility|relevance`` and ``--utility-evaluator CMD`` write
them; PreTurn reads the ranking on every Turn, settlement the evaluator. They live in
a private settings sidecar of the (Goal, Agent), never in the experiment config,
whose bytes LoopX shares. A module of its own, importing nothing of the utility
package: a Turn whose binding ranks by relevance (the default) reads its setting and
pays for nothing else (issue 39, "Cost").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecars import SidecarStore, goal_agent_parts
from turn_hooks import SidecarError

SETTINGS_DIR = "reward-memory-settings"
SETTINGS_SCHEMA = "reward_memory_binding_settings_v0"
RANKINGS = ("relevance", "utility")
DEFAULT_RANKING = "relevance"


def settings_path(store: SidecarStore, goal_id: str, agent_id: str) -> Path:
    """``reward-memory-settings/T(goal)/T(agent).json``."""
    directory, goal, agent = goal_agent_parts(SETTINGS_DIR, goal_id, agent_id)
    return store.path(directory, goal, agent + ".json")


def read_settings(store: SidecarStore, goal_id: str, agent_id: str) -> dict[str, Any]:
    """A binding's settings (empty when none or unreadable: the defaults hold)."""
    try:
        document = store.read(settings_path(store, goal_id, agent_id))
    except SidecarError:
        return {}
    return document if isinstance(document, dict) else {}


def ranking_of(store: SidecarStore, goal_id: str, agent_id: str) -> str:
    """The ranking in force for a binding: ``relevance`` unless switched (or unreadable)."""
    ranking = read_settings(store, goal_id, agent_id).get("ranking")
    return ranking if ranking in RANKINGS else DEFAULT_RANKING


def set_setting(store: SidecarStore, goal_id: str, agent_id: str, key: str, value: Any) -> bool:
    """Set one of a binding's settings (``None`` removes it); ``True`` when it changed."""
    path = settings_path(store, goal_id, agent_id)
    with store.transaction(path) as settings:
        document = dict(settings.read() or {})
        if document.get(key) == value:
            return False
        document.pop(key, None)
        if value is not None:
            document[key] = value
        settings.write({**document, "schema_version": SETTINGS_SCHEMA})
    return True


def set_ranking(store: SidecarStore, goal_id: str, agent_id: str, ranking: str) -> bool:
    """Switch a binding's ranking; ``True`` when it changed."""
    if ranking_of(store, goal_id, agent_id) == ranking:
        return False
    return set_setting(store, goal_id, agent_id, "ranking", ranking)
