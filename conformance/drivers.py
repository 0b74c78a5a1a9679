"""Host drivers: each runs one Turn of a host with our hooks installed, offline.

A *real* driver starts the host's own binary against a fake model server on
127.0.0.1 and hands back the request bodies the model received; what it proves is
``real_host_run``. A *payload* driver plays the host's documented hook payloads to our
hook commands, which proves ``recorded_payload_contract`` only. Drivers speak to
turn-hooks through its command line, as the hosts do, never through imports.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import queue
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.fakes import FakeChat, FakeGemini, FakeMessages, FakeResponses, LoopbackServer
from conformance.workspace import AGENT, GOAL, Workspace

HOOK_COMMAND = [sys.executable, "-m", "hosts.cli"]
INGEST_RESULT = "reward-memory.outcome-ingest"
"""The ingest hook's result in a settlement receipt (scenarios read its status)."""
REAL = "real_host_run"
PAYLOAD = "recorded_payload_contract"
RUN_TIMEOUT = 180


def run_host(
    argv: list[str], *, cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """One non-interactive host run: no stdin, output captured, bounded in time."""
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT,
        check=False,
    )


@dataclass
class HookSetup:
    """How the hooks are installed for one scenario."""

    validation: bool = True
    """Declare the independent validator for settlement (off: no evidence at all)."""
    command: list[str] | None = None
    """Replace our hook command (a crashing or hanging probe); ``None``: turn-hooks."""
    timeout_seconds: int = 30
    without_events: frozenset[str] = frozenset()
    """Host event names left out of the install (``Stop``, ``AfterAgent``, ...)."""
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class TurnRun:
    """What one Turn left behind."""

    completed: bool
    """The host finished the Turn and exited 0 (or our hook exited 0, for payloads)."""
    answer: str
    requests: list[Any]
    """The model request bodies (real hosts) or the context our hook returned."""


class HostDriver(abc.ABC):
    """One host: ``prepare`` once per scenario, then any number of ``turn`` calls."""

    host: str
    """The report's host id (``codex-cli``, ``claude-code``, ...)."""
    verification: str
    recall_event: str
    ingest_event: str
    settle_parts: tuple[str, ...]
    """Our settlement hook command as this host runs it."""
    turn_id_field: str | None = "turn_id"
    final_field = "last_assistant_message"
    settles_detached = False
    """Settlement may still be running when ``turn`` returns: DSH detaches the hook,
    and Codex CLI's and Claude Code's Stop hooks hand settlement to a child."""
    spool_dir = "settlements"
    """The sidecar directory this host's settlement step records a Turn in."""

    def prepare(self, workspace: Workspace, setup: HookSetup) -> None:
        """Install the hooks for this scenario into a fresh, private host home."""
        self.workspace = workspace
        self.setup = setup
        self.home = workspace.root / "host"
        self.home.mkdir(exist_ok=True)
        self.install()

    @abc.abstractmethod
    def install(self) -> None:
        """Write the host's hook configuration under ``self.home``."""

    @abc.abstractmethod
    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """Run one Turn whose model answers ``reply`` (an int: that HTTP error)."""

    def close(self) -> None:  # noqa: B027 - a driver that starts nothing has nothing to stop
        """Release what ``prepare`` started."""

    def hook_argv(self, *parts: str, validation: bool = False) -> list[str]:
        """Our hook command for this host, or the scenario's replacement."""
        if self.setup.command is not None:
            return list(self.setup.command)
        argv = [*HOOK_COMMAND, *parts, "--goal-id", GOAL, "--agent-id", AGENT]
        argv += ["--registry", str(self.workspace.registry)]
        if validation and self.setup.validation:
            argv += ["--validation-command-json", json.dumps(self.workspace.validator)]
        return argv

    def installer_argv(self, *parts: str) -> list[str]:
        """``turn-hooks install <parts>`` with this scenario's binding, and its validator
        (``--recall-only`` for a scenario without evidence, which install refuses
        unless asked for)."""
        argv = [*HOOK_COMMAND, "install", *parts, "--registry", str(self.workspace.registry)]
        argv += ["--goal-id", GOAL, "--agent-id", AGENT]
        if self.setup.validation:
            return [*argv, "--validation-command-json", json.dumps(self.workspace.validator)]
        return [*argv, "--recall-only"]

    def edit_hooks(self, path: Path, *, per_second: int = 1) -> None:
        """The scenario's edits to an installed ``{"hooks": {Event: [{"hooks": [...]}]}}``
        file: its events left out, our command replaced, the timeout in the host's unit
        (``per_second``: 1000 for a host that counts milliseconds)."""
        document = json.loads(path.read_text())
        hooks = document["hooks"]
        for event in self.setup.without_events:
            hooks.pop(event, None)
        for groups in hooks.values():
            for group in groups:
                for handler in group["hooks"]:
                    if self.setup.command is not None:
                        handler["command"] = shlex.join(self.setup.command)
                    handler["timeout"] = self.setup.timeout_seconds * per_second
        path.write_text(json.dumps(document, indent=2))

    def settlements(self, workspace: Workspace) -> list[dict[str, Any]]:
        """The settled Turns so far, each with its dispatcher receipt as
        ``post_settlement``: the settlement spool entries that hold one."""
        directory = workspace.sidecars / self.spool_dir
        paths = sorted(directory.rglob("*.json")) if directory.is_dir() else []
        entries = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
        return [e for e in entries if isinstance(e.get("post_settlement"), dict)]

    def replay_settlement(self, spool: dict[str, Any], final: str) -> None:
        """Deliver a settled Turn's end event again, as an at-least-once host may."""
        event: dict[str, Any] = {
            "session_id": spool.get("host_session_id"),
            self.final_field: final,
        }
        event["cwd"] = spool.get("cwd")
        if self.turn_id_field:
            event[self.turn_id_field] = spool.get("turn_key")
        subprocess.run(
            self.hook_argv(*self.settle_parts, validation=True),
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.workspace.work,
            timeout=self.setup.timeout_seconds,
            check=False,
        )

    def env(self) -> dict[str, str]:
        """The environment the host (and so our hooks) runs with."""
        return {**os.environ, **self.setup.env, "HOME": str(self.home)}


class RealDriver(HostDriver):
    """A host binary driven against a fake model server."""

    verification = REAL
    fake_class: type[LoopbackServer]

    def __init__(self, binary: Path) -> None:
        self.binary = binary

    def prepare(self, workspace: Workspace, setup: HookSetup) -> None:
        """Start the fake model server, then install."""
        self.fake = self.fake_class()
        self.fake.__enter__()
        super().prepare(workspace, setup)

    def close(self) -> None:
        """Stop the fake model server."""
        self.fake.__exit__(None, None, None)

    def run(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """The host process, in the workspace's work directory."""
        return run_host(argv, cwd=self.workspace.work, env=env)

    def queue(self, reply: str | int) -> int:
        """Queue this Turn's reply; a failure is repeated, as hosts retry requests.

        Returns how many requests the fake had already received.
        """
        self.fake.replies.clear()
        self.fake.reply(*([reply] * 8 if isinstance(reply, int) else [reply]))
        return len(self.fake.requests)

    def requests_since(self, start: int) -> list[Any]:
        """The model requests of the Turn that began after ``start`` requests."""
        return list(self.fake.requests[start:])


def codex_config(port: int) -> str:
    """A Codex ``config.toml`` whose only model is the fake on ``port``, never retried."""
    return (
        'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        'wire_api = "responses"\nenv_key = "FAKE_API_KEY"\nrequest_max_retries = 0\n'
        "stream_max_retries = 0\n"
    )


class CodexCliDriver(RealDriver):
    """Codex CLI: hooks installed and trusted by ``turn-hooks install codex``."""

    host = "codex-cli"
    recall_event = "UserPromptSubmit"
    ingest_event = "Stop"
    settle_parts = ("host", "codex-cli", "post-settlement")
    fake_class = FakeResponses
    settles_detached = True

    def install(self) -> None:
        """Our installer, then the scenario's edits; edited hooks run untrusted-bypassed."""
        (self.home / "config.toml").write_text(codex_config(self.fake.port))
        argv = self.installer_argv("codex", "--codex-home", str(self.home))
        argv += ["--codex-bin", str(self.binary)]
        installed = subprocess.run(
            argv, capture_output=True, text=True, check=False, env=self.env(), timeout=120
        )
        report = json.loads(installed.stdout or "{}")
        if not report.get("ok"):
            raise RuntimeError(f"turn-hooks install codex failed: {report.get('reason_code')}")
        self.edited = bool(self.setup.without_events or self.setup.command)
        if self.edited:
            self.edit_hooks(self.home / "hooks.json")

    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """``codex exec`` one prompt."""
        start = self.queue(reply)
        argv = [str(self.binary), "exec", "--skip-git-repo-check"]
        if self.edited:  # a hand-edited hooks.json is no longer the trusted one
            argv.append("--dangerously-bypass-hook-trust")
        env = {**self.env(), "CODEX_HOME": str(self.home), "FAKE_API_KEY": "dummy"}
        result = self.run([*argv, prompt], env)
        return TurnRun(result.returncode == 0, result.stdout, self.requests_since(start))


class ClaudeCodeDriver(RealDriver):
    """Claude Code: ``--settings`` with the generic contract in the claude-code dialect."""

    host = "claude-code"
    recall_event = "UserPromptSubmit"
    ingest_event = "Stop"
    settle_parts = ("host", "generic", "post-settlement", "--dialect", "claude-code")
    turn_id_field = "prompt_id"
    fake_class = FakeMessages
    settles_detached = True

    def install(self) -> None:
        """The README's settings.json snippet, with this interpreter baked in."""
        events = {"UserPromptSubmit": "pre-turn", "Stop": "post-settlement"}
        hooks = {}
        for event, verb in events.items():
            if event in self.setup.without_events:
                continue
            argv = self.hook_argv(
                "host", "generic", verb, "--dialect", "claude-code", validation=verb != "pre-turn"
            )
            handler = {
                "type": "command",
                "command": shlex.join(argv),
                "timeout": self.setup.timeout_seconds,
            }
            hooks[event] = [{"hooks": [handler]}]
        (self.home / "settings.json").write_text(json.dumps({"hooks": hooks}))

    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """``claude -p`` one prompt."""
        start = self.queue(reply)
        env = {
            **self.env(),
            "CLAUDE_CONFIG_DIR": str(self.home / "cfg"),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.fake.port}",
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        argv = [str(self.binary), "-p", prompt, "--settings", str(self.home / "settings.json")]
        result = self.run([*argv, "--model", "fake-model", "--output-format", "json"], env)
        try:
            answer = str(json.loads(result.stdout).get("result", ""))
        except ValueError:
            answer = ""
        return TurnRun(result.returncode == 0, answer, self.requests_since(start))


GEMINI_OFFLINE_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}
"""What a Gemini CLI 0.61 ``settings.json`` needs beside our hooks to stay on loopback.

An API key, because 0.61 refuses the ``gateway`` auth type that
``GOOGLE_GEMINI_BASE_URL`` alone selects ("Invalid auth method selected"); the Gemini
API client still sends its requests to that base URL. Usage statistics, telemetry
and the update check would each call Google."""


def gemini_settings(home: Path) -> None:
    """Merge :data:`GEMINI_OFFLINE_SETTINGS` into ``home/.gemini/settings.json``."""
    path = home / ".gemini" / "settings.json"
    document = json.loads(path.read_text()) if path.exists() else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**document, **GEMINI_OFFLINE_SETTINGS}, indent=2))


GEMINI_STRICT_MARKERS = ("GITHUB_SHA", "SURFACE")
"""Variables that make Gemini CLI 0.61 hand its hooks only an allow-list of the
environment (PATH, HOME, ...; its ``sanitizeEnvironment``): on GitHub Actions the
hooks would lose ``TURN_HOOKS_*`` and the test run's own variables."""


def gemini_env(base: dict[str, str], home: Path, port: int) -> dict[str, str]:
    """The environment of one offline ``gemini -p``: ``base`` with its home, the fake
    and a dummy key, without :data:`GEMINI_STRICT_MARKERS`.

    ``GEMINI_CLI_TRUST_WORKSPACE`` is the documented way to trust the working folder in
    a headless run: 0.61 refuses to start in an untrusted one, and runs no hooks there.
    ``TMPDIR`` under ``home``: a failed model request leaves an error report there.
    """
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    kept = {k: v for k, v in base.items() if k not in GEMINI_STRICT_MARKERS}
    return {
        **kept,
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "GEMINI_API_KEY": "dummy",
        "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


def gemini_argv(binary: Path, prompt: str) -> list[str]:
    """``gemini -p`` one prompt against the fake's model, the answer as JSON."""
    return [str(binary), "-p", prompt, "--model", "fake-model", "--output-format", "json"]


def gemini_answer(stdout: str) -> str:
    """The final answer of ``gemini -p --output-format json`` (``""``: none)."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return ""
    return str(document.get("response", "")) if isinstance(document, dict) else ""


class GeminiDriver(RealDriver):
    """Gemini CLI: ``~/.gemini/settings.json`` written by ``turn-hooks install gemini``."""

    host = "gemini"
    recall_event = "BeforeAgent"
    ingest_event = "AfterAgent"
    settle_parts = ("host", "generic", "post-settlement", "--dialect", "gemini")
    turn_id_field = None  # Gemini names no turn: AfterAgent finds it from the session
    final_field = "prompt_response"
    fake_class = FakeGemini

    def install(self) -> None:
        """Our installer, the offline settings, then the scenario's edits."""
        argv = self.installer_argv("gemini", "--home", str(self.home / ".gemini"))
        subprocess.run(argv, capture_output=True, check=True, env=self.env(), timeout=60)
        gemini_settings(self.home)
        self.edit_hooks(self.home / ".gemini" / "settings.json", per_second=1000)

    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """``gemini -p`` one prompt (a fresh session each time)."""
        start = self.queue(reply)
        env = gemini_env(self.env(), self.home, self.fake.port)
        result = self.run(gemini_argv(self.binary, prompt), env)
        answer = gemini_answer(result.stdout)
        return TurnRun(result.returncode == 0, answer, self.requests_since(start))


class DshDriver(RealDriver):
    """DSH headless: the patch layer written by ``turn-hooks install dsh``."""

    host = "dsh"
    recall_event = "agent/pre-step"
    ingest_event = "turn/end"
    settle_parts = ("host", "dsh", "post-settlement")
    settles_detached = True
    fake_class = FakeChat
    shim = Path(__file__).with_name("dsh_hmr_shim.mjs")

    def install(self) -> None:
        """Our installer, then the scenario's edits to the plugin config."""
        self.patch = self.home / "turn-hooks.patch.yml"
        argv = [*HOOK_COMMAND, "install", "dsh", "--patch-file", str(self.patch)]
        argv += ["--registry", str(self.workspace.registry), "--goal-id", GOAL]
        argv += ["--agent-id", AGENT]
        if self.setup.validation:
            argv += ["--validation-command-json", json.dumps(self.workspace.validator)]
        else:  # a scenario without evidence: install refuses that unless asked for
            argv.append("--recall-only")
        subprocess.run(argv, capture_output=True, check=True, env=self.env(), timeout=60)
        layer = json.loads(self.patch.read_text())
        config = layer[0]["insert"][0]["config"]
        config["timeoutMs"] = self.setup.timeout_seconds * 1000
        if self.setup.command is not None:
            config["command"] = self.setup.command
        config["events"] = [
            verb
            for event, verb in (
                (self.recall_event, "pre-turn"),
                (self.ingest_event, "post-settlement"),
            )
            if event not in self.setup.without_events
        ]
        self.patch.write_text(json.dumps(layer))
        # The session-title model call would take replies meant for the Turn.
        harness = [{"id": "session-title-llm", "disabled": True}]
        harness.append({"insert": [{"id": "hmr-shim", "name": self.shim.resolve().as_uri()}]})
        self.harness = self.home / "harness.patch.yml"
        self.harness.write_text(json.dumps(harness))

    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """``dsh --profile headless`` one prompt (a fresh session each time)."""
        start = self.queue(reply)
        env = {
            **self.env(),
            "DSH_HOME": str(self.home / "dsh-home"),
            "DEEPSEEK_BASE_URL": f"http://127.0.0.1:{self.fake.port}",
            "DEEPSEEK_API_KEY": "dummy",
            "DSH_TELEMETRY_DISABLED": "1",
        }
        patches = ["--patch", str(self.harness), "--patch", str(self.patch)]
        result = self.run([str(self.binary), "--profile", "headless", *patches, prompt], env)
        return TurnRun(result.returncode == 0, result.stdout, self.requests_since(start))


class JsonRpc:
    """A JSON-RPC client of a child process over stdio, one JSON document a line.

    Every read has a deadline: a reader thread queues the child's lines, so a host
    that stops answering fails the scenario instead of hanging the run.
    """

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=cwd,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.kept: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _next(self, deadline: float) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise RuntimeError("codex app-server did not answer in time") from None
        if line is None:
            raise RuntimeError("codex app-server exited")
        message = json.loads(line)
        return message if isinstance(message, dict) else {}

    def send(self, message: dict[str, Any]) -> None:
        """Write one message."""
        assert self.process.stdin
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and return its result; notifications meanwhile are kept."""
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            message = self._next(deadline)
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error'].get('message')}")
                return message.get("result")
            self.kept.append(message)

    def notification(self, method: str, match: Any) -> dict[str, Any]:
        """The params of the first notification ``method`` that ``match`` accepts."""
        for index, message in enumerate(self.kept):
            if message.get("method") == method and match(message.get("params") or {}):
                return dict(self.kept.pop(index).get("params") or {})
        self.kept.clear()  # nothing else kept is waited for
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            message = self._next(deadline)
            if message.get("method") == method and match(message.get("params") or {}):
                return dict(message.get("params") or {})

    def close(self) -> None:
        """Close stdin and wait for the child (killed after 10 s)."""
        if self.process.stdin:
            with contextlib.suppress(OSError):  # a child that died leaves a broken pipe
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


REFLECTION_BLOCK = re.compile(
    r"<reward_memory_reflection_json>(.*?)</reward_memory_reflection_json>", re.DOTALL
)


class CodexAppDriver(RealDriver):
    """The Codex App: ``codex app-server`` driven over JSON-RPC, settled by refresh/spend.

    The App runs the same trusted ``UserPromptSubmit`` hook as Codex CLI (recall).
    It settles a Turn itself: on ``turn/completed`` with status ``completed`` it runs
    ``turn-hooks codex-app refresh-state`` with the final message's reflection (the
    Todo is the thread, the App turn its turn), then ``codex-app spend-slot
    --execute``, as its quota owner does. Both run to the end before the next Turn.
    """

    host = "codex-app"
    recall_event = "UserPromptSubmit"
    ingest_event = "turn/completed"
    settle_parts = ("codex-app",)
    fake_class = FakeResponses
    spool_dir = "codex-app-settlements"

    def install(self) -> None:
        """Our recall hook in hooks.json, trusted through app-server itself."""
        (self.home / "config.toml").write_text(codex_config(self.fake.port))
        hooks = {}
        if self.recall_event not in self.setup.without_events:
            handler = {
                "type": "command",
                "command": shlex.join(self.hook_argv("host", "codex-cli", "pre-turn")),
                "timeout": self.setup.timeout_seconds,
            }
            hooks[self.recall_event] = [{"hooks": [handler]}]
        (self.home / "hooks.json").write_text(json.dumps({"hooks": hooks}))
        env = {**self.env(), "CODEX_HOME": str(self.home), "FAKE_API_KEY": "dummy"}
        self.server = JsonRpc([str(self.binary), "app-server"], env=env, cwd=self.workspace.work)
        self.receipts: list[dict[str, Any]] = []
        try:
            info = {"clientInfo": {"name": "turn-hooks-conformance", "version": "0.1"}}
            self.server.request("initialize", info)
            self.server.send({"method": "initialized"})
            listed = self.server.request("hooks/list", {"cwds": [str(self.workspace.work)]})
            pending = {
                hook["key"]: {"trusted_hash": hook["currentHash"]}
                for entry in listed.get("data", [])
                for hook in entry.get("hooks", [])
                if hook.get("trustStatus") in {"untrusted", "modified"}
            }
            if pending:
                edit = {"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": pending}
                self.server.request("config/batchWrite", {"edits": [edit]})
        except BaseException:
            self.server.close()
            raise

    def close(self) -> None:
        """Stop app-server, then the fake model server."""
        self.server.close()
        super().close()

    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """One prompt on a fresh thread (a Todo); a completed Turn is then settled."""
        start = self.queue(reply)
        work = str(self.workspace.work)
        thread = self.server.request("thread/start", {"cwd": work})["thread"]["id"]
        text = [{"type": "text", "text": prompt}]
        started = self.server.request("turn/start", {"threadId": thread, "input": text})
        turn_id = started["turn"]["id"]
        done = self.server.notification(
            "turn/completed", lambda params: params.get("turn", {}).get("id") == turn_id
        )["turn"]
        messages = [
            item.get("text")
            for item in done.get("items") or []
            if isinstance(item, dict) and item.get("type") == "agentMessage"
        ]
        answer = next((m for m in reversed(messages) if isinstance(m, str)), "")
        completed = done.get("status") == "completed"
        if completed and self.ingest_event not in self.setup.without_events:
            self.settle({"todo_id": thread, "turn_id": turn_id}, answer)
        return TurnRun(completed, answer, self.requests_since(start))

    def _app(self, command: str, ids: dict[str, Any], *extra: str) -> dict[str, Any]:
        argv = self.hook_argv("codex-app", command, validation=command == "refresh-state")
        if self.setup.command is None:
            argv += ["--todo-id", ids["todo_id"], "--turn-id", ids["turn_id"], *extra]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                env=self.env(),
                cwd=self.workspace.work,
                timeout=self.setup.timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:  # the App gives up on it and goes on
            return {}
        try:
            document = json.loads(done.stdout)
        except ValueError:
            return {}
        return document if isinstance(document, dict) and done.returncode == 0 else {}

    def settle(self, ids: dict[str, Any], final: str) -> None:
        """The App's settlement of one completed Turn: refresh, then the spend."""
        found = REFLECTION_BLOCK.search(final)
        extra = ["--reward-memory-reflection-json", found.group(1)] if found else []
        refreshed = self._app("refresh-state", ids, *extra)
        spent = self._app("spend-slot", ids, "--execute")
        if refreshed.get("ok") is True and spent.get("spend_read_back") is True:
            results = {}
            if isinstance(spent.get("finalize"), dict):
                results[INGEST_RESULT] = spent["finalize"]
            self.receipts.append({**ids, "post_settlement": {"results": results}})

    def settlements(self, workspace: Workspace) -> list[dict[str, Any]]:
        """The Turns whose refresh and spend both read back, with reward memory's
        finalize receipt; only as many as the host's ledger holds complete."""
        directory = workspace.sidecars / self.spool_dir
        paths = sorted(directory.rglob("*.json")) if directory.is_dir() else []
        ledgers = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
        complete = sum(
            all((ledger.get(step) or {}).get("appended") is True for step in ("writeback", "spend"))
            for ledger in ledgers
        )
        return self.receipts[:complete]

    def replay_settlement(self, spool: dict[str, Any], final: str) -> None:
        """The App settles the same Turn again: refresh and spend once more."""
        self.settle(spool, final)


@dataclass(frozen=True)
class PayloadDialect:
    """A host known from its documented hook payloads."""

    host: str
    dialect: str
    recall_event: str
    ingest_event: str
    final_field: str


class PayloadDriver(HostDriver):
    """Plays a host's documented hook payloads to our hook commands, in order."""

    verification = PAYLOAD

    def __init__(self, dialect: PayloadDialect) -> None:
        self.dialect = dialect
        self.host = dialect.host
        self.recall_event = dialect.recall_event
        self.ingest_event = dialect.ingest_event
        self.settle_parts = ("host", "generic", "post-settlement", "--dialect", dialect.dialect)
        # Gemini names no turn: AfterAgent finds it from the session.
        self.turn_id_field = None if dialect.dialect == "gemini" else "turn_id"
        self.final_field = dialect.final_field
        self.turns = 0

    def install(self) -> None:
        """Nothing to write: the payload driver calls the hook commands itself."""

    def _hook(self, verb: str, event: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        argv = self.hook_argv(
            "host",
            "generic",
            verb,
            "--dialect",
            self.dialect.dialect,
            validation=verb == "post-settlement",
        )
        try:
            return subprocess.run(
                argv,
                input=json.dumps(event),
                capture_output=True,
                text=True,
                env=self.env(),
                cwd=self.workspace.work,
                timeout=self.setup.timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:  # the host would kill it and go on
            return subprocess.CompletedProcess(argv, 0, "", "")

    def broken_input_probe(self) -> tuple[int, str]:
        """Our turn-start hook given broken stdin: its exit code and stdout."""
        argv = self.hook_argv("host", "generic", "pre-turn", "--dialect", self.dialect.dialect)
        result = subprocess.run(
            argv, input="{not json", capture_output=True, text=True, env=self.env(), check=False
        )
        return result.returncode, result.stdout.strip()

    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """Turn start payload, the model's answer, then (on success) the end payload."""
        self.turns += 1
        session = f"conformance-{self.dialect.host}"
        common = {"session_id": session, "cwd": str(self.workspace.work)}
        if self.dialect.dialect == "gemini":
            common["timestamp"] = f"2026-01-01T00:00:{self.turns:02d}.000Z"
        else:
            common["turn_id"] = f"turn-{self.turns}"
        contexts: list[Any] = []
        if self.recall_event not in self.setup.without_events:
            start = {**common, "hook_event_name": self.recall_event, "prompt": prompt}
            out = self._hook("pre-turn", start).stdout.strip()
            contexts.append(json.loads(out) if out else {})
        if isinstance(reply, int):  # a failed turn: the host sends no end event
            return TurnRun(False, "", contexts)
        if self.ingest_event not in self.setup.without_events:
            end: dict[str, Any] = {
                **common,
                "hook_event_name": self.ingest_event,
                self.dialect.final_field: reply,
            }
            if self.dialect.dialect == "gemini":  # as Gemini CLI 0.61 sends AfterAgent
                end["timestamp"] = f"2026-01-01T00:00:{self.turns:02d}.500Z"
                end["prompt"], end["stop_hook_active"] = prompt, False
            self._hook("post-settlement", end)
        return TurnRun(True, reply, contexts)


PAYLOAD_DIALECTS = {
    "generic": PayloadDialect(
        "generic", "plain", "pre-turn", "post-settlement", "last_assistant_message"
    ),
    "gemini": PayloadDialect("gemini", "gemini", "BeforeAgent", "AfterAgent", "prompt_response"),
}
REAL_DRIVERS: dict[str, type[RealDriver]] = {
    "codex-cli": CodexCliDriver,
    "claude-code": ClaudeCodeDriver,
    "dsh": DshDriver,
    "codex-app": CodexAppDriver,
    "gemini": GeminiDriver,
}


def driver_for(host: str, binary: Path | None) -> HostDriver | None:
    """The driver for ``host``; ``None`` when this host has none (yet).

    Gemini has both: its real binary when one is given (or on PATH), else the replay
    of its hook payloads as Gemini CLI 0.61 sends them."""
    if host in REAL_DRIVERS and binary is not None:
        return REAL_DRIVERS[host](binary)
    if host in PAYLOAD_DIALECTS:
        return PayloadDriver(PAYLOAD_DIALECTS[host])
    return None


def wait_for(predicate: Any, timeout: float = 30.0) -> Any:
    """Poll ``predicate`` until it is truthy; a detached settlement may still run."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def host_events(host: str) -> tuple[str, ...]:
    """The host events ``--without-event`` may name for ``host`` (none without a driver)."""
    if host in REAL_DRIVERS:
        return (REAL_DRIVERS[host].recall_event, REAL_DRIVERS[host].ingest_event)
    if host in PAYLOAD_DIALECTS:
        return (PAYLOAD_DIALECTS[host].recall_event, PAYLOAD_DIALECTS[host].ingest_event)
    return ()
