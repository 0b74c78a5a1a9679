"""The hooks a turn-hooks plugin can implement.

Plugin authors write ``from turn_hooks import hookimpl`` and implement any subset of
these hooks, accepting only the arguments they need (pluggy passes arguments by
name, so a new argument added to a spec later never breaks an existing plugin).
Every plugin object that implements a hook also exposes ``registrations``: a mapping
from hook name to its registration model (:class:`~turn_hooks.models.ContextRegistration`,
:class:`~turn_hooks.models.SettlementRegistration` or
:class:`~turn_hooks.models.WritebackRegistration`), so the dispatcher can check
identity and budget *before* it calls the plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

from turn_hooks._names import NAME

if TYPE_CHECKING:  # argparse is only needed by the CLI, not by the per-Turn hook path
    import argparse

    from turn_hooks.models import ContextResult, Settlement, TurnContext, WritebackEvent

hookspec = pluggy.HookspecMarker(NAME)
hookimpl = pluggy.HookimplMarker(NAME)


@hookspec
def pre_turn(turn: TurnContext) -> ContextResult | None:
    """Contribute bounded context to a Turn before the host runs it.

    Fires once per host Turn, after the host has admitted the prompt and before the
    model request is built.

    :param turn: The Turn as taken at its start. ``turn.payload`` is this plugin's
        own copy of the host request under construction, with the readback of
        earlier hooks merged in.

    :return: A :class:`~turn_hooks.models.ContextResult` (or a mapping with the same
        keys) whose four-key compact UTF-8 JSON fits the registration's
        ``max_result_bytes`` (at most 65,536), and whose ``context_items`` texts fit it
        too, measured on their own; or ``None`` to contribute nothing. Hosts render
        the items as they are, without knowing what they say.

    Results of all implementations are collected, in plugin-name order; an invalid
    result or an exception isolates that plugin only (``context_hook_failed``).

    **Must not** mutate ``turn``, block on unbounded I/O, or raise for expected
    conditions such as a provider outage: return a result that says so instead.
    It writes to no provider, with one exception: it may finish writes that an
    earlier ``post_settlement`` already accepted for the same binding, that is,
    retry journalled, independently validated settlements whose write did not
    complete (turn-lifecycle.md §5.2 step 2: "the next executing Turn retries the
    same deterministic event before recall"), within the hook call's budget. It
    never writes anything that no earlier settlement validated.

    .. versionadded:: 0.1

    **Use in hosts**: run on the host's turn-start event (Codex ``UserPromptSubmit``,
    Claude Code ``UserPromptSubmit``, Gemini ``BeforeAgent``, DSH ``agent/pre-step``).
    """


@hookspec
def post_settlement(turn: TurnContext, settlement: Settlement) -> dict[str, Any] | None:
    """Apply the effects of a Turn the host has settled accountably.

    Fires once per settled Turn, after the host recorded the settlement (writeback
    read back, and quota spend where the host has a quota owner) and an independent
    validator ran. This is the only hook that may write to a provider.

    :param turn: The Turn the settlement belongs to.
    :param settlement: The host result (one value per result field a loaded plugin
        declares in its ``SettlementRegistration.result_fields``) and the accountable
        evidence, including the validator's ``task_validation["attestation"]`` and any
        earlier dispatcher receipt.

    :return: A public-safe effect receipt (a JSON object with at least ``status``),
        or ``None`` when this plugin has nothing to do for the Turn.

    Results of all implementations are collected into one aggregated receipt; an
    implementation whose earlier receipt is final is not called again. A receipt is
    not final while its ``status`` is retryable or its ``reconciliation_state`` is
    ``pending`` (the plugin journalled the settlement and retries it itself): a
    repeated dispatch then reports the journal's current state, not a stale one.

    **Must not** mutate its arguments, write without accountable evidence, put raw
    reflection text, paths or secrets in the receipt, or raise for expected
    conditions: an exception is recorded as ``runtime_unavailable`` and retried later.

    .. versionadded:: 0.1

    **Use in hosts**: run after the host's successful-turn event (Codex ``Stop``,
    Claude Code ``Stop``, Gemini ``AfterAgent``, app-server ``turn/completed`` with
    status ``completed``, DSH ``turn/end`` with reason ``completed``), from the
    settlement worker.
    """


@hookspec
def read_result(field: str, value: str) -> dict[str, Any] | None:
    """Read the model's value of a result field this plugin declares, before the host
    keeps it.

    Fires once per non-empty result field of a settled Turn, after the host took the
    value (a block of the final message, or a tool call) and before it spools the
    Turn and runs the validator, so the validator attests the value as the plugin
    reads it. A tolerant reader at the model boundary: a plugin normalises how the
    model *presented* the value (a code fence, whitespace, the case of an enum...)
    into its canonical form, and says why it refuses a value it can never accept.

    :param field: A result field the plugin declares in its
        ``SettlementRegistration.result_fields``; only the first plugin (in plugin-name
        order) that declares the field reads it.
    :param value: The value as the model gave it.

    :return: ``{"value": text}``, the canonical value the host keeps instead;
        ``{"refusal": {"reason_code", "field", "rule"}}``, the value is kept as given
        (the plugin refuses it again in ``post_settlement``) and the host's local hook
        log says which part of it (``field``, a dotted path) broke which ``rule``; or
        ``None`` to keep the value as given.

    An exception or an invalid answer keeps the value as given and is logged as
    ``result_reader_failed`` or ``result_reader_invalid``.

    **Must not** change what the value says (only how it is presented), do I/O, or
    put the value itself in a refusal: the rule is the plugin's own words, and it
    reaches the hook log and ``turn-hooks status``.

    .. versionadded:: 0.2

    **Use in hosts**: call :func:`turn_hooks.read_results` on the host result before
    spooling it, wherever the result arrives (a block, a result tool, a command-line
    argument).
    """


@hookspec
def post_writeback(turn: TurnContext, writeback: WritebackEvent) -> dict[str, Any] | None:
    """Observe a committed settlement without changing anything.

    Fires once per committed settlement spool entry, after ``post_settlement``.

    :param turn: The Turn the settlement belongs to.
    :param writeback: The committed settlement as the spool recorded it.

    :return: An observation (a JSON object of at most the registration's
        ``max_result_bytes``, 16,384 by default) or ``None``.

    Results of all implementations whose registration lists the event kind are
    collected; a failing observer is isolated and recorded.

    **Must not** write anywhere (its ``requested_write_scope`` is always empty),
    mutate its arguments, or block on unbounded I/O.

    .. versionadded:: 0.1

    **Use in hosts**: run by the settlement worker after the spool entry holding the
    ``post_settlement`` receipt was written.
    """


@hookspec
def register_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Add a plugin's own sub-commands to the ``turn-hooks`` command line.

    Fires once when the command line is built for a command that is not one of the
    built-in ones (and for the top-level ``--help``).

    :param commands: The top-level sub-command registry. Add a parser with
        ``commands.add_parser(name, help=...)`` and give it a ``handler`` default: a
        callable taking the parsed arguments and returning ``(document, title)``.

    :return: ``None``.

    Every implementation is called; names must not collide with built-in commands.

    **Must not** import heavy modules at registration time (import them inside the
    handler), do I/O, or print.

    .. versionadded:: 0.1

    **Use in hosts**: the ``turn-hooks`` console script calls it; runtimes never do.
    """
