"""A query's words and their alternatives (capabilities/providers/query.py), on a real
SQLite store and in OpenViking's lexical re-rank.

The table is the packaged one in ``test_synonyms.py``; here each test names the
alternatives it relies on, so what it pins is how an alternative counts, not what
the table holds.
"""

from __future__ import annotations

import json

import pytest

from capabilities.providers import query
from capabilities.providers.base import Hit
from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.providers.hybrid import rerank
from capabilities.providers.terms import _stemmer

A = "viking://user/alice/peers/peer-a/memories/goals/g/experience"
TABLE = {
    "db": (("database",),),
    "database": (("db",),),
    "pr": (("pull", "request"),),
    "flaky": (("intermittent",),),
    "intermittent": (("flaky",),),
}


@pytest.fixture(autouse=True)
def table(monkeypatch):
    """The alternatives these tests name, in place of the packaged table."""
    monkeypatch.setattr(
        query, "alternatives", lambda words: {w: TABLE[w] for w in words if w in TABLE}
    )


def record(summary: str, trigger: str = "", action: str = "") -> str:
    behaviour = {"trigger": trigger, "action": action}
    return json.dumps(
        {"content_summary": summary, "experience": {"future_behavior": behaviour}},
        separators=(",", ":"),
    )


@pytest.fixture
def store(tmp_path):
    store = EmbeddedSqliteProvider(tmp_path / "local" / "memory.sqlite3")
    texts = {
        "dump": record("Take a database dump before a schema migration.", "a migration runs"),
        "retry": record("Retry intermittent tests once before reporting them.", "a test fails"),
        "review": record("Rebase a pull request before asking for review.", "review is due"),
        "pull": record("Pull the latest image before a deploy.", "a deploy starts"),
    }
    for name, text in texts.items():
        store.write(f"{A}/{name}.json", text, actor_peer_id="peer-a", timeout=5)
    for index in range(40):  # enough other records that a word in one is rare
        other = record(f"Lesson {index} about widgets and gadgets.", f"gadget {index} breaks")
        store.write(f"{A}/other-{index}.json", other, actor_peer_id="peer-a", timeout=5)
    return store


def found(store, text):
    return [
        hit.uri.rsplit("/", 1)[1] for hit in store.search(A, text, limit=5, actor_peer_id="peer-a")
    ]


def test_a_word_finds_the_record_that_names_it_another_way(store, monkeypatch):
    assert found(store, "DB dump") == ["dump.json"]
    assert found(store, "reporting flaky ones") == ["retry.json"]
    monkeypatch.setattr(query, "alternatives", lambda words: {})
    assert found(store, "DB dump") == found(store, "reporting flaky ones") == [], (
        "without the alternative neither is relevant enough"
    )


def test_an_alternative_of_several_words_counts_only_where_all_are_held(store):
    # "pull" alone is in two records; "pull request" in one: PR finds that one.
    assert found(store, "rebase my PR before review") == ["review.json"]


def test_an_alternative_counts_less_than_the_word_itself():
    stem = _stemmer()
    words = query.query_words("flaky", stem)
    own = words.held({"flaki": 1.0}, {"flaki"}, {"flaki"})
    other = words.held({"flaki": 1.0}, {"intermitt"}, {"intermitt"})
    assert other == pytest.approx(own * query.SYNONYM_FACTOR)
    assert words.held({"flaki": 1.0}, set(), {"intermitt"}) == pytest.approx(query.SYNONYM_FACTOR)


def test_a_word_weighs_as_its_alternative_where_the_store_never_uses_it(store, monkeypatch):
    from capabilities.providers import embedded_sqlite

    seen = {}
    relevant = embedded_sqlite._relevant

    def spy(rows, weights, words, stem):
        seen.update(weights)
        return relevant(rows, weights, words, stem)

    monkeypatch.setattr(embedded_sqlite, "_relevant", spy)
    found(store, "database db")
    assert seen["db"] == pytest.approx(seen["databas"]), "no record says db: it weighs as database"


def test_forms_of_one_word_are_one_query_word():
    words = query.query_words("test tests testing", _stemmer())
    assert list(words.variants) == ["test"]


def test_a_query_of_stop_words_has_no_words():
    assert query.query_words("what is it", _stemmer()).variants == {}


def test_the_re_rank_counts_an_alternative_for_its_word():
    rows = [
        (Hit(uri=f"{A}/a.json", score=0.5, summary="a"), record("Restart the gadget.")),
        (Hit(uri=f"{A}/b.json", score=0.4, summary="b"), record("Vacuum the database weekly.")),
    ]
    ranked = rerank("vacuum the db", rows)
    assert [hit.uri for hit in ranked] == [f"{A}/b.json"], "a is about neither word: dropped"


@pytest.mark.parametrize(
    "text",
    ["DB dump", "reporting flaky ones", "rebase my PR before review", "pull the image", "gadget"],
)
def test_openviking_candidates_are_gated_by_the_embedded_stores_rule(store, text):
    # A page of candidates shorter than asked is the whole store: the gate then keeps
    # exactly the records the embedded store would return, by the same rule.
    every = store.list(A, limit=100, actor_peer_id="peer-a")
    texts = {uri: store.read_exact(uri, actor_peer_id="peer-a") for uri in every}
    candidates = [(Hit(uri=uri, score=0.5, summary=""), texts[uri]) for uri in every]
    gated = {hit.uri for hit in rerank(text, candidates)}
    searched = {hit.uri for hit in store.search(A, text, limit=100, actor_peer_id="peer-a")}
    assert gated == searched
    assert searched, "each query is about something stored"
