# ruff: noqa: RUF001 - models write full-width punctuation and curly quotes; the corpus keeps them
"""The learning-yield corpus (issue 36): final replies as capable models write them.

Each case is one final message of a Turn that ran the project's tests, answering the
injected reflection request. ``expect`` is ``learned`` for a presentation variant
(the lesson is sound and attested; only how it is written varies) and ``refused`` for
a must-refuse case (substance: no evidence, a secret, a local path, two blocks,
prose, a failing validator...). ``validator`` is ``pass`` unless the case is about a
failing one. ``bench_learning_yield.py`` runs every case through the real Stop hook
process; ``tests/test_learning_yield.py`` pins the expectations.

The replies are written out, not generated from one template: six lessons, in the
shapes models actually produce (compact or pretty JSON, fences, sign-offs, Markdown
around the block, phrases for refs, a number for confidence...).
"""

from __future__ import annotations

import copy
import json
from typing import Any

TAG = "reward_memory_reflection_json"


def block(inner: str) -> str:
    return f"<{TAG}>{inner}</{TAG}>"


FOCUSED_TESTS: dict[str, Any] = {
    "schema_version": "turn_reward_memory_reflection_v1",
    "status": "eligible",
    "surface_id": "agent_workflow.turn_admission",
    "outcome_kind": "engineering",
    "content_summary": "Run the touched module's tests before the full suite.",
    "reasoning_summary": "The focused run failed in 4 s where the full suite took 3 minutes.",
    "confidence": "medium",
    "evidence_refs": ["tests/test_retry.py::test_backoff_caps_delay"],
    "experience": {
        "schema_version": "procedural_experience_contract_v0",
        "applicability": ["python repository with a slow full test suite"],
        "observed_outcome": "The focused run showed the failing assertion in seconds.",
        "attribution": "Running only tests/test_retry.py isolated the off-by-one in the cap.",
        "future_behavior": {
            "trigger": "a change touches one module",
            "action": "run that module's tests first, then the full suite",
            "validation": "the focused tests pass before the full suite runs",
            "stop_condition": "the change spans several modules",
        },
        "limitations": ["not useful when the failure comes from module interaction"],
        "evidence_refs": ["tests/test_retry.py::test_backoff_caps_delay"],
    },
}

LOCKFILE: dict[str, Any] = {
    "schema_version": "turn_reward_memory_reflection_v1",
    "status": "eligible",
    "surface_id": "agent_workflow.turn_admission",
    "outcome_kind": "engineering",
    "content_summary": "After editing package.json, run npm ci before the tests.",
    "reasoning_summary": "npm test used a stale node_modules; npm ci fixed the import error.",
    "confidence": "high",
    "evidence_refs": ["npm-test-run-2", "package-lock.json"],
    "experience": {
        "schema_version": "procedural_experience_contract_v0",
        "applicability": ["node project with a lockfile", "dependency added or bumped"],
        "observed_outcome": "The import error disappeared once dependencies were reinstalled.",
        "attribution": "node_modules did not hold the new dependency version.",
        "future_behavior": {
            "trigger": "package.json or package-lock.json changed",
            "action": "run npm ci before npm test",
            "validation": "npm test passes on a clean install",
            "stop_condition": "no dependency file changed",
        },
        "limitations": ["costs a full reinstall", "not needed for source-only changes"],
        "evidence_refs": ["npm-test-run-2", "package-lock.json"],
    },
}

RACE: dict[str, Any] = {
    "schema_version": "turn_reward_memory_reflection_v1",
    "status": "eligible",
    "surface_id": "agent_workflow.turn_admission",
    "outcome_kind": "engineering",
    "content_summary": "Run go test -race on packages that share state across goroutines.",
    "reasoning_summary": "The plain run passed; -race reported the data race on the cache map.",
    "confidence": "high",
    "evidence_refs": ["go-test-race-cache"],
    "experience": {
        "schema_version": "procedural_experience_contract_v0",
        "applicability": ["go package with goroutines sharing a map"],
        "observed_outcome": "The race detector found a write without the mutex.",
        "attribution": "The cache's Set skipped the lock on the fast path.",
        "future_behavior": {
            "trigger": "a change touches code run by several goroutines",
            "action": "run go test -race ./... for the package",
            "validation": "the race detector reports nothing",
            "stop_condition": "the package starts no goroutines",
        },
        "limitations": ["-race slows the tests several times over"],
        "evidence_refs": ["go-test-race-cache"],
    },
}

CARGO: dict[str, Any] = {
    "schema_version": "turn_reward_memory_reflection_v1",
    "status": "eligible",
    "surface_id": "agent_workflow.turn_admission",
    "outcome_kind": "engineering",
    "content_summary": "Use cargo check while iterating on type errors; build once at the end.",
    "reasoning_summary": "cargo check took 6 s per round against 48 s for cargo build.",
    "confidence": "medium",
    "evidence_refs": ["cargo-test-17"],
    "experience": {
        "schema_version": "procedural_experience_contract_v0",
        "applicability": ["rust crate with long release builds"],
        "observed_outcome": "Five rounds of type fixes took half a minute instead of four.",
        "attribution": "cargo check skips code generation.",
        "future_behavior": {
            "trigger": "fixing a series of compile errors",
            "action": "run cargo check after each edit, cargo test at the end",
            "validation": "cargo test passes after the last check",
            "stop_condition": "the error is at link time",
        },
        "limitations": ["does not catch linker errors"],
        "evidence_refs": ["cargo-test-17"],
    },
}

MIGRATION: dict[str, Any] = {
    "schema_version": "turn_reward_memory_reflection_v1",
    "status": "eligible",
    "surface_id": "agent_workflow.turn_admission",
    "outcome_kind": "engineering",
    "content_summary": "Test a new migration's downgrade as well as its upgrade.",
    "reasoning_summary": "The upgrade passed; the downgrade dropped a column still in use.",
    "confidence": "medium",
    "evidence_refs": ["tests/test_migrations.py::test_roundtrip"],
    "experience": {
        "schema_version": "procedural_experience_contract_v0",
        "applicability": ["project with alembic migrations"],
        "observed_outcome": "The round-trip test caught the broken downgrade.",
        "attribution": "Only upgrade paths were exercised before.",
        "future_behavior": {
            "trigger": "a migration is added",
            "action": "run the upgrade-downgrade-upgrade round trip test",
            "validation": "the round trip leaves the schema unchanged",
            "stop_condition": "the migration is declared irreversible",
        },
        "limitations": ["needs a disposable database"],
        "evidence_refs": ["tests/test_migrations.py::test_roundtrip"],
    },
}

CHINESE: dict[str, Any] = {
    "schema_version": "turn_reward_memory_reflection_v1",
    "status": "eligible",
    "surface_id": "agent_workflow.turn_admission",
    "outcome_kind": "engineering",
    "content_summary": "修改解析器后先运行 tests/test_parser.py，再运行完整测试。",
    "reasoning_summary": "聚焦测试在 5 秒内暴露了边界错误，完整测试需要两分钟。",
    "confidence": "medium",
    "evidence_refs": ["tests/test_parser.py"],
    "experience": {
        "schema_version": "procedural_experience_contract_v0",
        "applicability": ["带有独立解析器模块的 Python 项目"],
        "observed_outcome": "聚焦测试很快发现了空输入的边界错误。",
        "attribution": "只运行解析器测试缩短了反馈时间。",
        "future_behavior": {
            "trigger": "修改解析器模块",
            "action": "先运行 tests/test_parser.py",
            "validation": "解析器测试通过后再运行完整测试",
            "stop_condition": "改动涉及多个模块",
        },
        "limitations": ["跨模块的错误仍需完整测试"],
        "evidence_refs": ["tests/test_parser.py"],
    },
}


def variant(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``base`` with top-level changes; ``experience__key`` changes the experience,
    and a value of ``...`` removes the key."""
    document = copy.deepcopy(base)
    for key, value in changes.items():
        target, name = (
            (document["experience"], key.split("__", 1)[1]) if "__" in key else (document, key)
        )
        if value is ...:
            target.pop(name, None)
        else:
            target[name] = value
    return document


def compact(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def pretty(document: dict[str, Any], indent: int | str = 2) -> str:
    return json.dumps(document, ensure_ascii=False, indent=indent)


DONE = "Done. The retry cap is fixed and the suite passes.\n\n"

LEARNED: list[tuple[str, str]] = [
    ("compact JSON", DONE + block(compact(FOCUSED_TESTS))),
    ("pretty JSON", DONE + block("\n" + pretty(FOCUSED_TESTS) + "\n")),
    (
        "pretty JSON, 4 spaces, keys in another order",
        "I added `npm ci` to the workflow and re-ran the tests.\n\n"
        + block(
            "\n"
            + pretty(
                {
                    key: LOCKFILE[key]
                    for key in reversed(list(LOCKFILE))  # experience first, schema last
                },
                4,
            )
            + "\n"
        ),
    ),
    (
        "CRLF line endings",
        (DONE + block("\n" + pretty(RACE) + "\n") + "\n").replace("\n", "\r\n"),
    ),
    ("tab indentation", "Fixed.\n" + block("\n" + pretty(CARGO, "\t") + "\n")),
    (
        "sign-off after the block",
        DONE
        + block(compact(MIGRATION))
        + "\n\nLet me know if you want the downgrade test split out.",
    ),
    (
        "block wrapped in a fence",
        DONE + "```xml\n" + block("\n" + pretty(FOCUSED_TESTS) + "\n") + "\n```",
    ),
    (
        "```json fence inside the block",
        DONE + block("\n```json\n" + pretty(FOCUSED_TESTS) + "\n```\n"),
    ),
    ("plain fence inside the block", DONE + block("```\n" + pretty(RACE) + "\n```")),
    (
        "fence inside the block on one line",
        DONE + block("```json " + compact(CARGO) + " ```"),
    ),
    ("Chinese summary", "已修复解析器的边界错误，测试全部通过。\n\n" + block(compact(CHINESE))),
    (
        "repository-relative test path",
        DONE + block(pretty(variant(MIGRATION))),
    ),
    (
        "phrase refs",
        DONE
        + block(
            pretty(
                variant(
                    FOCUSED_TESTS,
                    evidence_refs=["pytest run: 57 passed in 12.3s", "focused run of test_retry"],
                    experience__evidence_refs=[
                        "pytest run: 57 passed in 12.3s",
                        "focused run of test_retry",
                    ],
                )
            )
        ),
    ),
    ('"Medium" for medium', DONE + block(pretty(variant(CARGO, confidence="Medium")))),
    (
        '"HIGH" and "Engineering"',
        DONE + block(compact(variant(RACE, confidence="HIGH", outcome_kind="Engineering"))),
    ),
    (
        "experience refs left out as implied",
        DONE + block(pretty(variant(LOCKFILE, experience__evidence_refs=...))),
    ),
    (
        "single string applicability",
        DONE
        + block(pretty(variant(CARGO, experience__applicability="rust crate with slow builds"))),
    ),
    (
        "single string limitations",
        DONE + block(pretty(variant(RACE, experience__limitations="-race slows the tests"))),
    ),
    (
        "single string evidence refs",
        DONE
        + block(
            pretty(
                variant(
                    MIGRATION,
                    evidence_refs="tests/test_migrations.py::test_roundtrip",
                    experience__evidence_refs="tests/test_migrations.py::test_roundtrip",
                )
            )
        ),
    ),
    ("schema_version left out", DONE + block(pretty(variant(FOCUSED_TESTS, schema_version=...)))),
    ("status left out", DONE + block(pretty(variant(LOCKFILE, status=...)))),
    ("surface_id left out", DONE + block(pretty(variant(RACE, surface_id=...)))),
    (
        "every constant left out",
        DONE
        + block(
            pretty(
                variant(
                    CARGO,
                    schema_version=...,
                    status=...,
                    surface_id=...,
                    experience__schema_version=...,
                    experience__evidence_refs=...,
                )
            )
        ),
    ),
    (
        "one extra key",
        DONE + block(pretty(variant(MIGRATION, notes="Split the fixture next time."))),
    ),
    (
        "an extra key in the experience",
        DONE + block(pretty(variant(FOCUSED_TESTS, experience__risk="low"))),
    ),
    ("confidence as a number", DONE + block(pretty(variant(LOCKFILE, confidence=0.8)))),
    ("confidence as a percentage", DONE + block(pretty(variant(RACE, confidence="70%")))),
    ("confidence 1", DONE + block(compact(variant(CARGO, confidence=1)))),
    (
        "six evidence refs",
        DONE
        + block(
            pretty(
                variant(
                    FOCUSED_TESTS,
                    evidence_refs=(
                        refs := [
                            "tests/test_retry.py::test_backoff_caps_delay",
                            "tests/test_retry.py::test_backoff_grows",
                            "tests/test_retry.py::test_jitter_bounds",
                            "tests/test_client.py::test_retries_on_503",
                            "ci-run-481",
                            "pytest-full-suite",
                        ]
                    ),
                    experience__evidence_refs=refs,
                )
            )
        ),
    ),
    (
        "a ref written twice",
        DONE
        + block(
            compact(
                variant(
                    LOCKFILE,
                    evidence_refs=["npm-test-run-2", "npm-test-run-2", "package-lock.json"],
                    experience__evidence_refs=...,
                )
            )
        ),
    ),
    (
        "an enum with a trailing space",
        DONE + block(compact(variant(MIGRATION, outcome_kind="engineering "))),
    ),
    (
        "an over-long attribution",
        DONE + block(pretty(variant(FOCUSED_TESTS, experience__attribution="The cap " * 90))),
    ),
    (
        "Markdown answer with headings and a list before the block",
        "## Summary\n\n- Fixed the cap in `retry.py`\n- Added a focused test\n\n"
        "## Tests\n\n`pytest tests/test_retry.py` passes, then the full suite.\n\n"
        + block("\n" + pretty(FOCUSED_TESTS) + "\n"),
    ),
    (
        "a heading outside the block",
        DONE + "**Reflection**\n\n" + block("\n" + pretty(CARGO) + "\n"),
    ),
    (
        "escaped non-ASCII",
        DONE + block(json.dumps(variant(LOCKFILE, content_summary="Don’t skip npm ci."))),
    ),
    (
        "fence around the block and inside it",
        DONE + "```\n" + block("\n```json\n" + pretty(RACE) + "\n```\n") + "\n```\nThat's all.",
    ),
    (
        "Chinese phrase ref",
        "测试通过。\n"
        + block(
            pretty(
                variant(
                    CHINESE, evidence_refs=["解析器测试 12 项通过"], experience__evidence_refs=...
                )
            )
        ),
    ),
    (
        "refs only under the experience",
        DONE + block(pretty(variant(CARGO, evidence_refs=...))),
    ),
    (
        "six applicability items",
        DONE
        + block(
            pretty(
                variant(
                    MIGRATION,
                    experience__applicability=[
                        "project with alembic migrations",
                        "postgres database",
                        "sqlite test database",
                        "flask application",
                        "CI with a disposable database",
                        "schema changes that drop columns",
                    ],
                )
            )
        ),
    ),
    (
        "CRLF with a fence inside",
        (DONE + block("\n```json\n" + pretty(LOCKFILE) + "\n```\n")).replace("\n", "\r\n"),
    ),
    (
        "tabs inside string values",
        DONE + block(compact(FOCUSED_TESTS).replace("run that module's", "run\tthat module's")),
    ),
    ('"Eligible" status', DONE + block(compact(variant(RACE, status="Eligible")))),
    (
        "key case and hyphens",
        DONE
        + block(
            compact(FOCUSED_TESTS)
            .replace('"confidence"', '"Confidence"')
            .replace('"evidence_refs"', '"evidence-refs"', 1)
        ),
    ),
    (
        "camelCase keys",
        DONE
        + block(
            pretty(variant(LOCKFILE))
            .replace('"future_behavior"', '"futureBehavior"')
            .replace('"stop_condition"', '"stopCondition"')
            .replace('"evidence_refs"', '"evidenceRefs"')
        ),
    ),
    (
        "blank lines around the JSON",
        DONE + block("\n\n\n" + compact(MIGRATION) + "\n\n\n"),
    ),
    (
        "a phrase ref and a path ref",
        DONE
        + block(
            pretty(
                variant(
                    MIGRATION,
                    evidence_refs=["tests/test_migrations.py", "round trip on a fresh database"],
                    experience__evidence_refs=...,
                )
            )
        ),
    ),
]

REFUSED: list[tuple[str, str, str]] = [
    (
        "no evidence refs",
        DONE
        + block(pretty(variant(FOCUSED_TESTS, evidence_refs=[], experience__evidence_refs=[]))),
        "pass",
    ),
    (
        "evidence refs left out at both levels",
        DONE + block(pretty(variant(CARGO, evidence_refs=..., experience__evidence_refs=...))),
        "pass",
    ),
    (
        "a secret in a summary",
        DONE
        + block(
            pretty(
                variant(
                    LOCKFILE,
                    reasoning_summary="Set NPM_TOKEN=npm_abcdefghijklmnopqrstuvwxyz0123 first.",
                )
            )
        ),
        "pass",
    ),
    (
        "a bearer token as a ref",
        DONE
        + block(
            compact(
                variant(
                    RACE,
                    evidence_refs=["Bearer abcdefghijklmnopqrstuvwxyz012345"],
                    experience__evidence_refs=...,
                )
            )
        ),
        "pass",
    ),
    (
        "an absolute path as a ref",
        DONE
        + block(
            pretty(
                variant(
                    MIGRATION,
                    evidence_refs=["/home/dev/project/tests/test_migrations.py"],
                    experience__evidence_refs=...,
                )
            )
        ),
        "pass",
    ),
    (
        "an absolute path outside the home as a ref",
        DONE
        + block(
            pretty(
                variant(
                    CARGO,
                    evidence_refs=["/usr/src/app/target/debug/test-log"],
                    experience__evidence_refs=...,
                )
            )
        ),
        "pass",
    ),
    (
        "a home path in the action",
        DONE
        + block(
            pretty(
                variant(
                    FOCUSED_TESTS,
                    experience__future_behavior={
                        **FOCUSED_TESTS["experience"]["future_behavior"],
                        "action": "run ~/bin/focused-tests before the suite",
                    },
                )
            )
        ),
        "pass",
    ),
    (
        "a Windows path in the outcome",
        DONE
        + block(
            pretty(
                variant(LOCKFILE, experience__observed_outcome="C:\\Users\\dev\\app had no lock")
            )
        ),
        "pass",
    ),
    (
        "two blocks",
        DONE + block(compact(FOCUSED_TESTS)) + "\n\nCorrected:\n" + block(compact(RACE)),
        "pass",
    ),
    (
        "prose instead of JSON",
        DONE
        + block(
            "I learned to run the focused tests first; they caught the bug in seconds "
            "(tests/test_retry.py)."
        ),
        "pass",
    ),
    (
        "prose around the JSON inside the block",
        DONE + block("Here is my reflection:\n" + pretty(CARGO)),
        "pass",
    ),
    (
        "a failing validator",
        DONE + block(compact(MIGRATION)),
        "fail",
    ),
    (
        "an unknown schema version",
        DONE + block(compact(variant(RACE, schema_version="turn_reward_memory_reflection_v2"))),
        "pass",
    ),
    (
        "a status that is not eligible",
        DONE + block(compact(variant(LOCKFILE, status="draft"))),
        "pass",
    ),
    (
        "experience refs that differ",
        DONE + block(pretty(variant(MIGRATION, experience__evidence_refs=["other-run"]))),
        "pass",
    ),
    (
        "an empty action",
        DONE
        + block(
            pretty(
                variant(
                    CARGO,
                    experience__future_behavior={
                        **CARGO["experience"]["future_behavior"],
                        "action": "",
                    },
                )
            )
        ),
        "pass",
    ),
    (
        "confidence on an unknown scale",
        DONE + block(compact(variant(FOCUSED_TESTS, confidence=8))),
        "pass",
    ),
]


def cases() -> list[dict[str, str]]:
    """Every case: ``{name, expect, reply, validator}``."""
    return [
        {"name": name, "expect": "learned", "reply": reply, "validator": "pass"}
        for name, reply in LEARNED
    ] + [
        {"name": name, "expect": "refused", "reply": reply, "validator": validator}
        for name, reply, validator in REFUSED
    ]
