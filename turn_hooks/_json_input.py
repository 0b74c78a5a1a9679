"""The one reader for JSON that comes from outside: files, stdin, hook events, argv.

:func:`json.loads` alone is not safe on hostile input: deep nesting raises
``RecursionError``, an integer literal of more than 4,300 digits raises a bare
``ValueError``, ``NaN`` and ``1e999`` are accepted although no JSON peer can read
them back, and lone surrogates only fail later, when the text is encoded. Every
entry point therefore goes through :func:`loads_bounded`, which refuses each of
these with a typed :class:`~turn_hooks.errors.InvalidInputError` before or while
parsing. It is a pure function: callers do the I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from turn_hooks.errors import InvalidInputError

MAX_JSON_SIZE = 4 * 1024 * 1024
"""The default bound on one input: bytes for ``bytes``, code points for ``str``."""
MAX_JSON_DEPTH = 64
"""Nested arrays and objects allowed; every document this package reads needs < 20."""
MAX_NUMBER_CHARS = 100
"""The longest number literal (sign, digits, fraction and exponent) accepted."""

UnicodeErrors = Literal["strict", "replace"]

# A JSON string literal, unrolled so a long string is one linear scan.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
# A \u escape of a surrogate; pairs are joined by the parser, lone ones survive it.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")


class _Refused(Exception):
    """Raised inside the parser's hooks; carries the reason suffix out of json.loads."""

    def __init__(self, suffix: str) -> None:
        super().__init__(suffix)
        self.suffix = suffix


def _number(literal: str, convert: type[int] | type[float]) -> int | float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise _Refused("number_too_long")
    value = convert(literal)
    if isinstance(value, float) and math.isinf(value):
        raise _Refused("number_out_of_range")
    return value


def _parse_int(literal: str) -> int | float:
    return _number(literal, int)


def _parse_float(literal: str) -> int | float:
    return _number(literal, float)


def _parse_constant(literal: str) -> Any:
    raise _Refused("not_json")  # NaN, Infinity and -Infinity are not JSON (RFC 8259)


def _too_deep(text: str, max_depth: int) -> bool:
    # Brackets inside strings do not nest; what is left is scanned without recursion,
    # and only when there are more opening brackets than the bound allows at all.
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if brackets.count("[") + brackets.count("{") <= max_depth:
        return False
    depth = 0
    for char in brackets:
        depth += 1 if char in "[{" else -1
        if depth > max_depth:
            return True
    return False


def _scrub(value: Any, errors: UnicodeErrors, refuse: InvalidInputError) -> Any:
    # Recursion is safe here: the depth was bounded before parsing.
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value
        if errors == "strict":
            raise refuse
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_scrub(item, errors, refuse) for item in value]
    if isinstance(value, dict):
        return {
            _scrub(key, errors, refuse): _scrub(item, errors, refuse) for key, item in value.items()
        }
    return value


def loads_bounded(
    data: str | bytes,
    *,
    max_size: int = MAX_JSON_SIZE,
    max_depth: int = MAX_JSON_DEPTH,
    errors: UnicodeErrors = "strict",
    reason_prefix: str = "input",
) -> Any:
    """Parse one JSON document from untrusted ``data``, or raise a typed error.

    :param data: the raw input. ``bytes`` are decoded as UTF-8.
    :param max_size: the most bytes (for ``bytes``) or code points (for ``str``).
    :param max_depth: the most nested arrays and objects.
    :param errors: what invalid UTF-8 bytes and lone surrogates (raw, or as ``\\u``
        escapes) become: ``"strict"`` refuses the input, ``"replace"`` turns each into
        U+FFFD, for text a model wrote that must not cost the whole input.
    :param reason_prefix: the reason codes are ``<prefix>_too_large``,
        ``<prefix>_not_utf8``, ``<prefix>_too_deep``, ``<prefix>_number_too_long``
        (more than :data:`MAX_NUMBER_CHARS` characters), ``<prefix>_number_out_of_range``
        (a number no double holds) and ``<prefix>_not_json`` (including ``NaN`` and
        ``Infinity``).

    The size is checked before anything is decoded and the depth before anything is
    parsed, so a megabyte of ``[`` costs one linear scan. The error's message never
    quotes the input.
    """

    def refused(suffix: str, message: str) -> InvalidInputError:
        return InvalidInputError(message, reason_code=f"{reason_prefix}_{suffix}")

    if len(data) > max_size:
        raise refused("too_large", "the input is larger than its bound")
    not_utf8 = refused("not_utf8", "the input is not valid UTF-8")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as exc:
            raise not_utf8 from exc
    else:
        text = data
    if _SURROGATE.search(text) is not None:
        if errors == "strict":
            raise not_utf8
        text = _SURROGATE.sub("\ufffd", text)
    if _too_deep(text, max_depth):
        raise refused("too_deep", f"the input nests deeper than {max_depth} levels")
    try:
        document = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except _Refused as exc:
        raise refused(exc.suffix, "the input holds a number or constant JSON does not") from exc
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise refused("not_json", "the input is not JSON") from exc
    if _ESCAPED_SURROGATE.search(text) is not None:
        document = _scrub(document, errors, not_utf8)
    return document


def argv_from_json(text: str, *, reason_code: str, field: str | None = None) -> list[str]:
    """A command's argv declared as a JSON list of strings, e.g. ``["python", "v.py"]``.

    The list must be non-empty, every item a string without NUL, and the program
    name non-empty; anything else raises :class:`~turn_hooks.errors.InvalidInputError`
    with ``reason_code`` and ``field``, so an installer refuses what a hook could never
    run.
    """
    try:
        argv = loads_bounded(text)
    except InvalidInputError as exc:
        raise InvalidInputError(
            "the argv is not JSON", reason_code=reason_code, field=field
        ) from exc
    if (
        not isinstance(argv, list)
        or not argv
        or not all(isinstance(item, str) and "\0" not in item for item in argv)
        or not argv[0]
    ):
        raise InvalidInputError(
            "the argv must be a non-empty JSON list of strings",
            reason_code=reason_code,
            field=field,
        )
    return argv
