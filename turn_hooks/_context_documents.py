"""The PreTurn documents, built on a boundary's first use (:mod:`turn_hooks.models`).

Import them from :mod:`turn_hooks` or :mod:`turn_hooks.models`, never from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from turn_hooks.models import _STRICT, HookFailure, _Document


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class ContextItem(_Document):
    """One piece of text a plugin wants the model to see, opaque to every host.

    Hosts render ``text`` verbatim, drop whole items from the end when the rendering
    would exceed its bound, and do not render an item whose ``ref`` was already
    delivered in the same host session. A plugin chooses refs that stay equal for
    equal content (say, a memory's candidate ref), so that de-duplication works.
    """

    __pydantic_config__ = _STRICT

    ref: str
    """Non-empty and unique within its contribution; what hosts de-duplicate by."""
    text: str

    @property
    def byte_size(self) -> int:
        """UTF-8 length of ``text``: what the item costs against the budget."""
        return len(self.text.encode("utf-8"))


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class ContextResult(_Document):
    """What a ``pre_turn`` implementation returns (turn-lifecycle.md §3)."""

    __pydantic_config__ = _STRICT

    readback: dict[str, Any] = field(default_factory=dict)
    """Participation readback, keyed exactly by the registration's ``readback_slots``."""
    context_fields: dict[str, Any] = field(default_factory=dict)
    instructions: list[str] = field(default_factory=list)
    result_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each value is exactly ``{"type": "string", "maxLength": n}``."""
    context_items: list[ContextItem] = field(default_factory=list)
    """Text for the host to render after the instructions. Measured on its own (the
    sum of the items' byte sizes), against the same registered budget as the rest."""

    def to_json(self) -> dict[str, Any]:
        """The result: the four keys the budget is measured on, in that order, then
        the context items."""
        return {
            "readback": self.readback,
            "context_fields": self.context_fields,
            "instructions": self.instructions,
            "result_fields": self.result_fields,
            "context_items": [item.to_json() for item in self.context_items],
        }


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class Contribution(_Document):
    """A validated contribution as stored in ``turn_context_contributions``."""

    __pydantic_config__ = _STRICT

    hook_id: str
    capability_id: str
    readback_slots: list[str]
    context_fields: dict[str, Any]
    instructions: list[str]
    result_fields: dict[str, dict[str, Any]]
    basis_digest: str
    context_items: list[ContextItem] = field(default_factory=list)
    """Not part of ``basis_digest``: the items ride with their contribution and are
    dropped whenever it is."""


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class PreTurnOutcome(_Document):
    """The dispatcher's answer for one Turn: the merged payload and what was kept."""

    __pydantic_config__ = _STRICT

    payload: dict[str, Any]
    contributions: tuple[Contribution, ...] = ()
    failures: tuple[HookFailure, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class HostProjection(_Document):
    """Surviving contributions flattened for a host renderer (turn-lifecycle.md §3)."""

    __pydantic_config__ = _STRICT

    context_fields: dict[str, Any] = field(default_factory=dict)
    capability_context_fields: list[str] = field(default_factory=list)
    capability_instructions: list[str] = field(default_factory=list)
    capability_result_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    context_items: list[ContextItem] = field(default_factory=list)
    """The surviving contributions' items, in plugin-name order."""
    dropped_hook_ids: list[str] = field(default_factory=list)
