"""How reward memory meets a capability-neutral host.

Hosts know hooks, not capabilities: they say which hooks they wire and render opaque
context items. This module turns those host facts into reward memory's own automation
flags (turn-lifecycle.md §6), and its recalled guidance into the items a host shows.
It is apart from the recall packet in :mod:`~capabilities.reward_memory.turn.pre_turn`
because it is the one place that decides what a host sees of a memory.
"""

from __future__ import annotations

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


def guidance_items(context: object) -> list[ContextItem]:
    """The recalled guidance as the text the host shows, one item per memory.

    ``[memory N] <candidate ref> (<class>)``, the summary, then the trigger, action,
    validation and stop condition of the future behaviour; the candidate ref is the
    item's ref, so a host shows a memory once per session. A second item with the same
    candidate ref (only a hand-edited receipt holds one) is left out.
    """
    guidance = context.get("guidance") if isinstance(context, dict) else None
    items: list[ContextItem] = []
    for entry in guidance if isinstance(guidance, list) else []:
        ref = str(entry.get("candidate_ref")) if isinstance(entry, dict) else ""
        if not ref or ref in {item.ref for item in items}:
            continue
        lines = [
            f"[memory {len(items) + 1}] {ref} ({entry.get('target_class')})",
            f"  summary: {entry.get('content_summary')}",
        ]
        experience = entry.get("experience")
        behaviour = experience.get("future_behavior") if isinstance(experience, dict) else None
        if isinstance(behaviour, dict):
            for key in ("trigger", "action", "validation", "stop_condition"):
                if behaviour.get(key):
                    lines.append(f"  {key.replace('_', ' ')}: {behaviour[key]}")
        items.append(ContextItem(ref=ref, text="\n".join(lines)))
    return items
