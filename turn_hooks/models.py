"""The documents hosts and plugins exchange.

The models are frozen standard-library dataclasses, not ``pydantic.BaseModel``
subclasses: the hook process starts on every Turn, and importing pydantic would
roughly double its start-up time. Pydantic still owns their validation and JSON
Schema: each model carries ``__pydantic_config__`` (strict, unknown keys rejected)
and :func:`turn_hooks.schema.parse_model` validates JSON with a ``TypeAdapter``, so
the contract is enforced exactly as a ``BaseModel`` with
``ConfigDict(extra="forbid", frozen=True, strict=True)`` would enforce it.

Frozen means a plugin cannot rebind a field; the dispatcher additionally hands each
plugin its own copy of the mutable payload, so one plugin never sees another's edits.

The models are built lazily, a boundary at a time: a hook process starts cold on
every Turn, and building a dataclass costs about a millisecond. This module builds
the documents every boundary uses (the Turn, the registrations, a hook failure); the
first use of a PreTurn document (:mod:`turn_hooks._context_documents`) or of a
settlement or writeback one (:mod:`turn_hooks._settlement_documents`) builds its
boundary's. Every model is still named here and in :mod:`turn_hooks`.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from turn_hooks._context_documents import (
        ContextItem,
        ContextResult,
        Contribution,
        HostProjection,
        PreTurnOutcome,
    )
    from turn_hooks._settlement_documents import (
        PostSettlementReceipt,
        Settlement,
        SettlementEvidence,
        WritebackEvent,
        WritebackOutcome,
    )

_STRICT: dict[str, Any] = {"extra": "forbid", "strict": True}

Host = Literal["codex_cli", "codex_app", "dsh", "claude_code", "gemini", "generic_cli"]
"""The host runtimes an adapter exists for."""

HOSTS: tuple[str, ...] = ("codex_cli", "codex_app", "dsh", "claude_code", "gemini", "generic_cli")

MAX_RESULT_BYTES = 65536
"""The PreTurn contribution budget: compact UTF-8 JSON of the whole result."""


_ATOMS = frozenset({str, int, float, bool, type(None)})
"""Exactly these types: ``copy.deepcopy`` returns such a value itself."""


def _plain(value: Any) -> Any:
    """``dataclasses.asdict``'s conversion of one value, without a ``deepcopy`` call per
    string and number: a JSON document of a Turn holds hundreds of them, and the hook
    process converts several such documents on every Turn."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return kind(*[_plain(item) for item in value])
    if isinstance(value, list | tuple):
        return kind(_plain(item) for item in value)
    if isinstance(value, dict):
        return kind((_plain(key), _plain(item)) for key, item in value.items())
    return copy.deepcopy(value)


def _fields(document: Any) -> list[tuple[str, Any]]:
    """Each field's name and value, in order (``document`` is a model instance)."""
    return [(f.name, getattr(document, f.name)) for f in dataclasses.fields(document)]


class _Document:
    """Shared behaviour of every model: a JSON-ready dict of its fields, and the
    ``__eq__``, ``__hash__`` and ``__repr__`` that ``@dataclass`` would generate.

    Written once here instead of generated for each model: ``@dataclass`` compiles
    every method it adds from source, and a hook process that starts cold pays for
    each one at import (these three were a third of the models' import time).
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _fields(self) == _fields(other)

    def __hash__(self) -> int:
        return hash(tuple(value for _name, value in _fields(self)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in _fields(self))
        return f"{type(self).__qualname__}({shown})"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (nested models become dicts), exactly
        what ``dataclasses.asdict`` returns: every container is a new one."""
        fields: dict[str, Any] = _plain(self)
        return fields


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class TurnContext(_Document):
    """One host Turn as the hooks see it; taken once at Turn start."""

    __pydantic_config__ = _STRICT

    schema_version: Literal[1] = 1
    host: Host
    host_turn_id: str
    turn_key: str = ""
    """Join key of the Turn; the host turn id unless the host supplies its own."""
    host_session_id: str | None = None
    cwd: str | None = None
    goal_id: str | None = None
    agent_id: str | None = None
    turn_envelope: dict[str, Any] = field(default_factory=dict)
    """Goal, Agent and governing dimensions of the Turn. A host states only its own
    wiring there, as ``boundary.host_edges``: ``{"pre_turn": true, "post_settlement":
    true}`` when it runs ``pre_turn`` at turn start and settles successful Turns.
    Each capability derives its own switches from those facts."""
    payload: dict[str, Any] = field(default_factory=dict)
    """The host request under construction; readback slots are merged into a copy."""
    observed_at: str
    prompt: str | None = None
    """The user's prompt, when the host has one (never put in a public receipt)."""
    registry: str | None = None
    """The binding registry file the host was installed with (a private local path)."""
    delivered_item_refs: list[str] = field(default_factory=list)
    """Refs of the context items this host session already holds, which the host will
    not render again (hosts.md §1.2). A fact, like ``boundary.host_edges``: a capability
    words its contribution for what will be shown (no header over items all left out)."""

    def __post_init__(self) -> None:
        if not self.turn_key:
            object.__setattr__(self, "turn_key", self.host_turn_id)


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class ContextRegistration(_Document):
    """Identity and budget of a ``pre_turn`` implementation, checked before the call."""

    __pydantic_config__ = _STRICT

    hook_id: str
    capability_id: str
    readback_slots: tuple[str, ...] = ()
    max_result_bytes: int = MAX_RESULT_BYTES


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class SettlementRegistration(_Document):
    """Identity of a ``post_settlement`` effect adapter, and the result fields it reads."""

    __pydantic_config__ = _STRICT

    hook_id: str
    capability_id: str
    result_fields: tuple[str, ...] = ()
    """Result fields this hook reads from ``Settlement.host_result`` (at most 8 field
    names). Hook-based hosts extract one ``<field>…</field>`` block of the model's
    final message for every field a loaded plugin declares here."""
    result_fault_prefixes: dict[str, str] = field(default_factory=dict)
    """Reason-code prefix per declared field for a block that cannot be read: a
    repeated block is ``<prefix>_repeated``, a tag without its partner
    ``<prefix>_malformed``. A field without one uses ``result_block``."""
    result_tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    """A tool per declared field that the model may call instead of writing its block,
    where the host offers tools (``turn-hooks mcp serve``): ``name`` (the tool's name),
    ``description``, ``input_schema`` (a JSON Schema object the arguments must satisfy)
    and ``max_chars`` (the most characters of the compact JSON the call stages as the
    field's value). Optionally ``check_schema``: a stricter object schema the server
    checks the arguments against instead, for rules the plugin's instructions already
    state; the model receives ``input_schema`` with every request, and this never."""


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class WritebackRegistration(_Document):
    """Identity, filters and budgets of a ``post_writeback`` observer."""

    __pydantic_config__ = _STRICT

    hook_id: str
    capability_id: str
    event_kinds: tuple[str, ...] = ()
    intent_kinds: tuple[str, ...] = ()
    requested_read_scope: tuple[str, ...] = ()
    requested_write_scope: tuple[str, ...] = ()
    """Always empty: observers may not write."""
    policy_version: Literal["v0"] = "v0"
    max_input_bytes: int = 65536
    max_result_bytes: int = 16384


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class HookFailure(_Document):
    """One isolated hook failure: the Turn went on without that hook."""

    __pydantic_config__ = _STRICT

    hook_id: str
    error_code: str = "context_hook_failed"
    reason_code: str
    """Why the hook was isolated; never raw content."""
    plugin: str

    def to_payload(self) -> dict[str, str]:
        """The upstream payload form, ``{hook_id, error_code}``."""
        return {"hook_id": self.hook_id, "error_code": self.error_code}


__all__ = [
    "HOSTS",
    "MAX_RESULT_BYTES",
    "ContextItem",
    "ContextRegistration",
    "ContextResult",
    "Contribution",
    "HookFailure",
    "Host",
    "HostProjection",
    "PostSettlementReceipt",
    "PreTurnOutcome",
    "Settlement",
    "SettlementEvidence",
    "SettlementRegistration",
    "TurnContext",
    "WritebackEvent",
    "WritebackOutcome",
    "WritebackRegistration",
]

_LAZY = {
    **dict.fromkeys(
        ("ContextItem", "ContextResult", "Contribution", "HostProjection", "PreTurnOutcome"),
        "turn_hooks._context_documents",
    ),
    **dict.fromkeys(
        (
            "PostSettlementReceipt",
            "Settlement",
            "SettlementEvidence",
            "WritebackEvent",
            "WritebackOutcome",
        ),
        "turn_hooks._settlement_documents",
    ),
}
"""Where each lazily built model is defined."""


def __getattr__(name: str) -> Any:
    """Build a lazily built model's boundary on first use (PEP 562)."""
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    model = getattr(importlib.import_module(home), name)
    globals()[name] = model
    return model


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
