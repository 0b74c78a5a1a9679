"""Property-based fuzzing of every command and host hook (issue 13, "Done when" 2).

The commands come from the real parser, so a new command or option is fuzzed without
a change here. Each example runs ``hosts.cli.command.main`` in-process in a fresh scratch tree
(HOME, the XDG directories, the state directory, the working directory and TMPDIR all
inside it), with hostile argv values, ``--input`` files and stdin: deep nesting, huge
numbers, lone surrogates and invalid UTF-8, NUL bytes, unknown keys and wrong types.
A few cases run as real processes, for bytes that only a real argv or stdin carries.

It asserts what the README promises: exit 0 or 2 (a host hook: always 0), stdout
that is valid UTF-8, a typed reason code in every JSON error and in the hook log,
never ``internal_error`` and never a traceback, and no write at all for rejected
input: the scratch tree is compared before and after (a host hook may only append
to its own hook log).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from document_paths import paths
from fixtures import f1
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from turn_support import RAW, bound_goal

from hosts.cli import command as cli

ROOT = Path(__file__).parent.parent
VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]

# --- the commands, from the real parser -------------------------------------------------


def leaf_commands(parser, prefix=()):
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield " ".join(prefix), parser
        return
    for name, sub in groups[0].choices.items():
        yield from leaf_commands(sub, (*prefix, name))


COMMANDS = dict(leaf_commands(cli.build_parser()))
HOOKS = {name for name in COMMANDS if name.startswith("host ")}

# Commands that write by design when they accept their input; every other command
# must leave the scratch tree untouched even when it exits 0.
WRITERS = {
    "schema": "--output writes the schema files",
    "sidecar check": "--repair narrows a widened mode",
    "install": "writes hooks.json or the DSH patch layer",
    "settle": "carries spooled settlements on",
    "codex-app refresh-state": "records the settled Turn and stages its reflection",
    "codex-app spend-slot": "--execute records the spend",
    "reward-memory configure": "--execute commits the binding",
    "reward-memory ingest-event": "--execute writes with exact readback",
    "reward-memory reconcile": "retries pending journals",
    "reward-memory retire": "--execute replaces the record",
    "memory forget": "retires the named records with exact readback",
    "memory restore": "writes the forgotten records back with exact readback",
    "memory import": "writes the checked records",
    "memory export": "--output writes the JSON Lines file",
    "conformance run": "runs the scenarios in a temporary workspace",
    "init": "writes the registry entry and the config, then enables the Agent",
}
# Accepted in full, these run real host binaries or a whole suite (seconds each): their
# examples always carry one argument argparse refuses, so their argument parsing is
# fuzzed and their bodies are covered by their own tests.
ALWAYS_REFUSED = {
    "conformance run": "starts real hosts against fake model servers",
    "reward-memory evaluate": "runs the eight-case Stage 4 suite",
    "validate command": "runs whatever command it is given",
}


def test_the_declarations_name_real_commands():
    assert set(WRITERS) <= set(COMMANDS) and set(ALWAYS_REFUSED) <= set(COMMANDS)
    assert HOOKS == {"host generic", "host codex-cli", "host dsh"}


# --- hostile values -------------------------------------------------------------------


class Blob(bytes):
    """Bytes with a short repr, so a failure report stays readable."""

    def __repr__(self):
        head = bytes(self[:40])
        return f"Blob({head!r}{'...' if len(self) > 40 else ''}, {len(self)} bytes)"

    def _repr_pretty_(self, printer, cycle):  # what Hypothesis prints in a failure
        printer.text(repr(self))


class Text(str):
    """A string with a short repr."""

    __slots__ = ()

    def __repr__(self):
        head = str(self[:40])
        return f"Text({head!r}{'...' if len(self) > 40 else ''}, {len(self)} chars)"

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self))


DEEP = "[" * 100_000
HUGE = "9" * 5000
NASTY_TEXT = [
    "",
    " ",
    "\0",
    "a\0b",
    "\udcff",
    "caf\udce9",
    "\ud800",
    HUGE,
    DEEP,
    "-1",
    "0",
    "1e999",
    "NaN",
    "-",
    "--",
    "/",
    "../../etc/passwd",
    "x" * 5000,
    "\u202e\u2066",
    "{}",
    "[]",
    "null",
    "/home/someone/secret",
    "api_key=abcdefghijklmnop",
]
text = (
    st.sampled_from(NASTY_TEXT)
    | st.text(
        st.characters() | st.sampled_from(["\0", "\udcff", "\ud800", "[", '"', "\\"]),
        max_size=30,
    )
).map(Text)
NASTY_DOCUMENTS = [
    DEEP.encode(),
    b"[" * 65 + b"]" * 65,
    b'{"a":' * 1000 + b"1" + b"}" * 1000,
    HUGE.encode(),
    b'{"n": ' + b"7" * 4301 + b"}",
    b"1e999",
    b"NaN",
    b"[-Infinity]",
    b'{"a": "\xff"}',
    b"\xff\xfe",
    b"\xc3",
    b'"\\ud800"',
    b'{"\\udfff": 1}',
    b"\x00",
    b'{"a": "\x00"}',
    b'{"a": "\\u0000"}',
    b"",
    b" ",
    b"{",
    b"null",
    b"[]",
    b"{}",
    b'"text"',
    b"0",
]
# Raw JSON fragments for mutations; the huge integer cannot go through json.dumps.
FRAGMENTS = [
    "[" * 70 + "]" * 70,
    "7" * 4301,
    "1" * 101,
    "1e999",
    '"\\ud800"',
    '"a\\u0000b"',
    '"\\udcff"',
    "null",
    "true",
    "-1",
    "[]",
    "{}",
    '""',
    '"x"',
    json.dumps("x" * 5000),
    '{"unknown_key": 1}',
    # Mixed-type and object lists, where a homogeneous list or a scalar is expected
    # (issue 37: values used as keys or sorted before their type was checked).
    '["b", "a", 1]',
    '[{"k": 1}, {"k": 2}]',
    "1.5",
]
HOLE = "@@fuzz-hole@@"

TURN = {
    "host": "generic_cli",
    "host_turn_id": "t-1",
    "observed_at": f1.OBSERVED_AT,
    "turn_envelope": {"goal_id": f1.GOAL, "agent_id": f1.AGENT},
    "payload": {"turn_envelope": {"goal_id": f1.GOAL, "agent_id": f1.AGENT}},
}
SETTLEMENT = {"host_result": {}, "evidence": {"writeback": {"ok": True, "appended": True}}}


def _bases():
    message = f"done\n<reward_memory_reflection_json>{RAW}</reward_memory_reflection_json>"
    event = {
        "turn_id": "t1",
        "session_id": "s1",
        "prompt_id": "p1",
        "prompt": "fix the tests",
        "cwd": ".",
        "hook_event_name": "Stop",
        "timestamp": "2026-11-29T10:00:00Z",
        "last_assistant_message": message,
        "prompt_response": message,
    }
    return {
        "dispatch pre-turn": TURN,
        "dispatch post-settlement": {"turn": TURN, "settlement": SETTLEMENT},
        "reward-memory ingest-event": {"event": f1.event(), "observed_at": f1.OBSERVED_AT},
        "reward-memory candidate-review": {"candidate": {}, "review": {}},
        "reward-memory utility-project": {"observations": [], "scope": {}},
        "reward-memory utility-observe": {
            "application_receipt": {},
            "verified_outcome": {},
            "attribution_context": {},
            "created_at": f1.OBSERVED_AT,
        },
        "hook": event,
    }


BASES = _bases()


@st.composite
def mutated(draw, base):
    """``base`` with one place replaced, removed or given an unknown key, as bytes."""
    document = json.loads(json.dumps(base))
    path = draw(st.sampled_from(list(paths(document))))
    fragment = draw(st.sampled_from(FRAGMENTS) | st.just(None))
    if not path:
        return (fragment or "{}").encode()
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    operation = draw(st.sampled_from(["replace", "remove", "unknown"]))
    if operation == "remove" and isinstance(parent, dict):
        del parent[path[-1]]
    elif operation == "unknown" and isinstance(parent, dict):
        parent["unknown_key_" + draw(st.sampled_from(["a", "\udcff", "\0"]))] = 1
    else:
        parent[path[-1]] = HOLE
    raw = json.dumps(document, ensure_ascii=False)
    raw = raw.replace(json.dumps(HOLE), fragment or json.dumps(draw(text)))
    return raw.encode("utf-8", "surrogatepass")


def documents(kind):
    """Hostile file or stdin content: fixed nasties, random JSON, or a mutated base."""
    random_json = st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=8,
    ).map(lambda value: json.dumps(value).encode())
    choices = st.sampled_from(NASTY_DOCUMENTS) | random_json
    if kind in BASES:
        choices = choices | mutated(BASES[kind])
    return choices.map(Blob)


JSON_ARGV = (
    st.sampled_from(
        [
            *("[1]", "[]", "{}", "not json", '[""]', '["a\\u0000"]', '["\\ud800"]', DEEP, HUGE),
            *(json.dumps(["/nonexistent/validator"]), '["x", 1]', '"python"'),
        ]
    )
    | text.map(lambda item: json.dumps([item]))
).map(Text)

PATH_OPTIONS = {"--root", "--output", "--codex-home", "--cwd", "--validation-workspace"}
PATH_OPTIONS |= {"--patch-file", "--codex-bin", "--binary", "--config"}
INPUT_OPTIONS = {"--input", "path", "paths"}
ARGV_OPTIONS = {"--validation-command-json", "--evaluator-command-json"}
REFLECTION_OPTIONS = {"--reward-memory-reflection-json"}
BINDING_VALUES = {"--goal-id": f1.GOAL, "--agent-id": f1.AGENT}


def name_of(action):
    return action.option_strings[-1] if action.option_strings else action.dest


@st.composite
def value_for(draw, action, scratch):
    """One value for ``action``: mostly plausible, often hostile, never skipped."""
    name = name_of(action)
    hostile = draw(st.integers(0, 3)) == 0
    if hostile:
        return draw(text)
    if name in INPUT_OPTIONS:
        return draw(
            st.sampled_from(
                [str(scratch / "input.json"), "-", str(scratch / "missing.json"), str(scratch)]
            )
        )
    if name == "--registry":
        return draw(st.sampled_from([str(scratch / "registry.json"), str(scratch / "input.json")]))
    if name in ARGV_OPTIONS:
        return draw(JSON_ARGV | st.just(json.dumps(VALIDATOR)))
    if name in REFLECTION_OPTIONS:
        return draw(
            st.just(RAW) | documents("reflection").map(lambda b: b.decode("utf-8", "replace"))
        )
    if name in PATH_OPTIONS:
        return draw(st.sampled_from([str(scratch / "out"), str(scratch), "x/../../y", "."]))
    if action.choices is not None:
        return str(draw(st.sampled_from(list(action.choices))))
    if action.type is int:
        return draw(st.sampled_from(["1", "3", "0", "-1", "99", HUGE, "abc", "1e3"]))
    if name in BINDING_VALUES:
        return BINDING_VALUES[name]
    return draw(st.sampled_from(["q", "t1", "c-1", f1.OBSERVED_AT, "why", "pr-3237"]))


@st.composite
def invocation(draw, command, scratch):
    """An argv for ``command`` from its parser's own actions, plus optional extras."""
    argv = command.split()
    for action in COMMANDS[command]._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if not (action.required or draw(st.booleans())):
            continue
        if action.nargs == 0:
            argv.append(action.option_strings[0])
            continue
        values = [draw(value_for(action, scratch))]
        if action.nargs == "*":
            values = draw(st.lists(value_for(action, scratch), max_size=2))
        if action.option_strings:
            for value in values:
                argv += [action.option_strings[0], value]
        else:
            argv += values
    extras = st.sampled_from([["--bogus"], ["--format"], ["\udcff"], ["-h"], ["a\0"]])
    if command in ALWAYS_REFUSED:
        argv += draw(extras.filter(lambda extra: extra != ["-h"]))
    elif draw(st.integers(0, 4)) == 0:
        argv += draw(extras)
    return argv


# --- one in-process run, and what it must not do --------------------------------------

TYPED = re.compile(r"[a-z][a-z0-9_.:-]{0,79}")
ERROR_SCHEMAS = {"turn_hooks_error_v0", "reward_memory_error_v0"}
# Reasons with which a hook refuses its input before anything is settled.
HOOK_REFUSALS = re.compile(
    r"hook_input_\w+|hook_arguments_invalid|host_turn_id_missing|validation_declaration_invalid"
)
HOOK_LOG = ("state/hook-log.json", "state/hook-log.json.lock")


def snapshot(root):
    """Every entry below ``root``: kind, mode, and for files size and mtime."""
    entries = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            key = os.path.relpath(path, root)
            if stat.S_ISDIR(info.st_mode):
                entries[key] = ("dir", stat.S_IMODE(info.st_mode))
            else:
                entries[key] = (
                    stat.S_IFMT(info.st_mode),
                    stat.S_IMODE(info.st_mode),
                    info.st_size,
                    info.st_mtime_ns,
                )
    return entries


def hook_log(scratch):
    path = scratch / "state" / "hook-log.json"
    return json.loads(path.read_text())["entries"] if path.exists() else []


@contextlib.contextmanager
def scratch_tree(parent, registry):
    """A fresh tree for one example; the environment points every default inside it.

    ``registry`` is ``"bound"`` (a Goal bound on the embedded store), hostile bytes for
    the registry file, or ``None`` for no registry file at all.
    """
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-", dir=parent))
    for part in ("home", "xdg/config", "xdg/data", "xdg/state", "xdg/cache", "state"):
        (scratch / part).mkdir(parents=True)
    (scratch / "cwd").mkdir()
    (scratch / "tmp").mkdir()
    if registry == "bound":
        bound_goal(scratch / "goal")
        (scratch / "goal" / "registry.json").rename(scratch / "registry.json")
    elif registry is not None:
        (scratch / "registry.json").write_bytes(registry)
    with pytest.MonkeyPatch.context() as env:
        for name in list(os.environ):
            if name.startswith(("TURN_HOOKS_", "OPENVIKING_", "CODEX_", "XDG_")):
                env.delenv(name)
        env.setenv("HOME", str(scratch / "home"))
        for part in ("config", "data", "state", "cache"):
            env.setenv(f"XDG_{part.upper()}_HOME", str(scratch / "xdg" / part))
        env.setenv("TURN_HOOKS_STATE_DIR", str(scratch / "state"))
        env.setenv("TMPDIR", str(scratch / "tmp"))
        env.setenv("PATH", "/usr/bin:/bin")  # no real host binary is ever found
        env.setattr(tempfile, "tempdir", str(scratch / "tmp"))
        env.chdir(scratch / "cwd")
        try:
            yield scratch
        finally:
            os.chdir(ROOT)
    shutil.rmtree(scratch, ignore_errors=True)


def run_in_process(argv, stdin: bytes):
    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        patch.setattr(sys, "stdout", stdout)
        patch.setattr(sys, "stderr", err)
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # --help
            code = -1 if exc.code not in (0, None) else 0
            assert "-h" in argv or "--help" in argv
        stdout.flush()
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue()


def unbounded(path) -> bool:
    """``path`` holds JSON that only a bounded reader refuses safely: deep or a huge int."""
    from turn_hooks import InvalidInputError, loads_bounded

    try:
        loads_bounded(Path(path).read_bytes())
    except InvalidInputError as exc:
        return exc.reason_code in {"input_too_deep", "input_number_too_long"}
    except (OSError, ValueError):
        return False
    return False


def option(argv, name):
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def check(command, argv, code, out, scratch, before, log_before):
    """The promises, for one run."""
    text_out = out.decode("utf-8")  # strict: stdout is always valid UTF-8
    log = hook_log(scratch)[len(log_before) :]
    assert "internal_error" not in text_out and "Traceback" not in text_out
    for entry in log:
        assert TYPED.fullmatch(entry["reason_code"]) and entry["reason_code"] != "internal_error"
    after = snapshot(scratch)
    if command in HOOKS or argv[:1] == ["host"]:
        assert code == 0, "a host hook always exits 0"
        for name in HOOK_LOG:
            before.pop(name, None)
            after.pop(name, None)
        refused = any(HOOK_REFUSALS.fullmatch(entry["reason_code"]) for entry in log)
        if refused:
            assert after == before, "a hook that refused its input wrote something"
        if text_out.strip() and text_out.lstrip().startswith("{"):
            assert isinstance(json.loads(text_out), dict)
        return
    assert log == [], "only host hooks write the hook log"
    if command == "validate command" and code == 1:
        # The validator protocol's "failed": `--check` ran ARGV and it did not pass.
        if text_out.lstrip().startswith("{"):
            assert json.loads(text_out)["schema_version"] == "turn_hooks_command_check_v0"
        else:  # --format markdown: the same receipt, as a table
            assert "| schema_version | turn_hooks_command_check_v0 |" in text_out
        return
    assert code in (0, 2), code
    refused = False
    if text_out.lstrip().startswith("{"):
        document = json.loads(text_out)
        if document.get("schema_version") in ERROR_SCHEMAS:
            assert code == 2 and TYPED.fullmatch(document["reason_code"]), document
            refused = True
    # A writer may write before its verdict (--repair, then exit 2 for what is left);
    # a refusal, a typed error, must not have written anything.
    if refused or command not in WRITERS:
        assert after == before, f"{command} wrote for {argv!r}"


# `FUZZ_EXAMPLES=500 pytest tests/test_fuzz_entry_points.py` searches deeper than make test.
SCALE = int(os.environ.get("FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


@pytest.fixture(scope="module")
def scratch_parent(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def command_params():
    for name in sorted(COMMANDS):
        yield pytest.param(name, id=name.replace(" ", "-"))


@pytest.mark.slow
@pytest.mark.parametrize("command", list(command_params()))
@settings(FUZZ, max_examples=SCALE or 18)
@given(data=st.data())
def test_every_command_keeps_its_promises_on_hostile_input(scratch_parent, command, data):
    registry = data.draw(
        st.sampled_from(["bound", "bound", None]) | documents("registry"), label="registry"
    )
    with scratch_tree(scratch_parent, registry) as scratch:
        kind = "hook" if command in HOOKS else command
        (scratch / "input.json").write_bytes(data.draw(documents(kind), label="input"))
        argv = data.draw(invocation(command, scratch), label="argv")
        stdin = data.draw(documents(kind), label="stdin")
        before, log_before = snapshot(scratch), hook_log(scratch)
        code, out = run_in_process(argv, stdin)
        check(command, argv, code, out, scratch, before, log_before)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(HOOKS))
@settings(FUZZ, max_examples=SCALE or 40)
@given(data=st.data())
def test_host_hooks_fail_open_on_hostile_events(scratch_parent, command, data):
    """The hook's stdin is its main input: valid arguments, a bound Goal, hostile events."""
    with scratch_tree(scratch_parent, "bound") as scratch:
        event = data.draw(st.sampled_from(["pre-turn", "post-settlement"]), label="event")
        argv = [*command.split(), event, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
        argv += ["--registry", str(scratch / "registry.json")]
        if command == "host generic":
            dialect = data.draw(st.sampled_from(["plain", "claude-code", "gemini"]))
            argv += ["--dialect", dialect]
        if event == "post-settlement":
            argv += ["--validation-command-json", data.draw(JSON_ARGV, label="validator")]
        stdin = data.draw(documents("hook"), label="stdin")
        before, log_before = snapshot(scratch), hook_log(scratch)
        code, out = run_in_process(argv, stdin)
        check(command, argv, code, out, scratch, before, log_before)


# --- real processes: bytes that only a real argv or stdin carries ------------------------

PROCESS_CASES = [
    pytest.param([b"plugins", b"--format", b"\xff"], b"", id="argv-byte"),
    pytest.param([b"dispatch", b"pre-turn"], b'{"host": "\xff"}', id="stdin-byte"),
    pytest.param([b"dispatch", b"pre-turn"], DEEP.encode(), id="stdin-deep"),
    pytest.param(
        [b"reward-memory", b"recall", b"--goal-id", b"g", b"--agent-id", b"\xfe", b"--query", b"q"],
        b"",
        id="rm-argv-byte",
    ),
    pytest.param(
        [b"host", b"codex-cli", b"post-settlement", b"--goal-id", b"\xff", b"--agent-id", b"a"],
        b"{}",
        id="hook-argv-byte",
    ),
    pytest.param(
        [b"host", b"generic", b"pre-turn", b"--goal-id", b"g", b"--agent-id", b"a"],
        b'{"turn_id": "t\xff", "prompt": "\xc3"}',
        id="hook-stdin-byte",
    ),
]


@pytest.mark.parametrize(("argv", "stdin"), PROCESS_CASES)
def test_real_processes_with_bytes(tmp_path, argv, stdin):
    scratch = tmp_path / "scratch"
    (scratch / "state").mkdir(parents=True)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch),
        "TURN_HOOKS_STATE_DIR": str(scratch / "state"),
        "LC_ALL": "C",  # the locale under which Python would write surrogates as raw bytes
    }
    before = snapshot(scratch)
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *argv],
        input=stdin,
        capture_output=True,
        check=False,
        cwd=ROOT,
        env=env,
    )
    assert b"Traceback" not in result.stdout + result.stderr
    out = result.stdout.decode("utf-8")
    if argv[0] == b"host":
        assert result.returncode == 0
        assert [e["reason_code"] for e in hook_log(scratch)] != ["internal_error"]
        return
    assert result.returncode == 2
    assert TYPED.fullmatch(json.loads(out)["reason_code"])
    assert snapshot(scratch) == before


# --- the known defects, each pinned until it is fixed ------------------------------------

UNBOUNDED = [pytest.param(DEEP, id="deep"), pytest.param('{"goals": ' + "7" * 4301 + "}", id="int")]


def state_log():
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    return json.loads(path.read_text())["entries"] if path.exists() else []


def in_process(argv, stdin=b""):
    code, out = run_in_process(argv, stdin)
    return code, out.decode("utf-8")


@pytest.mark.parametrize("content", UNBOUNDED)
def test_a_hostile_registry_is_a_typed_error(tmp_path, content):
    registry = tmp_path / "registry.json"
    registry.write_text(content)
    argv = ["reward-memory", "experiment-status", "--registry", str(registry)]
    code, out = in_process([*argv, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT])
    assert (code, "internal_error" in out) == (2, False)


def test_a_hostile_registry_in_a_hook_is_a_typed_reason(tmp_path):
    registry = tmp_path / "registry.json"
    registry.write_text(DEEP)
    argv = ["host", "generic", "pre-turn", "--registry", str(registry)]
    code, _ = in_process([*argv, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT], b'{"turn_id": "t"}')
    reasons = [entry["reason_code"] for entry in state_log()]
    assert code == 0 and "internal_error" not in reasons


@pytest.mark.parametrize("command", ["show", "check"])
def test_a_hostile_sidecar_is_a_typed_error(tmp_path, command):
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    (root / "a.json").write_text(DEEP)
    (root / "a.json").chmod(0o600)
    argv = ["sidecar", command, "--root", str(root), str(root / "a.json")]
    code, out = in_process(argv)
    assert (code, "internal_error" in out) == (2, False)


def test_hostile_validator_output_is_no_attestation(tmp_path):
    registry = bound_goal(tmp_path)
    validator = json.dumps([sys.executable, "-c", "print('[' * 3000)"])
    message = f"done <reward_memory_reflection_json>{RAW}</reward_memory_reflection_json>"
    stdin = json.dumps({"turn_id": "t1", "last_assistant_message": message}).encode()
    argv = ["host", "generic", "post-settlement", "--registry", str(registry)]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--validation-command-json", validator]
    code, _ = in_process(argv, stdin)
    reasons = [entry["reason_code"] for entry in state_log()]
    assert code == 0 and "internal_error" not in reasons


def test_recall_creates_no_store(tmp_path):
    registry = bound_goal(tmp_path)
    argv = ["reward-memory", "recall", "--registry", str(registry), "--query", "q"]
    code, _ = in_process([*argv, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT])
    assert code == 0
    assert not (tmp_path / "repo" / ".local").exists()
