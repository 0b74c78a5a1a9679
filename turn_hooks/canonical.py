"""The serializations and hashes every identity is built from.

Five JSON serializations feed identities (shared/spec/identities.md §1); using the
wrong one changes the value, so each has its own function and its own test vector.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

# json.dumps builds a new encoder for every call with non-default options; identities
# are computed thousands of times per reduction, so the S1 encoder is made once.
_S1 = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def s1(value: Any) -> str:
    """S1 canonical: sorted keys, compact separators, non-ASCII kept."""
    return _S1.encode(value)


def s2(value: Any) -> str:
    """S2: sorted keys, default ``", "``/``": "`` separators, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def s3(value: Any) -> str:
    """S3: sorted keys, default separators, ``\\u`` escapes for non-ASCII."""
    return json.dumps(value, sort_keys=True)


def s4(values: list[Any]) -> str:
    """S4: a JSON array as JavaScript's ``JSON.stringify`` prints it (no key sorting)."""
    return json.dumps(values, separators=(",", ":"), ensure_ascii=False)


def s5(value: Any) -> str:
    """S5: sorted keys, compact separators, ``\\u`` escapes for non-ASCII."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def compact_json(value: Any) -> str:
    """Compact JSON in insertion order, non-ASCII kept: the contribution budget measure."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hex_n(text: str, n: int) -> str:
    """The first ``n`` hex characters of :func:`sha256_hex`."""
    return sha256_hex(text)[:n]


def _js_number(value: float) -> int | float | None:
    # JavaScript prints integral doubles without a fraction and NaN/Infinity as null;
    # Python would print 1.0 and NaN, which would change a digest computed by a JS host.
    if math.isnan(value) or math.isinf(value):
        return None
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def js_normalise(value: Any) -> Any:
    """Return ``value`` with every float rewritten as JavaScript would serialise it."""
    kind = type(value)
    if kind is str or kind is int:  # most of a document, and never rewritten: asked first
        return value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, dict):
        return {key: js_normalise(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [js_normalise(item) for item in value]
    return value


def s1_js(value: Any) -> str:
    """S1 over JavaScript-normalised numbers (used by ``basis_digest``)."""
    return s1(js_normalise(value))
