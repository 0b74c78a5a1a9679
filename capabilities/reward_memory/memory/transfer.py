"""``memory export`` and ``memory import``: records as JSON Lines, between providers.

An export line is the canonical record itself (S1, the form every provider stores),
so a file exported from the embedded store imports into OpenViking and back. Import
is a write of already-activated records, so it passes the guards ingest applies to
what it activates: the record contract, the standing policy of its corpus, the
experience-quality check and the activation and candidate identities, which must
recompute from the record's own fields (so an edited summary is refused). The
record is written at the address its corpus and candidate determine on the
destination binding, through :func:`sync`, which never overwrites a different
record and counts a write only after exact readback. The one exception is the undo
of a forget: a record the store holds as its owner forgot it, imported active from
an export taken before, is restored (:func:`forgotten.restore`), and a record
imported as forgotten keeps its lesson forgotten in the destination store.

Every line is checked before the first write: one bad line writes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from capabilities.providers.base import Provider
from capabilities.providers.sync import stored_form, sync
from capabilities.reward_memory.binding.registry import Resolution
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.candidate import candidate_identity
from capabilities.reward_memory.contract.experience import experience_quality, normalise_experience
from capabilities.reward_memory.contract.identities import (
    activation_ref,
    candidate_ref,
    experience_digest,
    provider_ref,
    record_body,
    target_uri,
)
from capabilities.reward_memory.memory import forgotten
from capabilities.reward_memory.memory.forgotten import is_owner_forgotten
from capabilities.reward_memory.memory.ingest import standing_policy_reasons
from capabilities.reward_memory.memory.inventory import (
    RECORD_SCHEMA,
    ProviderFor,
    StoredRecord,
    bound_config,
)
from turn_hooks import InvalidInputError, ProviderError, loads_bounded

IMPORT_SCHEMA = "reward_memory_import_receipt_v0"
EXPORT_SCHEMA = "reward_memory_export_receipt_v0"
MAX_LINES = 10_000
_CANDIDATE = re.compile(r"candidate:[0-9a-f]{20}")
_STATES = ("active", "retired")

Progress = Callable[[int, int], None]
"""``(done, total)`` after each record, for a progress line on a terminal."""


def export_lines(records: list[StoredRecord]) -> list[str]:
    """One canonical record per line, in the order given."""
    return [record_body(stored.record) for stored in records]


def export_receipt(records: list[StoredRecord]) -> dict[str, Any]:
    """The public receipt of an export: counts only, never a record's text."""
    states: dict[str, int] = {}
    for stored in records:
        states[stored.state] = states.get(stored.state, 0) + 1
    return {
        "ok": True,
        "schema_version": EXPORT_SCHEMA,
        "record_count": len(records),
        "state_counts": dict(sorted(states.items())),
        "corpus_ids": sorted({stored.corpus_id for stored in records}),
        "format": "jsonl",
        v.EXTERNAL_WRITES: False,
        v.RAW_CONTENT: False,
    }


def _recomputes(record: dict[str, Any]) -> bool:
    """Whether the record's candidate ref recomputes from what the record holds.

    The candidate ref is ingest's digest over the class, summary, source, scope,
    experience, guard context and requested action scopes, so it covers every field
    recall shows the model. The record does not keep the last two; but ingest only
    activates a candidate whose guard passed, which fixes them up to one boolean:
    the source was current and unconflicted, and an advisory class requested no
    action scope. A hard-policy record requested scopes the record does not keep,
    so it cannot recompute and is refused: nothing in it vouches for its text.
    """
    verified = (True,) if record.get("target_class") == "procedural_experience" else (True, False)
    for artifact_verified in verified:
        guard = {
            "source_freshness": "current",
            "conflict_state": "clear",
            "current_artifact_verified": artifact_verified,
        }
        identity = candidate_identity(
            {**record, "guard_context": guard, "requested_action_scopes": []}
        )
        if candidate_ref(identity) == record["candidate_ref"]:
            return True
    return False


def _guard(record: dict[str, Any], entry: dict[str, Any], field: str) -> None:
    """The ingest guards for one record destined for corpus ``entry`` (typed errors)."""
    corpus, policy = entry["corpus"], entry["standing_policy"]
    candidate = record.get("candidate_ref")
    if not isinstance(candidate, str) or not _CANDIDATE.fullmatch(candidate):
        v.fail(f"{field}.candidate_ref", "is not a candidate ref", "import_record_invalid")
    activated = v.timestamp(record.get("activated_at"), f"{field}.activated_at")
    if record.get("activation_ref") != activation_ref(corpus["corpus_id"], candidate, activated):
        v.fail(f"{field}.activation_ref", "does not recompute", "import_record_tampered")
    v.compact(record.get("content_summary"), 500, f"{field}.content_summary")
    lifecycle = v.mapping(record.get("lifecycle"), f"{field}.lifecycle")
    v.enum(lifecycle.get("state"), _STATES, f"{field}.lifecycle.state")
    scope = v.mapping(record.get("scope"), f"{field}.scope")
    for surface in v.listing(scope.get("surface_ids"), f"{field}.scope.surface_ids", 1, 1):
        v.token(surface, f"{field}.scope.surface_ids")  # a name, before the guard sets it
    source = v.mapping(record.get("source"), f"{field}.source")
    for key in ("source_kind", "actor_role"):
        v.token(source.get(key), f"{field}.source.{key}")
    if v.mapping(record.get("privacy"), f"{field}.privacy").get(v.RAW_CONTENT) is not False:
        v.fail(f"{field}.privacy", "must not capture raw content", "import_record_invalid")
    experience = record.get("experience")
    normal = None if experience is None else normalise_experience(experience, f"{field}.experience")
    quality = record.get("experience_quality")
    kept = quality.get("experience_digest") if isinstance(quality, dict) else None
    if experience is not None and kept != experience_digest(experience):
        # The digest ingest kept of the attested experience: an edited lesson (its
        # trigger, action or evidence) is not what the validator attested.
        v.fail(f"{field}.experience", "does not match its digest", "import_record_tampered")
    if not experience_quality(str(record.get("target_class")), normal)["passed"]:
        v.fail(f"{field}.experience", "fails the quality check", "import_quality_failed")
    # An imported record carries no action authority: the policy sees none requested.
    reasons = standing_policy_reasons({**record, "requested_action_scopes": []}, corpus, policy)
    if reasons:
        v.fail(field, f"is refused by the standing policy ({reasons[0]})", "import_guard_blocked")
    if not _recomputes(record):
        # An edited summary, source or scope that the policy
        # still admits: not the candidate ingest activated.
        v.fail(f"{field}.candidate_ref", "does not recompute", "import_record_tampered")


def parse_import(resolution: Resolution, data: bytes) -> list[tuple[dict[str, Any], str]]:
    """Each line's record and its destination corpus id; typed errors name the line."""
    config = bound_config(resolution)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data.count(b"\n", 0, exc.start) + 1
        # The reason every JSON input gives (README); the line, so it can be found.
        v.fail("input", f"is not UTF-8 (line {number})", "input_not_utf8")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > MAX_LINES:
        v.fail("input", f"holds more than {MAX_LINES} records", "import_too_large")
    parsed = []
    for number, line in lines:
        field = f"input.line_{number}"
        try:
            # Bounded like every other input: depth, number size, NaN (typed errors).
            record = loads_bounded(line)
        except InvalidInputError as exc:
            if exc.reason_code != "input_not_json":
                raise
            v.fail(field, "is not JSON", "import_line_invalid")
        if not isinstance(record, dict) or record.get("schema_version") != RECORD_SCHEMA:
            v.fail(field, f"is not a {RECORD_SCHEMA}", "import_line_invalid")
        corpus_id = record.get("corpus_id")
        entry = config["corpora"].get(corpus_id) if isinstance(corpus_id, str) else None
        if entry is None:
            v.fail(f"{field}.corpus_id", "is not a corpus of this binding", "corpus_not_declared")
        _guard(record, entry, field)
        parsed.append((record, str(corpus_id)))
    return parsed


def _planned(
    provider: Provider, record: dict[str, Any], target: str, binding: dict[str, Any], status: str
) -> str:
    """What an import would do with one record: a dry run reads, so that a record
    already stored counts as ``unchanged`` (and a different one as ``conflict``)."""
    if status != "preflight_ready":  # the dry run's sync could not reach the target
        return "unavailable"
    try:
        current = provider.read_exact(target, **forgotten.call_options(binding))
    except ProviderError:
        return "unavailable"
    if current is None:
        return "planned"
    if stored_form(current) == stored_form(record_body(record)):
        return "unchanged"
    return "would_restore" if _forgotten_form_of(current, record) is not None else "conflict"


def _forgotten_form_of(current: str, record: dict[str, Any]) -> dict[str, Any] | None:
    """The stored record, when it is ``record`` as its owner forgot it (else ``None``).

    The one overwrite an import makes: an export holds the record active, the store
    holds the same record retired by ``memory forget``, so importing the export is the
    undo of that forget (:func:`forgotten.restore`). Any other difference (a retirement
    by review, another record) stays a revision conflict, and an import never retires
    what the store holds active: forgetting is ``memory forget``'s.
    """
    try:
        stored = json.loads(current)
    except ValueError:
        return None
    if (
        isinstance(stored, dict)
        and is_owner_forgotten(stored)
        and record_body(forgotten.restored_form(stored)) == record_body(record)
    ):
        return stored
    return None


def _carry_mark(
    provider: Provider, binding: dict[str, Any], record: dict[str, Any], memory_ref: str
) -> bool:
    """A record its owner forgot, imported: its lesson stays forgotten here too."""
    if not is_owner_forgotten(record):
        return True
    return forgotten.mark(provider, binding, record, memory_ref) in {"marked", "not_applicable"}


def _restore(
    provider: Provider,
    binding: dict[str, Any],
    record: dict[str, Any],
    target: str,
    reasons: set[str],
) -> str:
    """A conflict at ``target``: the undo of a forget, or a conflict left as it is."""
    try:
        current = provider.read_exact(target, **forgotten.call_options(binding))
    except ProviderError:
        reasons.add("provider_sync_reconciliation_unavailable")
        return "unavailable"
    stored = None if current is None else _forgotten_form_of(current, record)
    if stored is None:
        reasons.add("provider_sync_revision_conflict")
        return "conflict"
    restored = forgotten.restore(provider, binding, target, stored)
    if restored["status"] != "restored":
        reasons.add(str(restored["reason_code"]))
        return "unavailable"
    return "restored"


def import_records(
    resolution: Resolution,
    parsed: list[tuple[dict[str, Any], str]],
    *,
    provider_for: ProviderFor,
    execute: bool,
    observed_at: str,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write each checked record (``execute``) or plan it; the receipt counts each outcome."""
    config = bound_config(resolution)
    counts = dict.fromkeys(
        (
            "imported",
            "restored",
            "unchanged",
            "planned",
            "would_restore",
            "conflict",
            "unavailable",
        ),
        0,
    )
    refs: list[str] = []
    reasons: set[str] = set()
    for done, (record, corpus_id) in enumerate(parsed, 1):
        entry = config["corpora"][corpus_id]
        binding = entry["provider_binding"]
        target = target_uri(
            binding["scope_ref"], entry["standing_policy"]["policy_id"], record["candidate_ref"]
        )
        provider = provider_for(binding)
        result = sync(
            provider,
            [(record_body(record), target)],
            namespace=binding["namespace"],
            execute=execute,
            actor_peer_id=binding.get("actor_peer_id"),
            timeout=float(binding["timeout_seconds"]),
            observed_at=observed_at,
        )
        refs.append(provider_ref(binding["provider_id"], binding["namespace"], target))
        if not execute:
            outcome = _planned(provider, record, target, binding, result.status)
            if outcome == "unavailable":
                reasons.add(result.reason_code or "provider_sync_unverified")
            elif outcome == "conflict":  # what the real import would say of it
                reasons.add("provider_sync_revision_conflict")
        elif result.status == "completed" and target in result.result_refs:
            outcome = "imported" if result.write_count else "unchanged"
            if outcome == "imported" and not _carry_mark(provider, binding, record, refs[-1]):
                outcome = "unavailable"
                reasons.add("forgotten_mark_unavailable")
        elif result.reason_code == "provider_sync_revision_conflict":
            outcome = _restore(provider, binding, record, target, reasons)
        else:
            outcome = "unavailable" if result.status == "unavailable" else "conflict"
            reasons.add(result.reason_code or "provider_sync_unverified")
        counts[outcome] += 1
        if progress is not None:
            progress(done, len(parsed))
    failed = counts["conflict"] + counts["unavailable"]
    # The status follows the counts: nothing to write is "unchanged", not "imported".
    if failed:
        status = "incomplete"
    elif not execute:
        status = "planned" if counts["planned"] + counts["would_restore"] else "unchanged"
    elif counts["imported"] or counts["restored"]:
        status = "imported" if counts["imported"] else "restored"
    else:
        status = "unchanged"
    return {
        "ok": not failed,
        "schema_version": IMPORT_SCHEMA,
        "status": status,
        "dry_run": not execute,
        "record_count": len(parsed),
        **{f"{name}_count": count for name, count in counts.items()},
        "memory_refs": refs,
        "reason_codes": sorted(reasons),
        v.EXTERNAL_WRITES: counts["imported"] + counts["restored"] > 0,
        v.RAW_CONTENT: False,
    }
