"""The lexical re-rank and relevance gate of OpenViking's vector candidates
(capabilities/providers/hybrid.py).

Pure ranking and gating over the rows a search returned, with the embedded store's
own porter stemmer; the real server's part is in test_openviking_real.py.
"""

from __future__ import annotations

import json

from capabilities.providers.base import Hit
from capabilities.providers.hybrid import CANDIDATES, LEXICAL_WEIGHT, rerank


def record(summary: str, trigger: str = "a change is ready", action: str = "act") -> str:
    """A record's JSON as OpenViking's abstract holds it (the whole stored text)."""
    return json.dumps(
        {
            "content_summary": summary,
            "experience": {"future_behavior": {"trigger": trigger, "action": action}},
            "schema_version": "reward_memory_active_record_v0",
        }
    )


def rows(*pairs: tuple[str, float, str]) -> list[tuple[Hit, str]]:
    return [(Hit(uri=uri, score=score, summary=""), text) for uri, score, text in pairs]


def test_a_record_holding_the_prompts_stems_is_lifted_over_a_closer_vector():
    ranked = rerank(
        "anything to check about the migrations before rebasing?",
        rows(
            ("near", 0.74, record("Keep the proxy settings in one file.")),
            ("nearer", 0.76, record("Document each cache default.")),
            ("lesson", 0.62, record("Run the migration check before a rebase.")),
        ),
    )
    assert [hit.uri for hit in ranked] == ["lesson"], "the closer vectors share no word: dropped"
    assert ranked[0].score > 0.62, "the hit's score is its hybrid score"


def test_similarity_decides_between_candidates_holding_the_same_words():
    ranked = rerank(
        "rotate the signing key",
        rows(
            ("a", 0.60, record("Rotate the signing key monthly.")),
            ("b", 0.70, record("Rotate the signing key after a leak.")),
            ("c", 0.65, record("Pin the base image.")),
        ),
    )
    assert [hit.uri for hit in ranked] == ["b", "a"]


def test_a_stem_in_the_summary_or_trigger_counts_more_than_one_in_the_action():
    ranked = rerank(
        "vacuum the bloated tables",
        rows(
            ("body", 0.70, record("Keep tables small.", action="vacuum the bloated tables")),
            ("head", 0.70, record("Keep tables small.", trigger="vacuum bloated tables")),
            ("none", 0.70, record("Keep tables small.")),
        ),
    )
    assert [hit.uri for hit in ranked] == ["head", "body"], "one shared word is not relevance"


def test_a_plain_text_abstract_is_ranked_on_its_words():
    # A server with a summarising model returns prose abstracts, not the record's JSON.
    ranked = rerank(
        "flaky tests",
        rows(
            ("other", 0.80, "Notes on how the deploy pipeline promotes builds"),
            ("match", 0.50, "Quarantine flaky tests instead of retrying them"),
        ),
    )
    assert [hit.uri for hit in ranked] == ["match"]
    assert ranked[0].score <= 0.50 + LEXICAL_WEIGHT


def test_a_query_no_candidate_is_about_gets_nothing():
    # The server returns its nearest rows however far they are; none of these holds
    # a word of the query, so none is recalled, whatever its similarity.
    candidates = rows(
        ("first", 0.9, record("Pin the base image.")),
        ("second", 0.8, record("Rotate the signing key.")),
    )
    for query in ("", "what should we do about it", "zebrafish aquarium"):
        assert rerank(query, candidates) == []
    assert rerank("zebrafish", []) == []


def page(lesson: str) -> list[tuple[Hit, str]]:
    """A full page of candidates: many share the everyday words "retry", "button" and
    "page"; one lesson holds rarer ones."""
    common = [
        record(f"Retry the {n} job once from the button on its page.", "a job fails")
        for n in range(CANDIDATES - 10)
    ]
    others = [record(f"Document cache default {n}.", "a default changes") for n in range(9)]
    texts = [*common, *others, lesson]
    return rows(*((f"r{i}", 0.9 - i / 100, text) for i, text in enumerate(texts)))


def test_two_shared_everyday_words_are_not_relevance_but_a_rare_one_in_the_head_is():
    candidates = page(record("Back off exponentially when the payment API throttles.", "429s"))
    assert rerank("retry button colour", candidates, sample=True) == []
    assert rerank("make the retry button blue on the settings page", candidates, sample=True) == []
    found = rerank("retry the payment API with exponential backoff", candidates, sample=True)
    assert [hit.uri for hit in found] == [f"r{CANDIDATES - 1}"]


def test_a_full_page_is_a_sample_a_short_one_the_whole_store():
    # The same candidates: as the whole store (a short page) a word in eight of the
    # ten records still weighs something, with the store's prior of absent records
    # (three of them make a record relevant, as on the embedded store); as a sample
    # of a larger store (a full page) they are all there is to go by, and a word
    # most of them hold is common.
    candidates = [
        *(
            (Hit(uri=f"w{i}", score=0.5, summary=""), record("Warm the cache first.", "a deploy"))
            for i in range(8)
        ),
        (Hit(uri="x", score=0.5, summary=""), record("Pin the base image.", "a build")),
        (Hit(uri="y", score=0.5, summary=""), record("Rotate the signing key.", "a leak")),
    ]
    query = "warm the cache before the deploy demo"
    assert [hit.uri for hit in rerank(query, candidates)] == [f"w{i}" for i in range(8)]
    assert rerank(query, candidates, sample=True) == []


def test_a_similarity_floor_recalls_by_meaning_and_keeps_silence_below_it():
    from capabilities.providers.semantic import KEEP_MARGIN

    def reported(cosine):  # how OpenViking 0.5.2 reports a cosine
        return (1 + cosine) / 2

    candidates = rows(
        ("synonym", reported(0.52), record("Retry a flaky test once before reporting it.")),
        (
            "near",
            reported(0.52 - KEEP_MARGIN + 0.02),
            record("Keep the proxy settings in one file."),
        ),
        ("far", reported(0.52 - KEEP_MARGIN - 0.05), record("Document each cache default.")),
    )
    query = "the suite fails intermittently on CI"
    assert rerank(query, candidates) == [], "no shared word: the lexical gate keeps nothing"
    ranked = rerank(query, candidates, floor=0.40)
    assert [hit.uri for hit in ranked] == ["synonym", "near"], "within the margin of the best"
    assert rerank(query, candidates, floor=0.55) == [], "the best below the floor: silence"
    assert [round(hit.score, 6) for hit in ranked] == [0.52, round(0.52 - KEEP_MARGIN + 0.02, 6)], (
        "scored on the cosine's own scale"
    )


def test_the_similarity_floor_is_the_users_number_or_none():
    from capabilities.providers.hybrid import SIMILARITY_FLOOR_ENV, similarity_floor

    assert similarity_floor({}) is None, "unset: the lexical gate, as before"
    assert similarity_floor({SIMILARITY_FLOOR_ENV: " 0.4 "}) == 0.4
    for bad in ("", "high", "1.5", "-0.1", "nan"):
        assert similarity_floor({SIMILARITY_FLOOR_ENV: bad}) is None, bad
