"""Fuzz every entry point of turn-hooks with deterministic hostile input (issue 37).

Usage::

    PYTHONPATH=$PWD python benchmarks/fuzz_entry_points.py --seed 37 --count 9000 --processes 2

The entry points are enumerated mechanically, never listed by hand:

- every leaf command of the ``turn-hooks`` argparse tree (``cli <command>``);
- every host hook, ``turn-hooks host <host> <event>`` once per dialect, fed events on
  stdin (``hook <host> <event> [<dialect>]``);
- the MCP server's JSON-RPC over stdio (``mcp serve``);
- the Codex App refresh's ``--reward-memory-reflection-json``;
- the public Python API functions that take documents (``api <function>``).

Each input is generated from ``(seed, entry point, index)`` alone, so a run is
reproducible and a worker regenerates its share: structural mutations of valid
documents (from tests/fixtures), a value of another type at every leaf and container
(object, list, mixed list, number, 10**400, NaN, Infinity, -0.0, bool, null, "", a
100,000-character string, invalid UTF-8, surrogates, NUL, 10,000 levels of nesting,
duplicate keys), truncated JSON, random bytes and wrong flags. The bulk runs in-process
(``hosts.cli.command.main`` with argv, stdin and stdout replaced); one input in
``--subprocess-every`` runs as a real ``python -m hosts.cli`` process, as a host runs a
hook. Every state lives in a scratch tree: HOME, XDG_*, TURN_HOOKS_STATE_DIR and the
resident directory point inside it, and TURN_HOOKS_RESIDENT=0.

Each outcome is one class: ``ok`` (exit 0), ``refusal`` (exit 2 with a typed reason),
``hook_logged`` / ``hook_silent`` (a host hook's exit 0, with or without a logged
reason), ``jsonrpc_error`` (the MCP server answered a typed JSON-RPC error),
``other_exit`` (a documented exit such as ``validate command``'s 1), and the failures
``internal_error``, ``traceback``, ``hang`` and ``bad_stdout`` (not UTF-8, or a host
hook that did not exit 0). The run prints a Markdown summary and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT / "tests"), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from document_paths import paths as places  # noqa: E402
from fixtures import f1  # noqa: E402

from hosts.cli import command as cli  # noqa: E402

SCRATCH = "@SCRATCH@"
"""Stands for the scratch tree in a generated input; replaced when the input runs, so
generation does not depend on where the tree is."""
REGISTRY = f"{SCRATCH}/goal/registry.json"
REPO = f"{SCRATCH}/goal/repo"
BINDING = ["--registry", REGISTRY, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
VALIDATOR = json.dumps([sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")])
FAILURES = ("internal_error", "traceback", "hang", "bad_stdout")
TYPED = re.compile(r"[a-z][a-z0-9_.:-]{0,79}")
ERROR_SCHEMAS = {"turn_hooks_error_v0", "reward_memory_error_v0"}

# --- hostile values ----------------------------------------------------------------------

DEEP_ARRAY = "[" * 10_000 + "]" * 10_000
DEEP_OBJECT = '{"a":' * 10_000 + "1" + "}" * 10_000
WRONG_TYPES = [
    '{"k": 1}',
    "{}",
    "[]",
    '["b", "a", 1]',  # mixed: unsortable
    '[{"k": 1}, {"k": 2}]',  # objects: unhashable, unsortable
    '[1, "a", null, true, {"k": []}, [1]]',
    '["a", "b"]',
    "[1, 2]",
    "1.5",
    "0",
    "-1",
    "1" + "0" * 400,  # 10**400
    "-0.0",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "true",
    "false",
    "null",
    '""',
    json.dumps("x" * 100_000),
    '"\\ud800"',
    '"a\\udfffb"',
    '"a\\u0000b"',
    '"\\u202e\\u2066"',
    '"../../etc/passwd"',
    '"/home/someone/secret"',
    '"api_key=abcdefghijklmnop"',
    DEEP_ARRAY,
    DEEP_OBJECT,
]
RAW_FRAGMENTS = [
    b'"\xff\xfe"',  # invalid UTF-8
    b'"\xed\xa0\x80"',  # a surrogate, encoded
    b'"a\x00b"',  # a raw NUL in a string
    b'"caf\xc3"',  # a truncated sequence
    b"\x00",
]
NASTY_DOCUMENTS = [
    DEEP_ARRAY.encode(),
    DEEP_OBJECT.encode(),
    b"[" * 65 + b"]" * 65,
    b"9" * 5000,
    b"1" + b"0" * 400,
    b"1e999",
    b"NaN",
    b"[-Infinity]",
    b"\xff\xfe",
    b"\xef\xbb\xbf{}",
    b"\xc3",
    b'"\\ud800"',
    b'{"\\udfff": 1}',
    b"\x00",
    b"",
    b" ",
    b"{",
    b"null",
    b"[]",
    b"{}",
    b'"text"',
    b"0",
    b"true",
    b'{"a": 1, "a": {"k": 1}}',
    b"{}{}",
]
HOSTILE_ARGS = [
    "",
    " ",
    "a\0b",
    "\udcff",
    "caf\udce9",
    "\ud800",
    "9" * 5000,
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
    '["b", "a", 1]',
    "null",
    "/home/someone/secret",
    "api_key=abcdefghijklmnop",
]
WRONG_FLAGS = [
    ["--bogus"],
    ["--format"],
    ["--format", "xml"],
    ["--format=yaml"],
    ["-h"],
    ["\udcff"],
    ["a\0"],
    ["--goal-id"],
    ["--limit", "-1"],
    ["--", "extra"],
    ["--execute", "--execute"],
    ["--input", "-", "--input", "-"],
]

# --- valid documents to mutate -----------------------------------------------------------

TURN = {
    "host": "generic_cli",
    "host_turn_id": "t-1",
    "observed_at": f1.OBSERVED_AT,
    "turn_envelope": {"goal_id": f1.GOAL, "agent_id": f1.AGENT},
    "payload": {"turn_envelope": {"goal_id": f1.GOAL, "agent_id": f1.AGENT}},
}
SETTLEMENT = {"host_result": {}, "evidence": {"writeback": {"ok": True, "appended": True}}}


def _reflection_message(reflection: str) -> str:
    return f"Done.\n<reward_memory_reflection_json>{reflection}</reward_memory_reflection_json>"


def hook_event(host: str, event: str) -> dict[str, Any]:
    """A valid event of ``host`` for ``event``: the union of the fields hosts send."""
    from turn_support import RAW

    document: dict[str, Any] = {
        "turn_id": "t1",
        "session_id": "s1",
        "prompt_id": "p1",
        "prompt": "fix the tests",
        "cwd": REPO,
        "hook_event_name": "UserPromptSubmit" if event == "pre-turn" else "Stop",
        "timestamp": "2026-11-29T10:00:00Z",
        "transcript_path": "transcript.jsonl",
        "model": "m",
        "stop_hook_active": False,
    }
    if event == "post-settlement":
        document["last_assistant_message"] = _reflection_message(RAW)
        document["prompt_response"] = document["last_assistant_message"]
    return document


def mcp_messages() -> list[dict[str, Any]]:
    """A valid MCP session: initialize, list the tools, stage a reflection."""
    reflection = json.loads(__import__("turn_support").RAW)
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "record_reflection",
                "arguments": reflection,
                "_meta": {"x-codex-turn-metadata": {"session_id": "s1", "turn_id": "t1"}},
            },
        },
        {"jsonrpc": "2.0", "id": "p", "method": "ping"},
    ]


def _document_bases() -> dict[str, Any]:
    """Valid documents, by the command that reads them (built once per process)."""
    from test_type_confusion import documents
    from turn_support import RAW
    from utility_cases import dogfood_cases

    bases: dict[str, Any] = {
        "dispatch pre-turn": TURN,
        "dispatch post-settlement": {"turn": TURN, "settlement": SETTLEMENT},
        "reward-memory dogfood-evaluate": dogfood_cases()["ready"],
        "codex-app refresh-state": json.loads(RAW),
        "reward-memory configure": f1.config("embedded_sqlite"),
        "registry": None,  # filled in from a bound Goal by the runner's template
    }
    for name, (_argv, valid) in documents(BINDING).items():
        bases[f"reward-memory {name}"] = valid
    return json.loads(json.dumps(bases))


# --- mutation ----------------------------------------------------------------------------


HOLE = "@@fuzz-hole@@"


def _with_hole(document: Any, path: tuple[Any, ...]) -> Any:
    copied = json.loads(json.dumps(document))
    if not path:
        return HOLE
    parent = copied
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = HOLE
    return copied


def _dump(document: Any) -> bytes:
    return json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")


def mutate(rng: random.Random, base: Any) -> tuple[str, bytes]:
    """One structural or type mutation of ``base``: (what was done, the bytes)."""
    all_places = list(places(base))
    path = rng.choice(all_places)
    operation = rng.choices(
        ["type", "raw", "remove", "unknown", "duplicate", "wrap", "empty", "truncate", "twice"],
        weights=[40, 5, 10, 6, 8, 6, 5, 8, 6],
    )[0]
    if operation == "type":
        text = _dump(_with_hole(base, path))
        return "type", text.replace(json.dumps(HOLE).encode(), rng.choice(WRONG_TYPES).encode())
    if operation == "raw":
        text = _dump(_with_hole(base, path))
        return "raw", text.replace(json.dumps(HOLE).encode(), rng.choice(RAW_FRAGMENTS))
    if operation == "truncate":
        text = _dump(base)
        return "truncate", text[: rng.randrange(len(text))]
    if operation == "twice":
        _, once = mutate(rng, base)
        try:
            again = json.loads(once)
        except (ValueError, RecursionError):
            return "twice", once
        return "twice", mutate(rng, again)[1] if again not in (None, [], {}) else once
    parents = [p for p in all_places if isinstance(_at(base, p), dict | list) and _at(base, p)]
    if not parents:
        return "type", rng.choice(WRONG_TYPES).encode()
    where = rng.choice(parents)
    container = _at(base, where)
    copied = json.loads(json.dumps(base))
    target = _at(copied, where)
    if operation == "empty":
        target.clear()
        return "empty", _dump(copied)
    if operation == "wrap":
        key = rng.choice(list(target) if isinstance(target, dict) else range(len(target)))
        target[key] = rng.choice([[target[key]], {"value": target[key]}])
        return "wrap", _dump(copied)
    if isinstance(container, list):
        if operation == "remove":
            del target[rng.randrange(len(target))]
        else:
            target.append(json.loads(rng.choice(WRONG_TYPES[:12])))
        return operation, _dump(copied)
    key = rng.choice(list(container))
    if operation == "remove":
        del target[key]
        return "remove", _dump(copied)
    if operation == "unknown":
        target[rng.choice(["unknown_key", "\udcff", "\0", "", "x" * 300])] = 1
        return "unknown", _dump(copied)
    # duplicate: the same key twice, the hostile value first or last
    pairs = [
        json.dumps(k, ensure_ascii=False) + ": " + json.dumps(v, ensure_ascii=False)
        for k, v in container.items()
    ]
    twin = json.dumps(key, ensure_ascii=False) + ": " + rng.choice(WRONG_TYPES[:22])
    pairs.insert(rng.choice([0, len(pairs)]), twin)
    text = _dump(_with_hole(base, where))
    raw = ("{" + ", ".join(pairs) + "}").encode("utf-8", "surrogatepass")
    return "duplicate", text.replace(json.dumps(HOLE).encode(), raw)


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        document = document[part]
    return document


def document_bytes(rng: random.Random, base: Any) -> tuple[str, bytes]:
    """Hostile content for a document input: mostly a mutated ``base``."""
    roll = rng.random()
    if base is not None and roll < 0.72:
        return mutate(rng, base)
    if base is not None and roll < 0.77:
        return "valid", _dump(base)
    if roll < 0.87:
        return "nasty", rng.choice(NASTY_DOCUMENTS)
    if roll < 0.93:
        return "random_bytes", bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    return "random_json", json.dumps(_random_json(rng, 3)).encode()


def _random_json(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(8 if depth else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2**70, 1.5, -0.0])
    if kind in (3, 4):
        return rng.choice(["", "a", "reward_memory", f1.GOAL, "\u202e", "x" * 50])
    if kind in (5, 6):
        return [_random_json(rng, depth - 1) for _ in range(rng.randrange(4))]
    return {
        rng.choice(["a", "status", "results", "schema_version", ""]): _random_json(rng, depth - 1)
        for _ in range(rng.randrange(4))
    }


# --- the entry points --------------------------------------------------------------------


def leaf_commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every leaf command of the ``turn-hooks`` argparse tree, with its parser."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield " ".join(prefix), parser
        return
    for name, sub in groups[0].choices.items():
        yield from leaf_commands(sub, (*prefix, name))


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """The leaf commands, from the real parser."""
    return dict(leaf_commands(cli.build_parser()))


def _action(parser: argparse.ArgumentParser, name: str) -> argparse.Action | None:
    for action in parser._actions:
        if name in action.option_strings or (not action.option_strings and action.dest == name):
            return action
    return None


API_FUNCTIONS = (
    "loads_bounded",
    "argv_from_json",
    "settlement_is_final",
    "settlement_is_taken",
    "project_contributions",
    "read_results",
    "measure_result_bytes",
    "output_tail",
)
"""The public functions of ``turn_hooks`` that take a document or raw bytes."""


class EntryPoint:
    """One way in: its name, the command it covers, and how its inputs are built."""

    def __init__(self, name: str, kind: str, command: str = "", weight: int = 1, **extra: Any):
        self.name, self.kind, self.command, self.weight = name, kind, command, weight
        self.extra = extra


# Commands whose body runs real host binaries or a whole suite (seconds each): an input
# always carries one argument argparse refuses, so their parsing is what is fuzzed.
ALWAYS_REFUSED = {"conformance run", "reward-memory evaluate", "validate command"}
# Where each document-reading command takes its document.
DOCUMENT_OPTIONS = {
    "--input": "--input",
    "input": "input",
    "path": "path",
    "paths": "paths",
    "--config": "--config",
}


def entry_points() -> list[EntryPoint]:
    """Every entry point, enumerated from the parser and the public API."""
    points = []
    for command, parser in sorted(command_parsers().items()):
        if command.startswith("host "):
            host = command.split()[1]
            event = _action(parser, "event")
            dialect = _action(parser, "--dialect")
            assert event is not None and event.choices is not None
            for name in event.choices:
                for variant in dialect.choices if dialect and dialect.choices else [None]:
                    label = f"hook {host} {name}" + (f" --dialect {variant}" if variant else "")
                    points.append(
                        EntryPoint(label, "hook", command, 3, event=name, dialect=variant)
                    )
            continue
        if command == "mcp serve":
            points.append(EntryPoint("mcp serve (JSON-RPC over stdio)", "mcp", command, 4))
            continue
        reads = any(_action(parser, option) for option in DOCUMENT_OPTIONS)
        points.append(EntryPoint(f"cli {command}", "cli", command, 3 if reads else 1))
        if command == "codex-app refresh-state":
            points.append(
                EntryPoint(
                    "cli codex-app refresh-state --reward-memory-reflection-json",
                    "reflection",
                    command,
                    3,
                )
            )
    for function in API_FUNCTIONS:
        points.append(EntryPoint(f"api turn_hooks.{function}", "api", "", 1, function=function))
    return points


def covered_commands(points: list[EntryPoint]) -> set[str]:
    """The CLI leaf commands the entry points run."""
    return {point.command for point in points if point.command}


# --- generation --------------------------------------------------------------------------

PLAUSIBLE = {
    "--goal-id": [f1.GOAL],
    "--agent-id": [f1.AGENT],
    "--registry": [REGISTRY],
    "--query": ["q", "fix the parser tests"],
    "--todo-id": ["todo-1"],
    "--turn-id": ["turn-1"],
    "--effect-id": ["effect-1"],
    "--control-ref": ["c:1"],
    "--reasoning-summary": ["stale"],
    "--validation-command-json": [VALIDATOR],
    "--evaluator-command-json": [VALIDATOR],
    "--validate-with": [VALIDATOR],
    "--observed-at": [f1.OBSERVED_AT],
    "--turn-key": ["turn-0001"],
    "--surface-id": ["default"],
    "--root": [f"{SCRATCH}/sidecars"],
    "--output": [f"{SCRATCH}/out"],
    "--home": [f"{SCRATCH}/home"],
    "--codex-home": [f"{SCRATCH}/home/.codex"],
    "--validation-workspace": [REPO],
    "--patch-file": [f"{SCRATCH}/patch.json"],
    "--dsh-patch-file": [f"{SCRATCH}/patch.json"],
    "--validation-output": [f"{SCRATCH}/validation.txt"],
    "--binary": ["/nonexistent/host"],
    "--codex-bin": ["/nonexistent/codex"],
    "refs": [f1.SOURCE_REF, "turn-reflection:nope"],
    "ref": [f1.SOURCE_REF, "nope"],
    "query": ["parser", ""],
    "argv": ["true"],
}
ALWAYS_GIVEN = {
    "--goal-id",
    "--agent-id",
    "--registry",
    "--query",
    "--todo-id",
    "--turn-id",
    "--control-ref",
    "--reasoning-summary",
    "--root",
}
"""Options given in every plausible argv, so an input reaches the command's body."""
INTS = ["1", "3", "0", "-1", "99", "9" * 400, "abc", "1e3", "2"]


def _value(rng: random.Random, action: argparse.Action, hostile: float) -> str:
    name = action.option_strings[-1] if action.option_strings else action.dest
    if rng.random() < hostile:
        return rng.choice(HOSTILE_ARGS)
    if action.choices is not None:
        return str(rng.choice(list(action.choices)))
    if name in PLAUSIBLE:
        return rng.choice(PLAUSIBLE[name])
    if action.type is not None and action.type is not str:
        return rng.choice(INTS)
    return rng.choice(["q", "t1", "c-1", f1.OBSERVED_AT, "why", "pr-3237"])


def _argv_for(
    rng: random.Random, command: str, parser: argparse.ArgumentParser, hostile: float
) -> list[str]:
    """An argv for ``command`` from its parser's own actions."""
    argv = command.split()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = action.option_strings[-1] if action.option_strings else action.dest
        if name in DOCUMENT_OPTIONS or name == "--reward-memory-reflection-json":
            continue  # the document goes in by the caller
        wanted = action.required or name in ALWAYS_GIVEN
        if not (wanted or rng.random() < 0.3):
            continue
        if action.nargs == 0:
            argv.append(action.option_strings[0])
            continue
        count = rng.randrange(1, 3) if action.nargs in ("*", "+") else 1
        values = [_value(rng, action, hostile) for _ in range(count)]
        if action.option_strings:
            for value in values:
                argv += [action.option_strings[0], value]
        else:
            argv += values
    return argv


class Case:
    """One generated input: where it goes, what it carries, and how it was made."""

    def __init__(self, entry: str, index: int, **fields: Any) -> None:
        self.entry, self.index = entry, index
        self.argv: list[str] = fields.get("argv", [])
        self.stdin: bytes = fields.get("stdin", b"")
        self.files: dict[str, bytes] = fields.get("files", {})
        self.how: str = fields.get("how", "")
        self.value: Any = fields.get("value")
        self.process: bool = fields.get("process", False)

    def describe(self) -> str:
        """A short, printable reproduction hint."""
        argv = " ".join(repr(a)[:60] for a in self.argv)
        return f"{self.entry} #{self.index} ({self.how}) argv=[{argv}] stdin={self.stdin[:80]!r}"


class Generator:
    """Builds case ``index`` of an entry point from the seed alone."""

    def __init__(self, seed: int, subprocess_every: int = 30) -> None:
        self.seed = seed
        self.subprocess_every = subprocess_every
        self.parsers = command_parsers()
        self.bases = _document_bases()
        self.registry_base: Any = None

    def case(self, point: EntryPoint, index: int) -> Case:
        rng = random.Random(f"{self.seed}/{point.name}/{index}")
        process = self.subprocess_every > 0 and point.kind != "api"
        process = process and rng.randrange(self.subprocess_every) == 0
        build = getattr(self, f"_{point.kind}")
        case: Case = build(rng, point, index)
        case.process = process and not any("\0" in arg for arg in case.argv)
        return case

    def _registry(self, rng: random.Random) -> dict[str, bytes]:
        """Mostly the bound registry; often a mutated or hostile one."""
        roll = rng.random()
        if roll < 0.8 or self.registry_base is None:
            return {}
        if roll < 0.95:
            return {"goal/registry.json": mutate(rng, self.registry_base)[1]}
        return {"goal/registry.json": rng.choice(NASTY_DOCUMENTS)}

    def _cli(self, rng: random.Random, point: EntryPoint, index: int) -> Case:
        parser = self.parsers[point.command]
        base = self.bases.get(point.command)
        document_mode = base is not None and rng.random() < 0.7
        hostile = 0.04 if document_mode else 0.25
        argv = _argv_for(rng, point.command, parser, hostile)
        how, content = document_bytes(rng, base)
        files = self._registry(rng)
        stdin = b""
        for option in DOCUMENT_OPTIONS:
            action = _action(parser, option)
            if action is None or (not action.required and not document_mode and rng.random() < 0.3):
                continue
            target, stdin_ok = self._document_target(point.command, option)
            if stdin_ok and rng.random() < 0.5:
                argv += [option, "-"] if option.startswith("--") else ["-"]
                stdin = content
            else:
                files[target] = content
                path = "fuzz-config.json" if option == "--config" else f"{SCRATCH}/{target}"
                argv += [option, path] if option.startswith("--") else [path]
        if point.command in ALWAYS_REFUSED:
            argv += rng.choice([w for w in WRONG_FLAGS if w not in (["-h"], ["--", "extra"])])
        elif rng.random() < (0.05 if document_mode else 0.25):
            argv += rng.choice(WRONG_FLAGS)
        if not stdin and rng.random() < 0.3:
            stdin = document_bytes(rng, None)[1]
        return Case(point.name, index, argv=argv, stdin=stdin, files=files, how=how)

    @staticmethod
    def _document_target(command: str, option: str) -> tuple[str, bool]:
        """Where the document file goes (relative to the scratch tree), and whether
        the command also reads it from stdin."""
        if command.startswith("sidecar"):
            return "sidecars/a.json", False
        if option == "--config":
            return "goal/repo/fuzz-config.json", False
        return "input.json", True

    def _reflection(self, rng: random.Random, point: EntryPoint, index: int) -> Case:
        argv = [*point.command.split(), *BINDING, "--todo-id", "todo-1", "--turn-id", "turn-1"]
        argv += ["--validation-command-json", VALIDATOR, "--validation-workspace", REPO]
        how, content = document_bytes(rng, self.bases["codex-app refresh-state"])
        argv += ["--reward-memory-reflection-json", content.decode("utf-8", "surrogateescape")]
        if rng.random() < 0.2:
            argv.append("--restage")
        return Case(point.name, index, argv=argv, files=self._registry(rng), how=how)

    def _hook(self, rng: random.Random, point: EntryPoint, index: int) -> Case:
        event = point.extra["event"]
        argv = ["host", *point.command.split()[1:], event, *BINDING]
        if point.extra["dialect"]:
            argv += ["--dialect", point.extra["dialect"]]
        if event == "post-settlement":
            argv += ["--validation-command-json", VALIDATOR, "--validation-timeout-seconds", "20"]
        roll = rng.random()
        valid = hook_event(point.command.split()[1], event)
        if roll < 0.15 and event == "post-settlement":  # the reflection inside the message
            from turn_support import RAW

            how, block = mutate(rng, json.loads(RAW))
            message = _reflection_message(block.decode("utf-8", "surrogateescape"))
            valid["last_assistant_message"] = valid["prompt_response"] = message
            how, stdin = f"reflection_{how}", _dump(valid)
        else:
            how, stdin = document_bytes(rng, valid)
        if rng.random() < 0.1:
            argv += rng.choice(WRONG_FLAGS)
        return Case(point.name, index, argv=argv, stdin=stdin, files=self._registry(rng), how=how)

    def _mcp(self, rng: random.Random, point: EntryPoint, index: int) -> Case:
        argv = ["mcp", "serve"]
        if rng.random() < 0.85:
            argv += BINDING
        messages = [_dump(message) for message in mcp_messages()]
        target = rng.randrange(len(messages))
        how, messages[target] = document_bytes(rng, mcp_messages()[target])
        messages[target] = messages[target].replace(b"\n", b" ")  # one message, one line
        if rng.random() < 0.1:
            messages.insert(rng.randrange(len(messages)), b"x" * (300 * 1024))
        return Case(point.name, index, argv=argv, stdin=b"\n".join(messages) + b"\n", how=how)

    def _api(self, rng: random.Random, point: EntryPoint, index: int) -> Case:
        function = point.extra["function"]
        base = API_BASES.get(function)
        how, content = document_bytes(rng, base)
        if function == "loads_bounded":
            value: Any = content if rng.random() < 0.5 else content.decode("utf-8", "replace")
        elif function in ("argv_from_json",):
            value = content.decode("utf-8", "surrogateescape")
        elif function == "output_tail":
            value = content
        else:
            try:
                value = json.loads(content)
            except (ValueError, RecursionError):
                value = _random_json(rng, 3)
            if function in MAPPING_ONLY and not isinstance(value, dict):
                # Annotated ``Mapping``: another type there is the caller's programming
                # error, outside the document contract; the document goes one level down.
                value = {**base, "fuzz": value}
        return Case(point.name, index, value=value, how=how)

    def cases(self, points: list[EntryPoint], count: int) -> list[Case]:
        """``count`` cases at least, shared among ``points`` by weight."""
        total = sum(point.weight for point in points)
        return [
            self.case(point, index)
            for point in points
            for index in range(max(1, math.ceil(count * point.weight / total)))
        ]


MAPPING_ONLY = {"project_contributions", "read_results", "measure_result_bytes"}
REFLECTION_RESULT = {"reward_memory_reflection_json": json.dumps(f1.REFLECTION)}
API_BASES: dict[str, Any] = {
    "loads_bounded": {"a": [1, "b", {"c": None}]},
    "argv_from_json": ["python", "-c", "pass"],
    "settlement_is_final": {
        "status": "observed",
        "results": {
            "reward_memory": {"status": "activated", "retryable": False, "reconciliation_state": ""}
        },
    },
    "settlement_is_taken": {
        "status": "observed",
        "results": {"reward_memory": {"status": "retryable", "reconciliation_state": "open"}},
    },
    "project_contributions": {
        "turn_envelope": {"goal_id": f1.GOAL, "agent_id": f1.AGENT},
        "turn_hooks_contributions": [
            {
                "hook_id": "reward_memory",
                "basis_digest": "0" * 64,
                "context_fields": {"a": "b"},
                "context_items": [{"ref": "r", "text": "t"}],
                "result_fields": {},
                "instructions": ["x"],
            }
        ],
    },
    "read_results": REFLECTION_RESULT,
    "measure_result_bytes": {"context_fields": {"a": "b"}, "instructions": ["x"]},
    "output_tail": None,
}


# --- running -----------------------------------------------------------------------------


class Hang(BaseException):
    """The per-call deadline passed (a BaseException: no ``except Exception`` eats it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang()


class Runner:
    """Runs cases in scratch trees and classifies each outcome.

    One scratch tree per entry point, rebuilt every ``refresh`` cases: a bound Goal on
    the embedded store, with one ingested record, so retirement and the memory
    commands reach their bodies.
    """

    def __init__(self, parent: Path, *, timeout: float = 60.0, refresh: int = 40) -> None:
        self.parent = parent
        self.timeout = timeout
        self.refresh = refresh
        self.scratch: Path | None = None
        self.scratch_entry = ""
        self.scratch_uses = 0
        self.stderr_file: Path | None = None
        self.pm: Any = None
        self.registry_bytes = b""

    # -- the scratch tree
    def _new_scratch(self, entry: str) -> Path:
        from turn_support import bound_goal

        if self.scratch is not None:
            os.chdir(ROOT)
            shutil.rmtree(self.scratch, ignore_errors=True)
        scratch = Path(tempfile.mkdtemp(prefix="fuzz-", dir=self.parent))
        scratch.chmod(0o700)
        for part in ("home", "xdg", "xdg/config", "xdg/data", "xdg/state", "xdg/cache"):
            (scratch / part).mkdir(mode=0o700)
        for part in ("state", "cwd", "tmp", "resident", "sidecars"):
            (scratch / part).mkdir(mode=0o700)
        self.registry_bytes = bound_goal(scratch / "goal").read_bytes()
        self._environment(scratch)
        os.chdir(scratch / "cwd")
        ingest = ["reward-memory", "ingest-event", *BINDING, "--execute", "--input", "-"]
        document = {"event": f1.event(), "observed_at": f1.OBSERVED_AT}
        self._main(self._placed(ingest, scratch), json.dumps(document).encode())
        self.scratch, self.scratch_entry, self.scratch_uses = scratch, entry, 0
        return scratch

    @staticmethod
    def environment(scratch: Path, inline: bool) -> dict[str, str]:
        """The variables a run sees: every default inside ``scratch``."""
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("TURN_HOOKS_", "OPENVIKING_", "CODEX_", "XDG_", "CLAUDE"))
        }
        env.update(
            {
                "HOME": str(scratch / "home"),
                "TURN_HOOKS_STATE_DIR": str(scratch / "state"),
                "TURN_HOOKS_RESIDENT": "0",
                "TURN_HOOKS_RESIDENT_DIR": str(scratch / "resident"),
                "TMPDIR": str(scratch / "tmp"),
                "PATH": "/usr/bin:/bin",  # no real host binary is ever found
                "PYTHONPATH": str(ROOT),
            }
        )
        for part in ("config", "data", "state", "cache"):
            env[f"XDG_{part.upper()}_HOME"] = str(scratch / "xdg" / part)
        if inline:  # in-process: settle here, never fork the fuzzer
            env["TURN_HOOKS_SETTLE"] = "inline"
        return env

    def _environment(self, scratch: Path) -> None:
        os.environ.clear()
        os.environ.update(self.environment(scratch, inline=True))
        tempfile.tempdir = str(scratch / "tmp")

    @staticmethod
    def _placed(argv: list[str], scratch: Path) -> list[str]:
        return [arg.replace(SCRATCH, str(scratch)) for arg in argv]

    def _prepare(self, case: Case) -> Path:
        if (
            self.scratch is None
            or self.scratch_entry != case.entry
            or self.scratch_uses >= self.refresh
        ):
            scratch = self._new_scratch(case.entry)
        else:
            scratch = self.scratch
            self._environment(scratch)
            os.chdir(scratch / "cwd")
        self.scratch_uses += 1
        for name, content in case.files.items():
            path = scratch / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.replace(SCRATCH.encode(), str(scratch).encode()))
            path.chmod(0o600)
        return scratch

    def registry_document(self) -> Any:
        """The bound registry's document, the base for registry mutations."""
        from turn_support import bound_goal

        scratch = Path(tempfile.mkdtemp(prefix="registry-", dir=self.parent))
        try:
            text = bound_goal(scratch).read_text()
            return json.loads(text.replace(str(scratch), SCRATCH + "/goal"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    # -- one call
    def _main(self, argv: list[str], stdin: bytes) -> tuple[Any, bytes, str]:
        """``cli.main(argv)`` with stdin, stdout and stderr replaced and a deadline."""
        out, err = io.BytesIO(), io.StringIO()
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
        sys.stdout, sys.stderr = stdout, err
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        code: Any
        try:
            code = cli.main(argv)
        except Hang:
            code = "hang"
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # escaped main: what a user would see as a traceback
            code = "traceback"
            err.write(traceback.format_exc())
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            with contextlib.suppress(Exception):
                stdout.flush()
            with contextlib.suppress(Exception):
                stdout.detach()  # a collected wrapper would close ``out``
            sys.stdin, sys.stdout, sys.stderr = saved
        return code, out.getvalue(), err.getvalue()

    def _process(self, argv: list[str], stdin: bytes, scratch: Path) -> tuple[Any, bytes, str]:
        """The same call as a real process, as a host runs a hook."""
        arguments = [_argv_bytes(arg) for arg in argv]
        try:
            result = subprocess.run(
                [sys.executable, "-m", "hosts.cli", *arguments],
                input=stdin,
                capture_output=True,
                timeout=self.timeout,
                check=False,
                cwd=scratch / "cwd",
                env=self.environment(scratch, inline=False),
            )
        except subprocess.TimeoutExpired:
            return "hang", b"", ""
        return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")

    def run(self, case: Case) -> dict[str, Any]:
        """Run ``case``; its outcome class and, for a failure, what to reproduce."""
        started = time.monotonic()
        if case.entry.startswith("api "):
            outcome, detail = self._api(case)
            return _record(case, outcome, detail, started)
        scratch = self._prepare(case)
        argv = self._placed(case.argv, scratch)
        stdin = case.stdin.replace(SCRATCH.encode(), str(scratch).encode())
        log_before = _hook_log(scratch)
        grown = self._stderr_size()
        if case.process:
            code, out, err = self._process(argv, stdin, scratch)
        else:
            code, out, err = self._main(argv, stdin)
        err += self._stderr_since(grown)
        logged = _new_entries(log_before, _hook_log(scratch))
        outcome, detail = classify(case.entry, argv, code, out, err, logged)
        detail = detail or _reasons(out, logged)
        if "goal/registry.json" in case.files:  # the next case starts from a bound Goal
            (scratch / "goal" / "registry.json").write_bytes(self.registry_bytes)
        return _record(case, outcome, detail, started)

    def _api(self, case: Case) -> tuple[str, str]:
        import turn_hooks

        function = getattr(turn_hooks, case.entry.split(".", 1)[1])
        name = function.__name__
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            if name == "argv_from_json":
                function(case.value, reason_code="fuzz_argv_invalid")
            elif name == "read_results":
                if self.pm is None:
                    self.pm = turn_hooks.make_plugin_manager()
                function(self.pm, case.value)
            else:
                function(case.value)
        except Hang:
            return "hang", ""
        except turn_hooks.TurnHooksError as exc:
            if TYPED.fullmatch(exc.reason_code or ""):
                return "refusal", ""
            return "internal_error", f"untyped reason {exc.reason_code!r}"
        except Exception as exc:
            # A document of the wrong shape is input, never a crash: ``None``, a list
            # or a number where a mapping is expected is answered, not raised on.
            return "traceback", "".join(traceback.format_exception_only(exc)).strip()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return "ok", ""

    # -- stderr written straight to descriptor 2 (a logging handler, a child process)
    def capture_descriptor_2(self) -> None:
        """Point descriptor 2 at a file, so what bypasses ``sys.stderr`` is seen too."""
        self.stderr_file = self.parent / f"stderr-{os.getpid()}.txt"
        handle = os.open(self.stderr_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(handle, 2)
        os.close(handle)

    def _stderr_size(self) -> int:
        return self.stderr_file.stat().st_size if self.stderr_file else 0

    def _stderr_since(self, size: int) -> str:
        if self.stderr_file is None:
            return ""
        with self.stderr_file.open("rb") as handle:
            handle.seek(size)
            return handle.read().decode("utf-8", "replace")

    def close(self) -> None:
        """Remove the last scratch tree."""
        os.chdir(ROOT)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def _argv_bytes(arg: str) -> bytes:
    try:
        return os.fsencode(arg)
    except UnicodeEncodeError:
        return arg.encode("utf-8", "surrogatepass")


def _hook_log(scratch: Path) -> list[str]:
    path = scratch / "state" / "hook-log.json"
    try:
        entries = json.loads(path.read_text())["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [json.dumps(entry, sort_keys=True) for entry in entries]


def _new_entries(before: list[str], after: list[str]) -> list[dict[str, Any]]:
    left = collections.Counter(before)
    new = []
    for entry in after:
        if left[entry]:
            left[entry] -= 1
        else:
            new.append(json.loads(entry))
    return new


def classify(
    entry: str, argv: list[str], code: Any, out: bytes, err: str, logged: list[dict[str, Any]]
) -> tuple[str, str]:
    """The outcome class of one run, and a detail for a failure."""
    if code == "hang":
        return "hang", "the per-call deadline passed"
    if "Traceback (most recent call last)" in err or code == "traceback":
        return "traceback", err[-1500:]
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError:
        return "bad_stdout", "stdout is not valid UTF-8"
    if "Traceback (most recent call last)" in text:
        return "traceback", text[-1500:]
    reasons = [str(item.get("reason_code")) for item in logged]
    if "internal_error" in reasons or '"internal_error"' in text or "| internal_error" in text:
        detail = next((item for item in logged if item.get("reason_code") == "internal_error"), {})
        return "internal_error", json.dumps(detail)[:600] or text[:600]
    if entry.startswith("hook "):
        if code != 0:
            return "bad_stdout", f"a host hook exited {code}"
        bad = [reason for reason in reasons if not TYPED.fullmatch(reason)]
        if bad:
            return "internal_error", f"untyped hook log reasons {bad!r}"
        return ("hook_logged" if logged else "hook_silent"), ""
    if entry.startswith("mcp "):
        if code != 0:
            return ("refusal", "") if code == 2 else ("other_exit", f"exit {code}")
        replies = [json.loads(line) for line in text.splitlines() if line.strip()]
        return ("jsonrpc_error" if any("error" in r for r in replies) else "ok"), ""
    if code == 0:
        return "ok", ""
    if code == 2:
        if not text.lstrip().startswith("{"):
            return "refusal", ""  # Markdown, which names the reason in its table
        document = json.loads(text)
        reason = document.get("reason_code")
        if document.get("schema_version") in ERROR_SCHEMAS and not (
            isinstance(reason, str) and TYPED.fullmatch(reason)
        ):
            return "internal_error", f"an error without a typed reason: {text[:300]}"
        return "refusal", ""
    return "other_exit", f"exit {code}: {text[:200]}"


def _reasons(out: bytes, logged: list[dict[str, Any]]) -> str:
    """The reason codes a run gave: its error's, or its hook log's."""
    reasons = [str(item.get("reason_code")) for item in logged]
    try:
        document = json.loads(out)
    except (ValueError, RecursionError):
        document = None
    if isinstance(document, dict) and isinstance(document.get("reason_code"), str):
        reasons.insert(0, document["reason_code"])
    return ",".join(reasons)


def _record(case: Case, outcome: str, detail: str, started: float) -> dict[str, Any]:
    return {
        "entry": case.entry,
        "index": case.index,
        "outcome": outcome,
        "process": case.process,
        "seconds": round(time.monotonic() - started, 4),
        "how": case.how,
        "detail": detail,
        "case": case.describe() if outcome in FAILURES else "",
    }


# --- the command line --------------------------------------------------------------------


def summary(records: list[dict[str, Any]], points: list[EntryPoint], seconds: float) -> str:
    """The run as Markdown: per entry point, the inputs and their outcome classes."""
    classes = [
        "ok",
        "refusal",
        "hook_logged",
        "hook_silent",
        "jsonrpc_error",
        "other_exit",
        *FAILURES,
    ]
    table = collections.defaultdict(collections.Counter)
    processes = collections.Counter()
    for record in records:
        table[record["entry"]][record["outcome"]] += 1
        processes[record["entry"]] += record["process"]
    lines = [
        f"{len(records)} inputs over {len(points)} entry points "
        f"({sum(processes.values())} as real processes) in {seconds:.0f} s.",
        "",
        "| entry point | inputs | processes | " + " | ".join(classes) + " |",
        "|---|---:|---:|" + "---:|" * len(classes),
    ]
    totals: collections.Counter[str] = collections.Counter()
    for point in points:
        counts = table[point.name]
        totals.update(counts)
        cells = " | ".join(str(counts[name]) for name in classes)
        row = f"| {point.name} | {sum(counts.values())} | {processes[point.name]} | {cells} |"
        lines.append(row)
    cells = " | ".join(str(totals[name]) for name in classes)
    lines.append(f"| **all** | {len(records)} | {sum(processes.values())} | {cells} |")
    failures = [record for record in records if record["outcome"] in FAILURES]
    if failures:
        lines += ["", f"## {len(failures)} failures", ""]
        for record in failures[:50]:
            lines.append(f"- **{record['outcome']}** {record['case']}")
            lines.append(f"  `{record['detail'][-400:]!r}`")
    return "\n".join(lines) + "\n"


def worker(args: argparse.Namespace) -> int:
    """Run this worker's share and write one JSON line per case to stdout."""
    points = entry_points()
    generator = Generator(args.seed, args.subprocess_every)
    parent = Path(tempfile.mkdtemp(prefix="turn-hooks-fuzz-"))
    runner = Runner(parent, timeout=args.timeout)
    generator.registry_base = runner.registry_document()
    real_stdout = os.fdopen(os.dup(1), "w", encoding="utf-8")
    if not os.environ.get("FUZZ_KEEP_STDERR"):
        runner.capture_descriptor_2()
    try:
        number = 0
        for point in points:
            total = sum(p.weight for p in points)
            for index in range(max(1, math.ceil(args.count * point.weight / total))):
                number += 1
                if number % args.processes != args.worker:
                    continue
                record = runner.run(generator.case(point, index))
                real_stdout.write(json.dumps(record) + "\n")
                real_stdout.flush()
    finally:
        runner.close()
        shutil.rmtree(parent, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Generate, run in worker processes, summarise; exit 1 on any failure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=37, help="generation seed (default 37)")
    parser.add_argument("--count", type=int, default=9000, help="inputs at least (default 9000)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--subprocess-every",
        type=int,
        default=30,
        help="about one input in N runs as a real process (default 30; 0: none)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="per-call deadline, seconds")
    parser.add_argument("--json", help="also write every record as JSON Lines to this file")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return worker(args)
    points = entry_points()
    started = time.monotonic()
    expected = sum(
        max(1, math.ceil(args.count * p.weight / sum(q.weight for q in points))) for p in points
    )
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                *("--seed", str(args.seed), "--count", str(args.count)),
                *("--processes", str(args.processes), "--worker", str(number)),
                *("--subprocess-every", str(args.subprocess_every)),
                *("--timeout", str(args.timeout)),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for number in range(args.processes)
    ]
    records: list[dict[str, Any]] = []
    import selectors

    selector = selectors.DefaultSelector()
    for process in workers:
        assert process.stdout is not None
        selector.register(process.stdout, selectors.EVENT_READ)
    open_streams = len(workers)
    last = 0.0
    while open_streams:
        for key, _ in selector.select():
            line = key.fileobj.readline()  # type: ignore[union-attr]
            if not line:
                selector.unregister(key.fileobj)
                open_streams -= 1
                continue
            records.append(json.loads(line))
            if time.monotonic() - last > 5 or len(records) == expected:
                last = time.monotonic()
                bad = sum(r["outcome"] in FAILURES for r in records)
                print(
                    f"fuzz: {len(records)}/{expected} inputs, {bad} failures, "
                    f"{last - started:.0f} s, at {records[-1]['entry']}",
                    file=sys.stderr,
                    flush=True,
                )
    codes = [process.wait() for process in workers]
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in records))
    print(summary(records, points, time.monotonic() - started))
    failed = any(r["outcome"] in FAILURES for r in records)
    if any(codes) or len(records) < expected:
        print(f"fuzz: a worker ended early ({codes}, {len(records)}/{expected})", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
