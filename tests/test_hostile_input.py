"""Hostile input (issue 13, items 3-5, 8 and 9): one bounded JSON reader, typed errors
with exit 2, host hooks that exit 0 on their own argument errors, and stdout that is
always valid UTF-8."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from hypothesis import given, settings
from hypothesis import strategies as st
from turn_support import RAW, bound_goal

from hosts.cli import command as cli
from turn_hooks import (
    MAX_JSON_DEPTH,
    MAX_NUMBER_CHARS,
    InvalidInputError,
    argv_from_json,
    loads_bounded,
)

ROOT = Path(__file__).parent.parent
VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]
DEEP = "[" * 1_000_000


def refusal(data, **options):
    with pytest.raises(InvalidInputError) as info:
        loads_bounded(data, **options)
    return info.value.reason_code


# --- the reader ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data", [DEEP, DEEP.encode(), '{"a":' * 500_000], ids=["str", "bytes", "obj"]
)
def test_a_million_deep_document_is_refused_without_recursion(data):
    # Refused by the bracket scan before any parser recurses (how fast is for
    # benchmarks, never a timed assertion here).
    assert refusal(data) == "input_too_deep"


def test_the_depth_bound_is_exact_and_ignores_brackets_in_strings():
    assert loads_bounded("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    assert refusal("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)) == "input_too_deep"
    assert loads_bounded(json.dumps(["[" * 1000, '{\\"[' * 100])) == ["[" * 1000, '{\\"[' * 100]
    wide = "[" + ",".join(["[[]]"] * 1000) + "]"
    assert len(loads_bounded(wide)) == 1000, "many shallow arrays are not deep"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param("1" * 5000, "input_number_too_long", id="int-over-4300-digits"),
        pytest.param("[" + "9" * (MAX_NUMBER_CHARS + 1) + "]", "input_number_too_long", id="int"),
        pytest.param("1." + "0" * MAX_NUMBER_CHARS, "input_number_too_long", id="float"),
        pytest.param("1e999", "input_number_out_of_range", id="overflow"),
        pytest.param("NaN", "input_not_json", id="nan"),
        pytest.param('{"a": -Infinity}', "input_not_json", id="infinity"),
        pytest.param("{", "input_not_json", id="truncated"),
        pytest.param("", "input_not_json", id="empty"),
        pytest.param(b'{"a": "\xff"}', "input_not_utf8", id="invalid-byte"),
        pytest.param('{"a": "\udcff"}', "input_not_utf8", id="raw-surrogate"),
        pytest.param('{"a": ["\\ud800"]}', "input_not_utf8", id="escaped-surrogate"),
        pytest.param('{"\\udfff": 1}', "input_not_utf8", id="surrogate-key"),
    ],
)
def test_what_the_reader_refuses(data, reason):
    assert refusal(data) == reason


def test_size_is_bounded_before_anything_is_decoded():
    assert refusal("[1]", max_size=2) == "input_too_large"
    assert refusal(b"\xff" * 3, max_size=2) == "input_too_large"
    assert loads_bounded(b"[1]", max_size=3) == [1]


def test_the_replace_policy_keeps_the_document():
    assert loads_bounded(b'{"m": "a\xffb"}', errors="replace") == {"m": "a\ufffdb"}
    assert loads_bounded('"\udcff"', errors="replace") == "\ufffd"
    document = '{"\\ud800": ["\\udfff", 1, "ok", "\\ud83d\\ude00"]}'
    assert loads_bounded(document, errors="replace") == {"\ufffd": ["\ufffd", 1, "ok", "😀"]}
    assert loads_bounded(document.replace("\\ud800", "k").replace('"\\udfff", ', ""))


def test_reason_codes_take_the_callers_prefix():
    assert refusal(DEEP, reason_prefix="hook_input") == "hook_input_too_deep"


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_every_bounded_document_round_trips(document):
    text = json.dumps(document, ensure_ascii=False)
    assert loads_bounded(text) == document
    assert loads_bounded(text.encode("utf-8")) == document


@pytest.mark.parametrize(
    "text",
    ["[1]", "[]", "{}", '"python"', "not json", '[""]', '["a\\u0000b"]', '["\\ud800"]', DEEP],
)
def test_an_argv_declaration_must_be_a_list_of_strings(text):
    with pytest.raises(InvalidInputError) as info:
        argv_from_json(text, reason_code="validation_declaration_invalid", field="f")
    assert (info.value.reason_code, info.value.field) == ("validation_declaration_invalid", "f")


def test_a_good_argv_declaration():
    assert argv_from_json('["python", "-c", ""]', reason_code="x") == ["python", "-c", ""]


# --- every command that reads JSON --------------------------------------------------


def main(capsys, monkeypatch, *argv, stdin=b""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = cli.main(list(argv))
    return code, json.loads(capsys.readouterr().out)


WHY = ("--reasoning-summary", "why")
INPUT_COMMANDS = [
    pytest.param(("dispatch", "pre-turn"), "turn_hooks_error_v0", id="dispatch-pre-turn"),
    pytest.param(("dispatch", "post-settlement"), "turn_hooks_error_v0", id="dispatch-post"),
    pytest.param(("reward-memory", "ingest-event"), "reward_memory_error_v0", id="ingest-event"),
    pytest.param(("reward-memory", "dogfood-evaluate"), "reward_memory_error_v0", id="dogfood"),
    pytest.param(
        ("reward-memory", "candidate-review", "--decision", "accept"),
        "reward_memory_error_v0",
        id="candidate-review",
    ),
    pytest.param(
        ("reward-memory", "operator-control", "--action", "edit", "--control-ref", "c", *WHY),
        "reward_memory_error_v0",
        id="operator-control",
    ),
    pytest.param(("reward-memory", "utility-project"), "reward_memory_error_v0", id="project"),
    pytest.param(("reward-memory", "utility-observe"), "reward_memory_error_v0", id="observe"),
    pytest.param(
        ("reward-memory", "retire", "--goal-id", f1.GOAL, "--agent-id", f1.AGENT),
        "reward_memory_error_v0",
        id="retire",
    ),
]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param(DEEP, "input_too_deep", id="deep"),
        pytest.param('{"a": ' + "7" * 5000 + "}", "input_number_too_long", id="4300-digits"),
        pytest.param(b'{"a": "\xff"}', "input_not_utf8", id="invalid-utf8"),
    ],
)
@pytest.mark.parametrize(("command", "schema"), INPUT_COMMANDS)
def test_every_input_file_goes_through_the_bounded_reader(
    capsys, monkeypatch, tmp_path, command, schema, content, reason
):
    source = tmp_path / "input.json"
    source.write_bytes(content if isinstance(content, bytes) else content.encode())
    registry = ("--registry", str(bound_goal(tmp_path))) if command[1] == "retire" else ()
    code, error = main(capsys, monkeypatch, *command, *registry, "--input", str(source))
    assert (code, error["schema_version"], error["reason_code"]) == (2, schema, reason)


def test_stdin_input_goes_through_the_bounded_reader(capsys, monkeypatch):
    code, error = main(capsys, monkeypatch, "dispatch", "pre-turn", stdin=DEEP.encode())
    assert (code, error["reason_code"]) == (2, "input_too_deep")


def test_an_argument_with_a_nul_is_a_typed_error_not_a_crash(capsys, monkeypatch):
    for command in (("dispatch", "pre-turn"), ("reward-memory", "utility-project")):
        code, error = main(capsys, monkeypatch, *command, "--input", "a\0b")
        assert (code, error["reason_code"]) == (2, "argument_contains_nul")


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        ("--validation-command-json", "validation_declaration_invalid"),
        ("--evaluator-command-json", "usage_invalid"),
    ],
)
@pytest.mark.parametrize("value", ["[1]", DEEP, "9" * 5000, '["a\\u0000"]'])
def test_json_argv_options_are_typed_errors(capsys, monkeypatch, tmp_path, option, value, reason):
    if option == "--validation-command-json":
        command = ("codex-app", "refresh-state", "--registry", str(bound_goal(tmp_path)))
        command += (
            "--goal-id",
            f1.GOAL,
            "--agent-id",
            f1.AGENT,
            "--todo-id",
            "t",
            "--turn-id",
            "u",
        )
    else:
        facts = tmp_path / "facts.json"
        facts.write_text("{}")
        command = ("reward-memory", "utility-observe", "--input", str(facts))
    code, error = main(capsys, monkeypatch, *command, option, value)
    assert (code, error["reason_code"], error["field"]) == (2, reason, option[2:].replace("-", "_"))


def test_an_evaluator_that_prints_hostile_output_is_not_observed(tmp_path):
    from capabilities.reward_memory.utility.evaluator import _run

    for output in ("[" * 100_000, "\xff"):
        script = f"import sys; sys.stdout.buffer.write({output.encode('latin-1')!r})"
        assert _run([sys.executable, "-c", script], {}, 10) == (
            None,
            "utility_evaluator_malformed",
        )
    assert _run(["a\0b"], {}, 10) == (None, "utility_evaluator_unavailable")


@pytest.mark.parametrize(
    ("extra", "field", "reason"),
    [
        (("--query", ""), "query", "text_not_public_safe"),
        (("--query", "q", "--surface-id", "nope"), "surface_id", "surface_not_configured"),
        (("--query", "q", "--query-summary", "see /home/me"), "query_summary", None),
        (("--query", "q", "--turn-key", "not a token"), "turn_key", "invalid_request"),
    ],
)
def test_recall_arguments_are_typed_errors_not_key_errors(
    capsys, monkeypatch, tmp_path, extra, field, reason
):
    registry = bound_goal(tmp_path)
    code, error = main(
        capsys,
        monkeypatch,
        "reward-memory",
        "recall",
        "--registry",
        str(registry),
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        *extra,
    )
    assert (code, error["schema_version"], error["field"]) == (2, "reward_memory_error_v0", field)
    assert error["reason_code"] == (reason or "text_not_public_safe")


def test_a_guard_rejection_left_after_the_checks_is_still_a_typed_error(
    capsys, monkeypatch, tmp_path
):
    from capabilities.reward_memory.memory import hook

    def rejected(*args, **kwargs):
        document = {"ok": True, "status": "guard_rejected", "reason_code": "r"}
        return hook.RecallHookResult(document=document)

    monkeypatch.setattr(hook, "run_automatic_recall", rejected)
    registry = str(bound_goal(tmp_path))
    argv = ("--registry", registry, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--query", "q")
    code, error = main(capsys, monkeypatch, "reward-memory", "recall", *argv)
    assert (code, error["reason_code"], error["field"]) == (2, "r", "request")


def test_a_disabled_recall_is_a_receipt_without_an_application(capsys, monkeypatch, tmp_path):
    registry = str(f1.write_goal(tmp_path, f1.config("embedded_sqlite", automatic_recall=False)))
    argv = ("--registry", registry, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--query", "q")
    code, document = main(capsys, monkeypatch, "reward-memory", "recall", *argv)
    assert (code, document["status"]) == (0, "disabled")
    assert "application" not in document


# --- command-line bytes and stdout ------------------------------------------------------


def process(*args, stdin=b""):
    """``python -m hosts.cli`` with bytes arguments, as a shell passes them."""
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *args],
        input=stdin,
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    assert b"Traceback" not in result.stdout + result.stderr
    return result.returncode, result.stdout.decode("utf-8")  # strict: must be UTF-8


QUERY = (b"--query", b"caf\xe9")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param((b"plugins", b"--format", b"\xff"), id="choice"),
        pytest.param(
            (b"reward-memory", b"recall", b"--goal-id", b"g", b"--agent-id", b"a", *QUERY),
            id="recall-query",
        ),
        pytest.param((b"dispatch", b"pre-turn", b"--input", b"/tmp/\xff.json"), id="path"),
    ],
)
def test_an_argument_that_is_not_utf8_is_a_typed_error(args):
    code, out = process(*args)
    error = json.loads(out)
    assert (code, error["reason_code"], error["schema_version"]) == (
        2,
        "argument_not_utf8",
        "turn_hooks_error_v0",
    )


def test_stdout_is_utf8_when_a_file_name_is_not(tmp_path):
    from sidecars import SidecarStore

    store = SidecarStore(tmp_path / "root")
    store.write(store.path("a.json"), {"schema_version": "demo_v0"})
    os.rename(store.path("a.json"), os.fsencode(store.root) + b"/\xff.json")
    code, out = process(b"sidecar", b"check", b"--root", os.fsencode(store.root))
    assert code in (0, 2)
    assert json.loads(out)["sidecars"][0]["name"] == "\ufffd.json"


def test_the_output_writer_replaces_lone_surrogates(capsys):
    cli._emit('{"name":"\udcff"}\n')
    assert capsys.readouterr().out == '{"name":"\ufffd"}\n'


# --- host hooks: exit 0 on their own argument errors --------------------------------------


def hook_log():
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    entries = json.loads(path.read_text())["entries"] if path.exists() else []
    return [(e["host"], e["event"], e["source"], e["reason_code"]) for e in entries]


BINDING = ("--goal-id", "g", "--agent-id", "a")
BINDING_BYTES = tuple(os.fsencode(arg) for arg in BINDING)


@pytest.mark.parametrize(
    ("argv", "out", "logged"),
    [
        pytest.param(
            ("host", "generic", "pre-turn", "--goal-id", "g"),
            "{}\n",
            ("generic", "pre_turn"),
            id="missing-agent-id",
        ),
        pytest.param(
            ("host", "codex-cli", "pre-turn", *BINDING, "--dialect", "claude"),
            "",
            ("codex-cli", "pre_turn"),
            id="dialect-on-codex-pre-turn",
        ),
        pytest.param(
            ("host", "generic", "post-settlement", *BINDING, "--dialect=claude-code", "--bogus"),
            "",
            ("claude-code", "post_settlement"),
            id="unknown-option-claude",
        ),
        pytest.param(
            ("host", "dsh", "post-settlement", *BINDING, "--validation-timeout-seconds", "99999"),
            "{}\n",
            ("dsh", "post_settlement"),
            id="timeout-out-of-range",
        ),
        pytest.param(
            ("host", "generic", "post-settlement", *BINDING, "--validation-timeout-seconds", "x"),
            "{}\n",
            ("generic", "post_settlement"),
            id="timeout-not-int",
        ),
        pytest.param(
            ("host", "generic", "turn-start", *BINDING),
            "{}\n",
            ("generic", "unknown"),
            id="unknown-event",
        ),
        pytest.param(("host", "nope", "pre-turn"), "{}\n", ("unknown", "pre_turn"), id="host"),
        pytest.param(("host",), "{}\n", ("unknown", "unknown"), id="nothing"),
        pytest.param(
            ("host", "generic", "pre-turn", "--goal-id", "\udcff", "--agent-id", "a"),
            "{}\n",
            ("generic", "pre_turn"),
            id="argument-not-utf8",
        ),
    ],
)
def test_a_host_hook_exits_0_on_its_own_argument_errors(capsys, argv, out, logged):
    assert cli.main(list(argv)) == 0
    assert capsys.readouterr().out == out
    assert hook_log() == [(*logged, "adapter", "hook_arguments_invalid")]


def test_a_host_hook_argument_error_in_a_real_process():
    code, out = process(b"host", b"codex-cli", b"pre-turn", b"--goal-id", b"g")
    assert (code, out) == (0, "")
    code, out = process(
        b"host", b"generic", b"pre-turn", b"--goal-id", b"\xff", b"--agent-id", b"a"
    )
    assert (code, out) == (0, "{}\n")
    assert [entry[-1] for entry in hook_log()] == ["hook_arguments_invalid"] * 2


def test_host_hook_help_still_works():
    code, out = process(b"host", b"generic", b"pre-turn", b"--help")
    assert code == 0 and out.startswith("usage: turn-hooks host generic")
    assert hook_log() == []


def test_other_commands_still_exit_2_on_bad_usage(capsys):
    assert cli.main(["install", "vscode", "--goal-id", "g"]) == 2
    assert json.loads(capsys.readouterr().out)["reason_code"] == "usage_invalid"
    assert cli.main(["plugins", "--format", "a\0"]) == 2
    assert json.loads(capsys.readouterr().out)["reason_code"] == "argument_contains_nul"
    assert hook_log() == []


# --- the validator declaration, and bad bytes in the final message -----------------------


def message(prefix=""):
    return (
        f"{prefix}All done.\n<reward_memory_reflection_json>{RAW}</reward_memory_reflection_json>"
    )


def settle(registry, stdin, *extra):
    bound = ("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hosts.cli",
            "host",
            "generic",
            "post-settlement",
            *bound,
            *extra,
        ],
        input=stdin,
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0 and b"Traceback" not in result.stdout + result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("declaration", ["[1]", "[]", "{}", "not json", '[""]', "[" * 100_000])
def test_a_bad_validator_declaration_at_use_settles_nothing_and_says_why(tmp_path, declaration):
    registry = bound_goal(tmp_path)
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    stdin = json.dumps(event).encode()
    assert settle(registry, stdin, "--validation-command-json", declaration) == {}
    assert hook_log() == [
        ("generic", "post_settlement", "adapter", "validation_declaration_invalid")
    ]
    assert not (tmp_path / "repo" / ".local" / "turn-hooks" / "settlements").exists()


@pytest.mark.parametrize("declaration", ["[1]", "[]", "not json", '["a\\u0000"]'])
def test_a_bad_validator_declaration_is_refused_at_install(capsys, tmp_path, declaration):
    bad = ("--codex-bin", "/nonexistent/codex", "--validation-command-json", declaration)
    code = cli.main(
        ["install", "codex", "--registry", "r.json", *BINDING, "--codex-home", str(tmp_path), *bad]
    )
    error = json.loads(capsys.readouterr().out)
    assert (code, error["reason_code"]) == (2, "validation_declaration_invalid")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(b"\xff", id="invalid-byte"),
        pytest.param(b"\\udcff", id="lone-surrogate-escape"),
        pytest.param(b"\xe2\x82", id="truncated-sequence"),
    ],
)
def test_one_bad_byte_in_the_final_message_still_learns(tmp_path, bad):
    registry = bound_goal(tmp_path)
    event = {
        "turn_id": "t1",
        "last_assistant_message": message("@@ "),
        "cwd": str(tmp_path / "repo"),
    }
    stdin = json.dumps(event).encode().replace(b"@@", bad)
    receipt = settle(registry, stdin, "--validation-command-json", json.dumps(VALIDATOR))
    ingest = receipt["results"]["reward-memory.outcome-ingest"]
    assert (ingest["status"], ingest["exact_readback_verified"]) == ("activated", True)
    assert hook_log() == [] or "internal_error" not in {entry[-1] for entry in hook_log()}


def test_hook_stdin_is_read_as_bytes_and_bounded():
    from hosts.adapters.generic import MAX_EVENT_CHARS, read_hook_stdin

    big = io.BufferedReader(io.BytesIO(b" " * (MAX_EVENT_CHARS + 10)))
    stream = io.TextIOWrapper(big)
    with pytest.raises(InvalidInputError) as too_large:
        read_hook_stdin(stream)
    assert too_large.value.reason_code == "hook_input_too_large"
    assert len(big.read()) == 9, "the read stops one byte over the bound: yes | never ends"
    assert read_hook_stdin(io.StringIO("{}")) == b"{}"
    closed = io.TextIOWrapper(io.BytesIO(b""))
    closed.buffer.close()
    with pytest.raises(InvalidInputError) as info:
        read_hook_stdin(closed)
    assert info.value.reason_code == "hook_input_unreadable"


def test_no_stdin_at_all_reads_as_empty(monkeypatch):
    from hosts.adapters.generic import read_hook_stdin

    monkeypatch.setattr(sys, "stdin", None)
    assert read_hook_stdin() == b""


def test_hook_stdin_nesting_and_numbers_are_typed_reasons(capsys, monkeypatch):
    for stdin, reason in (
        (DEEP, "hook_input_too_deep"),
        ("9" * 5000, "hook_input_number_too_long"),
    ):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        assert cli.main(["host", "generic", "pre-turn", *BINDING]) == 0
        assert capsys.readouterr().out == "{}\n"
        assert hook_log()[-1] == ("generic", "pre_turn", "adapter", reason)


@pytest.mark.parametrize(
    "reflection",
    [
        pytest.param("[" * 3000 + "]" * 3000, id="deep"),
        pytest.param('{"n": ' + "7" * 5000 + "}", id="4300-digits"),
    ],
)
def test_a_reflection_argument_that_no_reader_can_parse_is_a_typed_error(
    capsys, monkeypatch, tmp_path, reflection
):
    command = ("codex-app", "refresh-state", "--registry", str(bound_goal(tmp_path)))
    command += ("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--todo-id", "t", "--turn-id", "u")
    code, error = main(capsys, monkeypatch, *command, "--reward-memory-reflection-json", reflection)
    assert (code, error["reason_code"], error["field"]) == (
        2,
        "reflection_invalid",
        "reward_memory_reflection_json",
    )


def bound(tmp_path):
    """install's arguments for a real binding: its checks pass, so what follows is tested."""
    registry = bound_goal(tmp_path)
    return ["--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]


def test_install_codex_refuses_a_missing_binary_before_writing_hooks(capsys, tmp_path):
    not_executable = tmp_path / "codex"
    not_executable.write_text("")
    binding = [*bound(tmp_path), "--recall-only"]
    for binary in (str(tmp_path / "absent"), str(not_executable)):
        home = ("--codex-home", str(tmp_path / "home"))
        code = cli.main(["install", "codex", *binding, *home, "--codex-bin", binary])
        assert (code, json.loads(capsys.readouterr().out)["reason_code"]) == (2, "codex_not_found")
    assert not (tmp_path / "home").exists(), "no hooks.json for a refused install"


def fake_codex(tmp_path, script):
    """An executable that stands where codex should be (a real process, not a mock)."""
    binary = tmp_path / "fake-codex"
    binary.write_text(f"#!/bin/sh\n{script}\n")
    binary.chmod(0o700)
    return str(binary)


@pytest.mark.parametrize(
    "script",
    ["exit 1", 'read line; echo \'{"id": 1, "result": {}}\'; sleep 1'],
    ids=["app-server-dies", "hooks-stay-untrusted"],
)
@pytest.mark.parametrize("existing", [None, '{"hooks": {"Stop": []}, "theirs": 1}\n'])
def test_install_codex_puts_hooks_json_back_when_trusting_fails(capsys, tmp_path, script, existing):
    home = tmp_path / "home"
    home.mkdir()
    if existing is not None:
        (home / "hooks.json").write_text(existing)
    (home / "config.toml").write_text('model = "m"\n')
    argv = ["install", "codex", *bound(tmp_path), "--recall-only", "--codex-home", str(home)]
    code = cli.main([*argv, "--codex-bin", fake_codex(tmp_path, script)])
    refused = json.loads(capsys.readouterr().out)
    # Refused by the trust step itself (the binding's checks pass), and undone.
    assert (code, refused["reason_code"]) == (2, "codex_install_failed"), refused
    assert (home / "config.toml").read_text() == 'model = "m"\n'
    if existing is None:
        assert sorted(p.name for p in home.iterdir()) == ["config.toml"]
    else:
        assert (home / "hooks.json").read_text() == existing, "byte for byte as before"
        assert sorted(p.name for p in home.iterdir()) == ["config.toml", "hooks.json"]


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        pytest.param((b"host", b"generic", b"pre-turn", *BINDING_BYTES), b"nope", id="hook"),
        pytest.param((b"plugins",), b"", id="command"),
    ],
)
def test_a_reader_that_went_away_costs_nothing(args, stdin):
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "hosts.cli", *args],
            input=stdin,
            stdout=write,
            stderr=subprocess.PIPE,
            check=False,
            cwd=ROOT,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (0, b"")


def test_no_stdin_reads_as_empty_input(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    assert cli.main(["dispatch", "pre-turn"]) == 2
    assert json.loads(capsys.readouterr().out)["reason_code"] == "input_not_json"


def test_no_stdout_is_not_a_crash(monkeypatch):
    monkeypatch.setattr(sys, "stdout", None)
    assert cli.main(["plugins"]) == 0


def test_a_sidecar_root_the_system_refuses_is_a_typed_error(tmp_path, capsys):
    """Found by the fuzzer: a 5,000-character ``--root`` raised OSError (internal_error)."""
    root = str(tmp_path / ("a" * 5000))
    assert cli.main(["sidecar", "check", "--root", root]) == 2
    error = json.loads(capsys.readouterr().out)
    assert (error["error"], error["reason_code"]) == ("InvalidInputError", "sidecar_root_invalid")
    assert not any(tmp_path.iterdir()), "nothing was written"


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        pytest.param(("doctor", "codex", "--codex-home"), "hooks_json_unreachable", id="doctor"),
        pytest.param(
            ("install", "codex", "--uninstall", "--codex-home"),
            "hooks_json_unreachable",
            id="codex",
        ),
        pytest.param(
            ("install", "claude-code", "--uninstall", "--home"),
            "settings_json_unreachable",
            id="claude-code",
        ),
    ],
)
def test_a_host_home_whose_name_is_too_long_is_a_typed_error(
    capsys, monkeypatch, tmp_path, argv, reason
):
    # ENAMETOOLONG is not one of the errors pathlib's is_symlink() answers False for.
    registry = bound_goal(tmp_path / "goal")
    scratch = tmp_path / "cwd"
    scratch.mkdir()
    monkeypatch.chdir(scratch)
    binding = ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    code, error = main(capsys, monkeypatch, *argv, "9" * 5000, *binding)
    assert (code, error["reason_code"]) == (2, reason)
    assert list(scratch.iterdir()) == []
