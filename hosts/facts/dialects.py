"""Dialects of the generic CLI host: how each runtime names things and what it prints.

- plain: turn id `turn_id`; final text `last_assistant_message`; prints
  `{"additional_context"}` or `{}` before the Turn and the receipt after it.
- claude-code: turn id `prompt_id`; final text `last_assistant_message`; prints
  `hookSpecificOutput` or nothing before, nothing after. Claude Code 2.1.332 also
  fires Stop after a failed request, without `last_assistant_message`; such a Stop
  is not a settlement.
- gemini: no turn id, so BeforeAgent's `session_id:timestamp` is kept for AfterAgent;
  final text `prompt_response`; prints `hookSpecificOutput` or `{}` before, `{}` after
  (stdout must be JSON). Checked against the real Gemini CLI 0.61.0: its events carry
  `session_id`, `transcript_path`, `cwd`, `hook_event_name` and an ISO `timestamp`
  (AfterAgent's is its own, hence the kept id), BeforeAgent `prompt`, AfterAgent
  `prompt`, `prompt_response` and `stop_hook_active`; no AfterAgent follows a failed
  model request. It appends `additionalContext` to the user's message as
  `<hook_context>…</hook_context>` with `<` and `>` escaped
  (:func:`hosts.facts.render.extract_block` reads a block written back that way).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dialect:
    """One runtime's hook conventions."""

    name: str
    host: str
    event_name: str | None
    final_text_field: str
    settlement_prints: str  # "receipt", "nothing" or "empty-json"
    empty_pre_turn: dict[str, Any] | None
    final_text_marks_success: bool = False
    """An end event without the final-text field is a failed Turn, not a settlement."""
    detached_settlement: bool = False
    """The Stop hook spools and returns; a forked child settles (validator, write)."""
    waits_for_settlement: bool = False
    """A forked child settles, and the hook waits for it a while (the inline
    deadline): a validator that runs longer is never cut off and run again."""

    def pre_turn_output(self, text: str) -> dict[str, Any] | None:
        """What to print for a rendered context (``None``: print nothing)."""
        if not text:
            return self.empty_pre_turn
        if self.event_name is None:
            return {"additional_context": text}
        return {"hookSpecificOutput": {"hookEventName": self.event_name, "additionalContext": text}}

    def settlement_output(self, receipt: dict[str, Any]) -> dict[str, Any] | None:
        """What to print after settlement."""
        if self.settlement_prints == "receipt":
            return receipt
        return {} if self.settlement_prints == "empty-json" else None


DIALECTS = {
    "plain": Dialect(
        "plain",
        "generic_cli",
        None,
        "last_assistant_message",
        "receipt",
        {},
        waits_for_settlement=True,
    ),
    "claude-code": Dialect(
        "claude-code",
        "claude_code",
        "UserPromptSubmit",
        "last_assistant_message",
        "nothing",
        None,
        final_text_marks_success=True,
        detached_settlement=True,
    ),
    "gemini": Dialect(
        "gemini",
        "gemini",
        "BeforeAgent",
        "prompt_response",
        "empty-json",
        {},
        waits_for_settlement=True,
    ),
}


def gemini_turn_id(event: dict[str, Any]) -> str | None:
    """Gemini documents no turn id: session id plus the BeforeAgent timestamp."""
    session, stamp = event.get("session_id"), event.get("timestamp")
    if isinstance(session, str) and isinstance(stamp, str | int | float):
        return f"{session}:{json.dumps(stamp).strip(chr(34))}"
    return None
