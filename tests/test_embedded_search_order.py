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
import sys

import pytest
from search_order_corpus import GOLDEN, PEER, queries, records, search_all

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider


def _store(path):
    store = EmbeddedSqliteProvider(path / "local" / "memory.sqlite3")
    items = records()
    for peer in (PEER, "peer-b", None):
        batch = [(uri, text) for uri, text, owner in items if (owner or None) == peer]
        store.write_many(batch, actor_peer_id=peer, timeout=600)
    return store, {uri: text for uri, text, _peer in items}


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    store, texts = _store(tmp_path_factory.mktemp("order"))
    return search_all(store, texts)


def test_every_query_returns_the_pinned_records_in_the_pinned_order(searched):
    golden = json.loads(GOLDEN.read_text())
    assert searched.keys() == golden.keys()
    differing = [key for key in golden if searched[key] != golden[key]]
    assert differing == []


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


if __name__ == "__main__":  # record the golden file (see the module docstring)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as scratch:
        store, texts = _store(Path(scratch))
        GOLDEN.write_text(json.dumps(search_all(store, texts), indent=0, sort_keys=True) + "\n")
    sys.exit(0)
