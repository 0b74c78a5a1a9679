"""``turn-hooks mcp serve``: the result tools of the loaded plugins, as a stdio MCP server.

Codex CLI and Claude Code start MCP servers over stdio and offer their tools to the
model. This server offers every tool a loaded plugin declares for one of its result
fields (``SettlementRegistration.result_tools``). A call checks the arguments against
the tool's check schema (its input schema where it has none) and stages them, as
compact JSON, for the Turn's Stop hook (:mod:`hosts.settlement.staged`), so the value
never has to appear in the final answer.

The protocol is MCP's JSON-RPC 2.0, one message per line, spoken by hand (no
dependency): ``initialize``, ``notifications/initialized``, ``ping``, ``tools/list``
and ``tools/call``. Every line is parsed by :func:`turn_hooks.loads_bounded` (size,
depth, integer size, strict UTF-8). A bad line or unknown method is a JSON-RPC error;
arguments that do not fit the tool are a tool result with ``isError``, which the model
reads and can correct. Nothing a client sends ends the server but end of input.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

from turn_hooks import TurnHooksError, loads_bounded

PROTOCOL_VERSION = "2025-06-18"
MAX_LINE_BYTES = 256 * 1024
"""The longest message read; the rest of a longer line is skipped, answered by one error."""
MAX_SCHEMA_DEPTH = 8
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
TURN_METADATA = "x-codex-turn-metadata"
"""Where Codex puts ``session_id`` and ``turn_id`` in a tool call's ``_meta``."""
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
"""Where Claude Code puts the session of the MCP servers it starts."""
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}
"""A listed tool's ``_meta``: Claude Code (2.1.332) otherwise defers every MCP tool
behind its ToolSearch, and the model sees only the name of a tool it is asked to
call. Other hosts ignore the key."""

Stager = Callable[[dict[str, Any], str, dict[str, Any]], None]
"""``stage(tool, value, meta)``: keeps one checked value; raises a TurnHooksError."""


def schema_faults(value: Any, schema: dict[str, Any], where: str = "arguments") -> list[str]:
    """Why ``value`` does not fit ``schema``: the JSON Schema subset result tools use.

    ``type``, ``enum``, ``const``, ``properties``, ``required``, ``additionalProperties:
    false``, ``items``, ``minItems``/``maxItems`` and ``minLength``/``maxLength``. The
    plugin checks the staged value again at settlement; this is the model's early word.
    """
    kinds: dict[str, type | tuple[type, ...]] = {
        "object": dict,
        "array": list,
        "string": str,
        "boolean": bool,
        "integer": int,
        "number": (int, float),
    }
    kind = schema.get("type")
    expected = kinds.get(kind) if isinstance(kind, str) else None
    if expected is not None and (
        not isinstance(value, expected) or (isinstance(value, bool) and kind != "boolean")
    ):
        return [f"{where} must be of type {kind}"]
    if "const" in schema and value != schema["const"]:
        return [f"{where} must be {json.dumps(schema['const'])}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where} must be one of {', '.join(map(json.dumps, schema['enum']))}"]
    if isinstance(value, str) and not schema.get("minLength", 0) <= len(value) <= schema.get(
        "maxLength", len(value)
    ):
        return [
            f"{where} must have between {schema.get('minLength', 0)} and "
            f"{schema.get('maxLength', len(value))} characters"
        ]
    if isinstance(value, list):
        return _array_faults(value, schema, where)
    if isinstance(value, dict):
        return _object_faults(value, schema, where)
    return []


def _array_faults(value: list[Any], schema: dict[str, Any], where: str) -> list[str]:
    if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
        return [
            f"{where} must have between {schema.get('minItems', 0)} and "
            f"{schema.get('maxItems', len(value))} items"
        ]
    items = schema.get("items")
    if not isinstance(items, dict):
        return []
    return [
        fault
        for i, item in enumerate(value)
        for fault in schema_faults(item, items, f"{where}[{i}]")
    ]


def _object_faults(value: dict[str, Any], schema: dict[str, Any], where: str) -> list[str]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    faults = [
        f"{where}.{key} is required" for key in schema.get("required", ()) if key not in value
    ]
    if schema.get("additionalProperties") is False:
        faults += [f"{where}.{key} is not allowed" for key in value if key not in properties]
    for key, item in value.items():
        if isinstance(properties.get(key), dict):
            faults += schema_faults(item, properties[key], f"{where}.{key}")
    return faults


class Server:
    """One MCP session over a pair of text streams; :meth:`serve` runs it to end of input."""

    def __init__(self, tools: dict[str, dict[str, Any]], stage: Stager) -> None:
        self.tools = tools
        self.stage = stage

    def serve(self, lines: Iterable[bytes], out: IO[str]) -> None:
        """Answer each request line on ``out``; notifications get no answer."""
        for line in lines:
            reply = self.handle(line)
            if reply is not None:
                out.write(json.dumps(reply, ensure_ascii=False) + "\n")
                out.flush()

    def handle(self, line: bytes) -> dict[str, Any] | None:
        """The reply to one message line, or ``None`` for a notification or blank line."""
        if not line.strip():
            return None
        if len(line) > MAX_LINE_BYTES:
            return _error(None, INVALID_REQUEST, "the message is too large")
        try:
            message = loads_bounded(line, max_size=MAX_LINE_BYTES, reason_prefix="mcp_message")
        except TurnHooksError as exc:
            return _error(None, PARSE_ERROR, f"not bounded JSON ({exc.reason_code})")
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return _error(None, INVALID_REQUEST, "a request is an object with a method")
        ident = message.get("id")
        if "id" not in message:
            return None  # a notification (notifications/initialized among them)
        if ident is None or isinstance(ident, bool) or not isinstance(ident, str | int):
            return _error(None, INVALID_REQUEST, "the id must be a string or an integer")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        method = message["method"]
        if method == "initialize":
            return _result(ident, self._initialize(params))
        if method == "ping":
            return _result(ident, {})
        if method == "tools/list":
            return _result(ident, {"tools": [_listed(tool) for tool in self.tools.values()]})
        if method == "tools/call":
            return self._call(ident, params)
        return _error(ident, METHOD_NOT_FOUND, f"unknown method {method[:64]!r}")

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        return {
            # Our messages are those of every version so far: agree to the client's.
            "protocolVersion": asked if isinstance(asked, str) and asked else PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "turn-hooks", "version": _version()},
        }

    def _call(self, ident: str | int, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return _error(ident, INVALID_PARAMS, "unknown tool")
        arguments = params.get("arguments")
        # The listed schema is what the model must choose; the check may hold more
        # (types the plugin's instructions state), so the model still hears of them early.
        faults = schema_faults(arguments, tool.get("check_schema", tool["input_schema"]))
        if faults:
            return _result(ident, _text("; ".join(faults[:8]), error=True))
        value = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        if len(value) > tool["max_chars"]:
            return _result(
                ident, _text(f"arguments exceed {tool['max_chars']} characters", error=True)
            )
        meta = params.get("_meta")
        try:
            self.stage(tool, value, meta if isinstance(meta, dict) else {})
        except TurnHooksError as exc:
            return _result(ident, _text(f"not staged ({exc.reason_code})", error=True))
        except OSError:
            return _result(ident, _text("not staged (staged_result_unwritable)", error=True))
        return _result(ident, _text("staged: it is settled when this Turn ends"))


def _listed(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": tool["name"],
        "description": tool["description"],
        "inputSchema": tool["input_schema"],
        # A result tool is wanted at the end of any Turn that learned something: its
        # schema is loaded up front, never found by a search first.
        "_meta": ALWAYS_LOAD,
    }


def _text(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _result(ident: str | int, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _error(ident: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def session_and_turn(
    meta: dict[str, Any], env: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """The host session and Turn of a call: Codex names both in the call's ``_meta``;
    Claude Code names only the session, in the server's environment."""
    turn = meta.get(TURN_METADATA)
    turn = turn if isinstance(turn, dict) else {}
    session, turn_id = turn.get("session_id"), turn.get("turn_id")
    if not session:
        session = (os.environ if env is None else env).get(SESSION_ENV)
    return (
        session if isinstance(session, str) and session else None,
        turn_id if isinstance(turn_id, str) and turn_id else None,
    )


def bounded_lines(stream: IO[bytes]) -> Iterable[bytes]:
    """Lines of ``stream``; a line longer than :data:`MAX_LINE_BYTES` is cut there and the
    rest of it skipped, so one huge line costs bounded memory."""
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
        yield line


def serve(*, registry: str | None, goal_id: str, agent_id: str) -> None:
    """Serve the loaded plugins' result tools on stdin/stdout for one Goal/Agent binding."""
    from hosts.settlement import staged
    from hosts.settlement.settlement import settlement_store
    from turn_hooks import make_plugin_manager, settlement_result_tools

    store = settlement_store(registry, goal_id)  # a bad binding: exit 2 before serving

    def stage(tool: dict[str, Any], value: str, meta: dict[str, Any]) -> None:
        session_id, turn_id = session_and_turn(meta)
        staged.stage(
            store,
            goal_id=goal_id,
            agent_id=agent_id,
            session_id=session_id,
            turn_id=turn_id,
            field=tool["field"],
            value=value,
        )

    Server(settlement_result_tools(make_plugin_manager()), stage).serve(
        bounded_lines(sys.stdin.buffer), sys.stdout
    )


def serve_nothing() -> None:
    """Serve no tool: a server the host started where no binding is named."""

    def stage(tool: dict[str, Any], value: str, meta: dict[str, Any]) -> None:  # never called
        raise AssertionError("no tool is offered")

    Server({}, stage).serve(bounded_lines(sys.stdin.buffer), sys.stdout)


def _version() -> str:
    """The installed package's version, for ``serverInfo``: from its dist-info's name.

    Not ``importlib.metadata`` (about 45 ms to import): the host waits for this
    server's answer before the Turn's first model request.
    """
    from hosts._warm import site_directories

    prefix, suffix = "turn_hooks-", ".dist-info"
    for directory in site_directories():
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in sorted(names):
            if name.startswith(prefix) and name.endswith(suffix):
                return name[len(prefix) : -len(suffix)]
    return "unknown"
