"""The text a host injects: the projected contribution, bounded (hosts.md §1.2-§1.3).

Order: the instructions, then the context items' texts, then one block request per
result field. Over the bound, whole items are dropped from the end and one line says
how many; a block request is never dropped and no item is ever cut in the middle.

Hosts do not know what an item says or which capability sent it: a capability
formats its own item text, and the host renders, drops and de-duplicates items by
their refs alone. Result fields come back the same way, as one ``<field>…</field>``
block per field in the model's final message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hosts.caps import DEFAULT_RENDER_CHARS

if TYPE_CHECKING:
    from turn_hooks import HostProjection

RENDER_LIMIT = DEFAULT_RENDER_CHARS
"""The bound when a caller names no host's (each host's is in :mod:`hosts.caps`)."""


def block_request(field: str) -> str:
    """The line asking the model to answer ``field`` in a block of its final message."""
    return (
        f"End your final message with exactly one <{field}>…</{field}> block holding "
        f"the {field} value described above, or an empty block when there is none."
    )


def omission_note(count: int) -> str:
    """The one line standing in for items dropped to fit the bound."""
    return f"({count} context items omitted to fit the context limit.)"


@dataclass(frozen=True)
class Rendering:
    """A rendered projection and the refs of the items it holds."""

    text: str
    item_refs: tuple[str, ...] = ()


def render(projection: HostProjection, *, limit: int = RENDER_LIMIT) -> Rendering:
    """The bounded text rendering of a projection (``""`` when there is nothing to add)."""
    head = list(projection.capability_instructions)
    tail = [block_request(field) for field in projection.capability_result_fields]
    items = list(projection.context_items)
    if not head and not items and not tail:
        return Rendering("")
    kept = list(items)
    while True:
        omitted = len(items) - len(kept)
        note = [omission_note(omitted)] if omitted else []
        text = "\n\n".join([*head, *(item.text for item in kept), *note, *tail])
        if len(text) <= limit or not kept:
            return Rendering(text, tuple(item.ref for item in kept))
        kept.pop()


def render_context(projection: HostProjection, *, limit: int = RENDER_LIMIT) -> str:
    """Just the text of :func:`render`."""
    return render(projection, limit=limit).text


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
    """
    if not message:
        return None, None
    opening, closing = f"<{field}>", f"</{field}>"
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
