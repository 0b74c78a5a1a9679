"""The ``reward_memory`` entry point: the capability as a turn-hooks plugin.

Importing this module is cheap: the core is imported inside the hooks and command
handlers that need it, so a Turn without a reward-memory binding pays almost nothing.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, ClassVar

from turn_hooks import (
    ContextRegistration,
    SettlementRegistration,
    TurnContext,
    hookimpl,
)

if TYPE_CHECKING:
    from turn_hooks import ContextResult, Settlement

SLOT = "reward_memory_recall"
RESULT_FIELD = "reward_memory_reflection_json"
APPLICATION_FIELD = "reward_memory_application_json"

_TEXT = {"type": "string"}


_REFLECTION_KEYS = [
    "outcome_kind",
    "content_summary",
    "reasoning_summary",
    "confidence",
    "evidence_refs",
    "experience",
]
_OUTCOME_KIND = {"enum": ["research", "simulation", "real", "engineering"]}
_CONFIDENCE = {"enum": ["low", "medium", "high"]}
_USE = {"enum": ["applied", "ignored", "refuted"]}

# A result tool's listed schema reaches the model with every request of a session
# (issue 38: both tools' name, description and input_schema at most 600 bytes in all,
# the listing's _meta aside). So it holds what the model must choose and nothing the
# Turn's instructions already say (turn/pre_turn.py REFLECTION_INSTRUCTION,
# turn/application.py APPLICATION_INSTRUCTION name every key and enum): the keys that
# are required, the enums, the containers (a host fills a missing type in as a string:
# Codex does). The text keys' type and the refs' item type are left to the check
# schema, which the server applies as before, so the model still hears of a wrong type
# at once. The tolerant reader (contract/reader.py) decides the substance at
# settlement, as for the block, so both channels learn exactly the same things; a
# stricter schema once refused what the reader accepts (six refs, a ref written as a
# phrase) and cost 1.9 KB per request.
REFLECTION_TOOL = {
    "name": "record_reflection",
    "description": "This Turn's reflection.",
    "input_schema": {
        "type": "object",
        "properties": {
            "outcome_kind": _OUTCOME_KIND,
            "confidence": _CONFIDENCE,
            "evidence_refs": {"type": "array"},
            "experience": {"type": "object"},
        },
        "required": _REFLECTION_KEYS,
    },
    "check_schema": {
        "type": "object",
        "properties": {
            "outcome_kind": _OUTCOME_KIND,
            "content_summary": _TEXT,
            "reasoning_summary": _TEXT,
            "confidence": _CONFIDENCE,
            "evidence_refs": {"type": "array", "items": _TEXT},
            "experience": {"type": "object"},
        },
        "required": _REFLECTION_KEYS,
    },
    # The field's own bound (turn/pre_turn.py RESULT_FIELD_MAX): the tool stages no more.
    "max_chars": 2400,
}
"""The result tool ``turn-hooks mcp serve`` offers for the reflection field."""


APPLICATION_TOOL = {
    "name": "record_memory_use",
    "description": "Did a memory help?",
    # Issue 39: nothing required (the reader at settlement decides, as for the block,
    # and an answer that breaks §12 is ``failed``); reasoning_summary is the
    # instruction's, its type the check schema's.
    "input_schema": {
        "type": "object",
        "properties": {"outcome": _USE, "memory_refs": {"type": "array"}},
    },
    "check_schema": {
        "type": "object",
        "properties": {
            "outcome": _USE,
            "memory_refs": {"type": "array"},
            "reasoning_summary": _TEXT,
        },
    },
    "max_chars": 600,
}
"""The result tool for the application answer (turn/application.py FIELD_MAX)."""


def _resolution(turn: TurnContext) -> Any:
    """The Turn's binding, or ``None`` when the Turn names no registry, Goal or Agent.

    A registry that is named but unreadable, or that lacks the Goal or Agent, raises its
    typed error: the dispatcher isolates it, so the Turn goes on without us and the
    host's hook log records the reason code.
    """
    if not (turn.registry and turn.goal_id and turn.agent_id):
        return None
    from capabilities.reward_memory.binding.registry import load_registry, resolve

    return resolve(load_registry(turn.registry), turn.goal_id, turn.agent_id)


def _provider_for(resolution: Any) -> Any:
    # One hook call runs inside a host's timeout: its provider calls share a budget.
    from capabilities.providers.budget import budgeted
    from capabilities.providers.factory import build_provider

    return budgeted(lambda binding: build_provider(binding, repo=resolution.repo))


def _is_app_settlement(turn: TurnContext, settlement: Settlement) -> bool:
    """A settlement of the Codex App's two-phase ledger: the App host with a quota owner.

    The app-server observer settles as ``codex_app`` too, but without a quota owner
    (``quota_spend`` is ``None``); its Turns take the ordinary ingest.
    """
    return turn.host == "codex_app" and settlement.evidence.quota_spend is not None


class RewardMemoryPlugin:
    """Reward memory's hooks and commands."""

    registrations: ClassVar[dict[str, Any]] = {
        "pre_turn": ContextRegistration(
            hook_id="reward-memory.turn-context",
            capability_id="reward-memory",
            readback_slots=(SLOT,),
        ),
        "post_settlement": SettlementRegistration(
            hook_id="reward-memory.outcome-ingest",
            capability_id="reward-memory",
            result_fields=(RESULT_FIELD, APPLICATION_FIELD),
            # The hook log's codes for a reflection block that cannot be read.
            result_fault_prefixes={
                RESULT_FIELD: "reflection_block",
                APPLICATION_FIELD: "application_block",
            },
            result_tools={RESULT_FIELD: REFLECTION_TOOL, APPLICATION_FIELD: APPLICATION_TOOL},
        ),
    }

    def warm_resident(self) -> None:
        """Load what a PreTurn would load first and every Turn can share: the semantic
        encoder, when the user turned it on (``TURN_HOOKS_SEMANTIC``). The resident hook
        server calls this before it forks, so its children embed the prompt at once
        instead of importing numpy and mapping the model each Turn."""
        from capabilities.providers.semantic import SemanticUnavailable, encoder, setting

        choice = setting()
        if choice is not None:
            with contextlib.suppress(SemanticUnavailable):  # status and the Turn say why
                encoder(choice)

    @hookimpl
    def pre_turn(self, turn: TurnContext) -> ContextResult | dict[str, Any] | None:
        """Recall for the Turn and contribute it, within 64 KiB, with the reflection request."""
        resolution = _resolution(turn)
        if resolution is None:
            return None
        from capabilities.reward_memory.turn.pre_turn import (
            memory_contribution,
            runtime_failure,
            turn_recall,
        )

        try:
            packet = turn_recall(turn, resolution, provider_for=_provider_for(resolution))
        except Exception:  # recall is advisory: any failure leaves the Turn as it was
            packet = runtime_failure(resolution.status)
        return memory_contribution(dict(turn.payload), packet, turn.delivered_item_refs)

    @hookimpl
    def post_settlement(self, turn: TurnContext, settlement: Settlement) -> dict[str, Any] | None:
        """Turn an attested reflection into one verified memory (journal first).

        A settlement of the Codex App's two-phase ledger finalizes the reflection that
        its refresh staged; every other settlement carries its reflection itself.
        """
        resolution = _resolution(turn)
        if resolution is None:
            return None
        if _is_app_settlement(turn, settlement):
            from capabilities.reward_memory.turn.app import finalize

            return finalize(resolution, turn, settlement, provider_for=_provider_for(resolution))
        from capabilities.reward_memory.turn.application import settle_application_fail_open
        from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open

        evidence = settlement.evidence.to_json()
        receipt = run_turn_ingest_fail_open(
            resolution,
            turn_key=turn.turn_key,
            host_result=dict(settlement.host_result),
            evidence=evidence,
            provider_for=_provider_for(resolution),
            observed_at=turn.observed_at,
        )
        application = settle_application_fail_open(
            resolution, turn.turn_key, dict(settlement.host_result), evidence, turn.observed_at
        )
        if application is not None:
            receipt["memory_application"] = application
        return receipt

    @hookimpl
    def read_result(self, field: str, value: str) -> dict[str, Any] | None:
        """The reflection as the model wrote it, read into its canonical text before the
        host spools it and the validator attests it (contract/reader.py)."""
        if field != RESULT_FIELD:
            return None
        from capabilities.reward_memory.contract.reader import read_reflection

        reading = read_reflection(value)
        if reading.refusal is not None:
            return {"refusal": reading.refusal.to_json()}
        return None if reading.value == value else {"value": reading.value}

    @hookimpl
    def register_commands(self, commands: Any) -> None:
        """Add ``turn-hooks reward-memory ...``."""
        from capabilities.reward_memory.cli import register

        register(commands)


plugin = RewardMemoryPlugin()
"""The entry-point object (``turn_hooks`` group, name ``reward_memory``)."""
