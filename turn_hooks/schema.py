"""JSON Schemas of the models, and JSON validation through pydantic.

Imported only by commands that need it (``turn-hooks schema``, input validation),
never by the per-Turn hook path, because importing pydantic costs more than the
rest of that path together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from turn_hooks import models
from turn_hooks.errors import InvalidInputError

SCHEMA_MODELS: dict[str, type[Any]] = {
    "turn_context": models.TurnContext,
    "context_item": models.ContextItem,
    "context_result": models.ContextResult,
    "context_registration": models.ContextRegistration,
    "settlement_registration": models.SettlementRegistration,
    "writeback_registration": models.WritebackRegistration,
    "settlement_evidence": models.SettlementEvidence,
    "settlement": models.Settlement,
    "writeback_event": models.WritebackEvent,
    "contribution": models.Contribution,
    "hook_failure": models.HookFailure,
    "pre_turn_outcome": models.PreTurnOutcome,
    "host_projection": models.HostProjection,
    "post_settlement_receipt": models.PostSettlementReceipt,
    "writeback_outcome": models.WritebackOutcome,
}
"""Every committed schema file name (without ``.json``) and its model."""

SCHEMA_DIR = Path(__file__).parent / "schemas"
REGENERATE_COMMAND = "turn-hooks schema --output turn_hooks/schemas"

M = TypeVar("M")


_ADAPTERS: dict[type[Any], Any] = {}


def _adapter(model: type[Any]) -> Any:
    if model not in _ADAPTERS:
        from pydantic import TypeAdapter

        _ADAPTERS[model] = TypeAdapter(model)
    return _ADAPTERS[model]


def json_schema(model: type[Any]) -> dict[str, Any]:
    """The JSON Schema of one model, declaring draft 2020-12."""
    schema: dict[str, Any] = _adapter(model).json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def render_schemas() -> dict[str, str]:
    """Every committed schema file name mapped to its exact text."""
    return {
        f"{name}.json": json.dumps(json_schema(model), indent=2, sort_keys=True) + "\n"
        for name, model in SCHEMA_MODELS.items()
    }


def write_schemas(directory: Path) -> list[str]:
    """Write every schema into ``directory``; return the file names written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, text in render_schemas().items():
        (directory / file_name).write_text(text, encoding="utf-8")
        written.append(file_name)
    return written


def parse_model(model: type[M], data: Any) -> M:
    """Validate JSON-shaped ``data`` strictly into ``model`` or raise InvalidInputError.

    The error names the first offending field and the pydantic error type, never
    the value.
    """
    from pydantic import ValidationError

    try:
        text = data if isinstance(data, str | bytes) else json.dumps(data)
        return _adapter(model).validate_json(text)  # type: ignore[no-any-return]  # adapter is typed Any
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ValidationError) and exc.errors():
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or None
            raise InvalidInputError(
                f"{model.__name__} is invalid ({first['type']})",
                reason_code="schema_validation_failed",
                field=field,
            ) from exc
        raise InvalidInputError(
            f"{model.__name__} input is not JSON", reason_code="input_not_json"
        ) from exc
