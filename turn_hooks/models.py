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
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

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


class _Document:
    """Shared behaviour of every model: a JSON-ready dict of its fields."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (nested models become dicts), exactly
        what ``dataclasses.asdict`` returns: every container is a new one."""
        fields: dict[str, Any] = _plain(self)
        return fields


@dataclass(frozen=True, kw_only=True, slots=True)
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

    def __post_init__(self) -> None:
        if not self.turn_key:
            object.__setattr__(self, "turn_key", self.host_turn_id)


@dataclass(frozen=True, kw_only=True, slots=True)
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


@dataclass(frozen=True, kw_only=True, slots=True)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextRegistration(_Document):
    """Identity and budget of a ``pre_turn`` implementation, checked before the call."""

    __pydantic_config__ = _STRICT

    hook_id: str
    capability_id: str
    readback_slots: tuple[str, ...] = ()
    max_result_bytes: int = MAX_RESULT_BYTES


@dataclass(frozen=True, kw_only=True, slots=True)
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
    field's value)."""


@dataclass(frozen=True, kw_only=True, slots=True)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class SettlementEvidence(_Document):
    """``turn_post_settlement_evidence_v0``: what makes a settlement accountable."""

    __pydantic_config__ = _STRICT

    schema_version: Literal["turn_post_settlement_evidence_v0"] = "turn_post_settlement_evidence_v0"
    task_validation: dict[str, Any] = field(default_factory=dict)
    """The independent validator's result, with its attestation when it passed."""
    writeback: dict[str, Any] = field(default_factory=dict)
    """``{"ok": true, "appended": true}`` once the settlement spool entry was read back."""
    quota_spend: dict[str, Any] | None = None
    """A quota owner's spend readback; ``None`` for hosts without a quota owner."""
    previous_post_settlement: dict[str, Any] | None = None
    """The stored dispatcher receipt of an earlier attempt, for idempotent replay."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Settlement(_Document):
    """A settled Turn: the host's result and the evidence that it settled."""

    __pydantic_config__ = _STRICT

    host_result: dict[str, Any] = field(default_factory=dict)
    """The value of every result field the loaded plugins declared (``""`` when the
    model gave none), keyed by field name."""
    evidence: SettlementEvidence = field(default_factory=SettlementEvidence)


@dataclass(frozen=True, kw_only=True, slots=True)
class WritebackEvent(_Document):
    """A committed settlement as ``post_writeback`` observers see it."""

    __pydantic_config__ = _STRICT

    event_kind: str = "turn_settled"
    turn_key: str
    host: Host
    spool: dict[str, Any] = field(default_factory=dict)
    """The committed settlement spool entry (hosts.md §1.4)."""


@dataclass(frozen=True, kw_only=True, slots=True)
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


@dataclass(frozen=True, kw_only=True, slots=True)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class PreTurnOutcome(_Document):
    """The dispatcher's answer for one Turn: the merged payload and what was kept."""

    __pydantic_config__ = _STRICT

    payload: dict[str, Any]
    contributions: tuple[Contribution, ...] = ()
    failures: tuple[HookFailure, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class PostSettlementReceipt(_Document):
    """The dispatcher's aggregated ``post_settlement`` receipt (turn-lifecycle.md §7.1)."""

    __pydantic_config__ = _STRICT

    status: str
    """``runtime_unavailable`` if any result is retryable, else ``observed``."""
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    capability_ids: dict[str, str] = field(default_factory=dict)
    fail_open: bool = True
    external_writes_performed: bool | None = False
    skipped_hook_ids: list[str] = field(default_factory=list)
    """Hooks whose stored non-retryable result was replayed without a call."""


@dataclass(frozen=True, kw_only=True, slots=True)
class WritebackOutcome(_Document):
    """What ``post_writeback`` observers said about one committed settlement."""

    __pydantic_config__ = _STRICT

    observations: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: tuple[HookFailure, ...] = ()
