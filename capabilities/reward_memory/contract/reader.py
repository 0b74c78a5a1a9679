"""The tolerant reader at the model boundary: a reflection as the model wrote it, read
into the canonical text the strict contract (:mod:`.experience`, contracts.md §13.2)
accepts, or refused with the field and the rule it broke.

Hosts call it (through the ``read_result`` hook) on the host result *before* the
Turn is spooled and the validator runs, so the validator attests the canonical
reflection: its ``reflection_digest`` is the digest of the normalised reflection the
journal keeps, and the record stays what LoopX writes from the same reflection.

Tolerant about presentation, strict about substance. Normalised, never refused:

* a code fence (```` ```json ```` or plain) inside the block, whitespace around the
  JSON, CRLF, tabs and other control characters inside its strings, a byte order mark;
* the case and spacing of keys (``Evidence-Refs``, ``evidenceRefs``) and of enum
  values (``"Medium"`` is ``medium``);
* a single string where a list is expected (applicability, limitations, refs);
* ``experience.evidence_refs`` left out: it can only equal the top-level refs;
* constants the model cannot usefully get wrong, when left out: ``schema_version``
  (both levels), ``status`` (``eligible``) and ``surface_id``
  (:data:`DEFAULT_SURFACE`);
* an evidence ref written as a phrase (whitespace, punctuation, non-ASCII, over 180
  characters): the host cannot know what the phrase names, so it becomes the opaque
  ref ``phrase:`` + the first 20 hex digits of SHA-256 over the phrase's UTF-8 text,
  whitespace folded (:func:`phrase_ref`); a repeated ref is kept once;
* a key outside the contract: dropped. It is not part of what is learned either way
  (the record has exact keys), the validator attests the reflection without it, and a
  misspelt *required* key still fails as missing;
* ``confidence`` as a number in 0..1 (or a percentage): its third of the scale,
  ``low`` below 1/3, ``medium`` below 2/3, else ``high``. The three words split the
  scale in thirds; a number outside 0..1 has an unknown scale and is refused;
* more than five evidence refs or applicability items: the first five are kept, in
  the model's order. Fewer refs leave the lesson with less support, fewer
  applicability items make it narrower; neither claims more than the model did.

Refused (substance): no evidence refs; a secret or a local path anywhere, including
a home path (``~/``, ``$HOME``) and an absolute path as a ref; prose instead of one
JSON object (or around it); more than five limitations (dropping a limit would widen
the lesson); an experience whose refs differ from the top-level ones; a *wrong*
constant: a schema version or status the contract does not know names another
contract or another intent, so guessing would learn what the model did not submit.
A wrong ``surface_id`` is kept as written: a binding may configure other surfaces,
and one it does not configure is refused when the reflection is routed.
``status: no_evidence`` keeps its meaning (nothing is learned, nothing else checked),
and a legacy v0 reflection is passed on as written (kept for audit only).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any, NoReturn

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.experience import (
    _BEHAVIOUR_KEYS,
    _EXPERIENCE_KEYS,
    _REFLECTION_V1_KEYS,
    CONFIDENCES,
    EXPERIENCE_SCHEMA,
    MAX_REFLECTION_BYTES,
    REFLECTION_V0,
    REFLECTION_V1,
    SOURCE_KINDS,
    normalise_reflection,
)
from turn_hooks.canonical import s1

FIELD = "reward_memory_reflection_json"
DEFAULT_SURFACE = "agent_workflow.turn_admission"
"""The surface the injected instructions name (``turn.situation.SURFACE``)."""
MAX_CANONICAL_CHARS = 2400
"""The host result field's bound (turn-lifecycle §7.3), on the canonical text."""
MAX_REFS = 5
MAX_ITEMS = 5
PHRASE_PREFIX = "phrase:"
_REF_CHARS = 180

_FENCE_OPEN = re.compile(r"\A```[A-Za-z0-9_+-]*[ \t]*\r?\n?")
_FENCE_CLOSE = re.compile(r"\r?\n?[ \t]*```\Z")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
"""Where a camelCase key (``evidenceRefs``) has a word break."""
_HOME_PATH = re.compile(r"(?<![\w/.~-])~/|\$\{?HOME\b")

_BEHAVIOUR_ORDER = ("trigger", "action", "validation", "stop_condition")
"""The order in which a missing behaviour is named: the order the instructions give."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a reflection is refused: a dotted ``field`` path, the ``rule`` it broke (this
    module's words, never the model's text) and the public ``reason_code``."""

    reason_code: str
    field: str
    rule: str

    def detail(self) -> str:
        """``"<field>: <rule>"``, the line the hook log and ``status`` show."""
        return f"{self.field}: {self.rule}"

    def to_json(self) -> dict[str, str]:
        """The ``read_result`` hook's refusal object."""
        return {"reason_code": self.reason_code, "field": self.field, "rule": self.rule}


@dataclass(frozen=True, slots=True)
class Reading:
    """A read reflection: the canonical ``value`` (``""`` when there is none), or the
    value as given with the ``refusal``."""

    value: str
    refusal: Refusal | None = None


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail())
        self.refusal = refusal


def _refuse(field: str, rule: str, reason_code: str = "reflection_invalid") -> NoReturn:
    raise _Refused(Refusal(reason_code, field, rule))


def read_reflection(raw: str | None) -> Reading:
    """The canonical reflection text of ``raw``, or why it can never be learned."""
    if raw is None:
        return Reading("")
    try:
        return Reading(_canonical(raw))
    except _Refused as exc:
        return Reading(raw, exc.refusal)


def refuse_unreadable(raw: object) -> None:
    """Refuse, with this reader's field and rule, a reflection it can never read.

    Hosts keep such a value as given (the plugin's ``read_result`` refused it and the
    host logged why), so this refusal, not whatever the strict parse would say of the
    raw text, is the one the ingest receipt and the Codex App stage report.

    :raises RewardMemoryInputError: the refusal, under ``reward_memory_reflection_json``.
    """
    refusal = read_reflection(raw).refusal if isinstance(raw, str) else None
    if refusal is not None:
        v.fail(f"{FIELD}.{refusal.field}", refusal.rule, refusal.reason_code)


def phrase_ref(phrase: str) -> str:
    """The opaque ref of an evidence phrase: ``phrase:`` + hex20 of its folded text."""
    folded = " ".join(phrase.split())
    return PHRASE_PREFIX + hashlib.sha256(folded.encode("utf-8")).hexdigest()[:20]


def _unwrap(raw: str) -> str:
    """The text without a byte order mark, surrounding whitespace and a code fence."""
    text = raw.lstrip("\ufeff").strip()
    opened = _FENCE_OPEN.match(text)
    if opened:
        text = text[opened.end() :]
        closed = _FENCE_CLOSE.search(text)
        text = text[: closed.start()] if closed else text
    return text.strip()


def _canonical(raw: str) -> str:
    if any("\ud800" <= char <= "\udfff" for char in raw):
        _refuse("reflection", "must be valid UTF-8 text", "reflection_not_utf8")
    text = _unwrap(raw)
    if not text:
        return ""
    if len(text.encode("utf-8")) > MAX_REFLECTION_BYTES:
        _refuse("reflection", "must be at most 16384 bytes", "reflection_too_large")
    try:
        document = json.loads(text, strict=False)  # strict=False: raw tabs, CR, LF in strings
    except (ValueError, RecursionError):
        _refuse("reflection", "must be one JSON object, with no prose around it")
    if document is None or document == {}:
        return ""  # an empty object or null: nothing to reflect, as an empty block
    document = _keys(document, "reflection", _REFLECTION_V1_KEYS)
    schema = _word(document.get("schema_version", REFLECTION_V1))
    if schema == REFLECTION_V0:
        return s1(document)  # legacy: kept for audit only, never learned
    if schema != REFLECTION_V1:
        _refuse("schema_version", f"must be {REFLECTION_V1} (or left out)")
    status = _word(document.get("status", "eligible"))
    if status == "no_evidence":
        return s1({**document, "schema_version": REFLECTION_V1, "status": status})
    if status != "eligible":
        _refuse("status", "must be eligible or no_evidence")
    refs = document.get("evidence_refs")
    experience_value = document.get("experience")
    if refs is None and isinstance(experience_value, dict):
        # The refs are written once: under experience, where the top level left them out.
        refs = _keys(experience_value, "experience", _EXPERIENCE_KEYS).get("evidence_refs")
    evidence = _refs(refs, "evidence_refs")
    surface = document.get("surface_id", DEFAULT_SURFACE)
    if not isinstance(surface, str):
        _refuse("surface_id", f"must be a surface id such as {DEFAULT_SURFACE}")
    reflection = {
        "schema_version": REFLECTION_V1,
        "status": "eligible",
        "surface_id": surface.strip().lower(),
        "outcome_kind": _choice(document.get("outcome_kind"), tuple(SOURCE_KINDS), "outcome_kind"),
        "content_summary": _text(document.get("content_summary"), 500, "content_summary"),
        "reasoning_summary": _text(document.get("reasoning_summary"), 500, "reasoning_summary"),
        "confidence": _confidence(document.get("confidence")),
        "evidence_refs": evidence,
        "experience": _experience(experience_value, evidence),
    }
    try:  # the strict contract has the last word: what it refuses, nobody learns
        normalised = normalise_reflection(reflection, FIELD)
    except v.RewardMemoryInputError as exc:
        path = str(exc.field or FIELD).removeprefix(FIELD).lstrip(".") or "reflection"
        _refuse(path, str(exc.message).removeprefix(str(exc.field or "")).strip(), exc.reason_code)
    canonical = s1(normalised)
    if len(canonical) > MAX_CANONICAL_CHARS:
        _refuse(
            "reflection", "must be at most 2400 characters as compact JSON", "reflection_too_large"
        )
    return canonical


def _keys(value: object, field: str, known: frozenset[str]) -> dict[str, Any]:
    """The object with its keys' case and spacing folded and unknown keys dropped."""
    if not isinstance(value, dict):
        _refuse(field, "must be a JSON object")
    folded: dict[str, Any] = {}
    for key, item in value.items():
        name = "_".join(_CAMEL.sub(" ", key).strip().lower().replace("-", " ").split())
        if name not in known:
            continue  # outside the contract: not learned either way (module docstring)
        if name in folded:
            _refuse(f"{field}.{name}" if field != "reflection" else name, "is given twice")
        folded[name] = item
    return folded


def _word(value: object) -> object:
    """An enum or constant as written, with its case and surrounding space folded."""
    return value.strip().lower() if isinstance(value, str) else value


def _choice(value: object, allowed: tuple[str, ...], field: str) -> str:
    word = _word(value)
    if word is None:
        _refuse(field, f"is required: one of {', '.join(allowed)}", "reflection_field_missing")
    if word not in allowed:
        _refuse(field, f"must be one of {', '.join(allowed)}")
    return str(word)


def _confidence(value: object) -> str:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in CONFIDENCES:
            return word
        try:
            value = float(word[:-1]) / 100 if word.endswith("%") else float(word)
        except ValueError:
            _refuse("confidence", "must be low, medium or high")
    if value is None:
        _refuse("confidence", "is required: low, medium or high", "reflection_field_missing")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        _refuse("confidence", "must be low, medium or high")
    if not 0 <= value <= 1:
        _refuse("confidence", "must be low, medium or high (a number must be within 0..1)")
    return CONFIDENCES[min(2, int(value * 3))]


def _text(value: object, limit: int, field: str) -> str:
    """Compact public-safe text (contracts.md §1.1), or the refusal naming the field."""
    if value is None or isinstance(value, dict | list):
        if value is None:
            _refuse(
                field,
                f"is required: text of at most {limit} characters",
                "reflection_field_missing",
            )
        _refuse(field, f"must be text of at most {limit} characters")
    folded = " ".join(str(value).split())
    if not folded:
        _refuse(field, f"must be text of at most {limit} characters", "reflection_field_missing")
    _public_safe(folded, field)
    return v.compact(folded, limit, field)


def _public_safe(text: str, field: str) -> None:
    if not v.is_public_safe(text) or _HOME_PATH.search(text):
        _refuse(field, "must hold no secret or local path", "text_not_public_safe")


def _items(value: object, field: str) -> list[Any]:
    """A list as given, or a single value as a list of one."""
    if isinstance(value, list):
        return value
    return [] if value is None or value == "" else [value]


def _texts(value: object, field: str, *, keep_first: bool) -> list[str]:
    """1..5 unique compact texts; over five, the first five or a refusal."""
    texts: list[str] = []
    for index, item in enumerate(_items(value, field)):
        if item is None or item == "":
            continue
        text = _text(item, 500, f"{field}[{index}]")
        if text not in texts:
            texts.append(text)
    if not texts:
        _refuse(field, "must hold 1 to 5 items", "reflection_field_missing")
    if len(texts) > MAX_ITEMS and not keep_first:
        _refuse(field, "must hold at most 5 items")
    return texts[:MAX_ITEMS]


def _refs(value: object, field: str) -> list[str]:
    """1..5 unique refs, phrases made opaque (module docstring)."""
    refs: list[str] = []
    for index, item in enumerate(_items(value, field)):
        if isinstance(item, dict | list) or item is None:
            _refuse(f"{field}[{index}]", "must be a short ref, such as a test or run id")
        text = " ".join(str(item).split())
        if not text:
            continue
        _public_safe(text, f"{field}[{index}]")
        if text.startswith(("/", "\\")):
            _refuse(
                f"{field}[{index}]",
                "must be repository-relative, not an absolute path",
                "text_not_public_safe",
            )
        ref = text if len(text) <= _REF_CHARS and v.TOKEN.fullmatch(text) else phrase_ref(text)
        if ref not in refs:
            refs.append(ref)
    if not refs:
        _refuse(
            field,
            "must hold 1 to 5 refs to this Turn's evidence (a test run, a review, a measurement)",
            "reflection_evidence_missing",
        )
    return refs[:MAX_REFS]


def _experience(value: object, evidence: list[str]) -> dict[str, Any]:
    if value is None:
        _refuse("experience", "is required", "reflection_field_missing")
    document = _keys(value, "experience", _EXPERIENCE_KEYS)
    schema = _word(document.get("schema_version", EXPERIENCE_SCHEMA))
    if schema != EXPERIENCE_SCHEMA:
        _refuse("experience.schema_version", f"must be {EXPERIENCE_SCHEMA} (or left out)")
    behaviour = _keys(
        document.get("future_behavior", {}), "experience.future_behavior", _BEHAVIOUR_KEYS
    )
    refs = document.get("evidence_refs")
    if refs is not None and _refs(refs, "experience.evidence_refs") != evidence:
        _refuse("experience.evidence_refs", "must equal evidence_refs (or be left out)")
    return {
        "schema_version": EXPERIENCE_SCHEMA,
        "applicability": _texts(
            document.get("applicability"), "experience.applicability", keep_first=True
        ),
        "observed_outcome": _text(
            document.get("observed_outcome"), 500, "experience.observed_outcome"
        ),
        "attribution": _text(document.get("attribution"), 500, "experience.attribution"),
        "future_behavior": {
            key: _text(behaviour.get(key), 500, f"experience.future_behavior.{key}")
            for key in _BEHAVIOUR_ORDER
        },
        "limitations": _texts(
            document.get("limitations"), "experience.limitations", keep_first=False
        ),
        "evidence_refs": evidence,
    }
