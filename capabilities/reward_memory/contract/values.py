"""Shared value rules (contracts.md §1): tokens, ids, compact public-safe text.

Every validator raises :class:`RewardMemoryInputError` with a reason code and the
field name, never the offending value, so an error can be printed publicly.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime
from typing import Any, Final, NoReturn

from turn_hooks import InvalidInputError
from turn_hooks._secrets import SECRET as _SECRET

NEW_ACTION_AUTHORITY: Final = "grants_new_action_authority"
EXTERNAL_WRITES: Final = "external_writes_performed"
RAW_CONTENT: Final = "raw_content_captured"
BOUNDARY_FLAGS: Final = (NEW_ACTION_AUTHORITY, EXTERNAL_WRITES, RAW_CONTENT)
"""The boundary flags of every public reward-memory receipt, spelt here only.

Each says whether the step crossed a boundary: gave an Agent a new authority, wrote
outside the Goal's own state, or kept raw memory text. Documents place them where
the reference does, so a receipt names them through these constants in its own key
order; ``False`` is the only value a reader may trust without evidence.
"""

TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/#-]{0,199}")
SURFACE_ID = re.compile(r"[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+")
CORPUS_ID = re.compile(r"[a-z][a-z0-9_-]{0,63}")
AGENT_ID = re.compile(r"[a-z][a-z0-9_.:@-]{0,79}")

_VALUE = r"[^\s`'\"<>]"
_LOCAL_PATH = re.compile(
    r"(?<![:/a-z0-9])/(?:users|home|volumes|private|tmp|var|etc|opt|srv|mnt|root|data|"
    rf"workspace|workspaces)/{_VALUE}"
    r"|(?<![a-z0-9])[a-z]:[\\/]"
    r"|\\\\[a-z0-9._$-]+\\",
    re.IGNORECASE,
)


class RewardMemoryInputError(InvalidInputError):
    """A reward-memory document or request is invalid; nothing was written or called."""

    reason_code = "invalid_request"

    def to_public(self) -> dict[str, Any]:
        """The upstream ``reward_memory_error_v0`` shape plus our reason code and field."""
        public: dict[str, Any] = {
            "ok": False,
            "schema_version": "reward_memory_error_v0",
            "status": "invalid_request",
            "error": self.message,
            "reason_code": self.reason_code,
        }
        if self.field is not None:
            public["field"] = self.field
        return public


def fail(field: str, message: str, reason_code: str = "invalid_request") -> NoReturn:
    """Raise the typed input error for ``field``."""
    raise RewardMemoryInputError(f"{field} {message}", reason_code=reason_code, field=field)


@functools.lru_cache(maxsize=512)
def is_public_safe(text: str) -> bool:
    """False when ``text`` holds a local path or something shaped like a secret.

    Cached: one ingest checks the same texts two or three times (the event, then the
    record each verification recall reads back), and the secret patterns cost tens
    of microseconds per text.
    """
    return not (_LOCAL_PATH.search(text) or _SECRET.search(text))


def redact(text: str) -> str:
    """``text`` without its local paths and secret-shaped values, whitespace folded.

    Every word a secret touches is cut whole (a ``Bearer …`` secret spans two, and
    a pattern may match only the start of a word), then every word holding a path,
    so the rest of the text stays usable.
    """
    spans = [match.span() for match in _SECRET.finditer(text)]
    return " ".join(
        word.group()
        for word in re.finditer(r"\S+", text)
        if not any(start < word.end() and word.start() < end for start, end in spans)
        and is_public_safe(word.group())
    )


def compact_or_empty(value: object, limit: int) -> str:
    """contracts.md §1.1 steps 1-4: whitespace folded, cut with ``…``, unsafe → ``""``."""
    text = " ".join(str(value or "").strip().split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text if is_public_safe(text) else ""


def compact(value: object, limit: int, field: str) -> str:
    """Required compact public-safe text of at most ``limit`` code points.

    A non-string is its ``str()`` text (contracts.md §1.1 step 1), as LoopX 2.1.1
    reads it: ``5`` is ``"5"`` and ``0`` is empty, so a record either tool writes
    from the same event carries the same text.
    """
    text = compact_or_empty(value, limit)
    if not text:
        folded = " ".join(str(value or "").split())
        if not folded:
            why = "it is empty"
        elif _LOCAL_PATH.search(folded):
            why = "it holds a local path; describe the place instead"
        else:
            why = "it holds something shaped like a secret (a key, token or password)"
        fail(field, f"must be compact and public-safe: {why}", "text_not_public_safe")
    return text


def token(value: object, field: str) -> str:
    """A stripped token (``^[A-Za-z0-9][A-Za-z0-9._:/#-]{0,199}$``).

    A non-string is its ``str()`` text first, as LoopX 2.1.1 compacts every token
    before checking it: ``5`` is the token ``"5"``, while ``0``, ``False`` and
    ``[]`` are empty and refused. A record either tool writes from the same input
    then carries the same identities.
    """
    text = (value if isinstance(value, str) else str(value or "")).strip()
    if not TOKEN.fullmatch(text):
        fail(field, "must be a token")
    return text


def optional_token(value: object, field: str) -> str | None:
    """``None`` or ``""`` normalise to ``None``; anything else must be a token."""
    if value is None or value == "":
        return None
    return token(value, field)


def surface_id(value: object, field: str = "surface_id") -> str:
    """A dotted, module-qualified surface id."""
    if not isinstance(value, str) or not SURFACE_ID.fullmatch(value):
        fail(field, "must be a surface id")
    return value


def corpus_id(value: object, field: str = "corpus_id") -> str:
    """A corpus id (``^[a-z][a-z0-9_-]{0,63}$``)."""
    if not isinstance(value, str) or not CORPUS_ID.fullmatch(value):
        fail(field, "must be a corpus id")
    return value


def normalise_agent_id(value: object, field: str = "agent_id") -> str:
    """Whitespace folded, lowercased, spaces to ``-``; must match the agent id pattern."""
    if not isinstance(value, str):
        fail(field, "must be a string")
    text = " ".join(value.split()).lower().replace(" ", "-")
    if not AGENT_ID.fullmatch(text):
        fail(field, "must be an agent id")
    return text


def boolean(value: object, field: str) -> bool:
    """A real JSON boolean (never 0/1 or a string)."""
    if not isinstance(value, bool):
        fail(field, "must be a boolean")
    return value


def integer(value: object, field: str, low: int, high: int | None = None) -> int:
    """An integer in ``low..high`` (booleans rejected)."""
    if isinstance(value, bool) or not isinstance(value, int):
        fail(field, "must be an integer")
    if value < low or (high is not None and value > high):
        fail(field, f"must be between {low} and {high}")
    return value


def enum(value: object, allowed: tuple[str, ...], field: str) -> str:
    """One of ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        fail(field, "has an unsupported value")
    return value


def lookup(table: dict[str, Any], key: object) -> Any:
    """``table[key]`` for a string key, else ``None``: a key from input may be any JSON
    value, and an object or a list is no name of anything (nor hashable)."""
    return table.get(key) if isinstance(key, str) else None


def mapping(value: object, field: str) -> dict[str, Any]:
    """A JSON object."""
    if not isinstance(value, dict):
        fail(field, "must be an object")
    return value


def exact_keys(
    value: object, field: str, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """A JSON object with all ``required`` keys and nothing outside ``required | optional``."""
    document = mapping(value, field)
    unknown = set(document) - required - optional
    if unknown:
        fail(f"{field}.{sorted(unknown)[0]}", "is not an allowed key", "unknown_key")
    missing = required - set(document)
    if missing:
        fail(f"{field}.{sorted(missing)[0]}", "is required", "missing_key")
    return document


def listing(value: object, field: str, low: int, high: int) -> list[Any]:
    """A JSON array of ``low..high`` items."""
    if not isinstance(value, list):
        fail(field, "must be a list")
    if not low <= len(value) <= high:
        fail(field, f"must hold {low}..{high} items")
    return value


def unique(items: list[str], field: str) -> list[str]:
    """``items`` unchanged if no two are equal."""
    if len(set(items)) != len(items):
        fail(field, "must not repeat an item")
    return items


def timestamp(value: object, field: str) -> str:
    """An ISO 8601 timestamp with a UTC offset, returned stripped and not re-formatted."""
    if not isinstance(value, str):
        fail(field, "must be a timestamp")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        fail(field, "must be an ISO 8601 timestamp")
    if parsed.utcoffset() is None:
        fail(field, "must carry a UTC offset")
    return text


def parse_timestamp(text: str) -> datetime:
    """Parse a timestamp that :func:`timestamp` accepted."""
    return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)


def now_timestamp() -> str:
    """The current UTC time as an ISO 8601 string with an offset."""
    return datetime.now(UTC).isoformat(timespec="seconds")
