"""The result-tool channel: ``turn-hooks mcp serve`` stages a reflection out of the user's
sight and the Stop hook settles it as it settles the final message's block."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys

import pytest
from fixtures import f1
from turn_support import ROOT, bound_goal, hook_argv, journals_after_settlement, run_process

from capabilities.reward_memory.plugin import REFLECTION_TOOL
from hosts.adapters import mcp
from hosts.settlement import staged
from hosts.settlement.settlement import settlement_store
from turn_hooks import SettlementRegistration, make_plugin_manager, settlement_result_tools
from turn_hooks._contribution import validate_settlement_registration
from turn_hooks.errors import RegistrationError, SidecarError

FIELD = "reward_memory_reflection_json"
META = {"x-codex-turn-metadata": {"session_id": "s1", "turn_id": "t1"}}


def call(arguments, meta=None, ident=3, name="record_reflection"):
    params = {"name": name, "arguments": arguments, **({"_meta": meta} if meta else {})}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})


class Recorder:
    def __init__(self, fail=None):
        self.staged, self.fail = [], fail

    def __call__(self, tool, value, meta):
        if self.fail:
            raise self.fail
        self.staged.append((tool["field"], value, meta))


def server(fail=None):
    recorder = Recorder(fail)
    return mcp.Server(settlement_result_tools(make_plugin_manager()), recorder), recorder


def ask(srv, line):
    return srv.handle(line.encode() if isinstance(line, str) else line)


def test_the_handshake_lists_the_reflection_tool_and_answers_ping():
    srv, _ = server()
    init = ask(
        srv, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"x"}}'
    )
    assert init["result"]["protocolVersion"] == "x"
    assert init["result"]["capabilities"] == {"tools": {"listChanged": False}}
    import turn_hooks

    assert init["result"]["serverInfo"] == {"name": "turn-hooks", "version": turn_hooks.__version__}
    assert ask(srv, '{"jsonrpc":"2.0","id":9,"method":"initialize"}')["result"][
        "protocolVersion"
    ] == (mcp.PROTOCOL_VERSION)
    assert ask(srv, '{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    assert ask(srv, "  \n") is None
    assert ask(srv, '{"jsonrpc":"2.0","id":"p","method":"ping"}') == {
        "jsonrpc": "2.0",
        "id": "p",
        "result": {},
    }
    # The reflection tool, then the application answer's (issue 39).
    tool, application = ask(srv, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')["result"][
        "tools"
    ]
    assert application["name"] == "record_memory_use"
    assert tool == {
        "name": "record_reflection",
        "description": REFLECTION_TOOL["description"],
        "inputSchema": REFLECTION_TOOL["input_schema"],
        # Claude Code loads it up front instead of hiding it behind ToolSearch.
        "_meta": {"anthropic/alwaysLoad": True},
    }


def test_a_valid_call_stages_the_compact_json_with_its_meta():
    srv, recorder = server()
    reply = ask(srv, call(f1.REFLECTION, META))
    assert reply["result"]["isError"] is False
    [(field, value, meta)] = recorder.staged
    assert (field, json.loads(value), meta) == (FIELD, f1.REFLECTION, META)
    assert value == json.dumps(f1.REFLECTION, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize(
    ("arguments", "fault"),
    [
        ("text", "arguments must be of type object"),
        ({**f1.REFLECTION, "confidence": "sure"}, "arguments.confidence must be one of"),
        ({**f1.REFLECTION, "outcome_kind": 3}, "arguments.outcome_kind must be one of"),
        ({**f1.REFLECTION, "content_summary": 7}, "arguments.content_summary must be of type"),
        ({**f1.REFLECTION, "evidence_refs": "ci"}, "arguments.evidence_refs must be of type"),
        ({**f1.REFLECTION, "evidence_refs": [7]}, "arguments.evidence_refs[0] must be"),
        ({**f1.REFLECTION, "experience": "text"}, "arguments.experience must be of type"),
        ({k: v for k, v in f1.REFLECTION.items() if k != "experience"}, "experience is required"),
    ],
)
def test_arguments_that_do_not_fit_are_a_tool_error_the_model_reads(arguments, fault):
    srv, recorder = server()
    result = ask(srv, call(arguments))["result"]
    assert result["isError"] is True and fault in result["content"][0]["text"]
    assert recorder.staged == []


@pytest.mark.parametrize(
    ("arguments", "fault"),
    [
        ({"outcome": "applied", "reasoning_summary": 7}, "reasoning_summary must be of type"),
        ({"outcome": "used"}, "arguments.outcome must be one of"),
        ({"memory_refs": "candidate:1"}, "arguments.memory_refs must be of type array"),
    ],
)
def test_the_check_schema_holds_what_the_lean_listing_leaves_to_the_instructions(arguments, fault):
    # Issue 38: the listing omits the text keys' types (the instructions state them);
    # the server checks them still, so the model hears of a wrong type at once.
    srv, recorder = server()
    listed = ask(srv, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')["result"]["tools"][1]
    assert "reasoning_summary" not in listed["inputSchema"]["properties"]
    result = ask(srv, call(arguments, name="record_memory_use"))["result"]
    assert result["isError"] is True and fault in result["content"][0]["text"]
    assert recorder.staged == []


@pytest.mark.parametrize(
    "arguments",
    [
        {**f1.REFLECTION, "extra": 1},
        {**f1.REFLECTION, "evidence_refs": [f"evidence:run-{n}" for n in range(6)]},
        {**f1.REFLECTION, "content_summary": "x" * 501},
        {**f1.REFLECTION, "experience": {"applicability": "one string"}},
    ],
    ids=["extra-key", "six-refs", "long-text", "thin-experience"],
)
def test_the_substance_is_left_to_the_reader_at_settlement(arguments):
    # Issue 38: the listed schema is the shape only (it is sent with every request);
    # what the tolerant reader reads or refuses it decides at settlement, as for the
    # block, so the tool never refuses what the reader would learn.
    srv, recorder = server()
    assert ask(srv, call(arguments))["result"]["isError"] is False
    assert len(recorder.staged) == 1


def test_the_subset_checks_numbers_and_untyped_schemas():
    assert mcp.schema_faults(1.5, {"type": "integer"}) == ["arguments must be of type integer"]
    assert mcp.schema_faults(2, {"type": "number"}) == []
    assert mcp.schema_faults(True, {"type": "boolean"}) == []
    assert mcp.schema_faults([1, "a"], {"type": "array"}) == []
    assert mcp.schema_faults({"a": 1}, {"type": "object", "properties": {"a": True}}) == []


def test_an_oversize_value_or_a_failed_stage_is_a_tool_error():
    srv, _ = server()
    long_refs = {**f1.REFLECTION, "reasoning_summary": "y" * 500, "content_summary": "z" * 500}
    long_refs["experience"] = {**f1.REFLECTION["experience"], "attribution": "w" * 500}
    long_refs["experience"]["observed_outcome"] = "v" * 500
    result = ask(srv, call(long_refs))["result"]
    assert result["isError"] is True and "exceed 2400 characters" in result["content"][0]["text"]
    for fail, code in (
        (SidecarError("x", reason_code="sidecar_locked"), "sidecar_locked"),
        (OSError("disk"), "staged_result_unwritable"),
    ):
        failing, _ = server(fail)
        text = ask(failing, call(f1.REFLECTION))["result"]["content"][0]["text"]
        assert text == f"not staged ({code})"


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"not json", mcp.PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff"}', mcp.PARSE_ERROR),
        (b"[" * 5000 + b"]" * 5000, mcp.PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","n":' + b"9" * 5000 + b"}", mcp.PARSE_ERROR),
        (b"[1]", mcp.INVALID_REQUEST),
        (b'{"id":1}', mcp.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', mcp.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', mcp.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":"resources/list"}', mcp.METHOD_NOT_FOUND),
        (b"x" * (mcp.MAX_LINE_BYTES + 1), mcp.INVALID_REQUEST),
    ],
)
def test_hostile_lines_are_json_rpc_errors_never_a_crash(line, code):
    srv, _ = server()
    assert ask(srv, line)["error"]["code"] == code


def test_an_unknown_tool_is_an_invalid_params_error():
    srv, _ = server()
    assert ask(srv, call({}, name="other"))["error"]["code"] == mcp.INVALID_PARAMS
    assert ask(srv, call({}, name=None))["error"]["code"] == mcp.INVALID_PARAMS


def test_the_line_reader_bounds_a_huge_line_and_goes_on():
    huge = b"x" * (3 * mcp.MAX_LINE_BYTES) + b"\n"
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    lines = list(mcp.bounded_lines(io.BytesIO(huge + ping + b"[1]")))
    assert [len(line) for line in lines[:1]] == [mcp.MAX_LINE_BYTES + 1]
    assert lines[1:] == [ping, b"[1]"]
    out = io.StringIO()
    server()[0].serve(lines, out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r.get("result", r.get("error", {}).get("code")) for r in replies] == [
        mcp.INVALID_REQUEST,
        {},
        mcp.INVALID_REQUEST,
    ]


def test_session_and_turn_come_from_codex_meta_or_claude_codes_environment():
    assert mcp.session_and_turn(META, {}) == ("s1", "t1")
    assert mcp.session_and_turn({}, {}) == (None, None)
    empty = {"x-codex-turn-metadata": {"session_id": "", "turn_id": 3}}
    assert mcp.session_and_turn(empty, {}) == (None, None)
    assert mcp.session_and_turn({}, {"CLAUDE_CODE_SESSION_ID": "c1"}) == ("c1", None)
    assert mcp.session_and_turn(META, {"CLAUDE_CODE_SESSION_ID": "c1"}) == ("s1", "t1")


def test_a_new_prompt_drops_what_its_session_staged_before_it(tmp_path):
    from turn_support import hook_turn

    from hosts.adapters.generic import carry_on_settlements

    registry = bound_goal(tmp_path)
    store = settlement_store(str(registry), f1.GOAL)
    common = {"goal_id": f1.GOAL, "agent_id": f1.AGENT, "field": FIELD, "value": "v"}
    staged.stage(store, **common, session_id=None, turn_id=None)
    staged.stage(store, **common, session_id="other", turn_id=None)
    carry_on_settlements(hook_turn(registry, None))
    assert not staged.staged_path(store, f1.GOAL, f1.AGENT, None).exists()
    assert staged.staged_path(store, f1.GOAL, f1.AGENT, "other").exists(), "not this session"
    carry_on_settlements(hook_turn(registry, None))  # nothing staged: nothing to drop
    carry_on_settlements(hook_turn(tmp_path / "missing.json", None))  # no store: nothing


def test_a_staged_value_that_cannot_be_dropped_costs_the_turn_a_log_line(tmp_path, monkeypatch):
    from turn_support import hook_turn

    from hosts.adapters.generic import carry_on_settlements

    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(tmp_path / "state"))
    registry = bound_goal(tmp_path)
    store = settlement_store(str(registry), f1.GOAL)
    common = {"goal_id": f1.GOAL, "agent_id": f1.AGENT, "field": FIELD, "value": "v"}
    staged.stage(store, **common, session_id=None, turn_id=None)
    path = staged.staged_path(store, f1.GOAL, f1.AGENT, None)
    path.unlink()
    path.mkdir(mode=0o700)  # a directory where the sidecar was: unlink refuses it
    carry_on_settlements(hook_turn(registry, None))
    log = json.loads((tmp_path / "state" / "hook-log.json").read_text())
    assert "sidecar_not_regular" in {entry["reason_code"] for entry in log["entries"]}


@pytest.mark.parametrize(
    "tools",
    [
        {"other_field": REFLECTION_TOOL},
        {FIELD: {**REFLECTION_TOOL, "max_chars": 0}},
        {FIELD: {**REFLECTION_TOOL, "max_chars": True}},
        {FIELD: {**REFLECTION_TOOL, "name": "Bad Name"}},
        {FIELD: {**REFLECTION_TOOL, "input_schema": {"type": "string"}}},
        {FIELD: {**REFLECTION_TOOL, "check_schema": {"type": "string"}}},
        {FIELD: {**REFLECTION_TOOL, "check_schema": "strict"}},
        {FIELD: {**REFLECTION_TOOL, "title": "Reflection"}},
        {FIELD: {"name": "record_reflection"}},
        {FIELD: "tool"},
        [],
    ],
)
def test_a_malformed_result_tool_is_a_registration_error(tools):
    registration = SettlementRegistration(
        hook_id="x.y", capability_id="x", result_fields=(FIELD,), result_tools=tools
    )
    with pytest.raises(RegistrationError):
        validate_settlement_registration(registration)


# --- staging sidecar ----------------------------------------------------------------


def test_staging_is_private_per_session_and_taken_once(tmp_path):
    registry = bound_goal(tmp_path)
    store = settlement_store(str(registry), f1.GOAL)
    common = {"goal_id": f1.GOAL, "agent_id": f1.AGENT}
    staged.stage(store, **common, session_id="s1", turn_id="t1", field=FIELD, value="one")
    staged.stage(store, **common, session_id="s1", turn_id="t1", field=FIELD, value="two")
    path = staged.staged_path(store, f1.GOAL, f1.AGENT, "s1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    fields = {FIELD: "reflection_block"}
    assert staged.take(store, **common, session_id="s2", turn_id="t1", fields=fields) == {}
    assert staged.take(store, **common, session_id="s1", turn_id="t1", fields=fields) == {
        FIELD: "two"
    }
    assert not path.exists()
    assert staged.take(store, **common, session_id="s1", turn_id="t1", fields=fields) == {}


def test_a_value_staged_for_another_turn_or_field_is_never_settled(tmp_path):
    registry = bound_goal(tmp_path)
    store = settlement_store(str(registry), f1.GOAL)
    common = {"goal_id": f1.GOAL, "agent_id": f1.AGENT}
    staged.stage(store, **common, session_id="s1", turn_id="t0", field=FIELD, value="old")
    staged.stage(store, **common, session_id="s1", turn_id="t0", field="other_field", value="x")
    fields = {FIELD: "reflection_block"}
    assert staged.take(store, **common, session_id="s1", turn_id="t1", fields=fields) == {}
    # A host that names no session or Turn: the next Stop of the Goal/Agent takes it.
    staged.stage(store, **common, session_id=None, turn_id=None, field=FIELD, value="any")
    assert staged.take(store, **common, session_id="s9", turn_id="t5", fields=fields) == {
        FIELD: "any"
    }
    assert (
        staged.take(
            store, goal_id=None, agent_id=f1.AGENT, session_id="s1", turn_id="t", fields=fields
        )
        == {}
    )
    staged.stage(store, **common, session_id="s3", turn_id="t", field=FIELD, value="v")
    path = staged.staged_path(store, f1.GOAL, f1.AGENT, "s3")
    path.write_text(json.dumps({"results": {FIELD: "not an entry"}}))
    assert staged.take(store, **common, session_id="s3", turn_id="t", fields=fields) == {}


# --- real processes: the server, then the Stop hook ---------------------------------


def serve_process(registry, *lines):
    argv = [sys.executable, "-m", "hosts.cli", "mcp", "serve", "--goal-id", f1.GOAL]
    argv += ["--agent-id", f1.AGENT, "--registry", str(registry)]
    result = subprocess.run(
        argv, input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_a_staged_reflection_is_learned_with_no_block_in_the_answer(tmp_path):
    registry = bound_goal(tmp_path)
    replies = serve_process(
        registry,
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        call(f1.REFLECTION, {"x-codex-turn-metadata": {"session_id": "s1", "turn_id": "t1"}}),
    )
    assert replies[-1]["result"]["isError"] is False
    event = {"turn_id": "t1", "session_id": "s1", "last_assistant_message": "The test is fixed."}
    result = run_process(hook_argv(registry), json.dumps(event))
    assert result.returncode == 0, result.stderr
    [journal] = journals_after_settlement(registry.parent / "repo")
    assert journal["public_receipt"]["status"] == "activated"
    assert journal["public_receipt"]["exact_readback_verified"] is True


def test_without_a_staged_value_the_final_message_block_still_settles(tmp_path):
    registry = bound_goal(tmp_path)
    serve_process(registry, call(f1.REFLECTION, {"x-codex-turn-metadata": {"turn_id": "t0"}}))
    block = f"Done.\n<{FIELD}>{json.dumps(f1.REFLECTION)}</{FIELD}>"
    event = {"turn_id": "t1", "session_id": "s1", "last_assistant_message": block}
    assert run_process(hook_argv(registry), json.dumps(event)).returncode == 0
    [journal] = journals_after_settlement(registry.parent / "repo")
    assert journal["public_receipt"]["exact_readback_verified"] is True


def test_an_unusable_binding_exits_2_before_serving(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "hosts.cli",
        "mcp",
        "serve",
        "--goal-id",
        "g",
        "--agent-id",
        "a",
    ]
    result = run_process([*argv, "--registry", str(tmp_path / "missing.json")])
    assert result.returncode == 2
    assert json.loads(result.stdout)["reason_code"] == "registry_unreadable"


def test_an_unreadable_staging_sidecar_costs_the_tool_value_not_the_settlement(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(tmp_path / "state"))
    registry = bound_goal(tmp_path)
    store = settlement_store(str(registry), f1.GOAL)
    common = {"goal_id": f1.GOAL, "agent_id": f1.AGENT, "field": FIELD, "value": "v"}
    staged.stage(store, **common, session_id="s1", turn_id="t1")  # the store makes the dirs
    staged.staged_path(store, f1.GOAL, f1.AGENT, "s1").write_text("{garbled")
    block = f"Done.\n<{FIELD}>{json.dumps(f1.REFLECTION)}</{FIELD}>"
    event = {"turn_id": "t1", "session_id": "s1", "last_assistant_message": block}

    result = subprocess.run(
        hook_argv(registry),
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "TURN_HOOKS_STATE_DIR": str(tmp_path / "state")},
    )
    assert result.returncode == 0
    [journal] = journals_after_settlement(registry.parent / "repo")
    assert journal["public_receipt"]["exact_readback_verified"] is True
    log = subprocess.run(
        [sys.executable, "-m", "hosts.cli", "log"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TURN_HOOKS_STATE_DIR": str(tmp_path / "state")},
    )
    assert "staged_result_unreadable" in log.stdout


def test_a_real_server_answers_hostile_bytes_with_errors_and_serves_on(tmp_path):
    registry = bound_goal(tmp_path)
    argv = [sys.executable, "-m", "hosts.cli", "mcp", "serve", "--goal-id", f1.GOAL]
    argv += ["--agent-id", f1.AGENT, "--registry", str(registry)]
    hostile = [
        b"\xff\xfe not utf-8",
        b"[" * 100_000,
        b'{"jsonrpc":"2.0","id":1,"method":"ping","n":' + b"9" * 100_000 + b"}",
        b"y" * (2 * mcp.MAX_LINE_BYTES),
        call({"deep": [[[[[[[[[[[[1]]]]]]]]]]]]}).encode(),
        b'{"jsonrpc":"2.0","id":"last","method":"ping"}',
    ]
    result = subprocess.run(
        argv, input=b"\n".join(hostile) + b"\n", capture_output=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r.get("error", {}).get("code") for r in replies[:4]] == [
        mcp.PARSE_ERROR,
        mcp.PARSE_ERROR,
        mcp.PARSE_ERROR,
        mcp.INVALID_REQUEST,
    ]
    assert replies[4]["result"]["isError"] is True
    assert replies[5] == {"jsonrpc": "2.0", "id": "last", "result": {}}


def test_the_installed_server_names_its_binding_from_where_the_host_starts_it(tmp_path):
    """`install` names no Goal (one server per host home serves every repository): in
    a Goal's repository the server offers its tools and stages for that Goal; outside
    every Goal's repository it offers none, and the host still gets a working server."""
    registry = bound_goal(tmp_path)
    argv = [sys.executable, "-m", "hosts.cli", "mcp", "serve", "--registry", str(registry)]
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    inside = registry.parent / "repo"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    listed = {}
    for where in (inside, outside):
        result = subprocess.run(
            argv,
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            cwd=where,
            env=env,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        replies = [json.loads(line) for line in result.stdout.splitlines()]
        listed[where] = [tool["name"] for tool in replies[1]["result"]["tools"]]
    assert listed == {inside: ["record_reflection", "record_memory_use"], outside: []}
