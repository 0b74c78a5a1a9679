"""The rank prior's re-rank on both stores: the embedded one and a real OpenViking.

The same wrapper a Turn's recall uses (turn/ranking.py) around each real provider:
it re-orders the hits the store found relevant and adds none.
"""

from __future__ import annotations

import pytest
from fixtures import f1
from test_openviking_real import health_goal, ov_env, ov_server  # noqa: F401 (fixtures)
from turn_support import UNRELATED, ingest_memory

from capabilities.providers.factory import build_provider
from capabilities.reward_memory.binding.registry import load_registry, resolve
from capabilities.reward_memory.contract.identities import memory_ref_digest
from capabilities.reward_memory.turn.ranking import UtilityRanked

PROMPT = "a change touches one module: which tests first?"


@pytest.fixture(params=["embedded_sqlite", "openviking"])
def provider_id(request):
    if request.param == "openviking":
        request.getfixturevalue("ov_env")
    return request.param


def test_a_demoted_memory_falls_below_its_twin_and_nothing_is_lifted(provider_id, tmp_path):
    goal = f"ranked-{provider_id.replace('_', '-')}"
    registry = health_goal(tmp_path, goal, provider_id)
    bound = resolve(load_registry(registry), goal, f1.AGENT)

    def provider_for(binding):
        return build_provider(binding, repo=bound.repo)

    for key, ref in (("t1", "evidence:ci-run-17"), ("t2", "evidence:ci-run-18")):
        ingest_memory(registry, key, ref, goal=goal, provider_for=provider_for)
    ingest_memory(
        registry, "t3", "evidence:ci-run-19", unrelated=True, goal=goal, provider_for=provider_for
    )
    [entry] = bound.config["corpora"].values()
    binding = entry["provider_binding"]
    options = {
        "limit": 6,
        "actor_peer_id": binding.get("actor_peer_id"),
        "timeout": float(binding["timeout_seconds"]),
    }
    plain = provider_for(binding).search(binding["scope_ref"], PROMPT, **options)
    texts = [hit.summary for hit in plain]
    assert len(plain) >= 2 and UNRELATED not in texts
    first, second = plain[0].uri, plain[1].uri
    every_uri = set(provider_for(binding).list(binding["scope_ref"], **options))
    unrelated = sorted(every_uri - {hit.uri for hit in plain})
    assert unrelated, "the unrelated memory is stored, below the floor"
    factors = {memory_ref_digest(first): 0.5}
    factors.update({memory_ref_digest(uri): 1.25 for uri in unrelated})  # never found
    audit = []
    ranked = UtilityRanked(provider_for(binding), factors, audit).search(
        binding["scope_ref"], PROMPT, **options
    )
    assert [hit.uri for hit in ranked][:2] == [second, first]
    assert {hit.uri for hit in ranked} == {hit.uri for hit in plain}, "re-ordered, no more"
    assert {"memory_ref_digest": memory_ref_digest(first), "modifier": 0.5} in audit
