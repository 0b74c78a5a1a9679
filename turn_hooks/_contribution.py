"""Contribution validation, the 64 KiB measure and ``basis_digest``.

Plain Python on purpose: this runs inside the per-Turn hook process, and the rules
(turn-lifecycle.md §3, identities.md §15) are checks a regex and a length test
express more exactly than a schema could.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from turn_hooks import models
from turn_hooks.canonical import compact_json, s1_js, sha256_hex
from turn_hooks.errors import ContributionError, RegistrationError
from turn_hooks.models import MAX_RESULT_BYTES, ContextRegistration, SettlementRegistration

if TYPE_CHECKING:
    from turn_hooks.models import ContextItem

FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{2,95}")
REGISTRATION_ID = re.compile(r"[a-z][a-z0-9_.:-]{2,95}")
MAX_FIELDS = 8
MAX_INSTRUCTIONS = 8
MAX_INSTRUCTION_CHARS = 4096
MAX_RESULT_FIELD_LENGTH = 16384
MIN_RESULT_BYTES = 1024
MAX_CONTEXT_ITEMS = 64
MAX_ITEM_REF_CHARS = 256
FAULT_PREFIX = re.compile(r"[a-z][a-z0-9_]{2,63}")
DEFAULT_FAULT_PREFIX = "result_block"
TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{2,63}")
TOOL_KEYS = frozenset({"name", "description", "input_schema", "max_chars"})
"""A result tool's keys; it may add ``check_schema`` (``SettlementRegistration.result_tools``)."""

RESERVED_NAMES: frozenset[str] = frozenset(
    """schema_version turn_key turn_envelope session goal_ref route result_contract
    capability_context_fields capability_instructions capability_result_fields result_kind
    completed_phases classification next_action recommended_action summary agent_vision_json
    path_delta_mode delivery_batch_scale delivery_outcome vision_unchanged_reason work_evidence
    validation_evidence child_execution_receipts primary_action required_reads write_scope
    workspace_guard boundary work_context selected_todo unavailable_context agent_context
    replan_action_packet detail_ref action_signature execution_profile
    vision_continuation_audit goal_id agent_id""".split()
)
"""Governing names a contribution may never use as a field, slot or result field."""

_RESULT_KEYS = ("readback", "context_fields", "instructions", "result_fields")
_ITEMS_KEY = "context_items"

_GOVERNING_KEYS = (
    "decision",
    "should_run",
    "effective_action",
    "state",
    "action",
    "user",
    "required_reads",
    "replan_action_packet",
    "boundary",
    "execution_policy",
    "writeback",
    "scheduler",
    "contract_capsule",
    "task_orchestration_contract",
)
_OPTIONAL_GOVERNING_KEYS = ("agent_context", "work_context", "response_plan")


def _fail(reason_code: str, message: str) -> ContributionError:
    return ContributionError(message, reason_code=reason_code)


def check_field_name(name: object, *, what: str) -> str:
    """Return ``name`` if it is a valid, unreserved contribution field name."""
    if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
        raise _fail("field_name_invalid", f"{what} name does not match the field pattern")
    if name in RESERVED_NAMES:
        raise _fail("field_name_reserved", f"{what} name {name!r} is a reserved governing name")
    return name


def _registered_names(names: object, *, key: str, what: str) -> None:
    """A registration's list of field names: at most 8, each valid, none twice."""
    if not isinstance(names, tuple | list) or len(names) > MAX_FIELDS:
        raise RegistrationError(f"{key} must be a list of at most 8 names")
    try:
        for name in names:
            check_field_name(name, what=what)
    except ContributionError as exc:
        raise RegistrationError(exc.message, reason_code=exc.reason_code) from exc
    if len(set(names)) != len(names):
        raise RegistrationError(f"{key} must be unique")


def validate_registration(registration: ContextRegistration) -> ContextRegistration:
    """Check a context registration's ids, slots and budget (its fields are not typed-checked
    at construction, so every value is checked here)."""
    for value in (registration.hook_id, registration.capability_id):
        if not isinstance(value, str) or not REGISTRATION_ID.fullmatch(value):
            raise RegistrationError("hook_id and capability_id must be registration ids")
    _registered_names(registration.readback_slots, key="readback_slots", what="readback slot")
    budget = registration.max_result_bytes
    if (
        isinstance(budget, bool)
        or not isinstance(budget, int)
        or not MIN_RESULT_BYTES <= budget <= MAX_RESULT_BYTES
    ):
        raise RegistrationError("max_result_bytes must be an integer in 1024..65536")
    return registration


def validate_settlement_registration(registration: SettlementRegistration) -> dict[str, str]:
    """Check the result fields a settlement registration declares; return each field
    with the prefix of its block fault codes, in declared order."""
    _registered_names(registration.result_fields, key="result_fields", what="result field")
    prefixes = registration.result_fault_prefixes
    if (
        not isinstance(prefixes, Mapping)
        or not set(prefixes) <= set(registration.result_fields)
        or not all(isinstance(p, str) and FAULT_PREFIX.fullmatch(p) for p in prefixes.values())
    ):
        raise RegistrationError(
            "result_fault_prefixes must map declared result fields to reason-code prefixes"
        )
    _result_tools(registration)
    return {name: prefixes.get(name, DEFAULT_FAULT_PREFIX) for name in registration.result_fields}


def _result_tools(registration: SettlementRegistration) -> None:
    tools = registration.result_tools
    if not isinstance(tools, Mapping) or not set(tools) <= set(registration.result_fields):
        raise RegistrationError("result_tools must map declared result fields to tools")
    for tool in tools.values():
        if (
            not isinstance(tool, Mapping)
            or not TOOL_KEYS <= set(tool) <= {*TOOL_KEYS, "check_schema"}
            or not isinstance(tool["name"], str)
            or not TOOL_NAME.fullmatch(tool["name"])
            or not isinstance(tool["description"], str)
            or not 0 < len(tool["description"]) <= MAX_INSTRUCTION_CHARS
            or not _object_schema(tool["input_schema"])
            or isinstance(tool["max_chars"], bool)
            or not isinstance(tool["max_chars"], int)
            or not 0 < tool["max_chars"] <= MAX_RESULT_FIELD_LENGTH
            or not _object_schema(tool.get("check_schema", tool["input_schema"]))
        ):
            raise RegistrationError(
                "a result tool is {name, description, input_schema (an object schema), "
                "max_chars (1..16384)} and optionally check_schema (an object schema)"
            )


def _object_schema(schema: object) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "object"


def _field_object(value: object, *, what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail("result_shape_invalid", f"{what} must be an object")
    if len(value) > MAX_FIELDS:
        raise _fail("too_many_fields", f"{what} has more than {MAX_FIELDS} keys")
    for key in value:
        check_field_name(key, what=what)
    return dict(value)


def _instructions(value: object) -> list[str]:
    if not isinstance(value, list | tuple):
        raise _fail("result_shape_invalid", "instructions must be a list of strings")
    if len(value) > MAX_INSTRUCTIONS:
        raise _fail("too_many_instructions", f"more than {MAX_INSTRUCTIONS} instructions")
    for item in value:
        if not isinstance(item, str):
            raise _fail("result_shape_invalid", "instructions must be a list of strings")
        if len(item) > MAX_INSTRUCTION_CHARS:
            raise _fail("instruction_too_long", "an instruction exceeds 4096 characters")
    return list(value)


def _result_field_descriptor(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping) or set(value) != {"type", "maxLength"}:
        raise _fail("result_field_invalid", 'a result field must be {"type", "maxLength"}')
    length = value["maxLength"]
    if (
        value["type"] != "string"
        or isinstance(length, bool)
        or not isinstance(length, int)
        or not 1 <= length <= MAX_RESULT_FIELD_LENGTH
    ):
        raise _fail("result_field_invalid", "a result field must be a string of 1..16384")
    return {"type": "string", "maxLength": length}


def result_to_mapping(result: object) -> dict[str, Any]:
    """Accept a :class:`ContextResult` or a mapping with only the four result keys and,
    optionally, ``context_items``."""
    if isinstance(result, models.ContextResult):
        return result.to_json()
    if not isinstance(result, Mapping):
        raise _fail(
            "result_shape_invalid", "pre_turn must return a ContextResult, a mapping or None"
        )
    unknown = set(result) - {*_RESULT_KEYS, _ITEMS_KEY}
    if unknown:
        raise _fail("result_shape_invalid", "the result has keys other than the result keys")
    defaults: dict[str, Any] = {"readback": {}, "context_fields": {}, "instructions": []}
    defaults["result_fields"] = {}
    defaults[_ITEMS_KEY] = []
    return {key: result.get(key, defaults[key]) for key in (*_RESULT_KEYS, _ITEMS_KEY)}


def measure_result_bytes(result: Mapping[str, Any]) -> int:
    """UTF-8 length of the result as compact JSON, non-ASCII unescaped.

    ``context_items`` is left out: the four-key document is measured exactly as the
    reference measures it, and the items are measured on their own
    (:func:`measure_context_items`).
    """
    document = {key: value for key, value in result.items() if key != _ITEMS_KEY}
    try:
        return len(compact_json(document).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        raise _fail("result_not_json", "the result is not JSON-serialisable") from exc


def measure_context_items(items: list[ContextItem]) -> int:
    """What context items cost against a budget: the sum of their byte sizes."""
    return sum(item.byte_size for item in items)


def _utf8(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no host could print it
        return False
    return True


def _context_item(value: object) -> ContextItem:
    if isinstance(value, models.ContextItem):
        ref, text = value.ref, value.text
    elif isinstance(value, Mapping) and set(value) == {"ref", "text"}:
        ref, text = value["ref"], value["text"]
    else:
        raise _fail("context_item_invalid", "a context item must be a ContextItem or {ref, text}")
    if not _utf8(ref) or not ref or len(ref) > MAX_ITEM_REF_CHARS:
        raise _fail("context_item_ref_invalid", "an item ref must be a non-empty short string")
    if not _utf8(text):
        raise _fail("context_item_text_invalid", "an item text must be a UTF-8 string")
    return models.ContextItem(ref=ref, text=text)


def _context_items(value: object, budget: int) -> list[ContextItem]:
    if not isinstance(value, list | tuple):
        raise _fail("result_shape_invalid", "context_items must be a list")
    if len(value) > MAX_CONTEXT_ITEMS:
        raise _fail("too_many_context_items", f"more than {MAX_CONTEXT_ITEMS} context items")
    items = [_context_item(item) for item in value]
    if len({item.ref for item in items}) != len(items):
        raise _fail("context_item_ref_duplicate", "two context items share a ref")
    if measure_context_items(items) > budget:
        raise _fail("context_items_over_budget", "the context items exceed the byte budget")
    return items


def validate_result(result: object, registration: ContextRegistration) -> dict[str, Any]:
    """Validate a ``pre_turn`` result against its registration; return the normal form
    (the four result keys, then ``context_items`` as :class:`ContextItem` objects)."""
    raw = result_to_mapping(result)
    normal: dict[str, Any] = {
        "readback": _field_object(raw["readback"], what="readback"),
        "context_fields": _field_object(raw["context_fields"], what="context field"),
        "instructions": _instructions(raw["instructions"]),
        "result_fields": {
            key: _result_field_descriptor(value)
            for key, value in _field_object(raw["result_fields"], what="result field").items()
        },
    }
    if set(normal["readback"]) != set(registration.readback_slots):
        raise _fail("readback_slots_mismatch", "readback keys must equal the declared slots")
    if measure_result_bytes(normal) > registration.max_result_bytes:
        raise _fail("result_over_budget", "the result exceeds its registered byte budget")
    normal[_ITEMS_KEY] = _context_items(raw[_ITEMS_KEY], registration.max_result_bytes)
    return normal


def _filled(value: object) -> bool:
    return isinstance(value, Mapping | list) and bool(value)


def _filled_object(value: object) -> bool:
    return isinstance(value, Mapping) and bool(value)


def _coverage(envelope: Mapping[str, Any]) -> str:
    writeback = envelope.get("writeback")
    action = envelope.get("action")
    action = action if isinstance(action, Mapping) else {}
    if isinstance(writeback, Mapping) and _filled_object(writeback.get("settlement_plan")):
        return "v5"
    if _filled_object(envelope.get("agent_context")):
        return "v4"
    if _filled(action.get("planning_horizon")):
        return "v3"
    if _filled(action.get("action_portfolio")):
        return "v2"
    if _filled_object(envelope.get("response_plan")):
        return "v1"
    return "v0"


def governing_source(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The ``source`` part of ``basis_digest``: Goal, Agent and governing dimensions.

    Goal and Agent come from the Turn envelope, falling back to the payload's top
    level; each must be present (``null`` is a value, a missing key is not).
    """
    envelope = payload.get("turn_envelope")
    envelope = envelope if isinstance(envelope, Mapping) else {}
    source: dict[str, Any] = {}
    for key in ("goal_id", "agent_id"):
        holder = envelope if key in envelope else payload
        if key not in holder:
            raise _fail("basis_source_missing", f"the Turn names no {key}")
        source[key] = holder[key]
    governing: dict[str, Any] = {
        "schema_version": "loopx_action_signature_v0",
        "coverage": f"turn_envelope_action_dimensions_{_coverage(envelope)}",
        "agent_id": envelope.get("agent_id"),
    }
    governing.update({key: envelope.get(key) for key in _GOVERNING_KEYS})
    governing.update(
        {
            key: envelope[key]
            for key in _OPTIONAL_GOVERNING_KEYS
            if _filled_object(envelope.get(key))
        }
    )
    source["governing"] = governing
    return source


def basis_digest(
    payload: Mapping[str, Any], registration: ContextRegistration, result: Mapping[str, Any]
) -> str:
    """identities.md §15: what the contribution was built on, as 64 lowercase hex."""
    basis = {
        "source": governing_source(payload),
        "hook_id": registration.hook_id,
        "capability_id": registration.capability_id,
        "readback_slots": list(registration.readback_slots),
        "context_fields": result["context_fields"],
        "instructions": result["instructions"],
        "result_fields": result["result_fields"],
        "readback": result["readback"],
    }
    return sha256_hex(s1_js(basis))
