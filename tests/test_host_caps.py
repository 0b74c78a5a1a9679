"""Every host's cap, from the one table, holds through that host's hook process.

A capability contributes far more than any cap (tests/fixtures/bulky_capability.py,
injected with ``TURN_HOOKS_PLUGINS`` as a user's plugin would be) but stays inside the
64 KiB contract budget. Each host's own pre-turn command, run as a new process the way
its runtime runs it, must give the model at most that host's cap from
``hosts.facts.caps.HOST_CAPS``, cut at whole items from the end with the omission line, and
keep the block requests (issue 17).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures import f1
from fixtures.bulky_capability import ITEMS, SPEC
from test_host_generic import run_cli
from turn_support import bound_goal

from hosts.facts.caps import CONTRIBUTION_BUDGET_BYTES, HOST_CAPS, render_cap
from hosts.facts.render import RENDER_LIMIT, block_request, omission_note
from turn_hooks._contribution import measure_context_items

TESTS = Path(__file__).parent
# How each host's runtime calls its pre-turn hook: (command, dialect).
HOOKS = {
    "codex-cli": ("codex-cli", None),
    "codex-app": ("codex-cli", None),  # the App runs the Codex CLI's UserPromptSubmit hook
    "claude-code": ("generic", "claude-code"),
    "gemini": ("generic", "gemini"),
    "dsh": ("dsh", None),
    "generic": ("generic", None),
}


@pytest.fixture(autouse=True)
def _bulky_capability(monkeypatch):
    # Why autouse: every hook process here must load the oversized capability.
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", SPEC)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )


def event(host: str) -> dict[str, object]:
    if host == "claude-code":
        return {"prompt_id": "p1", "session_id": "s1", "prompt": "tidy the module"}
    if host == "gemini":
        return {
            "session_id": "s1",
            "hook_event_name": "BeforeAgent",
            "timestamp": "2026-12-01T10:00:00Z",
            "prompt": "tidy the module",
        }
    return {"turn_id": "s1:1", "session_id": "s1", "prompt": "tidy the module"}


def rendered(host: str, registry: Path) -> str:
    command, dialect = HOOKS[host]
    argv = ["host", command, "pre-turn", *(("--dialect", dialect) if dialect else ())]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    result = run_cli(*argv, stdin=json.dumps(event(host)))
    assert result.returncode == 0, "a hook always exits 0"
    document = json.loads(result.stdout)
    return document.get("additional_context") or document["hookSpecificOutput"]["additionalContext"]


def test_the_table_names_every_host_once_and_each_stays_under_its_runtime():
    assert set(HOST_CAPS) == set(HOOKS)
    assert HOST_CAPS["claude-code"].render_chars < 10_000, "Claude Code stubs out more"
    assert HOST_CAPS["codex-app"].render_chars == HOST_CAPS["codex-cli"].render_chars
    assert render_cap("codex_cli") == HOST_CAPS["codex-cli"].render_chars
    assert render_cap("a_host_nobody_named") == HOST_CAPS["generic"].render_chars == RENDER_LIMIT


def test_the_contribution_is_over_every_cap_and_inside_the_contract_budget():
    # Otherwise the per-host tests below would prove nothing about the caps.
    assert measure_context_items(ITEMS) <= CONTRIBUTION_BUDGET_BYTES == 65536
    assert sum(len(item.text) for item in ITEMS) > 4 * max(
        cap.render_chars for cap in HOST_CAPS.values()
    )


@pytest.mark.parametrize("host", list(HOOKS))
def test_each_host_is_given_at_most_its_cap_cut_at_whole_items(tmp_path, host):
    registry = bound_goal(tmp_path)
    text = rendered(host, registry)
    cap = HOST_CAPS[host].render_chars
    assert len(text) <= cap
    kept = [item for item in ITEMS if item.text in text]
    assert 0 < len(kept) < len(ITEMS)
    assert kept == ITEMS[: len(kept)], "whole items are dropped from the end"
    for dropped in ITEMS[len(kept) :]:
        assert dropped.text[:12] not in text, "no item is cut in the middle"
    note = omission_note(len(ITEMS) - len(kept))
    assert note in text
    # Reward memory's block request is never dropped, and follows the note.
    request = block_request("reward_memory_reflection_json")
    assert text.index(kept[-1].text) < text.index(note) < text.index(request)
    # The cut is tight: one more item would not have fitted.
    assert len(text) + len(ITEMS[len(kept)].text) + 2 > cap


def test_no_cap_exceeds_the_bound_conformance_holds_every_host_to():
    # conformance/ may import only turn_hooks (tests/test_layers.py), so it keeps the
    # spec's bound (hosts.md §1.2) itself; a cap raised past it would fail conformance.
    from conformance.scenarios import RENDER_LIMIT as CONFORMANCE_BOUND

    assert all(cap.render_chars <= CONFORMANCE_BOUND for cap in HOST_CAPS.values())


def _our_pre_turn(goal: str, agent: str, **fields) -> dict:
    command = f"/venv/bin/python -m hosts.cli host codex-cli pre-turn --goal-id {goal} "
    command += f"--agent-id {agent} --registry /r.json"
    return {"type": "command", "command": command, "timeout": 30, **fields}


def _hooks_json(goal: str, **fields) -> dict:
    return {"hooks": {"UserPromptSubmit": [{"hooks": [_our_pre_turn(goal, "a", **fields)]}]}}


@pytest.mark.parametrize(
    ("hooks_json", "expected"),
    [
        pytest.param(None, 10_000, id="no-hooks-json"),
        pytest.param("not json", 10_000, id="bad-json"),
        pytest.param(_hooks_json("g"), 10_000, id="unset"),
        pytest.param(_hooks_json("g", additionalContextLimit=300), 1_200, id="ours-lowered"),
        pytest.param(_hooks_json("other", additionalContextLimit=300), 10_000, id="not-ours"),
        pytest.param(_hooks_json("g", additionalContextLimit=True), 10_000, id="not-a-number"),
    ],
)
def test_codex_byte_cap_reads_the_limit_on_our_handler_and_defaults_otherwise(
    tmp_path, monkeypatch, hooks_json, expected
):
    from hosts.facts.caps import render_byte_cap

    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    if hooks_json is not None:
        text = hooks_json if isinstance(hooks_json, str) else json.dumps(hooks_json)
        (tmp_path / "hooks.json").write_text(text)
    assert render_byte_cap("codex_cli", "g", "a") == expected
    assert render_byte_cap("claude_code", "g", "a") is None, "only Codex counts bytes"


def test_a_fifo_at_hooks_json_reads_as_codexs_default(tmp_path, monkeypatch):
    from hosts.facts.caps import render_byte_cap

    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    os.mkfifo(tmp_path / "hooks.json")
    assert render_byte_cap("codex_cli", "g", "a") == 10_000, "no wait for a writer"


def test_a_byte_bound_counts_utf8_bytes_not_characters():
    from hosts.facts.render import render
    from turn_hooks import ContextItem, HostProjection

    items = [ContextItem(ref=f"r{i}", text="é" * 100) for i in range(3)]
    projection = HostProjection(context_items=items)
    assert len(render(projection, limit=1000).item_refs) == 3, "under 1,000 characters"
    assert render(projection, limit=1000, byte_limit=500).item_refs == ("r0", "r1")
