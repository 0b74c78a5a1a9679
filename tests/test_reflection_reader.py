"""The tolerant reader at the model boundary, the strict contract behind it (issue 36).

Presentation is read into the canonical reflection before the Turn is spooled and
validated; substance is refused with the field and the rule, in the hook log and in
``turn-hooks status``, never in a public receipt.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from pathlib import Path

import pytest
from fixtures import f1
from test_host_generic import hook, hook_log_entries
from turn_support import RAW, bound_goal, resolution

from capabilities.reward_memory.contract.experience import parse_reflection
from capabilities.reward_memory.contract.identities import reflection_digest
from capabilities.reward_memory.contract.reader import (
    DEFAULT_SURFACE,
    phrase_ref,
    read_reflection,
)
from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open
from capabilities.reward_memory.turn.situation import SURFACE
from conformance.public_safety import public_safety_violations
from turn_hooks.canonical import s1

F1_DIGEST = "sha256:1f9a79ec96e3f92ee0ba164a0e5bf976a67f2eaa4e82f0481f5d84b87b63f8eb"
CANONICAL = s1(parse_reflection(RAW).normalised)
INGEST = "reward-memory.outcome-ingest"
VALIDATE = [sys.executable, "-m", "hosts.cli", "validate", "command", "--", "true"]


def changed(**changes):
    """F1's reflection with top-level changes (``experience__key`` for the experience;
    ``...`` removes a key)."""
    document = copy.deepcopy(f1.REFLECTION)
    for key, value in changes.items():
        target, name = (
            (document["experience"], key.split("__")[1]) if "__" in key else (document, key)
        )
        if value is ...:
            target.pop(name)
        else:
            target[name] = value
    return document


def canonical_of(text):
    reading = read_reflection(text)
    assert reading.refusal is None, reading.refusal
    return reading.value


def test_the_canonical_reflection_is_byte_compatible_and_keeps_f1_s_digest():
    assert canonical_of(RAW) == CANONICAL
    assert reflection_digest(CANONICAL) == F1_DIGEST
    assert canonical_of(CANONICAL) == CANONICAL, "reading is idempotent"
    assert parse_reflection(CANONICAL).normalised == parse_reflection(RAW).normalised
    assert DEFAULT_SURFACE == SURFACE


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(f1.REFLECTION, indent=2),
        json.dumps(f1.REFLECTION, indent="\t").replace("\n", "\r\n"),
        "```json\n" + json.dumps(f1.REFLECTION, indent=2) + "\n```",
        "```\n" + RAW + "\n```",
        "```json " + RAW + " ```",
        "\ufeff  " + RAW + "\n\n",
        json.dumps(changed(confidence="Medium", outcome_kind="ENGINEERING", status="Eligible")),
        json.dumps(changed(experience__evidence_refs=...)),
        json.dumps(changed(evidence_refs=...)),
        json.dumps(changed(evidence_refs="evidence:ci-run-17", experience__evidence_refs=...)),
        json.dumps(changed(schema_version=..., status=..., surface_id=...)),
        json.dumps(changed(experience__schema_version=...)),
        json.dumps(changed(notes="one extra key", experience__risk="another")),
        json.dumps(changed(confidence=0.5)),
        json.dumps(changed(confidence="50%")),
        json.dumps(changed(evidence_refs=["evidence:ci-run-17", "evidence:ci-run-17"])).replace(
            '"confidence"', '"Confidence"'
        ),
        RAW.replace('"future_behavior"', '"futureBehavior"').replace(
            '"stop_condition"', '"Stop-Condition"'
        ),
    ],
)
def test_presentation_is_read_into_the_canonical_reflection(text):
    assert canonical_of(text) == CANONICAL


def test_single_strings_are_one_item_lists():
    text = json.dumps(
        changed(
            experience__applicability="python repository with a slow full test suite",
            experience__limitations="not useful when the failure is cross-module",
        )
    )
    assert canonical_of(text) == CANONICAL


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [(0, "low"), (0.33, "low"), (0.34, "medium"), (0.66, "medium"), (0.67, "high"), (1, "high")],
)
def test_a_numeric_confidence_is_its_third_of_the_scale(confidence, expected):
    text = canonical_of(json.dumps(changed(confidence=confidence)))
    assert json.loads(text)["confidence"] == expected


def test_a_phrase_ref_becomes_a_stable_opaque_ref():
    phrase = "pytest run:  57 passed in 12.3s"
    text = canonical_of(json.dumps(changed(evidence_refs=[phrase], experience__evidence_refs=...)))
    expected = "phrase:" + hashlib.sha256(b"pytest run: 57 passed in 12.3s").hexdigest()[:20]
    assert phrase_ref(phrase) == expected
    document = json.loads(text)
    assert document["evidence_refs"] == document["experience"]["evidence_refs"] == [expected]
    assert phrase_ref("解析器测试 12 项通过").startswith("phrase:"), "non-ASCII is a phrase too"
    long_ref = "evidence:" + "x" * 200
    assert json.loads(
        canonical_of(json.dumps(changed(evidence_refs=[long_ref], experience__evidence_refs=...)))
    )["evidence_refs"] == [phrase_ref(long_ref)]


def test_over_five_refs_or_applicability_items_keep_the_first_five():
    refs = [f"evidence:run-{n}" for n in range(6)]
    items = [f"case {n}" for n in range(6)]
    document = json.loads(
        canonical_of(
            json.dumps(
                changed(
                    evidence_refs=refs,
                    experience__evidence_refs=refs,
                    experience__applicability=items,
                )
            )
        )
    )
    assert document["evidence_refs"] == refs[:5]
    assert document["experience"]["applicability"] == items[:5]


def test_empty_or_null_is_no_reflection_and_no_evidence_keeps_its_meaning():
    assert read_reflection("").value == read_reflection("{}").value == ""
    assert read_reflection(None).value == read_reflection("```json\nnull\n```").value == ""
    no_evidence = canonical_of('{"status": "No_Evidence"}')
    assert parse_reflection(no_evidence).kind == "no_evidence"
    legacy = {**f1.REFLECTION, "schema_version": "turn_reward_memory_reflection_v0"}
    legacy.pop("experience")
    assert parse_reflection(canonical_of(json.dumps(legacy))).kind == "legacy"


@pytest.mark.parametrize(
    ("document", "code", "detail"),
    [
        (
            changed(evidence_refs=[], experience__evidence_refs=...),
            "reflection_evidence_missing",
            "evidence_refs: must hold 1 to 5 refs",
        ),
        (
            changed(content_summary="token: ghp_abcdefghijklmnopqrstuv"),
            "text_not_public_safe",
            "content_summary: must hold no secret or local path",
        ),
        (
            changed(evidence_refs=["/usr/src/app/log"], experience__evidence_refs=...),
            "text_not_public_safe",
            "evidence_refs[0]: must be repository-relative",
        ),
        (
            changed(reasoning_summary="see ~/notes/run.txt"),
            "text_not_public_safe",
            "reasoning_summary: must hold no secret or local path",
        ),
        (
            changed(reasoning_summary="see $HOME/notes/run.txt"),
            "text_not_public_safe",
            "reasoning_summary: must hold no secret or local path",
        ),
        (
            changed(
                experience__future_behavior={
                    **f1.REFLECTION["experience"]["future_behavior"],
                    "action": " ",
                }
            ),
            "reflection_field_missing",
            "experience.future_behavior.action: must be text of at most 500 characters",
        ),
        (
            changed(experience__observed_outcome=["a", "b"]),
            "reflection_invalid",
            "experience.observed_outcome: must be text of at most 500 characters",
        ),
        (changed(schema_version="v2"), "reflection_invalid", "schema_version: must be"),
        (changed(status="draft"), "reflection_invalid", "status: must be eligible or no_evidence"),
        (changed(surface_id=["x"]), "reflection_invalid", "surface_id: must be a surface id"),
        (
            changed(experience__schema_version="v9"),
            "reflection_invalid",
            "experience.schema_version: must be procedural_experience_contract_v0",
        ),
        (changed(outcome_kind="vibes"), "reflection_invalid", "outcome_kind: must be one of"),
        (changed(outcome_kind=...), "reflection_field_missing", "outcome_kind: is required"),
        (changed(confidence=7), "reflection_invalid", "confidence: must be low, medium or high"),
        (changed(confidence=True), "reflection_invalid", "confidence: must be low"),
        (changed(confidence="sure"), "reflection_invalid", "confidence: must be low"),
        (changed(confidence=...), "reflection_field_missing", "confidence: is required"),
        (changed(experience=...), "reflection_field_missing", "experience: is required"),
        (changed(experience="text"), "reflection_invalid", "experience: must be a JSON object"),
        (
            changed(experience__limitations=[f"limit {n}" for n in range(6)]),
            "reflection_invalid",
            "experience.limitations: must hold at most 5 items",
        ),
        (
            changed(experience__limitations=[]),
            "reflection_field_missing",
            "experience.limitations: must hold 1 to 5 items",
        ),
        (
            changed(experience__evidence_refs=["evidence:other"]),
            "reflection_invalid",
            "experience.evidence_refs: must equal evidence_refs",
        ),
        (
            changed(evidence_refs=[{"ref": "x"}]),
            "reflection_invalid",
            "evidence_refs[0]: must be a short ref",
        ),
        (changed(content_summary=None), "reflection_field_missing", "content_summary: is required"),
        ([1, 2], "reflection_invalid", "reflection: must be a JSON object"),
    ],
)
def test_substance_is_refused_naming_the_field_and_the_rule(document, code, detail):
    reading = read_reflection(json.dumps(document))
    assert reading.refusal is not None
    assert reading.refusal.reason_code == code
    assert reading.refusal.detail().startswith(detail), reading.refusal.detail()
    assert reading.value == json.dumps(document), "a refused value is kept as given"


@pytest.mark.parametrize(
    ("text", "code", "detail"),
    [
        ("I ran the tests; they pass.", "reflection_invalid", "reflection: must be one JSON"),
        ("Reflection: " + RAW, "reflection_invalid", "reflection: must be one JSON"),
        (RAW + RAW, "reflection_invalid", "reflection: must be one JSON"),
        ('{"status": "eligible", "Status ": "eligible"}', "reflection_invalid", "status: is given"),
        (" " + "x" * 16400, "reflection_too_large", "reflection: must be at most 16384 bytes"),
        ("\ud800" + RAW, "reflection_not_utf8", "reflection: must be valid UTF-8"),
        ("[" * 5000 + "]" * 5000, "reflection_invalid", "reflection: must be one JSON"),
    ],
)
def test_text_that_is_not_one_reflection_is_refused(text, code, detail):
    refusal = read_reflection(text).refusal
    assert refusal is not None and refusal.reason_code == code
    assert refusal.detail().startswith(detail)


def test_a_reflection_over_the_field_bound_once_canonical_is_refused():
    long = {key: "word " * 99 for key in ("content_summary", "reasoning_summary")}
    behaviour = dict.fromkeys(("trigger", "action", "validation", "stop_condition"), "w " * 240)
    refusal = read_reflection(
        json.dumps(changed(**long, experience__future_behavior=behaviour))
    ).refusal
    assert refusal is not None
    assert refusal.detail() == "reflection: must be at most 2400 characters as compact JSON"


def test_the_plugin_refuses_what_the_reader_refuses_even_from_a_host_that_did_not_read(
    tmp_path,
):
    # A home path the strict LoopX rules let through: the reader's refusal is the receipt's.
    raw = json.dumps(changed(reasoning_summary="kept in ~/notes"))
    receipt = run_turn_ingest_fail_open(
        resolution(bound_goal(tmp_path)),
        turn_key="turn-0001",
        host_result={"reward_memory_reflection_json": raw},
        evidence=None,
        provider_for=lambda binding: None,
    )
    assert (receipt["status"], receipt["reason_code"]) == (
        "reflection_rejected",
        "text_not_public_safe",
    )


def stop(registry, reply, validator=VALIDATE):
    repo = registry.parent / "repo"
    (repo / ".git").mkdir(exist_ok=True)
    return hook(
        {"turn_id": "t1", "last_assistant_message": reply, "cwd": str(repo)},
        registry,
        None,
        "post-settlement",
        "--validation-command-json",
        json.dumps(validator),
    )


def private(repo, *parts):
    return [
        json.loads(p.read_text())
        for p in sorted((repo / ".local/turn-hooks").joinpath(*parts).rglob("*.json"))
    ]


def test_a_fenced_pretty_reflection_is_spooled_validated_and_learned_canonical(tmp_path):
    registry = bound_goal(tmp_path)
    repo = registry.parent / "repo"
    fenced = "```json\r\n" + json.dumps(changed(confidence="Medium"), indent=2) + "\r\n```"
    receipt = stop(
        registry, f"Done.\n<reward_memory_reflection_json>{fenced}</reward_memory_reflection_json>"
    )
    assert receipt["results"][INGEST]["status"] == "activated"
    [spool] = private(repo, "settlements")
    assert spool["host_result"]["reward_memory_reflection_json"] == CANONICAL
    assert "result_refusals" not in spool
    # The validator attested the canonical reflection, which is what the journal keeps:
    # the private validation record of the run names the digest of the learned reflection.
    [journal] = private(repo, "reward-memory-outcomes")
    [record] = private(repo, "validations")
    assert record["reflection_digest"] == reflection_digest(s1(journal["reflection"])) == F1_DIGEST
    assert journal["reflection_validation"]["reflection_digest"] == F1_DIGEST
    assert record["evidence_ref"].startswith("validation:command:")


def test_a_refusal_names_field_and_rule_in_the_hook_log_and_status_not_in_receipts(tmp_path):
    from hosts.setup.status import hook_log, settlements

    registry = bound_goal(tmp_path)
    reply = (
        "<reward_memory_reflection_json>"
        + json.dumps(
            changed(
                experience__future_behavior={
                    **f1.REFLECTION["experience"]["future_behavior"],
                    "action": "",
                }
            )
        )
        + "</reward_memory_reflection_json>"
    )
    receipt = stop(registry, reply)
    ingest = receipt["results"][INGEST]
    assert (ingest["status"], ingest["reason_code"]) == (
        "reflection_rejected",
        "reflection_field_missing",
    )
    detail = "experience.future_behavior.action: must be text of at most 500 characters"
    assert detail not in json.dumps(receipt), "public receipts keep reason codes only"
    assert not public_safety_violations(receipt, raw_texts=(f1.REFLECTION["content_summary"],))
    logged = [e for e in hook_log_entries() if e["event"] == "read_result"]
    assert logged == [
        {
            "observed_at": logged[0]["observed_at"],
            "host": logged[0]["host"],
            "event": "read_result",
            "source": "reader",
            "reason_code": "reflection_field_missing",
            "detail": detail,
        }
    ]
    assert detail in {entry.get("detail") for entry in hook_log(20)["entries"]}
    view = settlements(str(registry), f1.GOAL, f1.AGENT)["last_turn_settlement"]
    assert view["result_refusals"] == [
        {"reason_code": "reflection_field_missing", "detail": detail}
    ]
    assert f1.REFLECTION["content_summary"] not in json.dumps(hook_log(20))


def test_the_codex_app_stages_the_canonical_reflection(capsys, tmp_path):
    from test_codex_app import app, candidates

    registry = bound_goal(tmp_path)
    fenced = "```json\n" + json.dumps(changed(experience__evidence_refs=...), indent=2) + "\n```"
    code, refreshed = app(capsys, registry, "refresh-state", reflection=fenced)
    assert (code, refreshed["stage"]["reflection_digest"]) == (0, F1_DIGEST)
    assert refreshed["stage"]["status"] == "validation_bound"
    [sidecar] = candidates(registry)
    assert json.loads(Path(sidecar).read_text())["reflection_digest"] == F1_DIGEST
    code, refused = app(capsys, registry, "refresh-state", reflection="no JSON here")
    assert code == 2 and refused["reason_code"] == "reflection_invalid"


def test_the_instructions_state_every_rule_the_reader_enforces_and_are_shorter():
    from capabilities.reward_memory.contract.experience import CONFIDENCES, SOURCE_KINDS
    from capabilities.reward_memory.contract.reader import MAX_CANONICAL_CHARS, MAX_REFS
    from capabilities.reward_memory.turn.pre_turn import REFLECTION_INSTRUCTION as text

    assert len(text) < 1149, "shorter than the instructions before issue 36 (1,149 characters)"
    for word in (*SOURCE_KINDS, *CONFIDENCES):
        assert word in text
    for rule in (
        f"1 to {MAX_REFS} refs",
        "1 to 5 items each",
        "at most 500 characters",
        f"at most {MAX_CANONICAL_CHARS}",
        "one JSON object and nothing else",
        "no secrets, no absolute or home paths",
    ):
        assert rule in text, rule
    for key in ("trigger", "action", "validation", "stop_condition", "limitations"):
        assert key in text
    # What the reader supplies itself, the model is not asked for.
    assert "schema_version" not in text and "surface_id" not in text
    assert "without whitespace" not in text and "opaque" not in text


def test_a_tool_call_without_the_supplied_keys_is_staged_read_and_learned(tmp_path):
    from test_mcp_server import call, serve_process
    from turn_support import hook_argv, journals_after_settlement, run_process

    registry = bound_goal(tmp_path)
    arguments = changed(
        schema_version=...,
        status=...,
        surface_id=...,
        experience__schema_version=...,
        experience__evidence_refs=...,
    )
    meta = {"x-codex-turn-metadata": {"session_id": "s1", "turn_id": "t1"}}
    [reply] = serve_process(registry, call(arguments, meta))
    assert reply["result"]["isError"] is False, "the tool asks for what the model must give"
    event = {"turn_id": "t1", "session_id": "s1", "last_assistant_message": "Fixed."}
    assert run_process(hook_argv(registry), json.dumps(event)).returncode == 0
    [journal] = journals_after_settlement(registry.parent / "repo")
    assert journal["public_receipt"]["status"] == "activated"
    assert journal["reflection_validation"]["reflection_digest"] == F1_DIGEST


def test_the_hook_log_keeps_only_a_well_formed_detail(tmp_path):
    from hosts.settlement import hook_log

    hook_log.record_refusals(
        "generic",
        [
            {"reason_code": "reflection_invalid", "detail": "status: must be eligible"},
            {"reason_code": "reflection_invalid", "detail": "not\none line"},
            {"reason_code": "result_reader_failed"},
        ],
    )
    entries = hook_log_entries()
    assert [entry.get("detail") for entry in entries] == ["status: must be eligible", None, None]
    assert all(hook_log._well_formed(entry) for entry in entries)
    assert not hook_log._well_formed({**entries[0], "detail": "caf\u00e9"})
