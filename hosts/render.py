"""The text a host injects: the projected contribution, bounded (hosts.md §1.2-§1.3).

Order: the instructions, then the guidance items, then the reflection request. Over
the bound, whole guidance items are dropped from the end and one line says how many;
the reflection request is never dropped and no item is ever cut in the middle.
"""

from __future__ import annotations

from typing import Any

from turn_hooks import HostProjection

RENDER_LIMIT = 8000
BLOCK_TAG = "reward_memory_reflection_json"
REFLECTION_REQUEST = (
    f"End your final message with exactly one <{BLOCK_TAG}>…</{BLOCK_TAG}> block holding "
    "the reflection JSON described above, or an empty block when there is none."
)


def _guidance(projection: HostProjection) -> list[dict[str, Any]]:
    recall = projection.context_fields.get("reward_memory_recall")
    context = recall.get("context") if isinstance(recall, dict) else None
    items = context.get("guidance") if isinstance(context, dict) else None
    return [item for item in items or [] if isinstance(item, dict)]


def _item_text(index: int, item: dict[str, Any]) -> str:
    lines = [
        f"[memory {index}] {item.get('candidate_ref')} ({item.get('target_class')})",
        f"  summary: {item.get('content_summary')}",
    ]
    experience = item.get("experience")
    behaviour = experience.get("future_behavior") if isinstance(experience, dict) else None
    if isinstance(behaviour, dict):
        for key in ("trigger", "action", "validation", "stop_condition"):
            if behaviour.get(key):
                lines.append(f"  {key.replace('_', ' ')}: {behaviour[key]}")
    return "\n".join(lines)


def render_context(projection: HostProjection, *, limit: int = RENDER_LIMIT) -> str:
    """The bounded text rendering of a projection ("" when there is nothing to add)."""
    head = list(projection.capability_instructions)
    tail = [REFLECTION_REQUEST] if BLOCK_TAG in projection.capability_result_fields else []
    items = [_item_text(i + 1, item) for i, item in enumerate(_guidance(projection))]
    if not head and not items and not tail:
        return ""
    kept = list(items)
    while True:
        omitted = len(items) - len(kept)
        note = (
            [f"({omitted} recalled memories omitted to fit the context limit.)"] if omitted else []
        )
        text = "\n\n".join([*head, *kept, *note, *tail])
        if len(text) <= limit or not kept:
            return text
        kept.pop()


def rendered_refs(projection: HostProjection, text: str) -> list[str]:
    """The candidate refs whose items made it into ``text``."""
    return [
        str(item.get("candidate_ref"))
        for index, item in enumerate(_guidance(projection))
        if f"[memory {index + 1}] {item.get('candidate_ref')}" in text
    ]


def extract_reflection(message: str | None) -> tuple[str | None, str | None]:
    """The ``<reward_memory_reflection_json>`` block's text, and why there is none.

    No block, or an empty one, is no reflection and no fault: ``(None, None)``. A block
    that appears twice is ambiguous and a tag without its partner is malformed; both
    yield no reflection and a reason code, so nothing is learned from a guess.
    """
    if not message:
        return None, None
    opening, closing = f"<{BLOCK_TAG}>", f"</{BLOCK_TAG}>"
    opened, closed = message.count(opening), message.count(closing)
    if opened == closed == 0:
        return None, None
    if opened > 1 or closed > 1:
        return None, "reflection_block_repeated"
    start, end = message.find(opening), message.find(closing)
    if opened != closed or end < start:
        return None, "reflection_block_malformed"
    return message[start + len(opening) : end].strip() or None, None


def without_refs(projection: HostProjection, refs: set[str]) -> HostProjection:
    """The projection with guidance items whose candidate ref is in ``refs`` removed.

    Hosts that keep injected context in the conversation history use it so that a
    memory already delivered in this session is not rendered again.
    """
    recall = projection.context_fields.get("reward_memory_recall")
    if not isinstance(recall, dict):
        return projection
    context = recall.get("context")
    if not refs or not isinstance(context, dict) or not context.get("guidance"):
        return projection
    kept = [item for item in context["guidance"] if item.get("candidate_ref") not in refs]
    fields = dict(projection.context_fields)
    fields["reward_memory_recall"] = {**recall, "context": {**context, "guidance": kept}}
    return HostProjection(
        context_fields=fields,
        capability_context_fields=projection.capability_context_fields,
        capability_instructions=projection.capability_instructions,
        capability_result_fields=projection.capability_result_fields,
        dropped_hook_ids=projection.dropped_hook_ids,
    )
