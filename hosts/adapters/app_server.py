"""An observer that drives `codex app-server` and settles its successful turns.

It speaks JSON-RPC over stdio to the pinned binary: `thread/start`, then per prompt
`turn/start` and the `turn/completed` notification. Only `status: completed` is a
settlement; `failed` and `interrupted` settle nothing. The final agent message's
reflection block goes through the shared settlement pipeline (validator, spool
readback, `post_settlement`); PreTurn context still arrives through the trusted
UserPromptSubmit hook.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hosts.adapters.generic import build_turn
from hosts.facts.codex_rpc import AppServer
from hosts.settlement.settlement import settle
from turn_hooks import make_plugin_manager


def final_agent_message(turn: dict[str, Any]) -> str | None:
    """The text of the last agentMessage item of a completed turn."""
    texts = [
        item.get("text")
        for item in turn.get("items") or []
        if isinstance(item, dict) and item.get("type") == "agentMessage"
    ]
    texts = [text for text in texts if isinstance(text, str)]
    return texts[-1] if texts else None


class AppServerObserver:
    """One app-server process and thread; :meth:`run_turn` settles what completes."""

    def __init__(
        self,
        codex: str,
        *,
        codex_home: Path,
        cwd: Path,
        registry: str,
        goal_id: str,
        agent_id: str,
        validation_argv: list[str] | None,
    ) -> None:
        env = {**os.environ, "CODEX_HOME": str(codex_home)}
        self.server = AppServer(codex, env)
        self.binding: dict[str, Any] = {
            "goal_id": goal_id,
            "agent_id": agent_id,
            "registry": registry,
        }
        self.validation_argv = validation_argv
        self.cwd = cwd
        self.server.request("initialize", {"clientInfo": {"name": "turn-hooks", "version": "0.1"}})
        self.server.notify("initialized")
        thread = self.server.request("thread/start", {"cwd": str(cwd)})
        self.thread_id = thread["thread"]["id"]

    def run_turn(self, prompt: str) -> dict[str, Any]:
        """Run one turn to completion; settle it when (and only when) it completed."""
        started = self.server.request(
            "turn/start", {"threadId": self.thread_id, "input": [{"type": "text", "text": prompt}]}
        )
        turn_id = started["turn"]["id"]
        completed = self.server.wait_for(
            "turn/completed", lambda params: params.get("turn", {}).get("id") == turn_id
        )
        turn = completed["turn"]
        report: dict[str, Any] = {
            "turn_id": turn_id,
            "status": turn.get("status"),
            "settled": False,
            "receipt": None,
        }
        if turn.get("status") != "completed":
            return report
        message = final_agent_message(turn)
        context = build_turn(
            {"turn_id": turn_id, "session_id": self.thread_id, "cwd": str(self.cwd)},
            host="codex_app",
            **self.binding,
        )
        report["receipt"] = settle(
            make_plugin_manager(),
            context,
            final_message=message,
            validation_argv=self.validation_argv,
        )
        report["settled"] = True
        return report

    def close(self) -> None:
        """End the app-server process."""
        self.server.close()
