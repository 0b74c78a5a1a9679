"""One utility observation from trusted facts and an evaluator's proposal (§14).

The application receipt, the verified outcome and the attribution context are
trusted; the proposal must echo every identifying value of theirs. Separate from
:mod:`.observation`, which is the observation contract itself: this is the one way
an observation is made, and it is the only code that reads a proposal.
"""

from __future__ import annotations

import re
from typing import Any

from capabilities.reward_memory.contract.config import RECALL_MODES
from capabilities.reward_memory.contract.values import (
    EXTERNAL_WRITES,
    NEW_ACTION_AUTHORITY,
    RAW_CONTENT,
    TOKEN,
)
from capabilities.reward_memory.utility.observation import (
    BOUNDARY_FIELDS,
    OBSERVATION_SCHEMA,
    application_receipt_id,
    digests,
    enum,
    fail,
    observation_id,
    opaque_ref,
    scope,
    validate_observation,
)

APPLICATION_RECEIPT_SCHEMA = "reward_memory_application_receipt_v0"
RECEIPT_FIELDS = frozenset(
    {
        "schema_version",
        "application_id",
        "artifact_ref",
        "corpus_id",
        "surface_id",
        "mode",
        "query_kind",
        "query_evidence",
        "outcome",
        "memory_ref_digests",
        "reasoning_summary",
        "current_artifact_verified",
        "result_readback_verified",
        "provider_call_count",
        "model_reasoning_preserved",
        NEW_ACTION_AUTHORITY,
        EXTERNAL_WRITES,
        RAW_CONTENT,
    }
)
RECEIPT_OPTIONAL = frozenset({"retrieval_snapshot_ref", "policy_snapshot_ref"})
QUERY_KINDS = ("business_recall", "ingest_verification")
APPLICATION_OUTCOMES = (
    "applied",
    "ignored",
    "refuted",
    "failed",
    "not_available",
    "available_not_applied",
)
PROPOSAL_FIELDS = frozenset(
    {
        "scope",
        "application_id",
        "artifact_ref",
        "outcome_ref",
        "outcome_status",
        "retrieval_snapshot_ref",
        "policy_snapshot_ref",
        "memory_ref_digests",
        "utility_label",
        "attribution_level",
        "evidence_basis",
        "confidence",
        "reason_codes",
        "evidence_refs",
        "evaluator_ref",
        "evaluation_version",
    }
)
_RECEIPT_CODE = "application_receipt_invalid"
_BINDING_CODE = "utility_binding_mismatch"
_QUERY_EVIDENCE_FIELDS = frozenset({"query_digest", "query_summary", "exact_query_exposed"})
_QUERY_DIGEST = re.compile(r"^[0-9a-f]{16}$")
MAX_QUERY_SUMMARY = 220


def _exact(
    value: object, fields: frozenset[str], optional: frozenset[str], code: str, what: str
) -> dict[str, Any]:
    if not isinstance(value, dict):
        fail(code, f"{what} must be a JSON object")
    unknown, missing = set(value) - fields - optional, fields - set(value)
    if unknown or missing:
        fail(
            code,
            f"{what} has invalid fields (missing {sorted(missing)}, unknown {sorted(unknown)})",
        )
    return value


def _sorted_texts(value: object) -> object:
    """``value`` sorted when it is a list of strings; otherwise as it came."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return sorted(value)
    return value


PROPOSAL_TEXT_FIELDS = tuple(
    sorted(
        PROPOSAL_FIELDS
        - {"scope", "memory_ref_digests", "confidence", "reason_codes", "evidence_refs"}
    )
)
"""The proposal's text fields, read as :func:`_text` reads them."""


def _text(value: object) -> str:
    """A value an evaluator gave as text, as LoopX 2.1.1 reads it: its text, trimmed
    (``2`` is ``"2"``), a false or empty one as none. The checks that follow still
    refuse what is no opaque ref or no allowed value."""
    return str(value).strip() if value else ""


def _scope_text(value: object) -> object:
    """An attribution's scope with each value read by :func:`_text`; anything but an
    object as it came (the scope check refuses it)."""
    if not isinstance(value, dict):
        return value
    return {key: _text(item) for key, item in value.items()}


def receipt_text(receipt: dict[str, Any], key: str) -> str:
    """A receipt's text field as upstream reads it: a number is its ``str()`` text.

    The receipt itself stays as given, since its id is a digest of what was given.
    """
    value = receipt[key]
    return value if isinstance(value, str) else str(value or "")


def application_receipt(value: object) -> dict[str, Any]:
    """A ``reward_memory_application_receipt_v0`` as it must be to carry utility."""
    receipt = _exact(value, RECEIPT_FIELDS, RECEIPT_OPTIONAL, _RECEIPT_CODE, "application_receipt")
    if receipt["schema_version"] != APPLICATION_RECEIPT_SCHEMA:
        fail(
            _RECEIPT_CODE,
            f"application_receipt.schema_version must be {APPLICATION_RECEIPT_SCHEMA}",
        )
    for flag in (
        NEW_ACTION_AUTHORITY,
        EXTERNAL_WRITES,
        RAW_CONTENT,
    ):
        if receipt[flag] is not False:
            fail(_RECEIPT_CODE, f"application_receipt.{flag} must be false")
    if receipt["model_reasoning_preserved"] is not True:
        fail(_RECEIPT_CODE, "application_receipt.model_reasoning_preserved must be true")
    # Verification is a yes or a no: 1 or "true" is neither (as LoopX 2.1.1 reads it).
    for flag in ("result_readback_verified", "current_artifact_verified"):
        if not isinstance(receipt[flag], bool):
            fail(_RECEIPT_CODE, f"application_receipt.{flag} must be a boolean")
    enum(receipt["outcome"], APPLICATION_OUTCOMES, _RECEIPT_CODE, "application_receipt.outcome")
    # A receipt that applied nothing may cite nothing (as LoopX 2.1.1 reads it): an
    # applied or refuted one must cite a digest, which its consumers check, and an
    # observation always binds at least one, so utility is rejected without one.
    if (
        digests(receipt["memory_ref_digests"], _RECEIPT_CODE, "memory_ref_digests", low=0)
        != receipt["memory_ref_digests"]
    ):
        fail(_RECEIPT_CODE, "application_receipt.memory_ref_digests must be sorted")
    for key in ("application_id", "corpus_id", "surface_id"):
        if not receipt_text(receipt, key):
            fail(_RECEIPT_CODE, f"application_receipt.{key} must be a string")
    # Upstream refuses these shapes too (found by the differential fuzzer).
    if not TOKEN.fullmatch(receipt_text(receipt, "application_id")):
        fail(_RECEIPT_CODE, "application_receipt.application_id must be a token")
    for key in ("corpus_id", "surface_id"):
        opaque_ref(receipt_text(receipt, key), _RECEIPT_CODE, f"application_receipt.{key}")
    enum(receipt["mode"], RECALL_MODES, _RECEIPT_CODE, "application_receipt.mode")
    # The query kind is one a recall runs, read as its text, as LoopX reads it (issue 19).
    if receipt_text(receipt, "query_kind").strip() not in QUERY_KINDS:
        fail(_RECEIPT_CODE, f"application_receipt.query_kind must be one of {QUERY_KINDS}")
    calls = receipt["provider_call_count"]
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
        fail(_RECEIPT_CODE, "application_receipt.provider_call_count must be a count")
    summary = receipt["reasoning_summary"]
    if not isinstance(summary, str) or not summary.strip():
        fail(_RECEIPT_CODE, "application_receipt.reasoning_summary must be compact text")
    evidence = receipt["query_evidence"]
    if not isinstance(evidence, list) or not all(isinstance(item, dict) for item in evidence):
        fail(_RECEIPT_CODE, "application_receipt.query_evidence must be a list of objects")
    for index, item in enumerate(evidence):
        _query_evidence(item, f"application_receipt.query_evidence[{index}]")
    return receipt


def _query_evidence(item: dict[str, Any], what: str) -> None:
    # A receipt proves which query ran by its digest and a one-line summary; an
    # exposed exact query would put the caller's text in the receipt (upstream
    # refuses it too, found by the differential fuzzer).
    _exact(item, _QUERY_EVIDENCE_FIELDS, frozenset(), _RECEIPT_CODE, what)
    digest = item["query_digest"]
    if not isinstance(digest, str) or not _QUERY_DIGEST.fullmatch(digest):
        fail(_RECEIPT_CODE, f"{what}.query_digest must be a 16-hex digest")
    summary = item["query_summary"]
    if (
        not isinstance(summary, str)
        or not summary.strip()
        or len(summary.strip()) > MAX_QUERY_SUMMARY
        or "\n" in summary
        or "\r" in summary
    ):
        fail(_RECEIPT_CODE, f"{what}.query_summary must be one line of 1..220 characters")
    if item["exact_query_exposed"] is not False:
        fail(_RECEIPT_CODE, f"{what}.exact_query_exposed must be false")


def build_observation(
    receipt: object,
    verified_outcome: object,
    context: object,
    proposal: object,
    *,
    created_at: str,
) -> dict[str, Any]:
    """One validated observation from trusted facts and an evaluator's proposal.

    The receipt, the verified outcome and the context are trusted; the proposal must
    echo every one of their identifying values, so an evaluator cannot move a judgement
    onto another receipt, artifact, outcome or snapshot.
    """
    trusted = application_receipt(receipt)
    outcome = _exact(
        verified_outcome,
        frozenset({"verified", "outcome_ref", "artifact_ref", "outcome_status"}),
        frozenset(),
        _BINDING_CODE,
        "verified_outcome",
    )
    if outcome["verified"] is not True:
        fail(_BINDING_CODE, "verified_outcome.verified must be true")
    if outcome["artifact_ref"] != trusted["artifact_ref"]:
        fail(_BINDING_CODE, "verified_outcome.artifact_ref must match the application receipt")
    facts = _exact(
        context,
        frozenset({"scope", "retrieval_snapshot_ref", "policy_snapshot_ref"}),
        frozenset(),
        _BINDING_CODE,
        "attribution_context",
    )
    trusted_scope = scope(_scope_text(facts["scope"]))
    for key in ("corpus_id", "surface_id"):
        if trusted_scope[key] != trusted[key]:
            fail(
                _BINDING_CODE, f"attribution_context.scope.{key} must match the application receipt"
            )
    for key in ("retrieval_snapshot_ref", "policy_snapshot_ref"):
        opaque_ref(facts[key], "observation_malformed_snapshot", key)
        if key in trusted and trusted[key] != facts[key]:
            fail(_BINDING_CODE, f"attribution_context.{key} must match the application receipt")
    offer = _exact(
        proposal, PROPOSAL_FIELDS, frozenset(), "observation_malformed", "evaluator_proposal"
    )
    echoes = {
        "scope": trusted_scope,
        "application_id": trusted["application_id"],
        "artifact_ref": trusted["artifact_ref"],
        "outcome_ref": outcome["outcome_ref"],
        "outcome_status": outcome["outcome_status"],
        "retrieval_snapshot_ref": facts["retrieval_snapshot_ref"],
        "policy_snapshot_ref": facts["policy_snapshot_ref"],
    }
    offered = {
        **offer,
        **{key: _text(offer[key]) for key in PROPOSAL_TEXT_FIELDS},
        "scope": _scope_text(offer["scope"]),
    }
    for key, value in echoes.items():
        if offered[key] != value:
            fail(_BINDING_CODE, f"evaluator_proposal.{key} does not match the trusted facts")
    bound = digests(offer["memory_ref_digests"], "observation_malformed", "memory_ref_digests")
    if offered["attribution_level"] == "item":
        if len(bound) != 1 or bound[0] not in trusted["memory_ref_digests"]:
            fail(_BINDING_CODE, "item attribution binds exactly one digest of the receipt")
    elif bound != trusted["memory_ref_digests"]:
        fail(_BINDING_CODE, "set and none attribution bind the receipt's whole digest set")
    draft: dict[str, Any] = {
        "schema_version": OBSERVATION_SCHEMA,
        "scope": trusted_scope,
        "application_receipt_id": application_receipt_id(trusted),
        "memory_ref_digests": bound,
        "retrieval_snapshot_ref": facts["retrieval_snapshot_ref"],
        "policy_snapshot_ref": facts["policy_snapshot_ref"],
        "outcome_ref": outcome["outcome_ref"],
        "utility_label": offered["utility_label"],
        "attribution_level": offered["attribution_level"],
        "evidence_basis": offered["evidence_basis"],
        "confidence": offer["confidence"],
        # Sorted only when sortable: anything else is refused by the observation's own
        # checks below, with their reason code, rather than by a TypeError here.
        "reason_codes": _sorted_texts(offer["reason_codes"]),
        "evidence_refs": _sorted_texts(offer["evidence_refs"]),
        "evaluator_ref": offered["evaluator_ref"],
        "evaluation_version": offered["evaluation_version"],
        "created_at": created_at,
        **dict.fromkeys(BOUNDARY_FIELDS, False),
    }
    try:
        draft["observation_id"] = observation_id(draft)
    except TypeError:  # an unhashable or odd value: the validator names the field
        draft["observation_id"] = ""
    ordered = {
        "schema_version": OBSERVATION_SCHEMA,
        "observation_id": draft.pop("observation_id"),
        **draft,
    }
    return validate_observation(ordered)
