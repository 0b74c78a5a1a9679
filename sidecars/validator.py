"""The validator a repository declares for its Goal, where host plugins read it.

``turn-hooks install HOST --validate-with ...`` writes the validator into the hook
command it installs. A hook a host plugin ships (Claude Code's ``hooks/hooks.json``)
is the same for every repository, so it carries no validator: it reads the one the
repository declares here, ``<repo>/.local/turn-hooks/validator.json`` (0600, locked,
git-ignored with the rest of ``.local/turn-hooks``). ``turn-hooks init --validate-with``
and ``turn-hooks install`` write it, and each write is read back exactly before it
counts.

The document names what the person chose, not a resolved argv: ``validate_with`` is
the command line as typed ("make test"), turned into the built-in validator by the
hook that runs it, with that hook's own interpreter; ``validation_command`` is an
argv of the person's own validator; ``recall_only`` says, on purpose, that nothing is
learned. Exactly one of the three is set. No document at all is recall-only too, and
``doctor`` says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecars.paths import sidecar_root
from sidecars.store import SidecarStore
from turn_hooks.errors import InvalidInputError, SidecarError

VALIDATOR_FILE = "validator.json"
VALIDATOR_SCHEMA = "turn_hooks_repository_validator_v1"


def command_words(line: str) -> list[str]:
    """``--validate-with``'s command line as shell words; ``validation_declaration_invalid``
    for one that is not (an unclosed quote) or is empty."""
    import shlex

    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise InvalidInputError(
            f"--validate-with is not shell words: {exc}",
            reason_code="validation_declaration_invalid",
            field="validate_with",
        ) from exc
    if not words:
        raise InvalidInputError(
            "--validate-with needs a command, such as 'make test'",
            reason_code="validation_declaration_invalid",
            field="validate_with",
        )
    return words


def validator_document(
    *,
    validate_with: str | None = None,
    validation_command: list[str] | None = None,
    timeout_seconds: int | None = None,
    recall_only: bool = False,
) -> dict[str, Any]:
    """The document for one declaration; ``validation_declaration_invalid`` unless
    exactly one of the three is given."""
    given = [validate_with is not None, validation_command is not None, recall_only]
    if given.count(True) != 1:
        raise InvalidInputError(
            "declare one validator: --validate-with COMMAND, --validation-command-json "
            "ARGV or --recall-only",
            reason_code="validation_declaration_invalid",
            field="validate_with",
        )
    if validation_command is not None and (
        not validation_command or not all(isinstance(w, str) and w for w in validation_command)
    ):
        raise InvalidInputError(
            "the validator argv must be a non-empty list of non-empty strings",
            reason_code="validation_declaration_invalid",
            field="validation_command_json",
        )
    if validate_with is not None:
        command_words(validate_with)
    return {
        "schema_version": VALIDATOR_SCHEMA,
        "validate_with": validate_with,
        "validation_command": validation_command,
        "validation_timeout_seconds": timeout_seconds,
        "recall_only": recall_only,
    }


def _store(repository: str | Path) -> tuple[SidecarStore, Path]:
    store = SidecarStore(sidecar_root(repository))
    return store, store.path(VALIDATOR_FILE)


def record_validator(repository: str | Path, document: dict[str, Any]) -> bool:
    """Write ``document`` (:func:`validator_document`) for the repository and read it
    back; ``True`` when it changed anything.

    :raises InvalidInputError: ``validator_record_failed`` when it cannot be written
        or does not read back exactly (nothing a hook reads is then half-written).
    """
    store, path = _store(repository)
    try:
        if store.read(path) == document:
            return False
        store.write(path, document)
        readback = store.read(path)
    except SidecarError as exc:
        raise InvalidInputError(
            f"the repository's validator could not be recorded ({exc.reason_code}): "
            "run `turn-hooks sidecar check --repair` in the repository",
            reason_code="validator_record_failed",
        ) from exc
    if readback != document:
        raise InvalidInputError(
            "the repository's validator did not read back as written",
            reason_code="validator_record_failed",
        )
    return True


def read_validator(repository: str | Path) -> dict[str, Any] | None:
    """The repository's declaration, or ``None`` when it has none.

    :raises InvalidInputError: ``validator_record_invalid`` for a file that is not
        one declaration of this schema (a hook then learns nothing and logs it).
    :raises SidecarError: for a file that cannot be read safely (linked, widened).
    """
    store, path = _store(repository)
    document = store.read(path)
    if document is None:
        return None
    try:
        expected = validator_document(
            validate_with=document.get("validate_with"),
            validation_command=document.get("validation_command"),
            timeout_seconds=document.get("validation_timeout_seconds"),
            recall_only=document.get("recall_only") is True,
        )
    except InvalidInputError:
        expected = None
    kinds_ok = isinstance(document.get("validate_with"), str | None) and isinstance(
        document.get("validation_timeout_seconds"), int | None
    )
    if expected != document or not kinds_ok:
        raise InvalidInputError(
            f"{VALIDATOR_FILE} is not a validator declaration: run `turn-hooks init "
            "--validate-with 'make test'` (or --recall-only) in the repository again",
            reason_code="validator_record_invalid",
        )
    return document
