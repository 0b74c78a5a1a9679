"""Post-outcome utility observations (contracts.md §14, identities.md §13).

An observation says whether the memories one application receipt cited helped, on
typed evidence. It is advisory and write-free: the four boundary flags are always
``false``. Free text here is never compacted: it is stripped and then must fit, or
the observation is rejected. An absent, timed-out or malformed evaluator leaves
nothing behind (the builder, :mod:`.proposal`, raises; callers fail open).
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any, NoReturn

from capabilities.reward_memory.contract.values import (
    EXTERNAL_WRITES,
    NEW_ACTION_AUTHORITY,
    RAW_CONTENT,
    RewardMemoryInputError,
)
from turn_hooks.canonical import s1, sha256_hex

OBSERVATION_SCHEMA = "memory_utility_observation_v0"
UTILITY_LABELS = ("helpful", "harmful", "neutral", "unknown")
ATTRIBUTION_LEVELS = ("item", "set", "none")
EVIDENCE_BASES = (
    "insufficient",
    "evaluator_inference",
    "deterministic_effect",
    "controlled_replay",
    "owner_correction",
)
"""Weakest first: the reducer's precedence rank."""
STRONG_BASES = frozenset({"owner_correction", "controlled_replay", "deterministic_effect"})
SCOPE_FIELDS = ("agent_id", "project_id", "corpus_id", "surface_id")
BOUNDARY_FIELDS = (
    NEW_ACTION_AUTHORITY,
    "provider_write_performed",
    EXTERNAL_WRITES,
    RAW_CONTENT,
)
OBSERVATION_FIELDS = frozenset(
    {
        "schema_version",
        "observation_id",
        "scope",
        "application_receipt_id",
        "memory_ref_digests",
        "retrieval_snapshot_ref",
        "policy_snapshot_ref",
        "outcome_ref",
        "utility_label",
        "attribution_level",
        "evidence_basis",
        "confidence",
        "reason_codes",
        "evidence_refs",
        "evaluator_ref",
        "evaluation_version",
        "created_at",
        *BOUNDARY_FIELDS,
    }
)
IDENTITY_FIELDS = (
    "schema_version",
    "scope",
    "application_receipt_id",
    "memory_ref_digests",
    "retrieval_snapshot_ref",
    "policy_snapshot_ref",
    "outcome_ref",
    "attribution_level",
    "evidence_basis",
    "evidence_refs",
    "evaluator_ref",
    "evaluation_version",
)
MAX_MEMORY_DIGESTS = 16
MAX_REASON_CODES = 12
MAX_EVIDENCE_REFS = 16

_OPAQUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$")
_DIGEST = re.compile(r"^(?:[0-9a-f]{16}|sha256:[0-9a-f]{64})$")
_OBSERVATION_ID = re.compile(r"^muo_[0-9a-f]{64}$")
_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


class UtilityError(RewardMemoryInputError):
    """An observation or projection input that breaks the contract (typed reason code).

    On the command line it is a ``reward_memory_error_v0``, as upstream reports it.
    """


def fail(reason_code: str, message: str) -> NoReturn:
    """Raise :class:`UtilityError`."""
    raise UtilityError(message, reason_code=reason_code)


def is_opaque_ref(value: object) -> bool:
    """An opaque ref: no URL, no path, no ``/`` or ``#``."""
    return (
        isinstance(value, str)
        and bool(_OPAQUE.match(value))
        and "://" not in value
        and not value.startswith("/")
        and not _WINDOWS_PATH.match(value)
    )


def opaque_ref(value: object, reason_code: str, field: str) -> str:
    """``value`` if it is an opaque ref, else a typed error."""
    if not is_opaque_ref(value):
        fail(reason_code, f"{field} must be an opaque reference")
    return str(value)


def timestamp(value: object, reason_code: str, field: str) -> str:
    """An ISO 8601 timestamp with a UTC offset, kept exactly as given (stripped)."""
    text = value.strip() if isinstance(value, str) else ""
    try:
        parsed = datetime.fromisoformat(
            text.removesuffix("Z") + ("+00:00" if text.endswith("Z") else "")
        )
    except ValueError:
        parsed = None
    if parsed is None or parsed.utcoffset() is None:
        fail(reason_code, f"{field} must be an ISO 8601 timestamp with an offset")
    return text


def instant(text: str) -> datetime:
    """The moment a validated timestamp names."""
    return datetime.fromisoformat(text.removesuffix("Z") + ("+00:00" if text.endswith("Z") else ""))


def digests(value: object, reason_code: str, field: str, low: int = 1) -> list[str]:
    """Sorted unique memory ref digests (duplicates are an error, not merged)."""
    if not isinstance(value, list) or not low <= len(value) <= MAX_MEMORY_DIGESTS:
        fail(reason_code, f"{field} must hold {low}..{MAX_MEMORY_DIGESTS} digests")
    if not all(isinstance(d, str) and _DIGEST.match(d) for d in value):
        fail(reason_code, f"{field} holds a value that is not a memory ref digest")
    if len(set(value)) != len(value):
        fail(reason_code, f"{field} holds duplicates")
    return sorted(value)


def refs(value: object, limit: int, reason_code: str, field: str) -> list[str]:
    """Sorted unique opaque refs, at most ``limit``."""
    if not isinstance(value, list) or len(value) > limit:
        fail(reason_code, f"{field} must be a list of at most {limit} refs")
    items = [opaque_ref(item, reason_code, field) for item in value]
    if len(set(items)) != len(items):
        fail(reason_code, f"{field} holds duplicates")
    return sorted(items)


def confidence(value: object, reason_code: str) -> float:
    """A finite number in 0..1 (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        fail(reason_code, "confidence must be a finite number")
    if not 0 <= value <= 1:
        fail(reason_code, "confidence must be within 0..1")
    return float(value)


def enum(value: object, allowed: tuple[str, ...], reason_code: str, field: str) -> str:
    """One of ``allowed``."""
    if value not in allowed:
        fail(reason_code, f"{field} must be one of {', '.join(allowed)}")
    return str(value)


def scope(value: object, reason_code: str = "observation_malformed_scope") -> dict[str, str]:
    """The exact utility scope ``{agent_id, project_id, corpus_id, surface_id}``."""
    if not isinstance(value, dict) or set(value) != set(SCOPE_FIELDS):
        fail(reason_code, "scope must hold exactly agent_id, project_id, corpus_id, surface_id")
    return {key: opaque_ref(value[key], reason_code, f"scope.{key}") for key in SCOPE_FIELDS}


def application_receipt_id(receipt: dict[str, Any]) -> str:
    """``rma_`` + hex(S1(receipt)) (identities.md §13)."""
    return "rma_" + sha256_hex(s1(receipt))


def observation_id(observation: dict[str, Any]) -> str:
    """``muo_`` + hex(S1(identity fields)): the judgement itself is not part of it."""
    return "muo_" + sha256_hex(s1({key: observation[key] for key in IDENTITY_FIELDS}))


def delivery_fingerprint(observation: dict[str, Any]) -> str:
    """``muof_`` + hex(S1(observation without created_at)): one delivery's content."""
    return "muof_" + sha256_hex(
        s1({key: value for key, value in observation.items() if key != "created_at"})
    )


def _semantics(document: dict[str, Any]) -> None:
    label, level, basis = (
        document["utility_label"],
        document["attribution_level"],
        document["evidence_basis"],
    )
    code = "observation_malformed"
    if basis == "insufficient" and label != "unknown":
        fail(code, "insufficient evidence can only be unknown")
    if level == "none" and label != "unknown":
        fail(code, "an observation without attribution can only be unknown")
    if basis in STRONG_BASES and not document["evidence_refs"]:
        fail(code, "a strong evidence basis needs at least one evidence ref")
    if label != "unknown" and not document["evidence_refs"]:
        fail(code, "a directional label needs evidence refs")


def check_item_binding(document: dict[str, Any]) -> None:
    """An ``item`` observation binds exactly one digest (else ``observation_malformed``)."""
    if document["attribution_level"] == "item" and len(document["memory_ref_digests"]) != 1:
        fail("observation_malformed", "item attribution binds exactly one memory digest")


def validate_observation(value: object, *, item_binding: bool = True) -> dict[str, Any]:
    """The normalised observation; :class:`UtilityError` with its typed reason code.

    ``item_binding=False`` leaves :func:`check_item_binding` to the caller: the
    reducer applies it only once every observation fits the context, where LoopX
    finds it (issue 19).

    The reason code of a refusal is classified from the document's fields, in
    LoopX 2.1.1's order (issue 19), not from the first check that failed: the
    schema, the write-boundary flags, the scope, the snapshots, then the identity
    (an ``observation_id`` that the identity fields as sent do not produce), and
    ``observation_malformed`` for everything else.
    """
    try:
        document = _validated(value)
        if item_binding:
            check_item_binding(document)
    except UtilityError as exc:
        raise UtilityError(exc.message, reason_code=_refusal_code(value)) from exc
    return document


def _refusal_code(value: object) -> str:
    if not isinstance(value, dict):
        return "observation_malformed"
    if value.get("schema_version") != OBSERVATION_SCHEMA:
        return "observation_schema_mismatch"
    if any(key in value and value[key] is not False for key in BOUNDARY_FIELDS):
        return "observation_write_boundary_violation"
    checks = (
        ("observation_malformed_scope", lambda: scope(value.get("scope"))),
        (
            "observation_malformed_snapshot",
            lambda: [opaque_ref(value.get(key), "", key) for key in SNAPSHOT_FIELDS],
        ),
    )
    for code, check in checks:
        try:
            check()
        except UtilityError:
            return code
    try:
        claimed = opaque_ref(value.get("observation_id"), "", "observation_id")
        if set(IDENTITY_FIELDS) <= set(value) and claimed != observation_id(value):
            return "observation_identity_invalid"
    except (UtilityError, TypeError, ValueError):
        return "observation_identity_invalid"
    return "observation_malformed"


SNAPSHOT_FIELDS = ("retrieval_snapshot_ref", "policy_snapshot_ref")


def _validated(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        fail("observation_malformed", "an observation must be a JSON object")
    if value.get("schema_version") != OBSERVATION_SCHEMA:
        fail("observation_schema_mismatch", f"schema_version must be {OBSERVATION_SCHEMA}")
    if set(value) != OBSERVATION_FIELDS:
        fail("observation_malformed", "the observation must hold exactly the contract's keys")
    if any(value[key] is not False for key in BOUNDARY_FIELDS):
        fail("observation_write_boundary_violation", "the write-boundary flags must be false")
    code = "observation_malformed"
    document = {
        "schema_version": OBSERVATION_SCHEMA,
        "observation_id": value["observation_id"],
        "scope": scope(value["scope"]),
        "application_receipt_id": opaque_ref(
            value["application_receipt_id"], code, "application_receipt_id"
        ),
        "memory_ref_digests": digests(value["memory_ref_digests"], code, "memory_ref_digests"),
        "retrieval_snapshot_ref": opaque_ref(
            value["retrieval_snapshot_ref"],
            "observation_malformed_snapshot",
            "retrieval_snapshot_ref",
        ),
        "policy_snapshot_ref": opaque_ref(
            value["policy_snapshot_ref"], "observation_malformed_snapshot", "policy_snapshot_ref"
        ),
        "outcome_ref": opaque_ref(value["outcome_ref"], code, "outcome_ref"),
        "utility_label": enum(value["utility_label"], UTILITY_LABELS, code, "utility_label"),
        "attribution_level": enum(
            value["attribution_level"], ATTRIBUTION_LEVELS, code, "attribution_level"
        ),
        "evidence_basis": enum(value["evidence_basis"], EVIDENCE_BASES, code, "evidence_basis"),
        "confidence": confidence(value["confidence"], code),
        "reason_codes": refs(value["reason_codes"], MAX_REASON_CODES, code, "reason_codes"),
        "evidence_refs": refs(value["evidence_refs"], MAX_EVIDENCE_REFS, code, "evidence_refs"),
        "evaluator_ref": opaque_ref(value["evaluator_ref"], code, "evaluator_ref"),
        "evaluation_version": opaque_ref(value["evaluation_version"], code, "evaluation_version"),
        "created_at": timestamp(value["created_at"], code, "created_at"),
        **dict.fromkeys(BOUNDARY_FIELDS, False),
    }
    # Digests arriving unsorted are sorted, as upstream does; the identity is over
    # the sorted form.
    _semantics(document)
    if not isinstance(document["observation_id"], str) or not _OBSERVATION_ID.match(
        document["observation_id"]
    ):
        fail("observation_identity_invalid", "observation_id must be an muo_ id")
    if document["observation_id"] != observation_id(document):
        fail("observation_identity_invalid", "observation_id does not match its identity fields")
    return document
