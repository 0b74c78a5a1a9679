"""The corpus record and its standing policy (contracts.md §3-§4), with their vocabulary.

What a corpus is (class, authorities, scope, freshness, lifecycle, privacy) and who
may write into it. Separate from :mod:`.config` because a corpus and its policy are
checked on their own too: an ``ingest-event`` fixture, an operator control and the
recall and ingest guards read them without any experiment config around them.
"""

from __future__ import annotations

import json
from typing import Any

from capabilities.reward_memory.contract import values as v

CLASS_IDS = (
    "run_bound_reward",
    "hard_policy",
    "soft_preference",
    "procedural_experience",
    "working_context",
)
DURABLE_CLASSES = ("hard_policy", "soft_preference", "procedural_experience")
READ_AUTHORITIES = (
    "goal_run_scoped",
    "authority_scoped",
    "module_scoped",
    "actor_scoped",
    "session_scoped",
)
WRITE_AUTHORITIES = (
    "append_only_overlay",
    "authorized_policy_source",
    "provider_managed",
    "read_only",
    "ephemeral_runtime",
)
DURABLE_WRITE_AUTHORITIES = WRITE_AUTHORITIES[:3]
FRESHNESS_MODES = (
    "source_truth_bound",
    "revision_bound",
    "time_bound",
    "session_archive_bound",
    "execution_bound",
)
LIFECYCLE_STATES = ("active", "superseded", "retired")
VISIBILITIES = ("private", "workspace", "public_safe")
IDENTITY_FIELDS = ("user_ref", "peer_ref", "session_ref")
POLICY_SCHEMA = "reward_memory_standing_policy_v0"


def _tokens(value: object, field: str, low: int, high: int) -> list[str]:
    items = v.listing(value, field, low, high)
    return sorted(v.unique([v.token(item, field) for item in items], field))


def _surface_ids(value: object, field: str, high: int) -> list[str]:
    items = v.listing(value, field, 1, high)
    return sorted(v.unique([v.surface_id(item, field) for item in items], field))


def normalise_corpus(value: object, field: str = "corpus") -> dict[str, Any]:
    """A corpus record (§3); unknown keys are ignored, every known one is checked."""
    corpus = v.mapping(value, field)
    scope = v.mapping(corpus.get("scope"), f"{field}.scope")
    freshness = v.mapping(corpus.get("freshness"), f"{field}.freshness")
    lifecycle = v.mapping(corpus.get("lifecycle"), f"{field}.lifecycle")
    retrieval = v.mapping(corpus.get("retrieval"), f"{field}.retrieval")
    maintenance = v.mapping(corpus.get("maintenance"), f"{field}.maintenance")
    privacy = v.mapping(corpus.get("privacy"), f"{field}.privacy")

    mode = v.enum(freshness.get("mode"), FRESHNESS_MODES, f"{field}.freshness.mode")
    source_revision = v.optional_token(
        freshness.get("source_revision"), f"{field}.freshness.source_revision"
    )
    if mode in {"revision_bound", "session_archive_bound"} and source_revision is None:
        v.fail(f"{field}.freshness.source_revision", f"is required for {mode}")
    max_age = freshness.get("max_age_seconds")
    if max_age is not None:
        max_age = v.integer(max_age, f"{field}.freshness.max_age_seconds", 1)
    if mode == "time_bound" and max_age is None:
        v.fail(f"{field}.freshness.max_age_seconds", "is required for time_bound")

    state = v.enum(lifecycle.get("state"), LIFECYCLE_STATES, f"{field}.lifecycle.state")
    supersedes = v.listing(lifecycle.get("supersedes", []), f"{field}.lifecycle.supersedes", 0, 50)
    superseded_by = lifecycle.get("superseded_by")
    if superseded_by is not None or state == "superseded":
        superseded_by = v.corpus_id(superseded_by, f"{field}.lifecycle.superseded_by")
    retirement_reason = lifecycle.get("retirement_reason")
    if retirement_reason is not None or state == "retired":
        retirement_reason = v.token(retirement_reason, f"{field}.lifecycle.retirement_reason")

    if v.boolean(
        privacy.get("raw_content_in_registry"), f"{field}.privacy.raw_content_in_registry"
    ):
        v.fail(f"{field}.privacy.raw_content_in_registry", "must be false")

    normal: dict[str, Any] = {
        "corpus_id": v.corpus_id(corpus.get("corpus_id"), f"{field}.corpus_id"),
        "class_id": v.enum(corpus.get("class_id"), CLASS_IDS, f"{field}.class_id"),
        "provider_id": v.token(corpus.get("provider_id"), f"{field}.provider_id"),
        "owner_ref": v.token(corpus.get("owner_ref"), f"{field}.owner_ref"),
        "source_of_truth": v.token(corpus.get("source_of_truth"), f"{field}.source_of_truth"),
        "read_authority": v.enum(
            corpus.get("read_authority"), READ_AUTHORITIES, f"{field}.read_authority"
        ),
        "write_authority": v.enum(
            corpus.get("write_authority"), WRITE_AUTHORITIES, f"{field}.write_authority"
        ),
        "scope": {
            "workspace_ref": v.token(scope.get("workspace_ref"), f"{field}.scope.workspace_ref"),
            "project_ref": v.token(scope.get("project_ref"), f"{field}.scope.project_ref"),
            "surface_ids": _surface_ids(scope.get("surface_ids"), f"{field}.scope.surface_ids", 20),
            **{
                key: v.optional_token(scope.get(key), f"{field}.scope.{key}")
                for key in IDENTITY_FIELDS
            },
        },
        "freshness": {"mode": mode, "source_revision": source_revision, "max_age_seconds": max_age},
        "lifecycle": {
            "state": state,
            "supersedes": sorted(
                v.unique(
                    [v.corpus_id(item, f"{field}.lifecycle.supersedes") for item in supersedes],
                    f"{field}.lifecycle.supersedes",
                )
            ),
            "superseded_by": superseded_by,
            "retirement_reason": retirement_reason,
        },
        "retrieval": {
            key: v.boolean(retrieval.get(key), f"{field}.retrieval.{key}")
            for key in ("index_required", "readback_required", "application_receipt_required")
        },
        "maintenance": {
            "writeback_triggers": _tokens(
                maintenance.get("writeback_triggers") or [],  # null: none, as upstream
                f"{field}.maintenance.writeback_triggers",
                0,
                10,
            ),
            "closure_policy": v.token(
                maintenance.get("closure_policy"), f"{field}.maintenance.closure_policy"
            ),
            "retirement_authority": v.token(
                maintenance.get("retirement_authority"), f"{field}.maintenance.retirement_authority"
            ),
        },
        "privacy": {
            "visibility": v.enum(
                privacy.get("visibility"), VISIBILITIES, f"{field}.privacy.visibility"
            ),
            "raw_content_in_registry": False,
        },
    }
    for key in ("provider_scope_ref_digest", "read_role"):
        optional = v.optional_token(corpus.get(key), f"{field}.{key}")
        if optional is not None:
            normal[key] = optional
    return normal


_POLICY_KEYS = frozenset(
    {
        "schema_version",
        "policy_id",
        "enabled",
        "auto_activate",
        "owner_ref",
        "reviewer_ref",
        "authority_source_ref",
        "scope",
        "allowed_target_classes",
        "allowed_source_kinds",
        "allowed_actor_roles",
        "allowed_action_scopes",
        v.RAW_CONTENT,
    }
)


_POLICY_SCOPE_KEYS = frozenset({"workspace_ref", "project_ref", "surface_ids"})


def normalise_standing_policy(value: object, field: str = "standing_policy") -> dict[str, Any]:
    """A standing policy (§4), strict at both levels."""
    policy = v.exact_keys(value, field, _POLICY_KEYS)
    if policy["schema_version"] != POLICY_SCHEMA:
        v.fail(f"{field}.schema_version", f"must be {POLICY_SCHEMA}")
    scope = v.exact_keys(
        policy["scope"], f"{field}.scope", _POLICY_SCOPE_KEYS, frozenset(IDENTITY_FIELDS)
    )
    if v.boolean(policy[v.RAW_CONTENT], f"{field}.{v.RAW_CONTENT}"):
        v.fail(f"{field}.{v.RAW_CONTENT}", "must be false")
    classes = _tokens(policy["allowed_target_classes"], f"{field}.allowed_target_classes", 1, 12)
    for item in classes:
        v.enum(item, DURABLE_CLASSES, f"{field}.allowed_target_classes")
    normal_scope: dict[str, Any] = {
        "workspace_ref": v.token(scope["workspace_ref"], f"{field}.scope.workspace_ref"),
        "project_ref": v.token(scope["project_ref"], f"{field}.scope.project_ref"),
        "surface_ids": _surface_ids(scope["surface_ids"], f"{field}.scope.surface_ids", 12),
    }
    for key in IDENTITY_FIELDS:
        identity = v.optional_token(scope.get(key), f"{field}.scope.{key}")
        if identity is not None:
            normal_scope[key] = identity
    return {
        "schema_version": POLICY_SCHEMA,
        "policy_id": v.token(policy["policy_id"], f"{field}.policy_id"),
        "enabled": v.boolean(policy["enabled"], f"{field}.enabled"),
        "auto_activate": v.boolean(policy["auto_activate"], f"{field}.auto_activate"),
        "owner_ref": v.token(policy["owner_ref"], f"{field}.owner_ref"),
        "reviewer_ref": v.token(policy["reviewer_ref"], f"{field}.reviewer_ref"),
        "authority_source_ref": v.token(
            policy["authority_source_ref"], f"{field}.authority_source_ref"
        ),
        "scope": normal_scope,
        "allowed_target_classes": classes,
        "allowed_source_kinds": _tokens(
            policy["allowed_source_kinds"], f"{field}.allowed_source_kinds", 1, 12
        ),
        "allowed_actor_roles": _tokens(
            policy["allowed_actor_roles"], f"{field}.allowed_actor_roles", 1, 12
        ),
        "allowed_action_scopes": _tokens(
            policy["allowed_action_scopes"], f"{field}.allowed_action_scopes", 0, 12
        ),
        v.RAW_CONTENT: False,
    }


def check_policy_inside_corpus(policy: dict[str, Any], corpus: dict[str, Any], field: str) -> None:
    """Refuse a standing policy that reaches outside its corpus (owner, scope, class)."""
    if policy["owner_ref"] != corpus["owner_ref"]:
        v.fail(f"{field}.standing_policy.owner_ref", "must equal the corpus owner")
    for key in ("workspace_ref", "project_ref"):
        if policy["scope"][key] != corpus["scope"][key]:
            v.fail(f"{field}.standing_policy.scope.{key}", "must equal the corpus scope")
    if not set(policy["scope"]["surface_ids"]) <= set(corpus["scope"]["surface_ids"]):
        v.fail(f"{field}.standing_policy.scope.surface_ids", "must stay inside the corpus")
    if policy["allowed_target_classes"] != [corpus["class_id"]]:
        v.fail(
            f"{field}.standing_policy.allowed_target_classes", "must be exactly the corpus class"
        )


def compatibility_signature(entry: dict[str, Any]) -> str:
    """Corpora of one surface must share this: class, owner, authorities, policy source,
    privacy, freshness and lifecycle."""
    corpus = entry["corpus"]
    return json.dumps(
        [
            corpus["class_id"],
            corpus["owner_ref"],
            corpus["read_authority"],
            corpus["write_authority"],
            entry["standing_policy"]["authority_source_ref"],
            corpus["privacy"],
            corpus["freshness"],
            corpus["lifecycle"],
        ],
        sort_keys=True,
    )
