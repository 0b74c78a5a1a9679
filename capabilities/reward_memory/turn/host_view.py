"""How reward memory meets a capability-neutral host.

Hosts know hooks, not capabilities: they say which hooks they wire and render opaque
context items. This module turns those host facts into reward memory's own automation
flags (turn-lifecycle.md §6), and its recalled guidance into the items a host shows.
It is apart from the recall packet in :mod:`~capabilities.reward_memory.turn.pre_turn`
because it is the one place that decides what a host sees of a memory.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from turn_hooks import ContextItem


def with_capability_flags(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` whose envelope carries ``boundary.capabilities.reward_memory``.

    Hosts state only which hooks they wire (``boundary.host_edges``); the gate's
    flags follow from those: recall when ``pre_turn`` runs at turn start, ingest when
    ``post_settlement`` runs after a successful Turn. Flags an envelope already
    carries (a control plane that decides them itself) are kept as they are.
    """
    envelope = payload.get("turn_envelope")
    if not isinstance(envelope, dict):
        return payload
    boundary = envelope.get("boundary")
    if not isinstance(boundary, dict) or not isinstance(boundary.get("host_edges"), dict):
        return payload
    capabilities = boundary.get("capabilities")
    capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
    if "reward_memory" in capabilities:
        return payload
    edges = boundary["host_edges"]
    capabilities["reward_memory"] = {
        "automatic_recall": edges.get("pre_turn") is True,
        "automatic_ingest": edges.get("post_settlement") is True,
    }
    boundary = {**boundary, "capabilities": capabilities}
    return {**payload, "turn_envelope": {**envelope, "boundary": boundary}}


ITEM_BYTES = 400
"""The most UTF-8 bytes one memory renders in (issue 38): long fields are cut to fit."""
ELLIPSIS = "\u2026"
"""Where a field was cut."""
_BEHAVIOUR = ("trigger", "action", "validation", "stop_condition")


def guidance_items(context: object) -> list[ContextItem]:
    """The recalled guidance as the text the host shows, one item per memory.

    ``[memory N] <candidate ref>``, the summary, then the trigger, action, validation
    and stop condition of the future behaviour: when the lesson applies, what to do,
    how to check it and where it ends. The candidate ref is the item's ref, so a host
    shows a memory once per session; a second item with the same candidate ref (only
    a hand-edited receipt holds one) is left out. An item fits :data:`ITEM_BYTES`:
    every field keeps its line, and the longest are cut (:func:`fit_fields`).
    """
    guidance = context.get("guidance") if isinstance(context, dict) else None
    items: list[ContextItem] = []
    for entry in guidance if isinstance(guidance, list) else []:
        ref = str(entry.get("candidate_ref")) if isinstance(entry, dict) else ""
        if not ref or ref in {item.ref for item in items}:
            continue
        head = f"[memory {len(items) + 1}] {ref}"
        fields = [("summary", entry.get("content_summary"))]
        experience = entry.get("experience")
        behaviour = experience.get("future_behavior") if isinstance(experience, dict) else None
        if isinstance(behaviour, dict):
            fields += [
                (key.replace("_", " "), behaviour[key]) for key in _BEHAVIOUR if behaviour.get(key)
            ]
        labels = [f"\n  {label}: " for label, _ in fields]
        room = ITEM_BYTES - _size(head) - sum(map(_size, labels))
        values = fit_fields([" ".join(str(value).split()) for _, value in fields], room)
        text = head + "".join(label + value for label, value in zip(labels, values, strict=True))
        items.append(ContextItem(ref=ref, text=text))
    return items


def shows_new(context: object, delivered: Collection[str]) -> bool:
    """Whether ``context`` holds a memory the host will show: one its session does not
    already hold (a host renders an item once per session, hosts.md §1.2)."""
    return any(item.ref not in delivered for item in guidance_items(context))


def fit_fields(values: list[str], room: int) -> list[str]:
    """``values`` in ``room`` UTF-8 bytes together, each kept whole where it can be.

    The room is shared out evenly; a value shorter than its share gives the rest to
    the longer ones (so one long field never crowds the others out), and a value
    longer than its share is cut at a word boundary and ends with :data:`ELLIPSIS`.
    """
    shares = [0] * len(values)
    left = max(room, 0)
    by_size = sorted(range(len(values)), key=lambda i: _size(values[i]))
    for done, i in enumerate(by_size):
        shares[i] = min(_size(values[i]), left // (len(values) - done))
        left -= shares[i]
    return [_cut(value, share) for value, share in zip(values, shares, strict=True)]


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cut(text: str, limit: int) -> str:
    if _size(text) <= limit:
        return text
    kept = text.encode("utf-8")[: max(limit - _size(ELLIPSIS), 0)].decode("utf-8", "ignore")
    # Back to the last word boundary, unless that would drop most of what fits.
    space = kept.rfind(" ")
    if space > len(kept) // 2:
        kept = kept[:space]
    return kept.rstrip(" ,;:.") + ELLIPSIS
