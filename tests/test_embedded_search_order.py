"""The embedded store's search returns the same records, in the same order, with the
same scores as the tree that recorded ``tests/golden/embedded_search_order.json``.

It pins the results across changes made for speed (issue 15): a faster statement or a
cheaper relevance gate must not change what a query returns. The corpus and queries
are ``tests/search_order_corpus.py``'s. To record the golden file again, after a
change that is *meant* to change results, run
``python tests/test_embedded_search_order.py`` and say why in the commit.
"""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest
from search_order_corpus import GOLDEN, PEER, SCOPE, queries, records, search_all

from capabilities.providers.embedded_sqlite import TOKENIZE, EmbeddedSqliteProvider, _Stems, _words


def _store(path):
    store = EmbeddedSqliteProvider(path / "local" / "memory.sqlite3")
    items = records()
    for peer in (PEER, "peer-b", None):
        batch = [(uri, text) for uri, text, owner in items if (owner or None) == peer]
        store.write_many(batch, actor_peer_id=peer, timeout=600)
    return store, {uri: text for uri, text, _peer in items}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _store(tmp_path_factory.mktemp("order"))


@pytest.fixture(scope="module")
def searched(built):
    store, texts = built
    return search_all(store, texts)


def test_every_query_returns_the_pinned_records_in_the_pinned_order(searched):
    golden = json.loads(GOLDEN.read_text())
    assert searched.keys() == golden.keys()
    differing = [key for key in golden if searched[key] != golden[key]]
    assert differing == []


@pytest.mark.parametrize("older", ["no stems table", "an empty stems table"])
def test_records_without_stored_stems_are_gated_to_the_same_results(
    built, searched, older, tmp_path
):
    # Each record's stems are stored when it is written; a store an older version
    # wrote has none (no table, or a table this version made but no rows for the
    # records already there), and its records are parsed and stemmed at search time.
    # Both must give what the stored stems give, score for score.
    store, texts = built
    copy = tmp_path / "local" / "memory.sqlite3"
    copy.parent.mkdir(mode=0o700)
    with sqlite3.connect(store.path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
        statement = (
            "DROP TABLE record_stems" if older == "no stems table" else "DELETE FROM record_stems"
        )
        target.execute(statement)
    source.close()
    target.close()
    copy.chmod(0o600)
    reader = EmbeddedSqliteProvider(copy, read_only=True)
    assert search_all(reader, texts) == searched


def test_the_pinned_corpus_exercises_the_edges(searched):
    # What makes the pin meaningful: many queries with results, several with more
    # than one (an order to keep), empty ones, and filler records that compete.
    golden = json.loads(GOLDEN.read_text())
    assert len(queries()) > 150
    assert sum(len(rows) >= 1 for rows in golden.values()) > 300
    assert sum(len(rows) >= 2 for rows in golden.values()) > 60
    assert sum(not rows for rows in golden.values()) > 100
    assert any("filler" in uri for rows in golden.values() for uri, *_ in rows)
    assert all("peer-b" not in uri for rows in golden.values() for uri, *_ in rows)


def _filler_store(path, crowd):
    """A store where ``crowd`` lists ``(uri, text)`` records that hold the rare word."""
    store = EmbeddedSqliteProvider(path / "local" / "memory.sqlite3")
    fillers = [(f"{SCOPE}/plain-{i:03d}.json", f"plain words number {i}") for i in range(400)]
    store.write_many(fillers + crowd, actor_peer_id=None, timeout=60)
    return store


def _ranked_everything(store, query, limit):
    """The plain statement: rank every match below the scope, then the URI."""
    with sqlite3.connect(store.path) as connection:
        return [
            uri
            for (uri,) in connection.execute(
                "SELECT r.uri FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
                "WHERE records_fts MATCH ? AND substr(r.uri, 1, ?) = ? "
                "ORDER BY bm25(records_fts), r.uri LIMIT ?",
                (query, len(SCOPE) + 1, SCOPE + "/", limit),
            )
        ]


def test_better_ranked_matches_in_another_scope_do_not_hide_this_scopes(tmp_path):
    # Short records elsewhere rank above every one of ours: the index's best matches
    # all belong to another scope, and ours must still come back (a search that ranks
    # on the index alone before filtering by scope would lose them).
    other = SCOPE.replace("peer-a", "peer-b")
    crowd = [(f"{other}/crowd-{i:03d}.json", "zebrafish zebrafish") for i in range(80)]
    ours = [
        (f"{SCOPE}/ours-{i}.json", f"zebrafish tank water filter {'long ' * (5 + i)}")
        for i in range(3)
    ]
    store = _filler_store(tmp_path, crowd + ours)
    found = [hit.uri for hit in store.search(SCOPE, "zebrafish", limit=5, actor_peer_id=PEER)]
    assert found == [uri for uri, _text in ours] == _ranked_everything(store, "zebrafish", 5)


def test_records_that_tie_on_rank_come_in_uri_order(tmp_path):
    # Identical records tie; which of them the limit keeps is decided by URI alone.
    crowd = [(f"{SCOPE}/tie-{i:03d}.json", "zebrafish tank") for i in reversed(range(70))]
    store = _filler_store(tmp_path, crowd)
    found = [hit.uri for hit in store.search(SCOPE, "zebrafish", limit=5, actor_peer_id=PEER)]
    assert found == [f"{SCOPE}/tie-{i:03d}.json" for i in range(5)]
    assert found == _ranked_everything(store, "zebrafish", 5)
    assert store.search(SCOPE, "zebrafish", limit=0, actor_peer_id=PEER) == []


def test_text_that_is_not_a_record_is_gated_on_all_of_it(tmp_path):
    # JSON without a summary, and plain text, are their own head and body.
    texts = {f"{SCOPE}/json.json": '{"note": "zebrafish tank"}', f"{SCOPE}/plain.txt": "zebrafish"}
    store = _filler_store(tmp_path, list(texts.items()))
    found = store.search_read(SCOPE, "zebrafish", limit=5, actor_peer_id=PEER)
    assert sorted((hit.uri, text) for hit, text in found) == sorted(texts.items())


def _stem_alone(words):
    """Each word in its own document of a porter index: the stem it gets alone."""
    connection = sqlite3.connect(":memory:")
    connection.execute(f"CREATE VIRTUAL TABLE s USING fts5(t, {TOKENIZE})")
    connection.execute("CREATE VIRTUAL TABLE i USING fts5vocab(s, instance)")
    connection.executemany("INSERT INTO s(rowid, t) VALUES (?, ?)", enumerate(words))
    found = {}
    for doc, term in connection.execute("SELECT doc, term FROM i ORDER BY doc, offset"):
        found.setdefault(words[doc], term)
    return found


@pytest.mark.parametrize("extra", [[], ["café", "naïve", "straße"]], ids=["ascii", "unicode"])
def test_stemming_words_together_gives_each_the_stem_it_gets_alone(extra):
    # The gate stems many words in one statement; each must get its own stem.
    text = " ".join(text for _uri, text, _peer in records()[:400])
    words = [*_words(text), "x" * 70, "0xdeadbeef", "42", "running", "rebasing", *extra]
    assert _Stems().of(words) == _stem_alone(words)


if __name__ == "__main__":  # record the golden file (see the module docstring)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as scratch:
        store, texts = _store(Path(scratch))
        GOLDEN.write_text(json.dumps(search_all(store, texts), indent=0, sort_keys=True) + "\n")
    sys.exit(0)


def test_an_and_query_that_matches_one_record_is_not_ranked(tmp_path, monkeypatch):
    # bm25 reads every term's whole document list before it scores a match: for the
    # AND query, which mostly matches one record, that was half its time, to order
    # one row. Only the OR query, with several matches, is ranked.
    crowd = [(f"{SCOPE}/only.json", "zebrafish tank heater")]
    crowd += [(f"{SCOPE}/z-{i}.json", f"zebrafish number {i}") for i in range(5)]
    store = _filler_store(tmp_path, crowd)
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    found = store.search(SCOPE, "zebrafish tank heater", limit=5, actor_peer_id=PEER)
    assert [hit.uri for hit in found][:1] == [f"{SCOPE}/only.json"]
    searches = [s for s in statements if "MATCH" in s]
    assert [("AND" in s, "bm25" in s) for s in searches] == [(True, False), (False, True)]
