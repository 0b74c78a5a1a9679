"""The binding registry on disk: which Goal lives in which repository.

Hosts need it to find a Goal's sidecar store, and capabilities to resolve a
binding; both read it through these functions, so the registry is parsed by one rule.
The registry is ``{"goals": [{"id": ..., "repo": ..., ...}, ...]}``; everything else in
it belongs to the capabilities that read it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecars.files import read_bounded
from turn_hooks import loads_bounded
from turn_hooks.errors import InvalidInputError


def read_registry(path: str | Path) -> dict[str, Any]:
    """The registry document, read through the bounded JSON reader.

    :raises InvalidInputError: ``registry_unreadable`` when the file cannot be read,
        ``registry_not_regular`` when it is a FIFO, device or directory,
        ``registry_too_large`` past 4 MiB (none of these blocks or fills memory),
        ``registry_invalid`` when it is not JSON or not an object with a ``goals`` list
        (the message names the registry, so a capability can pass it on unchanged).
    """
    try:
        raw = read_bounded(path, reason_prefix="registry", name="registry")
    except InvalidInputError as exc:
        if exc.reason_code != "registry_not_regular":
            raise
        # A FIFO, a device or a directory where the registry should be: say the way out.
        raise InvalidInputError(
            f"{exc.message} (--registry, $TURN_HOOKS_REGISTRY, or by default "
            "$XDG_CONFIG_HOME/turn-hooks/registry.json, that is ~/.config/...): move it "
            "aside, then `turn-hooks init` in each repository writes its Goal into a new one",
            reason_code=exc.reason_code,
        ) from exc
    try:
        document = loads_bounded(raw)
    except InvalidInputError as exc:
        raise InvalidInputError("registry is not JSON", reason_code="registry_invalid") from exc
    if not isinstance(document, dict) or not isinstance(document.get("goals"), list):
        raise InvalidInputError(
            "registry must be an object with a goals list", reason_code="registry_invalid"
        )
    return document


def registry_goal(registry: dict[str, Any], goal_id: str) -> dict[str, Any] | None:
    """The first Goal entry of a read registry whose ``id`` is ``goal_id``."""
    for goal in registry["goals"]:
        if isinstance(goal, dict) and goal.get("id") == goal_id:
            return goal
    return None


def require_goal_repository(registry: str | Path | None, goal_id: str | None) -> Path:
    """The repository the registry names for a Goal, or a typed refusal.

    Hosts derive a Goal's sidecar root from this and nothing else: an event's working
    directory may be anywhere (``/etc`` included), so a binding without a usable Goal
    repository has no state root at all.

    :raises InvalidInputError: ``registry_missing`` when no registry is named,
        ``registry_unreadable`` or ``registry_invalid`` as :func:`read_registry`,
        ``goal_not_found`` when no Goal entry has the id, and
        ``goal_repository_missing`` when its entry names no ``repo``.
    """
    if not registry:
        raise InvalidInputError("no binding registry is named", reason_code="registry_missing")
    goal = registry_goal(read_registry(registry), goal_id) if goal_id else None
    if goal is None:
        raise InvalidInputError("the registry names no such Goal", reason_code="goal_not_found")
    repo = goal.get("repo")
    if not isinstance(repo, str) or not repo:
        raise InvalidInputError(
            "the registry names no repository for the Goal", reason_code="goal_repository_missing"
        )
    return Path(repo)


def goal_repository(registry: str | Path | None, goal_id: str | None) -> Path | None:
    """:func:`require_goal_repository`, with ``None`` for every refusal; never raises."""
    try:
        return require_goal_repository(registry, goal_id)
    except InvalidInputError:
        return None
