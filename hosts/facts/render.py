"""The text a host injects: the projected contribution, bounded (hosts.md §1.2-§1.3).

Order: the instructions, then the context items' texts, then one request per result
field. Over the bound, whole items are dropped from the end and one line says how
many; a request is never dropped and no item is ever cut in the middle.

Hosts do not know what an item says or which capability sent it: a capability
formats its own item text, and the host renders, drops and de-duplicates items by
their refs alone. Each result field comes back by one channel, and its request names
that one only (:mod:`hosts.adapters.channel` says which): the field's tool where the host
offers it (:func:`tool_request`), else one ``<field>…</field>`` block at the end of
the model's final message (:func:`block_request`). Both ask for nothing when there
is no value: an ordinary answer ends as the model wrote it, with no empty block.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hosts.facts.caps import DEFAULT_RENDER_CHARS

if TYPE_CHECKING:
    from turn_hooks import HostProjection

RENDER_LIMIT = DEFAULT_RENDER_CHARS
"""The bound when a caller names no host's (each host's is in :mod:`hosts.facts.caps`)."""


NONE_WANTED = "When there is none, leave it out entirely."
"""How every request ends: no value, no block and no call (conformance finds our text's
end by it)."""


def block_request(field: str) -> str:
    """The line asking the model for ``field`` in a block of its final message, only
    when there is a value: the block is in the answer the user reads, so it is asked
    for compact and never empty."""
    return (
        f"When {field} has a value, end your final message with one <{field}>…</{field}> "
        f"block holding it, written compactly. {NONE_WANTED}"
    )


def tool_request(field: str, tool: str) -> str:
    """The line asking the model to hand ``field`` over through the host's ``tool``,
    out of the user's sight: the field's only channel, so no block is asked for."""
    return (
        f"When {field} has a value, call the {tool} tool with it as the arguments, and keep "
        f"it out of your answer. {NONE_WANTED}"
    )


def field_request(field: str, tools: Mapping[str, str]) -> str:
    """The one request for ``field``: its tool where ``tools`` names one, else its block."""
    tool = tools.get(field)
    return tool_request(field, tool) if tool else block_request(field)


def omission_note(count: int) -> str:
    """The one line standing in for items dropped to fit the bound."""
    return f"({count} context items omitted to fit the context limit.)"


@dataclass(frozen=True)
class Rendering:
    """A rendered projection and the refs of the items it holds."""

    text: str
    item_refs: tuple[str, ...] = ()


def render(
    projection: HostProjection,
    *,
    limit: int = RENDER_LIMIT,
    tools: Mapping[str, str] | None = None,
    byte_limit: int | None = None,
) -> Rendering:
    """The bounded text rendering of a projection (``""`` when there is nothing to add).

    ``tools`` maps a result field to the tool that carries it on this Turn's host
    (:func:`hosts.adapters.channel.result_tools`); every other field is asked for as a block.
    ``byte_limit`` bounds the UTF-8 bytes too, for a runtime that counts bytes
    (Codex: :mod:`hosts.facts.codex_limit`).
    """
    head = list(projection.capability_instructions)
    tail = [field_request(field, tools or {}) for field in projection.capability_result_fields]
    items = list(projection.context_items)
    if not head and not items and not tail:
        return Rendering("")
    kept = list(items)
    while True:
        omitted = len(items) - len(kept)
        note = [omission_note(omitted)] if omitted else []
        text = "\n\n".join([*head, *(item.text for item in kept), *note, *tail])
        fits = len(text) <= limit and (byte_limit is None or len(text.encode()) <= byte_limit)
        if fits or not kept:
            return Rendering(text, tuple(item.ref for item in kept))
        kept.pop()


def render_context(
    projection: HostProjection,
    *,
    limit: int = RENDER_LIMIT,
    tools: Mapping[str, str] | None = None,
) -> str:
    """Just the text of :func:`render`."""
    return render(projection, limit=limit, tools=tools).text


def without_refs(projection: HostProjection, refs: set[str]) -> HostProjection:
    """The projection without the items whose ref is in ``refs``.

    Hosts that keep injected context in the conversation history use it so that an
    item already delivered in this session is not rendered again.
    """
    if not refs:
        return projection
    kept = [item for item in projection.context_items if item.ref not in refs]
    return dataclasses.replace(projection, context_items=kept)


def extract_block(message: str | None, field: str) -> tuple[str | None, str | None]:
    """The text of the one ``<field>…</field>`` block, and why there is none.

    No block, or an empty one, is no value and no fault: ``(None, None)``. A block that
    appears twice is ambiguous (``"repeated"``) and a tag without its partner is
    ``"malformed"``; both yield no value, so nothing is taken from a guess.

    A message with no such tag is read again for ``&lt;field&gt;…&lt;/field&gt;``, its
    text unescaped: Gemini CLI (0.61) escapes ``<`` and ``>`` in the context a hook
    adds, so the model is shown the request in that form and may answer in it.
    """
    if not message:
        return None, None
    found = _one_block(message, f"<{field}>", f"</{field}>")
    if found != (None, None) or "&lt;" not in message:
        return found
    value, fault = _one_block(message, f"&lt;{field}&gt;", f"&lt;/{field}&gt;")
    return (html.unescape(value) if value else None), fault


def _one_block(message: str, opening: str, closing: str) -> tuple[str | None, str | None]:
    opened, closed = message.count(opening), message.count(closing)
    if opened == closed == 0:
        return None, None
    if opened > 1 or closed > 1:
        return None, "repeated"
    start, end = message.find(opening), message.find(closing)
    if opened != closed or end < start:
        return None, "malformed"
    return message[start + len(opening) : end].strip() or None, None


def extract_results(
    message: str | None, fields: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """The host result for the declared result fields, and the reason codes of faults.

    ``fields`` maps each field to the prefix of its fault codes
    (:func:`turn_hooks.settlement_result_fields`). Every field gets a value, ``""``
    when the message holds no usable block; a fault is ``<prefix>_repeated`` or
    ``<prefix>_malformed``.
    """
    values: dict[str, str] = {}
    faults: list[str] = []
    for field, prefix in fields.items():
        value, fault = extract_block(message, field)
        values[field] = value or ""
        if fault:
            faults.append(f"{prefix}_{fault}")
    return values, faults
