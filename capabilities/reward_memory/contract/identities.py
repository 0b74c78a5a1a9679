"""Every reward-memory identity and digest (identities.md), each a pure function.

The serialization each one uses is part of its definition: using S1 where S2 is
specified changes the value, so each function names its serialization.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from capabilities.providers.sync import opaque_provider_ref
from turn_hooks.canonical import hex_n, s1, s2, s3, s4, s5, sha256_hex

_PEER_RUN = re.compile(r"[^a-z0-9]+")
_STANDING_REASONING = "Standing exact-scope policy accepted this compact candidate."
STANDING_POLICY_REASONING = _STANDING_REASONING
"""Stored in every standing-policy active record; byte-identical to upstream."""


def _peer_segment(value: str, fallback: str) -> str:
    segment = _PEER_RUN.sub("-", value.lower()).strip("-") or fallback
    return segment[:40].rstrip("-")


def peer_token(goal_id: str, normalised_agent_id: str) -> str:
    """The canonical provider peer token of a (Goal, Agent) pair (identities.md §3)."""
    goal = goal_id.strip()
    digest = hex_n(goal + "\0" + normalised_agent_id, 20)
    goal_part = _peer_segment(goal, "goal")
    agent_part = _peer_segment(normalised_agent_id, "agent")
    return f"loopx-{goal_part}-{agent_part}-{digest}"


def candidate_ref(identity: dict[str, Any]) -> str:
    """``candidate:`` + hex20 of S2 over the candidate identity (§5)."""
    return "candidate:" + hex_n(s2(identity), 20)


def policy_digest(policy_id: str) -> str:
    """hex12 of the standing policy id (§6)."""
    return hex_n(policy_id, 12)


def review_ref(policy_id: str, candidate: str) -> str:
    """``review:<policy_digest>:<candidate_digest>`` (§6)."""
    return f"review:{policy_digest(policy_id)}:{candidate.removeprefix('candidate:')}"


def target_uri(scope_ref: str, policy_id: str, candidate: str) -> str:
    """The deterministic record URI below a corpus scope (§6)."""
    name = f"reward-memory-{policy_digest(policy_id)}-{candidate.removeprefix('candidate:')}.json"
    return scope_ref.rstrip("/") + "/" + name


def activation_ref(corpus_id: str, candidate: str, activated_at: str) -> str:
    """``activation:`` + hex20 of S3 (ASCII escapes) (§7)."""
    identity = {"corpus_id": corpus_id, "candidate_ref": candidate, "activated_at": activated_at}
    return "activation:" + hex_n(s3(identity), 20)


provider_ref = opaque_provider_ref


def memory_ref_digest(resource_ref: str) -> str:
    """hex16 of a raw resource ref (§8)."""
    return hex_n(resource_ref, 16)


def binding_revision(agent: str, config_path: str | None, config_digest: str | None) -> str:
    """Identity of a per-Agent override (§9, S4)."""
    return "sha256:" + sha256_hex(s4([agent, config_path or "", config_digest or ""]))


def app_candidate_id(
    goal_id: str, agent_id: str, todo_id: str, turn_instance_id: str, effect_id: str
) -> str:
    """Codex App two-phase candidate key (§9, S4)."""
    return "app:" + hex_n(s4([goal_id, agent_id, todo_id, turn_instance_id, effect_id]), 20)


def binding_fingerprint(binding: dict[str, Any], agent: str) -> str:
    """What a staged App candidate was bound to (§9, S4)."""
    receipts = binding.get("enablement_receipts")
    receipt = receipts.get(agent) if isinstance(receipts, dict) else None
    receipt = receipt if isinstance(receipt, dict) else {}
    automation = binding.get("automation")
    automation = automation if isinstance(automation, dict) else {}
    enabled_agents = binding.get("enabled_agents")
    values = [
        binding.get("binding_revision"),
        binding.get("config_path") or "",
        binding.get("config_digest") or "",
        binding.get("enabled") is True,
        binding.get("experimental") is True,
        isinstance(enabled_agents, list) and agent in enabled_agents,
        automation.get("automatic_ingest"),
        automation.get("automatic_recall"),
        receipt.get("status"),
        receipt.get("config_digest"),
        receipt.get("actor_binding_verified"),
        receipt.get("writability_verified"),
        receipt.get("exact_readback_verified"),
    ]
    return "sha256:" + sha256_hex(s4(values))


def validation_declaration_sha256(declaration: dict[str, Any]) -> str:
    """hex of S1 over the validator declaration (§9, no prefix)."""
    return sha256_hex(s1(declaration))


def reflection_digest(raw_text: str) -> str:
    """Digest of the *submitted* reflection, re-serialised with S1 (§10)."""
    return "sha256:" + sha256_hex(s1(json.loads(raw_text.strip())))


def evidence_digest(evidence_refs: list[str]) -> str:
    """hex16 of S5 over the evidence refs, order kept (§10)."""
    return hex_n(s5(evidence_refs), 16)


def source_event_id(
    goal_id: str, agent_id: str, turn_key: str, surface: str, policy_id: str, evidence: str
) -> str:
    """Deterministic id of one Turn reflection event (§10)."""
    return hex_n("\n".join((goal_id, agent_id, turn_key, surface, policy_id, evidence)), 20)


def turn_source_ref(event_id: str, evidence: str) -> str:
    """``turn-reflection:<source_event_id>:<evidence_digest>`` (§10)."""
    return f"turn-reflection:{event_id}:{evidence}"


def record_body(record: dict[str, Any]) -> str:
    """The wire body of an active record: S1 plus a newline (§11)."""
    return s1(record) + "\n"


def canonical_context_text(text: str) -> str:
    """CRLF to LF, then one trailing newline removed (§11)."""
    normalised = text.replace("\r\n", "\n")
    return normalised[:-1] if normalised.endswith("\n") else normalised


def content_digest(text: str) -> str:
    """hex of the canonical context text (§11)."""
    return sha256_hex(canonical_context_text(text))


def experience_digest(experience: dict[str, Any]) -> str:
    """``sha256:`` + hex of S1 over a normalised experience contract (§11)."""
    return "sha256:" + sha256_hex(s1(experience))


def short_digest(text: str) -> str:
    """hex16 of a text: query digests, scope ref digests, summary digests (§11, §12)."""
    return hex_n(text, 16)


def config_digest(raw: bytes) -> str:
    """``sha256:`` + hex of the raw config file bytes (§12)."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def preview_query_digest(query: str) -> str:
    """Turn-recall preview digest over the JSON-encoded query string (§12)."""
    return "sha256:" + sha256_hex(json.dumps(query, ensure_ascii=False))


def situation_fingerprint(situation: dict[str, Any]) -> str:
    """``sha256:`` over S1 of the situation without ``turn_instance_id`` (§16)."""
    rest = {key: value for key, value in situation.items() if key != "turn_instance_id"}
    return "sha256:" + sha256_hex(s1(rest))


def turn_recall_id(turn_instance_id: str, fingerprint: str) -> str:
    """Identity of one Turn's recall (§16)."""
    return "sha256:" + sha256_hex(
        s1({"turn_instance_id": turn_instance_id, "situation_fingerprint": fingerprint})
    )


def application_id(recall_id: str) -> str:
    """``turn-recall-`` + the first 20 hex of the turn recall id (§16)."""
    return "turn-recall-" + recall_id.removeprefix("sha256:")[:20]
