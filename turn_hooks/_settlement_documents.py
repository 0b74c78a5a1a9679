"""The settlement and writeback documents, built on a boundary's first use
(:mod:`turn_hooks.models`).

Import them from :mod:`turn_hooks` or :mod:`turn_hooks.models`, never from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from turn_hooks.models import _STRICT, HookFailure, Host, _Document


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
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


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class Settlement(_Document):
    """A settled Turn: the host's result and the evidence that it settled."""

    __pydantic_config__ = _STRICT

    host_result: dict[str, Any] = field(default_factory=dict)
    """The value of every result field the loaded plugins declared (``""`` when the
    model gave none), keyed by field name."""
    evidence: SettlementEvidence = field(default_factory=SettlementEvidence)


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class WritebackEvent(_Document):
    """A committed settlement as ``post_writeback`` observers see it."""

    __pydantic_config__ = _STRICT

    event_kind: str = "turn_settled"
    turn_key: str
    host: Host
    spool: dict[str, Any] = field(default_factory=dict)
    """The committed settlement spool entry (hosts.md §1.4)."""


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
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


@dataclass(frozen=True, kw_only=True, slots=True, repr=False, eq=False)
class WritebackOutcome(_Document):
    """What ``post_writeback`` observers said about one committed settlement."""

    __pydantic_config__ = _STRICT

    observations: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: tuple[HookFailure, ...] = ()
