"""A second capability settles through every host command, with hosts/ unchanged.

The capability (tests/fixtures/second_capability.py) is injected the way conformance
probes are, with ``TURN_HOOKS_PLUGINS``. Every host command renders its context item
and its block request, extracts its block from the final message, and hands the value
to its ``post_settlement``; reward memory learns and recalls beside it (issue 14).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures import f1
from fixtures.second_capability import FIELD, HOOK_ID, INSTRUCTION, ITEM, SPEC, digest
from test_host_generic import VALIDATOR, hook_log_entries, run_cli
from turn_support import RAW, bound_goal, settled_spools

from capabilities.reward_memory.contract.reader import read_reflection
from hosts.facts.render import block_request

TESTS = Path(__file__).parent
PROMPT = "a change touches one module"
HOSTS = {
    "generic-plain": ("generic", "plain"),
    "generic-claude-code": ("generic", "claude-code"),
    "generic-gemini": ("generic", "gemini"),
    "codex-cli": ("codex-cli", None),
    "dsh": ("dsh", None),
}
# Hosts whose own turn ids are scoped by session (all render an item once per session).
REMEMBERING = {"codex-cli", "dsh"}


@pytest.fixture(autouse=True)
def _second_capability(monkeypatch):
    # Why autouse: every hook process of this module must load the second capability
    # next to the built-in one, exactly as a user's TURN_HOOKS_PLUGINS would.
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", SPEC)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )


def start_event(host, n, session):
    if host == "generic-claude-code":
        return {"prompt_id": f"p{n}", "session_id": session, "prompt": PROMPT}
    if host == "generic-gemini":
        stamp = f"2026-11-29T10:00:0{n}Z"
        return {
            "session_id": session,
            "hook_event_name": "BeforeAgent",
            "timestamp": stamp,
            "prompt": PROMPT,
        }
    turn_id = f"{session}:{n}" if host in REMEMBERING else f"t{n}"
    return {"turn_id": turn_id, "session_id": session, "prompt": PROMPT}


def end_event(host, n, session, message):
    if host == "generic-claude-code":
        return {"prompt_id": f"p{n}", "session_id": session, "last_assistant_message": message}
    if host == "generic-gemini":
        return {"session_id": session, "hook_event_name": "AfterAgent", "prompt_response": message}
    turn_id = f"{session}:{n}" if host in REMEMBERING else f"t{n}"
    return {"turn_id": turn_id, "session_id": session, "last_assistant_message": message}


def run_hook(host, event_name, event, registry):
    command, dialect = HOSTS[host]
    argv = ["host", command, event_name, *(("--dialect", dialect) if dialect else ())]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    if event_name == "post-settlement":
        argv += ["--validation-command-json", json.dumps(VALIDATOR)]
    result = run_cli(*argv, stdin=json.dumps(event))
    assert result.returncode == 0, "a hook always exits 0"
    return result.stdout


def context(host, n, session, registry):
    out = run_hook(host, "pre-turn", start_event(host, n, session), registry)
    document = json.loads(out) if out.strip() else {}
    return document.get("additional_context") or document.get("hookSpecificOutput", {}).get(
        "additionalContext", ""
    )


def final_message(answer=" sunny "):
    return (
        f"Done.\n<{FIELD}>{answer}</{FIELD}>\n"
        f"<reward_memory_reflection_json>{RAW}</reward_memory_reflection_json>"
    )


def spooled(registry):
    [entry] = settled_spools(registry.parent / "repo")
    return entry


@pytest.mark.parametrize("host", list(HOSTS))
def test_a_second_capability_settles_through_every_host_beside_reward_memory(tmp_path, host):
    registry = bound_goal(tmp_path)
    first = context(host, 1, "s1", registry)
    for part in (INSTRUCTION, ITEM.text, block_request(FIELD), "<reward_memory_reflection_json>"):
        assert part in first
    assert first.index(INSTRUCTION) < first.index(ITEM.text) < first.index(block_request(FIELD))
    assert "[memory " not in first

    run_hook(host, "post-settlement", end_event(host, 1, "s1", final_message()), registry)
    entry = spooled(registry)
    # Reward memory's reader keeps its field in canonical form; the other field as given.
    canonical = read_reflection(RAW).value
    assert entry["host_result"] == {
        FIELD: "sunny",
        "reward_memory_reflection_json": canonical,
        "reward_memory_application_json": "",  # asked only when memories were recalled
    }
    results = entry["post_settlement"]["results"]
    assert results[HOOK_ID]["answer_sha256"] == digest("sunny")
    assert results[HOOK_ID]["fields_received"] == sorted(
        [FIELD, "reward_memory_reflection_json", "reward_memory_application_json"]
    )
    assert results["reward-memory.outcome-ingest"]["status"] == "activated"
    assert "sunny" not in json.dumps(results), "receipts hold no raw text"

    second = context(host, 2, "s1", registry)
    assert "[memory 1] candidate:" in second, "reward memory recalls beside it"
    # Every host renders an item once per session (issue 17: the generic dialects too).
    assert ITEM.text not in second, "delivered once per session"
    assert block_request(FIELD) in second
    # The one entry says why the first Turn got no memory: the store held none yet.
    assert [(e["source"], e["reason_code"]) for e in hook_log_entries()] == [
        ("reward_memory_recall", "provider_returned_no_items")
    ]


def test_a_repeated_block_of_the_second_field_costs_only_that_field(tmp_path):
    registry = bound_goal(tmp_path)
    message = final_message() + f"\n<{FIELD}>again</{FIELD}>"
    run_hook(
        "generic-plain", "post-settlement", end_event("generic-plain", 1, "s", message), registry
    )
    entry = spooled(registry)
    assert entry["host_result"][FIELD] == ""
    assert entry["post_settlement"]["results"][HOOK_ID]["answer_sha256"] is None
    assert entry["post_settlement"]["results"]["reward-memory.outcome-ingest"]["status"] == (
        "activated"
    )
    assert [(e["source"], e["reason_code"]) for e in hook_log_entries()] == [
        ("adapter", "result_block_repeated")
    ]
