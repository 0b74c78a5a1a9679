"""The Stage 4 utility-ranking benchmark's generator and figures, on tiny cases.

The figures themselves are ``benchmarks/bench_utility_ranking.py``'s (recorded in
``benchmarks/RESULTS.md``); here the corpus, the chain a Turn runs through and each
figure are pinned on cases small enough to count by hand. Not timed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_utility_ranking as bench

from capabilities.reward_memory.utility import rank_prior

MEMORIES = bench.corpus()


def _memory(name: str, truth: str, topic: int = 0, scope: str = "alpha") -> bench.Memory:
    return bench.Memory(f"viking://user/{scope}/memories/{name}", scope, topic, "x", name, truth)


def test_the_corpus_has_near_duplicate_twins_and_scopes_that_disagree():
    assert len(MEMORIES) == len(bench.SCOPES) * len(bench.TOPICS) * len(bench.ROLES)
    assert len({m.uri for m in MEMORIES}) == len(MEMORIES)
    helpful = set(bench.ROLES["helpful"][1])
    harmful = set(bench.ROLES["harmful"][1])
    assert len(helpful & harmful) == 3, "the harmful twin shares three of the four words"
    for memory in MEMORIES:
        assert memory.uri.startswith(f"viking://user/{memory.scope}/memories/")
    alpha = {(m.topic, m.role): m.truth for m in MEMORIES if m.scope == "alpha"}
    beta = {(m.topic, m.role): m.truth for m in MEMORIES if m.scope == "beta"}
    assert alpha[(1, "helpful")] == beta[(1, "harmful")] == "helpful"
    assert alpha[(0, "helpful")] == beta[(0, "helpful")] == "helpful"
    truths = [m.truth for m in MEMORIES]
    assert {t: truths.count(t) for t in bench.LABELS} == {
        "helpful": 20,
        "harmful": 40,
        "neutral": 40,
    }


def test_dev_and_held_seeds_are_disjoint():
    assert not set(bench.SEEDS["dev"]) & set(bench.SEEDS["held"])


def test_the_real_search_returns_only_the_prompts_topic(tmp_path):
    provider = bench.seed_store(tmp_path, MEMORIES)
    by_uri = {m.uri: m for m in MEMORIES}
    hits = provider.search(
        "viking://user/alpha/memories", "pytest flaky fixture", limit=15, actor_peer_id=None
    )
    found = [by_uri[hit.uri] for hit in hits]
    assert found, "the prompt's own memories are relevant"
    assert {(m.scope, m.topic) for m in found} == {("alpha", 0)}
    assert all(hit.score > 0 for hit in hits)


def test_an_owner_rating_reaches_the_factor_through_the_real_chain():
    harmful = next(m for m in MEMORIES if m.scope == "alpha" and m.role == "harmful")
    arm = bench.Arm("utility", "alpha")
    facts = {
        "application_receipt": bench.receipt("alpha", 0, "pytest flaky", harmful),
        "verified_outcome": {
            "verified": True,
            "outcome_ref": "outcome:alpha-0000",
            "artifact_ref": "artifact:alpha-0000",
            "outcome_status": "failed",
        },
        "attribution_context": bench._context("alpha"),
        "created_at": bench._created(0, 0),
    }
    log = bench.TurnLog("alpha", 0, 0, [], [], [], {}, 0, 0)
    bench._record(arm, log, facts, bench.proposal(facts, "harmful", "owner_correction", 1.0, "o:1"))
    assert arm.factors == {harmful.digest: rank_prior.DEFAULT_LOWER}
    assert arm.subjects == {harmful.digest}
    assert log.judged == [("owner_correction", "harmful")]


def test_a_tiny_sequence_rescues_nothing_leaks_nothing_and_learns(tmp_path):
    provider = bench.seed_store(tmp_path, MEMORIES)
    logs = bench.run_sequence(provider, MEMORIES, seed=1, turns=8)
    assert set(logs) == set(bench.CONDITIONS)
    for condition, turns in logs.items():
        assert len(turns) == 8 * len(bench.SCOPES)
        figures = bench.metrics(turns)
        assert figures["rescued_irrelevant"] == 0, condition
        assert figures["scope_leaks"] == 0, condition
    # Relevance alone keeps the search's order; every condition saw the same prompts.
    assert all(log.order == log.relevant for log in logs["relevance"])
    assert [log.relevant for log in logs["relevance"]] == [log.relevant for log in logs["hotness"]]
    inferred = [b for log in logs["utility"] for b, _label in log.judged]
    assert "evaluator_inference" in inferred
    lineage = [b for log in logs["utility_no_inference"] for b, _label in log.judged]
    assert "evaluator_inference" not in lineage
    assert "insufficient" in lineage


def test_each_figure_on_a_hand_counted_case():
    helpful, harmful, neutral = (
        _memory("h", "helpful"),
        _memory("x", "harmful"),
        _memory("n", "neutral"),
    )
    stray = _memory("s", "neutral", topic=3, scope="beta")

    inferred = "evaluator_inference"
    # Per Turn of topic 0 in alpha: the relevance order, the condition's order, what
    # was shown, the factors, rescued, leaks, success, judgements, the applied truth.
    rows = [
        # Relevance put the harmful twin first; the prior lifted the helpful one.
        ([harmful, helpful], [helpful, harmful], [helpful, harmful],
         {harmful: 0.5, helpful: 1.0}, 0, 0, True, [(inferred, "helpful")], "helpful"),
        # The helpful memory pushed below a neutral one relevance ranked lower: false
        # attenuation; a memory of another scope shown: a leak; one rescued.
        ([helpful, neutral], [neutral, helpful], [neutral, stray],
         {helpful: 0.8, neutral: 1.0}, 1, 1, False, [(inferred, "harmful")], "neutral"),
        # Inconclusive, with only a harmful memory relevant and shown first.
        ([harmful], [harmful], [harmful], {harmful: 1.0}, 0, 0, None, [], "harmful"),
    ]  # fmt: skip
    logs = [
        bench.TurnLog(
            "alpha",
            n,
            0,
            relevant,
            order,
            shown,
            {m.digest: f for m, f in factors.items()},
            rescued,
            leaks,
            success,
            judged,
            applied,
        )
        for n, (
            relevant,
            order,
            shown,
            factors,
            rescued,
            leaks,
            success,
            judged,
            applied,
        ) in enumerate(rows)
    ]
    figures = bench.metrics(logs)
    assert figures["quality"] == 0.5
    assert figures["harmful_first"] == 0.5
    assert figures["task_success"] == 0.5
    assert figures["false_attenuation"] == 0.5
    assert figures["demoted_helpful"] == 1
    assert figures["off_topic_shown"] == 1
    assert figures["rescued_irrelevant"] == 1
    assert figures["scope_leaks"] == 1
    assert figures["evaluator_disagreement"] == 0.5
    assert figures["observations"] == 2
    assert bench.metrics(logs, warm=2)["turns"] == 1


@pytest.mark.parametrize("condition", ["utility", "utility_no_inference"])
def test_the_decision_needs_a_gain_in_every_sequence_and_no_leak(condition):
    row = {
        "quality": 0.6,
        "false_attenuation": 0.01,
        "rescued_irrelevant": 0,
        "scope_leaks": 0,
    }
    held = {
        "all": {"relevance": {**row, "quality": 0.5}, "utility": row, "utility_no_inference": row},
        "quality_per_seed": {
            1: {"relevance": 0.5, "utility": 0.6, "utility_no_inference": 0.6},
            2: {"relevance": 0.5, "utility": 0.55, "utility_no_inference": 0.55},
        },
    }
    assert bench.decision(held)[condition]["default"] is True
    held["quality_per_seed"][2][condition] = 0.5
    assert bench.decision(held)[condition]["default"] is False
    held["quality_per_seed"][2][condition] = 0.55
    held["all"][condition] = {**row, "false_attenuation": 0.03}
    assert bench.decision(held)[condition]["default"] is False
    held["all"][condition] = {**row, "scope_leaks": 1}
    assert bench.decision(held)[condition]["default"] is False


def test_the_command_writes_every_figure_and_the_decision(tmp_path, capsys):
    figures = tmp_path / "figures.json"
    assert bench.main(["--half", "held", "--turns", "3", "--json", str(figures)]) == 0
    written = json.loads(figures.read_text())
    assert set(written) == {"held", "decision"}
    assert set(written["held"]["all"]) == set(bench.CONDITIONS)
    assert set(written["decision"]) == {"utility", "utility_no_inference"}
    assert "| relevance |" in capsys.readouterr().out
    assert bench.CONFIG == rank_prior.DEFAULT_CONFIG, "the defaults stay in force"
