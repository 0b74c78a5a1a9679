"""The provider binding of a full ingest fixture (``ingest-event`` without a Goal).

A configured Goal gets its per-corpus binding from :func:`.config.normalise_config`;
a fixture states that binding itself, so it is checked here the way LoopX 2.1.1
checks it: the exact corpus and provider, tokens, the corpus' scope-ref digest, a
collection (not a ``.json`` file) as the scope, a timeout of 1-120 s (30 when
absent) and, for a peer scope, the actor peer. Keys
outside the binding are tolerated, as upstream tolerates them.
"""

from __future__ import annotations

from typing import Any

from capabilities.providers.scopes import classify_scope
from capabilities.reward_memory.contract import values as v
from capabilities.reward_memory.contract.config import check_peer_binding
from capabilities.reward_memory.contract.identities import short_digest

DEFAULT_TIMEOUT_SECONDS = 30
"""LoopX 2.1.1's default when a binding names no timeout (found by running it)."""


def normalise_fixture_binding(value: object, corpus: dict[str, Any], field: str) -> dict[str, Any]:
    """The fixture's binding for the normalised ``corpus``, with defaults filled."""
    binding = dict(v.mapping(value, field))
    if binding.get("corpus_id") != corpus["corpus_id"]:
        v.fail(f"{field}.corpus_id", "must select the fixture's corpus")
    if binding.get("provider_id") != corpus["provider_id"]:
        v.fail(f"{field}.provider_id", "must match the corpus")
    binding["namespace"] = v.token(binding.get("namespace"), f"{field}.namespace")
    scope_ref = v.token(binding.get("scope_ref"), f"{field}.scope_ref")
    digest = corpus.get("provider_scope_ref_digest")
    if digest is not None and digest != short_digest(scope_ref):
        v.fail(f"{field}.scope_ref", "does not match the corpus digest")
    timeout = binding.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 120:
        v.fail(f"{field}.timeout_seconds", "must be a number between 1 and 120")
    binding["timeout_seconds"] = timeout
    # Empty (null, [], "") is none; anything else must be an object, as upstream reads it.
    binding["setup_hints"] = v.mapping(binding.get("setup_hints") or {}, f"{field}.setup_hints")
    if scope_ref.endswith(".json"):
        # A fixture names the collection its record goes into; a JSON file is one
        # record, never a place to write another (LoopX 2.1.1 refuses it too).
        v.fail(
            f"{field}.scope_ref", "must name a collection, not a .json file", "scope_ref_rejected"
        )
    scope = classify_scope(scope_ref)
    if scope is not None and scope.peer is not None and "actor_peer_id" not in binding:
        v.fail(f"{field}.actor_peer_id", "is required for a peer scope")
    check_peer_binding(binding, scope_ref, corpus, field)
    return binding
