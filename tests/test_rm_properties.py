"""Property tests: random and mutated JSON never raise untyped errors and never write."""

from __future__ import annotations

import copy
import os

from document_paths import paths, replaced
from fixtures import f1
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rm_support import embedded_entry

from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
from capabilities.reward_memory.contract.config import normalise_config
from capabilities.reward_memory.contract.experience import parse_reflection
from capabilities.reward_memory.contract.values import RewardMemoryInputError
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from capabilities.reward_memory.memory.request import build_recall_request

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def mutated_event(draw):
    event = f1.event()
    path = draw(st.sampled_from(list(paths(event))))
    return replaced(event, path, draw(JSON))


class NoWrites:
    """A provider that fails the test on any write; reads see an empty store."""

    provider_id = "embedded_sqlite"

    def __init__(self):
        self.calls = []

    def preflight(self, *, timeout):
        from capabilities.providers.base import Preflight

        self.calls.append("preflight")
        return Preflight(ok=True)

    def read_exact(self, uri, *, actor_peer_id, timeout):
        self.calls.append("read_exact")
        return None

    def write(self, uri, text, *, actor_peer_id, timeout):
        raise AssertionError("a write happened")

    def search(self, scope_ref, query, *, limit, actor_peer_id, timeout):
        self.calls.append("search")
        return []

    def list(self, scope_ref, *, limit, actor_peer_id, timeout):
        return []

    def delete(self, uri, *, actor_peer_id, timeout):
        raise AssertionError("a delete happened")


# HYPOTHESIS_EXAMPLES=2000 for a deeper local search; CI keeps the default.
SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(st.one_of(JSON, mutated_event()))
def test_events_are_typed_errors_or_receipts_and_a_dry_run_never_writes(event):
    entry = embedded_entry()
    provider = NoWrites()
    try:
        receipt = ingest_scoped_event(
            event,
            corpus=entry["corpus"],
            standing_policy=entry["standing_policy"],
            provider_binding=entry["provider_binding"],
            observed_at=f1.OBSERVED_AT,
            execute=False,
            provider=provider,
        )
    except RewardMemoryInputError as exc:
        assert exc.to_public()["status"] == "invalid_request"
        assert provider.calls == []
        return
    assert receipt["status"] in {"guard_blocked", "preflight_ready"}
    if receipt["status"] == "guard_blocked":
        assert provider.calls == []


@SETTINGS
@given(st.one_of(JSON, st.builds(lambda v: v, JSON)))
def test_configs_never_raise_untyped_errors(document):
    try:
        normalise_config(document)
    except RewardMemoryInputError:
        pass


@st.composite
def mutated_config(draw):
    config = f1.config()
    path = draw(st.sampled_from(list(paths(config))))
    return replaced(config, path, draw(JSON))


@SETTINGS
@given(mutated_config())
def test_mutated_configs_never_raise_untyped_errors(document):
    try:
        normalise_config(document)
    except RewardMemoryInputError:
        pass


@SETTINGS
@given(JSON, JSON)
def test_recall_requests_never_raise_untyped_errors(request, checkpoint):
    try:
        build_recall_request(
            embedded_entry()["corpus"], request, read_authority_checkpoint=checkpoint
        )
    except RewardMemoryInputError:
        pass


@SETTINGS
@given(st.one_of(st.text(max_size=200), JSON.map(lambda v: __import__("json").dumps(v))))
def test_reflections_never_raise_untyped_errors(text):
    try:
        parse_reflection(text)
    except RewardMemoryInputError:
        pass


@SETTINGS
@given(mutated_event())
def test_candidate_refs_are_stable_for_equal_normalised_events(event):
    try:
        first = build_candidate(normalise_event(copy.deepcopy(event)))
    except RewardMemoryInputError:
        return
    second = build_candidate(normalise_event(copy.deepcopy(event)))
    assert first["candidate"]["candidate_ref"] == second["candidate"]["candidate_ref"]
