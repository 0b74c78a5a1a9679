"""JSON Schemas of the models, and JSON validation through pydantic.

Imported only by commands that need it (``turn-hooks schema``, input validation),
never by the per-Turn hook path, because importing pydantic costs more than the
rest of that path together.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
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


SCHEMA_FILE_MODE = 0o644
"""Schema files are committed, public documents."""


def write_schemas(directory: Path) -> list[str]:
    """Write every schema into ``directory``, each atomically; return the file names.

    The directory (made if missing) must be a real directory and every schema path in
    it a regular file or nothing, all checked before anything is written, so a
    refusal writes nothing: ``schema_output_symlink``, ``schema_output_not_directory``
    (a file or FIFO where the directory belongs), ``schema_output_not_regular`` (a
    FIFO or directory where a schema belongs); ``schema_output_unwritable`` when the
    file system refuses. Each file goes to a temp file beside it, then ``os.replace``:
    a reader sees the old schema or the new one, never a torn one.
    """
    schemas = render_schemas()
    try:
        _check_output(directory, list(schemas))
        directory.mkdir(parents=True, exist_ok=True)
        for file_name, text in schemas.items():
            _replace(directory / file_name, text)
    except OSError as exc:
        raise InvalidInputError(
            "the schema files cannot be written", reason_code="schema_output_unwritable"
        ) from exc
    return list(schemas)


def _refused(suffix: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, reason_code=f"schema_output_{suffix}", field="output")


def _mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None


def _check_output(directory: Path, names: list[str]) -> None:
    mode = _mode(directory)
    if mode is None:
        return  # made below, empty
    if stat.S_ISLNK(mode):
        raise _refused("symlink", "the output directory is a symlink")
    if not stat.S_ISDIR(mode):
        raise _refused("not_directory", "the output path is not a directory")
    for name in names:
        mode = _mode(directory / name)
        if mode is not None and stat.S_ISLNK(mode):
            raise _refused("symlink", "a schema path is a symlink")
        if mode is not None and not stat.S_ISREG(mode):
            raise _refused("not_regular", "a schema path is not a regular file")


def _replace(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(temp, SCHEMA_FILE_MODE)
        os.replace(temp, path)
    except OSError:
        os.unlink(temp)
        raise


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
