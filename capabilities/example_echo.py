"""A small built-in example plugin that shows the whole hook contract.

It contributes only to Turns whose envelope enables it
(``turn_envelope.boundary.capabilities.example_echo`` is ``true``), the same way a
host enables reward memory, so loading it by default changes no real Turn.
"""

from __future__ import annotations

from typing import Any, ClassVar

from turn_hooks import (
    ContextRegistration,
    ContextResult,
    Settlement,
    SettlementRegistration,
    TurnContext,
    hookimpl,
)


def _enabled(turn: TurnContext) -> bool:
    boundary = turn.turn_envelope.get("boundary")
    capabilities = boundary.get("capabilities") if isinstance(boundary, dict) else None
    return isinstance(capabilities, dict) and capabilities.get("example_echo") is True


class ExampleEcho:
    """Echoes the Turn key into the context and acknowledges settlements."""

    registrations: ClassVar[dict[str, Any]] = {
        "pre_turn": ContextRegistration(
            hook_id="example-echo.turn-context",
            capability_id="example-echo",
            readback_slots=("example_echo",),
            max_result_bytes=4096,
        ),
        "post_settlement": SettlementRegistration(
            hook_id="example-echo.settlement", capability_id="example-echo"
        ),
    }

    @hookimpl
    def pre_turn(self, turn: TurnContext) -> ContextResult | None:
        """Contribute the Turn key and one instruction when the envelope enables it."""
        if not _enabled(turn):
            return None
        readback = {"status": "applied", "turn_key": turn.turn_key}
        return ContextResult(
            readback={"example_echo": readback},
            context_fields={"example_echo": {**readback, "observed_at": turn.observed_at}},
            instructions=["The example_echo field only demonstrates the hook contract."],
        )

    @hookimpl
    def post_settlement(self, turn: TurnContext, settlement: Settlement) -> dict[str, Any] | None:
        """Acknowledge a settled Turn without writing anything."""
        if not _enabled(turn):
            return None
        writeback = settlement.evidence.writeback
        return {
            "ok": True,
            "schema_version": "example_echo_receipt_v0",
            "status": "observed",
            "turn_key": turn.turn_key,
            "writeback_appended": writeback.get("appended") is True,
            "external_writes_performed": False,
            "fail_open": True,
        }


plugin = ExampleEcho()
"""The entry-point object (``turn_hooks`` group, name ``example_echo``)."""
