"""The generic CLI host: one stdin/stdout JSON contract for any hook-based runtime.

``turn-hooks host generic pre-turn`` reads ``{turn_id, session_id?, cwd?, prompt?}``
and prints ``{"additional_context": text}``; ``post-settlement`` reads ``{turn_id,
session_id?, cwd?, last_assistant_message}`` after a successful Turn and prints the
settlement receipt. Both always exit 0: a hook never blocks the Turn.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from hosts.adapters.channel import result_tools
from hosts.facts.caps import render_byte_cap, render_cap
from hosts.facts.dialects import DIALECTS, gemini_turn_id
from hosts.facts.render import render, without_refs
from hosts.settlement import after_reply, staged
from hosts.settlement.hook_log import record, record_pre_turn
from hosts.settlement.settlement import (
    SETTLEMENT_WAIT,
    binding_store,
    settle,
    settlement_store,
    start_replay_worker,
    write_ahead,
)
from sidecars import SidecarStore, path_token, read_stream
from turn_hooks import (
    SidecarError,
    TurnContext,
    call_pre_turn,
    loads_bounded,
    make_plugin_manager,
    project_contributions,
)
from turn_hooks.errors import InvalidInputError

if TYPE_CHECKING:
    from turn_hooks import HostProjection

MAX_EVENT_CHARS = 4 * 1024 * 1024
INJECTED_SCHEMA = "turn_hooks_injected_context_v1"
"""v1 keeps the delivered items' refs as ``item_refs``."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def build_turn(
    event: dict[str, Any],
    *,
    host: str,
    goal_id: str,
    agent_id: str,
    registry: str | None,
    settlement_wired: bool = True,
    prompt_in_recall: bool = True,
) -> TurnContext:
    """The kernel's Turn from a host event; the boundary says which edges this host wires.

    The host states facts about itself only (``boundary.host_edges``: it runs
    ``pre_turn`` at turn start, and ``post_settlement`` after a successful Turn unless
    ``settlement_wired`` is false); each capability derives its own switches from them.
    ``prompt_in_recall=False`` withholds the user's prompt, so recall is keyed on the
    goal and project alone (the upstream prompt-independent situation).
    """
    turn_id = event.get("turn_id") or event.get("prompt_id")
    if not isinstance(turn_id, str) or not turn_id:
        raise InvalidInputError(
            "the host event names no turn id", reason_code="host_turn_id_missing"
        )
    envelope = {
        "goal_id": goal_id,
        "agent_id": agent_id,
        "boundary": {"host_edges": {"pre_turn": True, "post_settlement": settlement_wired}},
    }
    prompt = event.get("prompt")
    session = event.get("session_id")
    cwd = event.get("cwd")
    return TurnContext(
        host=host,  # type: ignore[arg-type]  # callers pass a member of HOSTS
        host_turn_id=turn_id,
        host_session_id=session if isinstance(session, str) else None,
        cwd=cwd if isinstance(cwd, str) else None,
        goal_id=goal_id,
        agent_id=agent_id,
        turn_envelope=envelope,
        payload={"turn_envelope": envelope},
        observed_at=_now(),
        prompt=prompt if prompt_in_recall and isinstance(prompt, str) else None,
        registry=registry,
    )


def delivered_refs(document: object) -> set[str]:
    """The item refs an injected-context sidecar records as delivered.

    A v0 sidecar, written while hosts rendered one capability's items themselves,
    keeps the same refs under that capability's own key: its one list.
    """
    if not isinstance(document, dict):
        return set()
    if document.get("schema_version") == INJECTED_SCHEMA:
        refs = document.get("item_refs")
    else:
        refs = next((value for value in document.values() if isinstance(value, list)), None)
    return {ref for ref in refs or [] if isinstance(ref, str)}


def render_once(
    turn: TurnContext,
    projection: HostProjection,
    goal_id: str,
    tools: Mapping[str, str] | None = None,
    session: SessionRecord | None = None,
) -> str:
    """The projection's text without the items this session was already given.

    A host that keeps injected context in the conversation (Codex, Claude Code, any
    generic runtime) would otherwise be handed the same memory on every Turn. The
    refs rendered are remembered in ``injected/<host>/<session>.json`` (a 0600
    sidecar of the Goal's store, merged under its lock) and left out afterwards; an
    item's ref is its content's identity, so a changed item is delivered again.
    Only items are held back: instructions are rendered every Turn. With no session
    or no usable Goal there is nowhere to remember, and everything is rendered. The
    text is bounded by the host's cap (:mod:`hosts.facts.caps`). ``tools`` names the result
    fields this host's tool channel carries (:func:`hosts.adapters.channel.result_tools`).
    ``session`` is the record :func:`with_delivered` read this Turn (else it is read
    here); the refs rendered are merged into it under its lock, so a record another
    process wrote since is kept, and a record that could not be read is not written.
    """
    remembered, delivered = _session_record(turn, goal_id) if session is None else session
    rendering = render(
        without_refs(projection, delivered),
        limit=render_cap(turn.host),
        tools=tools,
        byte_limit=render_byte_cap(turn.host, goal_id, turn.agent_id),
    )
    if remembered and rendering.item_refs:
        # The host's answer does not wait for this record (a locked, fsynced write; a
        # new file, so its directory's fsync too, for every session's first recall): a
        # resident child writes it once the host has the context. The next Turn's
        # PreTurn starts only after this Turn's model request, and a record that never
        # lands costs a repeat of these items, never the Turn.
        remember = functools.partial(
            _remember_delivered, remembered[0], remembered[1], turn.host, rendering.item_refs
        )
        if not after_reply.defer(remember):
            remember()
    return rendering.text


SessionRecord = tuple[tuple[SidecarStore, Path] | None, set[str]]
"""Where a session's delivered refs are kept (``None``: nowhere, or unreadable) and the
refs kept there (:func:`_session_record`)."""


def _session_record(turn: TurnContext, goal_id: str) -> SessionRecord:
    """Where this session's delivered refs are kept, and the refs kept there.

    ``(None, set())`` with no session or no usable Goal: nowhere to remember. A broken
    record (a link, a FIFO, bad bytes) costs the de-duplication, never the Turn's
    context and reflection request, and its reason code is logged.
    """
    store = binding_store(turn.registry, goal_id)
    if store is None or not turn.host_session_id:
        return None, set()
    name = path_token(turn.host_session_id, "session") + ".json"
    path = store.path("injected", turn.host, name)
    try:
        return (store, path), delivered_refs(store.read(path))
    except SidecarError as exc:
        record(turn.host, "pre_turn", [("adapter", exc.reason_code)])
        return None, set()


def with_delivered(turn: TurnContext, goal_id: str) -> tuple[TurnContext, SessionRecord]:
    """``turn`` stating which items this session already holds (``delivered_item_refs``),
    so that a capability words its contribution for the items that will be shown; and
    the session's record as read, for :func:`render_once` (one read a Turn)."""
    session = _session_record(turn, goal_id)
    delivered = session[1]
    if not delivered:
        return turn, session
    return dataclasses.replace(turn, delivered_item_refs=sorted(delivered)), session


def _remember_delivered(store: SidecarStore, path: Path, host: str, refs: Iterable[str]) -> None:
    """Merge ``refs`` into the session's record of delivered items (under its lock)."""
    delivered = set(refs)
    try:
        store.update(
            path,
            lambda doc: {
                **(doc if isinstance(doc, dict) else {}),
                "schema_version": INJECTED_SCHEMA,
                "host": host,
                "item_refs": sorted({*delivered_refs(doc), *delivered}),
            },
        )
    except SidecarError as exc:  # delivered all the same; repeated next Turn
        record(host, "pre_turn", [("adapter", exc.reason_code)])


def carry_on_settlements(turn: TurnContext) -> None:
    """Start the detached worker for settlements a failed hook left queued, and drop
    result values staged before this Turn's prompt (:func:`hosts.settlement.staged.discard`).

    Never raises: a queue that cannot be read costs this Turn nothing but a reason
    code in the hook log.
    """
    try:
        start_replay_worker(
            registry=turn.registry,
            goal_id=turn.goal_id or "",
            agent_id=turn.agent_id or "",
        )
    except (OSError, SidecarError) as exc:
        reason = exc.reason_code if isinstance(exc, SidecarError) else "settlement_worker_failed"
        record(turn.host, "pre_turn", [("adapter", reason)])
    # A value staged before this prompt belongs to a Turn that ended unsettled (a failed
    # Claude Code Turn fires no settlement): this Turn's Stop must not take it.
    store = binding_store(turn.registry, turn.goal_id)
    if store is None or not (turn.goal_id and turn.agent_id):
        return
    try:
        staged.discard(store, turn.goal_id, turn.agent_id, turn.host_session_id)
    except (OSError, SidecarError) as exc:
        reason = exc.reason_code if isinstance(exc, SidecarError) else "staged_result_unwritable"
        record(turn.host, "pre_turn", [("adapter", reason)])


def _gemini_turn(event: dict[str, Any], binding: dict[str, Any], *, starting: bool) -> None:
    """Gemini has no turn id: BeforeAgent mints one, AfterAgent reads it back.

    With no usable Goal, BeforeAgent keeps nothing, and AfterAgent raises the binding's
    reason code (it could settle nothing anyway).
    """
    session = event.get("session_id")
    if not isinstance(session, str) or not session:
        return
    registry, goal_id = binding.get("registry"), binding.get("goal_id")
    if starting:
        turn_id = gemini_turn_id(event)
        store = binding_store(registry, goal_id)
        if turn_id:
            event["turn_id"] = turn_id
        if turn_id and store is not None:
            path = store.path("injected", "gemini", path_token(session, "session") + ".json")
            store.update(path, lambda doc: {**(doc or {}), "current_turn_id": turn_id})
        return
    store = settlement_store(registry, goal_id)
    path = store.path("injected", "gemini", path_token(session, "session") + ".json")
    current = (store.read(path) or {}).get("current_turn_id")
    if isinstance(current, str):
        event["turn_id"] = current


def pre_turn(event: dict[str, Any], *, dialect: str = "plain", **binding: Any) -> Any:
    """Dispatch PreTurn and render the contribution in the runtime's dialect."""
    style = DIALECTS[dialect]
    if dialect == "gemini":
        _gemini_turn(event, binding, starting=True)
    turn = build_turn(event, host=style.host, **binding)
    carry_on_settlements(turn)
    pm = make_plugin_manager()
    seen, session = with_delivered(turn, binding["goal_id"])
    outcome = call_pre_turn(pm, seen)
    record_pre_turn(style.host, outcome)
    projection = project_contributions(outcome.payload)
    tools = result_tools(turn.host, pm)
    text = render_once(turn, projection, binding["goal_id"], tools, session)
    return style.pre_turn_output(text)


def stop_turn(
    event: dict[str, Any], *, dialect: str = "plain", **binding: Any
) -> tuple[TurnContext, str | None] | None:
    """(Turn, final message) of a Stop event, as :func:`post_settlement` settles it;
    ``None`` (logged) when the dialect says the Turn did not complete. Shared with the
    recovery of a dead hook's spill (:func:`hosts.settlement.spill.recover`)."""
    style = DIALECTS[dialect]
    if dialect == "gemini":
        _gemini_turn(event, binding, starting=False)
    turn = build_turn(event, host=style.host, **binding)
    if style.final_text_marks_success and style.final_text_field not in event:
        record(style.host, "post_settlement", [("adapter", "host_turn_not_completed")])
        return None
    message = event.get(style.final_text_field)
    return turn, message if isinstance(message, str) else None


def post_settlement(
    event: dict[str, Any],
    *,
    validation_argv: list[str] | None,
    validation_timeout: int | None,
    dialect: str = "plain",
    **binding: Any,
) -> Any:
    """Settle a successful Turn: validator, spool readback, ``post_settlement``."""
    style = DIALECTS[dialect]
    built = stop_turn(event, dialect=dialect, **binding)
    if built is None:
        return style.settlement_output({})
    turn, message = built
    argv, timeout = validation_argv, validation_timeout
    # Before the plugins load: a kill from here on leaves the Turn queued.
    ahead = write_ahead(
        turn, final_message=message, validation_argv=argv, validation_timeout=timeout
    )
    receipt = settle(
        make_plugin_manager(),
        turn,
        final_message=message,
        validation_argv=argv,
        validation_timeout=timeout,
        detach=style.detached_settlement or style.waits_for_settlement,
        wait=SETTLEMENT_WAIT if style.waits_for_settlement else None,
        ahead=ahead,
    )
    return style.settlement_output(receipt or {})


def read_hook_stdin(stream: IO[Any] | None = None) -> bytes:
    """Hook stdin as raw bytes, read for at most ``MAX_EVENT_CHARS + 1`` bytes.

    Past the bound the read stops and the event is refused (``hook_input_too_large``):
    no host event needs that much, and an endless writer (``yes |``) must not hold
    the Turn. No stdin at all reads as empty. Decoding is :func:`parse_event`'s job,
    under its error policy.
    """
    source = sys.stdin if stream is None else stream
    return read_stream(source, reason_prefix="hook_input", limit=MAX_EVENT_CHARS)


def parse_event(data: str | bytes) -> dict[str, Any]:
    """One JSON object from hook stdin (hosts may or may not end it with a newline).

    Input over ``MAX_EVENT_CHARS`` (bytes, or code points for text) is refused
    unparsed: no host event needs that much, and a hook must not spend the Turn's time
    parsing it. The bytes are decoded as UTF-8 with ``errors="replace"``: an invalid
    byte, or a lone surrogate escape, in the model's final message becomes U+FFFD, so
    one bad byte outside the reflection block never costs the Turn its settlement.
    Nesting and number literals are bounded as :func:`turn_hooks.loads_bounded` does;
    every refusal is a ``hook_input_*`` reason code.
    """
    document = loads_bounded(
        data, max_size=MAX_EVENT_CHARS, errors="replace", reason_prefix="hook_input"
    )
    if not isinstance(document, dict):
        raise InvalidInputError(
            "hook stdin must be a JSON object", reason_code="hook_input_not_object"
        )
    return document
