"""The lexical re-rank of OpenViking's vector candidates (capabilities/providers/hybrid.py).

Pure ranking over the rows a search returned, with the embedded store's own porter
stemmer; the real server's part is in test_openviking_real.py.
"""

from __future__ import annotations

import json

from capabilities.providers.base import Hit
from capabilities.providers.hybrid import LEXICAL_WEIGHT, rerank


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
    assert [hit.uri for hit in ranked] == ["lesson", "nearer", "near"]
    assert ranked[0].score > 0.62, "the hit's score is its hybrid score, highest first"


def test_similarity_decides_between_candidates_holding_the_same_words():
    ranked = rerank(
        "rotate the signing key",
        rows(
            ("a", 0.60, record("Rotate the signing key monthly.")),
            ("b", 0.70, record("Rotate the signing key after a leak.")),
            ("c", 0.65, record("Pin the base image.")),
        ),
    )
    assert [hit.uri for hit in ranked] == ["b", "a", "c"]


def test_a_stem_in_the_summary_or_trigger_counts_more_than_one_in_the_action():
    ranked = rerank(
        "vacuum",
        rows(
            ("body", 0.70, record("Keep tables small.", action="vacuum the big tables")),
            ("head", 0.70, record("Keep tables small.", trigger="vacuum runs too long")),
            ("none", 0.70, record("Keep tables small.")),
        ),
    )
    assert [hit.uri for hit in ranked] == ["head", "body", "none"]


def test_a_plain_text_abstract_is_ranked_on_its_words():
    # A server with a summarising model returns prose abstracts, not the record's JSON.
    ranked = rerank(
        "flaky tests",
        rows(
            ("other", 0.80, "Notes on how the deploy pipeline promotes builds"),
            ("match", 0.50, "Quarantine flaky tests instead of retrying them"),
        ),
    )
    assert [hit.uri for hit in ranked] == ["match", "other"]
    assert ranked[0].score <= 0.50 + LEXICAL_WEIGHT


def test_without_a_query_stem_any_candidate_holds_the_servers_order_stays():
    candidates = rows(
        ("first", 0.9, record("Pin the base image.")),
        ("second", 0.8, record("Rotate the signing key.")),
    )
    for query in ("", "what should we do about it", "zebrafish aquarium"):
        assert rerank(query, candidates) == [hit for hit, _text in candidates]
    assert rerank("zebrafish", []) == []
