"""A minimal JSON-RPC client of ``codex app-server``, shared by whoever talks to it.

Installing trusts our hooks through it (:mod:`hosts.setup.codex_trust`), and the App
observer drives Turns through it (:mod:`hosts.adapters.app_server`): it sits below both
so neither imports the other.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from typing import Any


class AppServer:
    """A minimal JSON-RPC client of `codex app-server` over stdio (JSON lines)."""

    def __init__(self, codex: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.next_id = 0
        self.seen: list[dict[str, Any]] = []

    def _messages(self) -> Any:
        assert self.process.stdout
        while self.seen:
            yield self.seen.pop(0)
        for line in self.process.stdout:
            yield json.loads(line)

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send one request and return its result; notifications read meanwhile are kept."""
        self.next_id += 1
        ident = self.next_id
        assert self.process.stdin
        self.process.stdin.write(
            json.dumps({"id": ident, "method": method, "params": params}) + "\n"
        )
        self.process.stdin.flush()
        kept: list[dict[str, Any]] = []
        for message in self._messages():
            if message.get("id") == ident:
                self.seen[:0] = kept
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error'].get('message')}")
                return message.get("result")
            kept.append(message)
        raise RuntimeError(f"codex app-server closed before answering {method}")

    def wait_for(self, method: str, match: Any) -> dict[str, Any]:
        """The first notification ``method`` whose params satisfy ``match``."""
        for message in self._messages():
            params = message.get("params") or {}
            if message.get("method") == method and match(params):
                return params
        raise RuntimeError(f"codex app-server closed before {method}")

    def notify(self, method: str) -> None:
        """Send one notification (no answer expected)."""
        assert self.process.stdin
        self.process.stdin.write(json.dumps({"method": method}) + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        """Close stdin and wait for the process to end (kill after 10 s)."""
        if self.process.stdin:
            with contextlib.suppress(OSError):  # a server that died leaves a broken pipe
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
