"""What reward memory costs the model's context (issue 38), in UTF-8 bytes.

Three limits, each measured where a host meets it: through the real hook processes
and the real ``turn-hooks mcp serve``, on every host and channel.

* A Turn that recalls nothing adds at most 1 KB: the instructions and the reflection
  request, by block or by tool (the request names one channel, never both).
* Our tool definitions take at most 600 bytes in all: the model receives them again
  with every request of a session. Counted as the ``tools/list`` entries' name,
  description and input schema, as compact JSON: what Claude Code hands the model as is
  and Codex rewrites. The entries' ``_meta`` (Claude Code's "load it up front") never
  reaches the model; it is pinned apart. ``record_memory_use`` (issue 39: which
  recalled memories the Turn applied) is held to 300 of the 600 on its own.
* The application question (issue 39: which recalled memories the Turn applied),
  asked only when memories were recalled, adds at most 500 bytes as the host renders
  it: the instruction (held to 300 on its own) and the request for its field.
* A recalled memory renders in at most 400 bytes and keeps, however long its fields,
  its ref intact and a line for each of the summary, the trigger, the action, the
  validation and the stop condition: when the lesson applies, what to do, how to
  check it and where it ends.

What a host adds on its own once any MCP server is configured (Codex's resource
tools) is not ours: the real-host tests measure and report it.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
from fixtures import f1
from test_host_generic import CHANNEL_HOSTS, _pre_turn_text, _serve, hook
from test_recall_quality import MEMORIES, learn
from turn_support import ROOT, bound_goal

from capabilities.reward_memory.plugin import APPLICATION_TOOL, REFLECTION_TOOL
from capabilities.reward_memory.turn.application import APPLICATION_INSTRUCTION
from capabilities.reward_memory.turn.host_view import ELLIPSIS, ITEM_BYTES, guidance_items
from capabilities.reward_memory.turn.pre_turn import REFLECTION_INSTRUCTION
from hosts.adapters.mcp import ALWAYS_LOAD
from hosts.facts.render import NONE_WANTED

NO_RECALL_BYTES = 1024
TOOLS_BYTES = 600
APPLICATION_TOOL_BYTES = 300
APPLICATION_QUESTION_BYTES = 500
APPLICATION_FIELD = "reward_memory_application_json"
FIELD = "reward_memory_reflection_json"
LABELS = ("summary", "trigger", "action", "validation", "stop condition")
REF = "candidate:64084ef9c0a1976d8d52"  # the shape the store gives: 20 hex digits


def size(text: str) -> int:
    return len(text.encode("utf-8"))


@pytest.fixture
def homes(tmp_path, monkeypatch):
    """Codex's and Claude Code's homes, empty: no MCP server of ours until served."""
    codex, claude = tmp_path / "codex-home", tmp_path / "claude-home"
    for home in (codex, claude):
        home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    return codex, claude


@pytest.mark.parametrize("host", list(CHANNEL_HOSTS))
def test_a_turn_that_recalls_nothing_adds_at_most_1_kb_on_every_host_and_channel(
    tmp_path, homes, host
):
    registry = bound_goal(tmp_path)
    block = _pre_turn_text(host, registry, 1)
    _serve("codex-cli", homes[0])
    _serve("claude-code", homes[1])
    served = _pre_turn_text(host, registry, 2)
    for text in (block, served):
        assert FIELD in text and text.endswith(NONE_WANTED), "the request is there, whole"
        assert "[memory " not in text
        assert size(text) <= NO_RECALL_BYTES, text
    if CHANNEL_HOSTS[host][2] is not None:  # the hosts that run our MCP server
        assert "record_reflection" in served and f"<{FIELD}>" not in served
    else:
        assert served == block


def _tools_list(registry) -> list[dict]:
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
    ]
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", "mcp", "serve", "--registry", str(registry)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=registry.parent / "repo",
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[1])["result"]["tools"]


def test_our_tool_definitions_take_at_most_600_bytes_in_all(tmp_path):
    tools = _tools_list(bound_goal(tmp_path))
    assert [tool["name"] for tool in tools] == ["record_reflection", "record_memory_use"]
    defined = [{key: tool[key] for key in ("name", "description", "inputSchema")} for tool in tools]
    sizes = [size(json.dumps(tool, ensure_ascii=False, separators=(",", ":"))) for tool in defined]
    assert sum(sizes) <= TOOLS_BYTES, sizes
    assert sizes[1] <= APPLICATION_TOOL_BYTES
    for tool in tools:  # the rest of an entry is the host's directive alone
        assert {key: tool[key] for key in tool if key not in defined[0]} == {"_meta": ALWAYS_LOAD}
    # What the model must choose is listed: the required keys, the enums, the containers.
    reflection, use = (tool["inputSchema"] for tool in tools)
    keys = "outcome_kind content_summary reasoning_summary confidence evidence_refs experience"
    assert reflection["required"] == keys.split()
    assert reflection["properties"]["outcome_kind"]["enum"] == [
        "research",
        "simulation",
        "real",
        "engineering",
    ]
    assert reflection["properties"]["confidence"]["enum"] == ["low", "medium", "high"]
    assert reflection["properties"]["evidence_refs"]["type"] == "array"
    assert reflection["properties"]["experience"]["type"] == "object"
    assert use["properties"]["outcome"]["enum"] == ["applied", "ignored", "refuted"]
    assert use["properties"]["memory_refs"]["type"] == "array"
    assert all("\n" not in tool["description"] for tool in tools), "one line"


@pytest.mark.parametrize(
    ("tool", "instruction"),
    [(REFLECTION_TOOL, REFLECTION_INSTRUCTION), (APPLICATION_TOOL, APPLICATION_INSTRUCTION)],
    ids=["record_reflection", "record_memory_use"],
)
def test_what_the_listing_leaves_out_the_instructions_say(tool, instruction):
    # The listing is lean because the Turn's instructions name every key the server
    # checks and every enum value; the server still checks the whole shape.
    checked = tool["check_schema"]
    listed = tool["input_schema"]
    for key, schema in checked["properties"].items():
        assert key in instruction
        for value in schema.get("enum", ()):
            assert value in instruction
        if key in listed["properties"]:
            assert listed["properties"][key] == {k: v for k, v in schema.items() if k != "items"}
    assert listed.get("required") == checked.get("required")


def _memory(**fields: str) -> dict:
    behaviour = {
        "trigger": "a change touches one module",
        "action": "run that module's tests first",
        "validation": "focused tests pass before the full suite",
        "stop_condition": "the change spans several modules",
    }
    summary = fields.pop("summary", "Run the focused test module before the full suite.")
    behaviour.update(fields)
    return {
        "candidate_ref": REF,
        "target_class": "procedural_experience",
        "content_summary": summary,
        "experience": {**copy.deepcopy(f1.EXPERIENCE), "future_behavior": behaviour},
    }


def _lines(text: str) -> dict[str, str]:
    head, *rest = text.split("\n")
    assert head == f"[memory 1] {REF}", "the ref stays whole"
    return dict(line.strip().split(": ", 1) for line in rest)


def test_a_typical_memory_renders_whole_in_under_400_bytes():
    [item] = guidance_items({"guidance": [_memory()]})
    assert item.ref == REF and size(item.text) <= ITEM_BYTES
    assert _lines(item.text) == {
        "summary": "Run the focused test module before the full suite.",
        "trigger": "a change touches one module",
        "action": "run that module's tests first",
        "validation": "focused tests pass before the full suite",
        "stop condition": "the change spans several modules",
    }


WORDS = "when the nightly build of the façade module fails on a flaky network test, "
LONG = (WORDS * 8)[:500]  # each field at the contract's 500 characters, some 2-byte


@pytest.mark.parametrize(
    "fields",
    [
        {key: LONG for key in ("summary", "trigger", "action", "validation", "stop_condition")},
        {"action": LONG},
        {"summary": LONG, "stop_condition": "日本語のテキスト" * 62},
    ],
    ids=["all-long", "one-long", "multibyte"],
)
def test_a_memory_with_500_character_fields_is_cut_to_400_bytes_keeping_every_part(fields):
    whole = _lines(guidance_items({"guidance": [_memory()]})[0].text)
    [item] = guidance_items({"guidance": [_memory(**fields)]})
    assert item.ref == REF and size(item.text) <= ITEM_BYTES
    lines = _lines(item.text)
    assert tuple(lines) == LABELS, "every part keeps its line"
    for label, text in lines.items():
        key = "summary" if label == "summary" else label.replace(" ", "_")
        if key in fields:  # cut: the start of the field, marked as cut
            assert text.endswith(ELLIPSIS) and len(text) > 20
            assert " ".join(fields[key].split()).startswith(text.removesuffix(ELLIPSIS))
        else:  # one long field never crowds out the short ones
            assert text == whole[label]


def test_a_long_ref_is_never_cut():
    long_ref = "candidate:" + "f" * 120
    [item] = guidance_items({"guidance": [{**_memory(action=LONG), "candidate_ref": long_ref}]})
    assert item.ref == long_ref and item.text.startswith(f"[memory 1] {long_ref}\n")
    assert size(item.text) <= ITEM_BYTES


def test_a_recalled_memory_reaches_the_host_within_400_bytes(tmp_path):
    registry = bound_goal(tmp_path)
    learn(registry)
    text = hook(
        {"turn_id": "t2", "prompt": "rebased schemas migrations, what first?"},
        registry,
        None,
        "pre-turn",
    )["additional_context"]
    [item] = [part for part in text.split("\n\n") if part.startswith("[memory ")]
    assert size(item) <= ITEM_BYTES
    assert MEMORIES[0][1] in item, "whole: the trigger is there as learned"


@pytest.mark.parametrize("host", list(CHANNEL_HOSTS))
def test_the_application_question_adds_at_most_500_bytes_on_every_host_and_channel(
    tmp_path, homes, host
):
    # "The extra question costs the model at most a few hundred bytes of context":
    # its paragraphs of the rendered text, by block and by tool, and nothing else.
    registry = bound_goal(tmp_path)
    learn(registry)
    command, dialect, _ = CHANNEL_HOSTS[host]
    extra = ("--dialect", dialect) if dialect else ()

    def recalled(n):
        event = {"turn_id": f"t{n}", "prompt": "rebased schemas migrations, what first?"}
        document = hook(event, registry, None, *extra, "pre-turn", command=command) or {}
        return document.get("additional_context") or document.get("hookSpecificOutput", {}).get(
            "additionalContext", ""
        )

    block = recalled(1)
    _serve("codex-cli", homes[0])
    _serve("claude-code", homes[1])
    for text in (block, recalled(2)):
        assert "[memory 1]" in text, "a memory was recalled, so the question is asked"
        asked = [part for part in text.split("\n\n") if APPLICATION_FIELD in part]
        assert len(asked) == 2, "the instruction and the request for its field"
        assert sum(size(part) + 2 for part in asked) <= APPLICATION_QUESTION_BYTES, asked


@pytest.mark.parametrize("served", [False, True], ids=["block", "tool"])
@pytest.mark.parametrize("host", list(CHANNEL_HOSTS))
def test_a_turn_whose_only_memory_this_session_already_holds_costs_what_no_recall_costs(
    tmp_path, homes, host, served
):
    # A tester's second Turn: its one memory was left out as already delivered, yet
    # the header announced "the memories below" and the application question was
    # asked, 1,600 B for nothing new. With no item left it is a Turn that recalled
    # nothing, byte for byte: no header, no question, no request for its field.
    registry = bound_goal(tmp_path)
    learn(registry)
    if served:
        _serve("codex-cli", homes[0])
        _serve("claude-code", homes[1])
    command, dialect, _ = CHANNEL_HOSTS[host]
    extra = ("--dialect", dialect) if dialect else ()

    def pre_turn(n, session, prompt):
        event = {"turn_id": f"t{n}", "prompt_id": f"t{n}", "session_id": session}
        event |= {"prompt": prompt, "timestamp": f"2026-11-29T10:00:0{n}Z"}
        event |= {"hook_event_name": "BeforeAgent"}
        document = hook(event, registry, None, *extra, "pre-turn", command=command) or {}
        return document.get("additional_context") or document.get("hookSpecificOutput", {}).get(
            "additionalContext", ""
        )

    matching = "rebased schemas migrations, what first?"
    nothing = pre_turn(1, "other", "add a dark mode toggle to the settings file page")
    first = pre_turn(2, "s", matching)
    again = pre_turn(3, "s", matching)
    assert "[memory 1]" not in nothing and "[memory 1]" in first
    assert APPLICATION_FIELD in first, "the first Turn shows the memory and asks about it"
    assert again == nothing, "no header, no application question: nothing new was shown"
    assert size(again) <= NO_RECALL_BYTES
    assert "[memory 1]" in pre_turn(4, "s2", matching), "another session gets it again"
