"""The experiment config (contracts.md §2): provider binding, corpora, surfaces, automation.

The corpus records and standing policies it holds are checked by :mod:`.corpus`.
``load_config`` returns the normalised form that every later step reads; it never
writes anything back. Every rejection is a :class:`RewardMemoryInputError` with the
offending field named (never its value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capabilities.providers.scopes import classify_scope, has_goal_segment
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.corpus import (
    check_policy_inside_corpus,
    compatibility_signature,
    normalise_corpus,
    normalise_standing_policy,
)
from capabilities.reward_memory.contract.identities import peer_token, short_digest
from sidecars import read_bounded
from turn_hooks import InvalidInputError, loads_bounded

CONFIG_SCHEMA = "reward_memory_experiment_config_v1"
ADAPTERS = ("scoped_feedback", "issue_fix_maintainer_feedback")
RECALL_MODES = ("function_boundary", "bounded_agentic_search")
PRIVATE_PROVIDERS = ("openviking", "embedded_sqlite")


_BINDING_REQUIRED = frozenset({"provider_id", "namespace", "corpus_scopes"})
_BINDING_OPTIONAL = frozenset(
    {
        "timeout_seconds",
        "setup_hints",
        "provider_binary",
        "minimum_provider_version",
        "actor_peer_id",
    }
)


def _provider_binding(value: object) -> tuple[dict[str, Any], dict[str, str]]:
    field = "project_provider_binding"
    binding = v.exact_keys(value, field, _BINDING_REQUIRED, _BINDING_OPTIONAL)
    timeout = binding.get("timeout_seconds", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 120:
        v.fail(f"{field}.timeout_seconds", "must be a number between 1 and 120")
    hints = v.mapping(binding.get("setup_hints") or {}, f"{field}.setup_hints")  # empty: none
    setup_hints = {
        key: text
        for key in ("install", "configure")
        if (text := v.compact_or_empty(hints.get(key), 500))
    }
    normal: dict[str, Any] = {
        "provider_id": v.token(binding["provider_id"], f"{field}.provider_id"),
        "namespace": v.token(binding["namespace"], f"{field}.namespace"),
        "timeout_seconds": timeout,
        "setup_hints": setup_hints,
    }
    for key in ("provider_binary", "minimum_provider_version"):
        if key in binding:
            if not isinstance(binding[key], str):
                v.fail(f"{field}.{key}", "must be a string")
            normal[key] = binding[key]
    if "actor_peer_id" in binding:
        normal["actor_peer_id"] = v.token(binding["actor_peer_id"], f"{field}.actor_peer_id")
    scopes: dict[str, str] = {}
    for index, item in enumerate(
        v.listing(binding["corpus_scopes"], f"{field}.corpus_scopes", 1, 50)
    ):
        where = f"{field}.corpus_scopes[{index}]"
        entry = v.exact_keys(item, where, frozenset({"corpus_id", "scope_ref"}))
        corpus = v.corpus_id(entry["corpus_id"], f"{where}.corpus_id")
        if corpus in scopes:
            v.fail(f"{where}.corpus_id", "is declared twice")
        scopes[corpus] = v.token(entry["scope_ref"], f"{where}.scope_ref")
    return normal, scopes


_SURFACE_REQUIRED = frozenset(
    {"surface_id", "adapter", "corpus_ids", "ingest_corpus_id", "recall_profile"}
)
_PROFILE_KEYS = frozenset({"profile_id", "mode", "max_queries", "limit"})
_DESTINATION_KEYS = frozenset({"destination_digest"})
_DESTINATION_OPTIONAL = frozenset({"query_label", "required_candidate_refs"})
_OUTBOUND_SURFACE = "outbound_message.before_send"


def _destinations(value: object, field: str) -> list[dict[str, Any]]:
    normal = []
    seen: set[str] = set()
    for index, item in enumerate(v.listing(value, field, 1, 20)):
        where = f"{field}[{index}]"
        entry = v.exact_keys(item, where, _DESTINATION_KEYS, _DESTINATION_OPTIONAL)
        digest = entry["destination_digest"]
        if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
            v.fail(f"{where}.destination_digest", "must be 64 lowercase hex")
        if digest in seen:
            v.fail(f"{where}.destination_digest", "is declared twice")
        seen.add(digest)
        label = entry.get("query_label", "")
        if not isinstance(label, str) or len(label) > 120:
            v.fail(f"{where}.query_label", "must be a string of at most 120 characters")
        refs = v.listing(
            entry.get("required_candidate_refs", []), f"{where}.required_candidate_refs", 0, 3
        )
        for ref in refs:
            if not isinstance(ref, str) or not ref.startswith("candidate:") or len(ref) > 100:
                v.fail(f"{where}.required_candidate_refs", "must hold candidate refs")
            v.token(ref, f"{where}.required_candidate_refs")
        normal.append(
            {
                "destination_digest": digest,
                "query_label": label,
                "required_candidate_refs": v.unique(list(refs), f"{where}.required_candidate_refs"),
            }
        )
    return normal


def _surface(value: object, index: int, corpora: dict[str, Any]) -> dict[str, Any]:
    field = f"surfaces[{index}]"
    optional = frozenset({"destinations"})
    surface = v.exact_keys(value, field, _SURFACE_REQUIRED, optional)
    surface_name = v.surface_id(surface["surface_id"], f"{field}.surface_id")
    corpus_ids = [
        v.corpus_id(item, f"{field}.corpus_ids")
        for item in v.listing(surface["corpus_ids"], f"{field}.corpus_ids", 1, 50)
    ]
    for corpus in corpus_ids:
        if corpus not in corpora:
            v.fail(f"{field}.corpus_ids", "names an undeclared corpus")
    v.unique(corpus_ids, f"{field}.corpus_ids")
    if surface["ingest_corpus_id"] not in corpus_ids:
        v.fail(f"{field}.ingest_corpus_id", "must be one of corpus_ids")
    profile = v.exact_keys(surface["recall_profile"], f"{field}.recall_profile", _PROFILE_KEYS)
    # Any non-empty text, read as LoopX 2.1.1 reads it (a number is its str()).
    raw_profile_id = profile["profile_id"]
    profile_id = raw_profile_id if isinstance(raw_profile_id, str) else str(raw_profile_id or "")
    if not profile_id.strip():
        v.fail(f"{field}.recall_profile.profile_id", "must be a non-empty string")
    normal: dict[str, Any] = {
        "surface_id": surface_name,
        "adapter": v.enum(surface["adapter"], ADAPTERS, f"{field}.adapter"),
        "corpus_ids": list(corpus_ids),
        "ingest_corpus_id": surface["ingest_corpus_id"],
        "recall_profile": {
            "profile_id": profile_id,
            "mode": v.enum(profile["mode"], RECALL_MODES, f"{field}.recall_profile.mode"),
            "max_queries": v.integer(
                profile["max_queries"], f"{field}.recall_profile.max_queries", 1, 3
            ),
            "limit": v.integer(profile["limit"], f"{field}.recall_profile.limit", 1, 8),
        },
    }
    if "destinations" in surface:
        if surface_name != _OUTBOUND_SURFACE:
            v.fail(f"{field}.destinations", f"are only allowed on {_OUTBOUND_SURFACE}")
        normal["destinations"] = _destinations(surface["destinations"], f"{field}.destinations")
    for corpus in corpus_ids:
        entry = corpora[corpus]
        if surface_name not in entry["corpus"]["scope"]["surface_ids"]:
            v.fail(f"{field}.surface_id", "is not in a selected corpus' surface_ids")
        if surface_name not in entry["standing_policy"]["scope"]["surface_ids"]:
            v.fail(f"{field}.surface_id", "is not in a selected policy's surface_ids")
    if len({compatibility_signature(corpora[corpus]) for corpus in corpus_ids}) != 1:
        v.fail(f"{field}.corpus_ids", "mix corpora with different compatibility signatures")
    return normal


def _automation(value: object) -> tuple[dict[str, bool], dict[str, str]]:
    automation = v.exact_keys(
        value,
        "automation",
        frozenset(),
        frozenset({"automatic_recall", "automatic_ingest", "fail_open"}),
    )
    normal = {
        key: v.boolean(automation.get(key, True), f"automation.{key}")
        for key in ("automatic_recall", "automatic_ingest", "fail_open")
    }
    if not normal["fail_open"]:
        v.fail("automation.fail_open", "false is not supported: reward memory always fails open")
    intent = {
        "automatic_recall": "explicit"
        if "automatic_recall" in automation
        else "default_enabled_new_config",
        "automatic_ingest": "explicit"
        if "automatic_ingest" in automation
        else "default_enabled_new_config",
        "fail_open": "explicit" if "fail_open" in automation else "default",
    }
    return normal, intent


def named_peer(scope_ref: str) -> str | None:
    """The peer a scope ref names whatever its scheme: the segment after its first
    ``/peers/``, or ``None`` when it names none."""
    _head, found, rest = scope_ref.partition("/peers/")
    return (rest.split("/", 1)[0] or None) if found else None


def check_peer_binding(
    binding: dict[str, Any], scope_ref: str, corpus: dict[str, Any], field: str
) -> None:
    """The scope ref is accepted, bound to the binding's peer, and private if the corpus is.

    One rule holds whatever the scheme, as in LoopX 2.1.1: a scope ref that names a
    peer anywhere in its path is that actor's. The ``viking://`` rules hold for the
    providers that use those URIs. A provider no tool knows has scopes of its own
    that nothing here can judge, and nothing can ever be written to it (its sync
    fails before any call); a private corpus on one is refused when a Goal/Agent
    binds it (:func:`goal_agent_scope`).
    """
    peer = named_peer(scope_ref)
    if peer is not None and binding.get("actor_peer_id") != peer:
        v.fail(f"{field}.actor_peer_id", "must equal the peer the scope ref names")
    if corpus["provider_id"] not in PRIVATE_PROVIDERS:
        return
    scope = classify_scope(scope_ref)
    if scope is None:
        # viking://agent/... is an account-wide shared scope, never a memory root.
        v.fail(f"{field}.scope_ref", "is not an accepted viking:// scope", "scope_ref_rejected")
    if scope is not None and scope.peer is not None and binding.get("actor_peer_id") != scope.peer:
        v.fail(f"{field}.actor_peer_id", "must equal the peer of the scope ref")
    if corpus["privacy"]["visibility"] != "private":
        return
    if scope is None or scope.visibility != "private" or not scope.actor_bound:
        v.fail(f"{field}.scope_ref", "of a private corpus must be a private peer scope")
    peer_ref = corpus["scope"]["peer_ref"]
    if not isinstance(peer_ref, str) or not peer_ref.startswith("agent:"):
        v.fail(f"{field}.scope.peer_ref", "of a private corpus must be agent:<agent>")


_CONFIG_KEYS = frozenset({"schema_version", "project_provider_binding", "corpora", "surfaces"})


def normalise_config(document: object) -> dict[str, Any]:
    """Validate a parsed config document and return its normalised form (§2)."""
    config = v.exact_keys(document, "config", _CONFIG_KEYS, frozenset({"automation"}))
    if config["schema_version"] != CONFIG_SCHEMA:
        v.fail("config.schema_version", f"must be {CONFIG_SCHEMA}")
    binding, scopes = _provider_binding(config["project_provider_binding"])
    corpora: dict[str, Any] = {}
    for index, item in enumerate(v.listing(config["corpora"], "corpora", 1, 50)):
        field = f"corpora[{index}]"
        entry = v.exact_keys(item, field, frozenset({"corpus", "standing_policy"}))
        corpus = normalise_corpus(entry["corpus"], f"{field}.corpus")
        policy = normalise_standing_policy(entry["standing_policy"], f"{field}.standing_policy")
        name = corpus["corpus_id"]
        if name in corpora:
            v.fail(f"{field}.corpus.corpus_id", "is declared twice")
        if corpus["provider_id"] != binding["provider_id"]:
            v.fail(f"{field}.corpus.provider_id", "must equal the project provider")
        check_policy_inside_corpus(policy, corpus, field)
        corpora[name] = {"corpus": corpus, "standing_policy": policy}
    if set(scopes) != set(corpora):
        v.fail("project_provider_binding.corpus_scopes", "must name exactly the declared corpora")
    if (
        len(
            {
                (e["corpus"]["scope"]["workspace_ref"], e["corpus"]["scope"]["project_ref"])
                for e in corpora.values()
            }
        )
        != 1
    ):
        v.fail("corpora", "must share one workspace_ref and project_ref")
    for name, entry in corpora.items():
        scope_ref = scopes[name]
        corpus = entry["corpus"]
        digest = corpus.get("provider_scope_ref_digest")
        if digest is not None and digest != short_digest(scope_ref):
            v.fail(f"corpora.{name}.provider_scope_ref_digest", "does not match its scope ref")
        check_peer_binding(binding, scope_ref, corpus, f"corpora.{name}")
        provider_binding: dict[str, Any] = {
            "corpus_id": name,
            "provider_id": binding["provider_id"],
            "namespace": binding["namespace"],
            "scope_ref": scope_ref,
            "timeout_seconds": binding["timeout_seconds"],
            "setup_hints": binding["setup_hints"],
        }
        for key in ("provider_binary", "minimum_provider_version", "actor_peer_id"):
            if key in binding:
                provider_binding[key] = binding[key]
        entry["provider_binding"] = provider_binding
    surfaces: dict[str, Any] = {}
    for index, item in enumerate(v.listing(config["surfaces"], "surfaces", 1, 20)):
        surface = _surface(item, index, corpora)
        if surface["surface_id"] in surfaces:
            v.fail(f"surfaces[{index}].surface_id", "is declared twice")
        surfaces[surface["surface_id"]] = surface
    referenced = {corpus for surface in surfaces.values() for corpus in surface["corpus_ids"]}
    if referenced != set(corpora):
        v.fail("corpora", "every declared corpus must be used by a surface")
    automation, intent = _automation(config.get("automation", {}))
    # Upstream keeps the binding as written (minus the scopes) at the top level; the
    # validated values live in each corpus' provider_binding.
    raw_binding = config["project_provider_binding"]
    top_binding = {key: value for key, value in raw_binding.items() if key != "corpus_scopes"}
    return {
        "schema_version": CONFIG_SCHEMA,
        "project_provider_binding": top_binding,
        "corpora": corpora,
        "surfaces": surfaces,
        "automation": automation,
        "automation_intent": intent,
    }


def read_config_bytes(project: Path, config_path: str) -> bytes:
    """The raw config file of a Goal repository; the path must stay inside it.

    Read without blocking and within 4 MiB: ``config_not_regular`` for a FIFO or
    device, ``config_too_large`` past the bound, ``config_unreadable`` otherwise.
    """
    relative = Path(config_path.strip())
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        v.fail(
            "config_path", "must be a path relative to the Goal repository", "config_path_invalid"
        )
    try:
        return read_bounded(project / relative, reason_prefix="config", name="config")
    except InvalidInputError as exc:
        v.fail("config_path", "cannot be read", exc.reason_code)


def load_config(project: Path, config_path: str) -> dict[str, Any]:
    """Read, parse and normalise a Goal's experiment config."""
    raw = read_config_bytes(project, config_path)
    try:
        document = loads_bounded(raw)
    except InvalidInputError:
        v.fail("config", "is not a JSON document", "config_not_json")
    return normalise_config(document)


def goal_agent_scope(config: dict[str, Any], goal_id: str, agent_id: str) -> dict[str, Any]:
    """``reward_memory_goal_agent_scope_v1``: the private Goal/Agent binding rules (§2.1)."""
    goal = goal_id.strip() if isinstance(goal_id, str) else ""
    if not goal or "/" in goal:
        v.fail(
            "goal_id", "must be non-empty and contain no /", "goal_agent_provider_scope_mismatch"
        )
    agent = v.normalise_agent_id(agent_id)
    peer = peer_token(goal, agent)
    private = 0
    actor_peer_id = config["project_provider_binding"].get("actor_peer_id")
    for name, entry in config["corpora"].items():
        corpus = entry["corpus"]
        if corpus["privacy"]["visibility"] != "private":
            continue
        private += 1
        field = f"corpora.{name}"
        scope = classify_scope(entry["provider_binding"]["scope_ref"])
        reason = "goal_agent_provider_scope_mismatch"
        if corpus["provider_id"] not in PRIVATE_PROVIDERS:
            v.fail(f"{field}.provider_id", "cannot hold a private Agent corpus", reason)
        if corpus["scope"]["peer_ref"] != f"agent:{agent}":
            v.fail(f"{field}.scope.peer_ref", "must be agent:<agent>", reason)
        if corpus["scope"]["session_ref"] is not None:
            v.fail(f"{field}.scope.session_ref", "is not allowed on a private corpus", reason)
        if actor_peer_id != peer:
            v.fail(
                "project_provider_binding.actor_peer_id", "must be the canonical peer token", reason
            )
        if scope is None or not scope.actor_bound or scope.peer != peer:
            v.fail(f"{field}.scope_ref", "must be bound to the Agent's peer", reason)
        if not has_goal_segment(scope, goal):
            v.fail(f"{field}.scope_ref", "must contain goals/<goal_id>", reason)
    return {
        "schema_version": "reward_memory_goal_agent_scope_v1",
        "goal_id": goal,
        "agent_id": agent,
        "isolation_mode": "goal_scoped_agent_private" if private else "explicit_shared",
        "private_corpus_count": private,
        "actor_binding_verified": bool(private),
        "actor_peer_id": actor_peer_id,
    }
