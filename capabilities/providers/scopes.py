"""The ``viking://`` scope classifier shared by both providers (providers.md §4)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


@dataclass(frozen=True, slots=True)
class ScopeClass:
    """What a scope ref is: its visibility, owner and (for peer scopes) the peer."""

    uri: str
    visibility: str
    """``public`` (account resources) or ``private``."""
    kind: str
    """``resources`` or ``memories``."""
    user: str | None = None
    peer: str | None = None
    segments: tuple[str, ...] = ()

    @property
    def scope_kind(self) -> str:
        """``account_resources``, ``current_user_*``, ``user_*`` or ``peer_*``."""
        if self.visibility == "public":
            return "account_resources"
        owner = "peer" if self.peer else "user" if self.user else "current_user"
        return f"{owner}_{self.kind}"

    @property
    def write_strategy(self) -> str:
        """``content_write`` for memories, ``resource_ingest`` for resources."""
        return "content_write" if self.kind == "memories" else "resource_ingest"

    @property
    def actor_bound(self) -> bool:
        """True for ``viking://user/<uid>/peers/<peer>/...`` scopes."""
        return self.peer is not None


def classify_scope(scope_ref: str) -> ScopeClass | None:
    """Classify a scope ref, or ``None`` when it is not an accepted scope.

    Accepted: ``viking://resources/…``, ``viking://~/resources|memories/…``,
    ``viking://user/<uid>/resources|memories/…`` and
    ``viking://user/<uid>/peers/<peer>/resources|memories/…``. ``viking://agent/…``
    and everything else are rejected.
    """
    uri = scope_ref.strip().rstrip("/")
    if not uri.startswith("viking://"):
        return None
    segments = tuple(uri[len("viking://") :].split("/"))
    if any(part in {"", ".", ".."} for part in segments):
        return None
    head = segments[0]
    if head == "resources":
        return ScopeClass(uri=uri, visibility="public", kind="resources", segments=segments)
    if head == "~" and len(segments) >= 2 and segments[1] in {"resources", "memories"}:
        return ScopeClass(uri=uri, visibility="private", kind=segments[1], segments=segments)
    if head != "user" or len(segments) < 3 or not _ID.fullmatch(segments[1]):
        return None
    user = segments[1]
    if segments[2] in {"resources", "memories"}:
        return ScopeClass(
            uri=uri, visibility="private", kind=segments[2], user=user, segments=segments
        )
    if (
        segments[2] == "peers"
        and len(segments) >= 5
        and _ID.fullmatch(segments[3])
        and segments[4] in {"resources", "memories"}
    ):
        return ScopeClass(
            uri=uri,
            visibility="private",
            kind=segments[4],
            user=user,
            peer=segments[3],
            segments=segments,
        )
    return None


def uri_peer(uri: str) -> str:
    """The ``/peers/<id>/`` segment of a URI, or ``""``."""
    scope = classify_scope(uri)
    return scope.peer or "" if scope else ""


def uri_user(uri: str) -> str:
    """The ``user/<uid>`` segment of a URI, or ``""``."""
    scope = classify_scope(uri)
    return scope.user or "" if scope else ""


def has_goal_segment(scope: ScopeClass, goal_id: str) -> bool:
    """True when the scope path contains the segment pair ``goals/<goal_id>``."""
    parts = scope.segments
    return any(parts[i] == "goals" and parts[i + 1] == goal_id for i in range(len(parts) - 1))
