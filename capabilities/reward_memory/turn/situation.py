"""What a Turn is recalled for: its surface, its situation and its one query (§5.2).

An interactive host has no Todo, so the Turn's prompt stands in for the selected
Todo's text. Separate from :mod:`.pre_turn`, which runs the recall and shapes the
contribution: the situation is the Turn's identity for recall (its fingerprint
deduplicates a same-Turn retry), and it never touches a provider or a sidecar.
"""

from __future__ import annotations

import re
from typing import Any

from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.identities import situation_fingerprint, turn_recall_id
from turn_hooks import TurnContext

SURFACE = "agent_workflow.turn_admission"
SITUATION_SCHEMA = "agent_turn_situation_v0"


def identity_scope(config: dict[str, Any]) -> dict[str, Any]:
    """The scope of the Turn surface's first corpus: the refs the situation carries."""
    first = config["surfaces"][SURFACE]["corpus_ids"][0]
    scope: dict[str, Any] = config["corpora"][first]["corpus"]["scope"]
    return scope


def build_situation(
    turn: TurnContext, goal_id: str, agent_id: str, scope: dict[str, Any]
) -> dict[str, Any]:
    """``agent_turn_situation_v0`` for an interactive host: no Todo, so the Turn's
    prompt (when the host passed one) stands in as the selected Todo's text."""
    text = v.compact_or_empty(turn.prompt, 320)
    situation: dict[str, Any] = {
        "schema_version": SITUATION_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "turn_instance_id": turn.host_turn_id,
        "workspace_ref": scope["workspace_ref"],
        "project_ref": scope["project_ref"],
        "phase": None,
        "decision": None,
        "selected_todo": {"text": text} if text else {},
        "recent_outcomes": [],
        "next_intent": None,
        "conflict_state": "clear",
        "status_health_ok": True,
        "user_prompt_included": bool(text),
    }
    fingerprint = situation_fingerprint(situation)
    situation["situation_fingerprint"] = fingerprint
    situation["turn_recall_id"] = turn_recall_id(turn.host_turn_id, fingerprint)
    return situation


def situation_query(situation: dict[str, Any]) -> str:
    """The one function-boundary query of a Turn (§5.2)."""
    todo = situation["selected_todo"]
    parts = [
        f"agent={situation['agent_id']}",
        f"goal={situation['goal_id']}",
        f"project={situation['project_ref']}",
        f"phase={situation['phase'] or 'unknown'}",
        f"todo={todo.get('text') or todo.get('todo_id') or 'none'}",
    ]
    for key in ("action_kind", "target_key"):
        if todo.get(key):
            parts.append(f"{key}={todo[key]}")
    if situation["next_intent"]:
        parts.append(f"intent={situation['next_intent']}")
    if situation["recent_outcomes"]:
        parts.append("recent=" + "; ".join(situation["recent_outcomes"]))
    return v.compact_or_empty(" | ".join(parts), 500) or "turn admission"


SEARCH_TEXT_MAX = 1000
"""How much of a prompt is searched: the store keeps its rarest few terms anyway."""
TRIVIAL_WORDS = frozenset(
    "alright awesome carry continue cool done fine go going good great k keep lgtm next "
    "nice no nope ok okay on perfect please proceed right sounds sure thank thanks thx ty "
    "y yep yes".split()
)
"""A prompt made of these words alone acknowledges or nudges; it asks about nothing."""


def search_text(turn: TurnContext) -> str | None:
    """What the provider searches for on this Turn: the user's own words (§5.2 aside).

    The packet's query (:func:`situation_query`) stays the reference's, since its
    digest is compared byte for byte; but its scaffolding (agent, goal, project,
    phase) is the same on every Turn and would outrank the prompt's words, and scope
    already comes from the exact corpus and peer. So the search runs on the prompt,
    with local paths and secrets cut out rather than the prompt dropped. ``None``
    (no prompt: the host withheld it) searches the packet's query as before; ``""``
    (a trivial prompt such as "thanks" or "continue") searches nothing.
    """
    if turn.prompt is None:
        return None
    text = v.redact(turn.prompt)[:SEARCH_TEXT_MAX]
    words = re.findall(r"[^\W\d_]+", text.lower())
    return "" if all(word in TRIVIAL_WORDS for word in words) else text


def situation_summary(situation: dict[str, Any]) -> str:
    """The public-safe summary that travels with the Turn's query."""
    todo = situation["selected_todo"].get("todo_id") or "unselected"
    return (
        f"turn admission for {situation['goal_id']} {todo} during {situation['phase'] or 'unknown'}"
    )
