"""The embedded provider: a real SQLite file with FTS5 (providers.md §2)."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap

import pytest

from capabilities.providers.base import ProviderPermissionError, ProviderScopeError
from capabilities.providers.embedded_sqlite import (
    EmbeddedSqliteProvider,
    _operational_reason,
    _sqlite_reason,
)
from turn_hooks import ProviderUnavailable

USER = "viking://user/alice"
A = f"{USER}/peers/peer-a/memories/goals/g/experience"
B = f"{USER}/peers/peer-b/memories/goals/g/experience"
SHARED = f"{USER}/memories/shared"


@pytest.fixture
def store(tmp_path):
    return EmbeddedSqliteProvider(tmp_path / "local" / "memory.sqlite3")


def test_preflight_creates_a_private_database(store):
    result = store.preflight(timeout=5)
    assert result.ok and result.provider_version.startswith("sqlite-")
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.path.parent).st_mode) == 0o700
    with sqlite3.connect(store.path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("SELECT value FROM meta").fetchone()[0] == "turn_hooks_sqlite_v1"


@pytest.mark.parametrize(
    "text",
    ['{"a":"é — 目标"}', "  leading and trailing  ", "line1\r\nline2\n", "x" * 100_000],
)
def test_reads_return_exactly_the_bytes_written(store, text):
    store.write(f"{A}/r.json", text, actor_peer_id="peer-a", timeout=5)
    assert store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) == text


def test_absent_is_none_and_upsert_replaces(store):
    assert store.read_exact(f"{A}/none.json", actor_peer_id="peer-a", timeout=5) is None
    store.write(f"{A}/r.json", "one", actor_peer_id="peer-a", timeout=5)
    store.write(f"{A}/r.json", "two", actor_peer_id="peer-a", timeout=5)
    assert store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) == "two"
    assert store.list(A, limit=10, actor_peer_id="peer-a", timeout=5) == [f"{A}/r.json"]


def test_peer_partitions_are_separate(store):
    store.write(
        f"{A}/a.json", '{"content_summary":"alpha secret plan"}', actor_peer_id="peer-a", timeout=5
    )
    store.write(f"{B}/b.json", '{"content_summary":"beta plan"}', actor_peer_id="peer-b", timeout=5)
    store.write(
        f"{SHARED}/s.json", '{"content_summary":"shared plan"}', actor_peer_id=None, timeout=5
    )
    with pytest.raises(ProviderPermissionError):
        store.read_exact(f"{A}/a.json", actor_peer_id="peer-b", timeout=5)
    with pytest.raises(ProviderPermissionError):
        store.write(f"{A}/x.json", "intrude", actor_peer_id="peer-b", timeout=5)
    with pytest.raises(ProviderPermissionError):
        store.search(A, "plan", limit=5, actor_peer_id="peer-b", timeout=5)
    with pytest.raises(ProviderPermissionError):
        store.list(A, limit=5, actor_peer_id="peer-b", timeout=5)
    with pytest.raises(ProviderPermissionError):
        store.delete(f"{A}/a.json", actor_peer_id="peer-b", timeout=5)
    own = store.search(B, "plan", limit=10, actor_peer_id="peer-b", timeout=5)
    assert [hit.uri for hit in own] == [f"{B}/b.json"]
    shared = store.search(SHARED, "plan", limit=10, actor_peer_id="peer-b", timeout=5)
    assert [hit.uri for hit in shared] == [f"{SHARED}/s.json"], "user memories stay visible"
    with pytest.raises(ProviderScopeError):
        store.search(f"{USER}/peers", "plan", limit=10, actor_peer_id="peer-b", timeout=5)


def test_search_is_strictly_below_the_scope_and_literal(store):
    store.write(
        f"{A}/x_1.json",
        '{"content_summary":"focused tests first"}',
        actor_peer_id="peer-a",
        timeout=5,
    )
    store.write(
        f"{A}2/y.json",
        '{"content_summary":"focused tests first"}',
        actor_peer_id="peer-a",
        timeout=5,
    )
    hits = store.search(A, "focused", limit=5, actor_peer_id="peer-a", timeout=5)
    assert [hit.uri for hit in hits] == [f"{A}/x_1.json"]
    assert hits[0].summary == "focused tests first"
    assert (
        store.search(
            A.replace("experience", "exp%"), "focused", limit=5, actor_peer_id="peer-a", timeout=5
        )
        == []
    )
    for hostile in ('" OR 1', "NEAR(a b)", "*", "focused) OR (x", ""):
        store.search(A, hostile, limit=5, actor_peer_id="peer-a", timeout=5)


def test_search_ranks_better_matches_first(store):
    # Two of the three words: relevant enough to return (one would not be), but weaker.
    store.write(
        f"{A}/weak.json", '{"content_summary":"module tests"}', actor_peer_id="peer-a", timeout=5
    )
    store.write(
        f"{A}/strong.json",
        '{"content_summary":"focused module tests first"}',
        actor_peer_id="peer-a",
        timeout=5,
    )
    hits = store.search(A, "focused module tests", limit=5, actor_peer_id="peer-a", timeout=5)
    assert hits[0].uri == f"{A}/strong.json" and hits[0].score >= hits[1].score


@pytest.mark.parametrize(
    "uri",
    ["viking://agent/shared/memories/x.json", "http://x/y", "viking://user/a/peers/../memories/x"],
)
def test_unaccepted_scopes_are_rejected(store, uri):
    with pytest.raises(ProviderScopeError):
        store.write(uri, "x", actor_peer_id=None, timeout=5)


def test_delete(store):
    store.write(f"{A}/r.json", "x", actor_peer_id="peer-a", timeout=5)
    assert store.delete(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) is True
    assert store.delete(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) is False
    assert store.search(A, "x", limit=5, actor_peer_id="peer-a", timeout=5) == []


def test_unopenable_database_is_unavailable(tmp_path):
    (tmp_path / "dir.sqlite3").mkdir()
    store = EmbeddedSqliteProvider(tmp_path / "dir.sqlite3")
    result = store.preflight(timeout=1)
    assert (result.ok, result.reason_code) == (False, "embedded_store_not_regular")


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("no such module: fts5", "embedded_fts5_unavailable"),
        ("database is locked", "embedded_store_busy"),
        ("attempt to write a readonly database", "embedded_store_read_only"),
        ("disk I/O error", "embedded_store_failed"),
    ],
)
def test_operational_errors_map_to_reason_codes(message, reason):
    assert _operational_reason(sqlite3.OperationalError(message)) == reason


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (sqlite3.DatabaseError("file is not a database"), "embedded_store_failed"),
        (sqlite3.IntegrityError("UNIQUE constraint failed"), "embedded_store_failed"),
        (sqlite3.OperationalError("database is locked"), "embedded_store_busy"),
    ],
    ids=["no-error-code", "integrity", "operational"],
)
def test_every_sqlite_error_has_a_reason_code(error, reason):
    """Without SQLite's own error code only the class is known; real errors carry it."""
    assert _sqlite_reason(error) == reason


def test_real_corruption_is_classified_by_sqlite_error_code(tmp_path):
    path = tmp_path / "garbage.sqlite3"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError) as info:
        sqlite3.connect(path).execute("SELECT 1 FROM sqlite_master")
    assert _sqlite_reason(info.value) == "embedded_store_corrupt"


def test_the_anchor_must_lie_above_the_store_directory(tmp_path):
    with pytest.raises(ValueError, match="anchor"):
        EmbeddedSqliteProvider(tmp_path / "d" / "memory.sqlite3", anchor=tmp_path / "d")
    with pytest.raises(ValueError, match="anchor"):
        EmbeddedSqliteProvider(tmp_path / "d" / "memory.sqlite3", anchor=tmp_path / "other")


def test_an_absent_store_in_absent_ok_mode_reads_as_empty_and_creates_nothing(tmp_path):
    store = EmbeddedSqliteProvider(
        tmp_path / "repo" / ".local" / "turn-hooks" / "memory.sqlite3",
        read_only=True,
        anchor=tmp_path / "repo",
        absent_ok=True,
    )
    preflight = store.preflight(timeout=1)
    assert preflight.ok and preflight.provider_version.startswith("sqlite-")
    assert store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=1) is None
    assert store.list(A, limit=5, actor_peer_id="peer-a", timeout=1) == []
    assert store.search(A, "plan", limit=5, actor_peer_id="peer-a", timeout=1) == []
    with pytest.raises(ProviderUnavailable) as info:
        store.write(f"{A}/r.json", "x", actor_peer_id="peer-a", timeout=1)
    assert info.value.reason_code == "embedded_store_read_only"
    assert list(tmp_path.iterdir()) == []


def test_an_absent_store_without_fts5_is_not_ready_for_a_dry_run(tmp_path, monkeypatch):
    from capabilities.providers import embedded_sqlite

    def no_fts5(*_args, **_kwargs):
        raise sqlite3.OperationalError("no such module: fts5")

    monkeypatch.setattr(embedded_sqlite.sqlite3, "connect", no_fts5)
    store = EmbeddedSqliteProvider(
        tmp_path / "s" / "memory.sqlite3", read_only=True, absent_ok=True
    )
    preflight = store.preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "embedded_fts5_unavailable")


def test_an_existing_store_in_absent_ok_mode_is_read_as_it_is(store):
    store.write(f"{A}/r.json", "kept", actor_peer_id="peer-a", timeout=5)
    before = store.path.read_bytes()
    reader = EmbeddedSqliteProvider(store.path, read_only=True, absent_ok=True)
    assert reader.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) == "kept"
    assert store.path.read_bytes() == before


WRITER = textwrap.dedent(
    """
    import sys
    from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
    store = EmbeddedSqliteProvider(sys.argv[1])
    for i in range(20):
        uri = f"viking://user/alice/peers/p/memories/w{sys.argv[2]}-{i}.json"
        store.write(uri, '{"content_summary":"row"}', actor_peer_id="p", timeout=30)
    """
)


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(store):
    store.preflight(timeout=5)
    workers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(store.path), str(n)]) for n in range(4)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0] * 4
    rows = store.list(
        "viking://user/alice/peers/p/memories", limit=1000, actor_peer_id="p", timeout=5
    )
    assert len(rows) == 80


OLD_SCHEMA = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE records(uri TEXT PRIMARY KEY, user TEXT NOT NULL, "
    "peer TEXT NOT NULL, content TEXT NOT NULL, updated_at TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE records_fts USING fts5("
    "uri UNINDEXED, body, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TABLE term_docs(term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID",
)
OLD_RECORD = '{"content_summary":"rebalancing the shard map after draining partitions"}'


def old_store(path):
    """A store exactly as the code before stemming made it: unstemmed index, no mark."""
    path.parent.mkdir(mode=0o700)
    connection = sqlite3.connect(path)
    with connection:
        for statement in OLD_SCHEMA:
            connection.execute(statement)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("INSERT INTO meta VALUES ('schema_version', 'turn_hooks_sqlite_v1')")
        connection.execute(
            "INSERT INTO records VALUES (?, 'alice', 'peer-a', ?, 'then')",
            (f"{A}/old.json", OLD_RECORD),
        )
        body = "rebalancing the shard map after draining partitions"
        connection.execute(
            "INSERT INTO records_fts(rowid, uri, body) VALUES (1, ?, ?)", (f"{A}/old.json", body)
        )
        connection.executemany(
            "INSERT INTO term_docs VALUES (?, 1)", [(word,) for word in body.split()]
        )
    connection.close()  # the last connection out removes the -wal and -shm files
    os.chmod(path, 0o600)
    return path


def marks(path):
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return dict(connection.execute("SELECT key, value FROM meta").fetchall())
    finally:
        connection.close()


def test_a_store_made_before_stemming_is_read_as_it_is_then_rebuilt_once(tmp_path):
    path = old_store(tmp_path / "local" / "memory.sqlite3")
    reader = EmbeddedSqliteProvider(path, read_only=True)
    assert [h.uri for h in reader.search(A, "shard", limit=5, actor_peer_id="peer-a")] == [
        f"{A}/old.json"
    ]
    assert reader.search(A, "shards", limit=5, actor_peer_id="peer-a") == [], "no stems yet"
    assert "search_index" not in marks(path), "a reader changes nothing"
    writer = EmbeddedSqliteProvider(path)
    assert writer.preflight(timeout=5).ok
    assert marks(path)["search_index"] == "fts5_porter_unicode61_v1"
    hits = writer.search(A, "rebalancing shards partition", limit=5, actor_peer_id="peer-a")
    assert [hit.uri for hit in hits] == [f"{A}/old.json"]
    assert writer.read_exact(f"{A}/old.json", actor_peer_id="peer-a") == OLD_RECORD
    with sqlite3.connect(path) as connection:
        terms = dict(connection.execute("SELECT term, docs FROM term_docs").fetchall())
    assert terms["shard"] == terms["partit"] == 1 and "shards" not in terms
    # Once: a later writer finds the mark and leaves the index alone.
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM term_docs WHERE term = 'map'")
    EmbeddedSqliteProvider(path).preflight(timeout=5)
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT 1 FROM term_docs WHERE term = 'map'").fetchone() is None


def test_a_failed_rebuild_leaves_the_old_store_whole(tmp_path, monkeypatch):
    from capabilities.providers import embedded_sqlite

    path = old_store(tmp_path / "local" / "memory.sqlite3")

    def broken(content):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(embedded_sqlite, "_head_and_body", broken)
    assert not EmbeddedSqliteProvider(path).preflight(timeout=5).ok
    monkeypatch.undo()
    assert "search_index" not in marks(path)
    reader = EmbeddedSqliteProvider(path, read_only=True)
    assert [h.uri for h in reader.search(A, "shard", limit=5, actor_peer_id="peer-a")] == [
        f"{A}/old.json"
    ]


def test_a_query_matching_only_common_words_returns_nothing(store):
    for index in range(12):
        store.write(
            f"{A}/r{index}.json",
            f'{{"content_summary":"add the {index} widget to the page and check it"}}',
            actor_peer_id="peer-a",
        )
    store.write(
        f"{A}/match.json",
        '{"content_summary":"rotate the signing keys before expiry"}',
        actor_peer_id="peer-a",
    )
    assert store.search(A, "add a footer to the page", limit=5, actor_peer_id="peer-a") == []
    hits = store.search(A, "rotating signing key", limit=5, actor_peer_id="peer-a")
    assert [hit.uri for hit in hits] == [f"{A}/match.json"]


def test_a_term_most_records_hold_is_not_searched(store):
    # "module" is in every record: it cannot make one relevant, so it is not even
    # searched (ranking it would be a search over the whole store); a rare word
    # beside it still finds its record.
    store.write_many(
        [
            (f"{A}/r{index}.json", f'{{"content_summary":"module note {index}"}}')
            for index in range(300)
        ]
        + [(f"{A}/rare.json", '{"content_summary":"module quarantine lesson"}')],
        actor_peer_id="peer-a",
    )
    assert store.search(A, "module", limit=5, actor_peer_id="peer-a") == []
    hits = store.search(A, "module quarantine lesson", limit=5, actor_peer_id="peer-a")
    assert [hit.uri for hit in hits] == [f"{A}/rare.json"]


def _opened(monkeypatch, store):
    """The connections opened to ``store``'s file from now on (real ones, counted)."""
    opened = []
    connect = sqlite3.connect

    def counting(target, *args, **kwargs):
        if str(target) == str(store.path):
            opened.append(target)
        return connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counting)
    return opened


def test_calls_inside_holding_share_one_connection_closed_at_the_block_end(store, monkeypatch):
    store.preflight(timeout=5)
    opened = _opened(monkeypatch, store)
    wal = store.path.with_name(store.path.name + "-wal")
    with store.holding():
        assert store.preflight(timeout=5).ok
        store.write(f"{A}/r.json", "zebrafish tank", actor_peer_id="peer-a", timeout=5)
        assert store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) == (
            "zebrafish tank"
        )
        with store.holding():  # a nested block shares the outer one's connection
            hits = store.search(A, "zebrafish", limit=5, actor_peer_id="peer-a", timeout=5)
        assert [hit.uri for hit in hits] == [f"{A}/r.json"]
        assert wal.exists(), "the connection is open, so its log is not merged yet"
    assert len(opened) == 1
    assert not wal.exists(), "closing it merged the log into the file and removed it"
    store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5)
    store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5)
    assert len(opened) == 3, "outside a block each call opens its own"


def test_a_call_that_fails_inside_holding_drops_its_connection(store, monkeypatch):
    store.preflight(timeout=5)
    blocker = sqlite3.connect(store.path, isolation_level=None)
    opened = _opened(monkeypatch, store)
    with store.holding():
        assert store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) is None
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the store
        with pytest.raises(ProviderUnavailable) as caught:
            store.write(f"{A}/r.json", "one", actor_peer_id="peer-a", timeout=0.05)
        assert caught.value.reason_code == "embedded_store_busy"
        blocker.execute("ROLLBACK")
        store.write(f"{A}/r.json", "two", actor_peer_id="peer-a", timeout=5)
        assert store.read_exact(f"{A}/r.json", actor_peer_id="peer-a", timeout=5) == "two"
    blocker.close()
    assert len(opened) == 2, "the call after the failure checked and opened the store afresh"


def test_the_gate_finds_the_same_words_without_splitting_whole_records():
    """``held_stems`` picks the words that start like a query stem with one pattern
    over the folded text; it must pick exactly what splitting every word did."""
    import random

    from capabilities.providers import terms

    rng = random.Random(7)
    alphabet = "abcdeéfgŝ_1 -.\\n\\tÅßﬁ中文"
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80)))
        starts = tuple(
            "".join(rng.choice("abcéŝ_1-中ß") for _ in range(rng.randrange(0, 4)))
            for _ in range(rng.randrange(0, 4))
        )
        expected = {word for word in terms._words(text) if word.startswith(starts)}
        assert set(terms._starting(starts).findall(terms._fold(text))) == expected, (text, starts)


def _gate_unused(monkeypatch):
    """Make the search-time stemming of records fail: only stored stems may be used."""
    from capabilities.providers import embedded_sqlite

    def unused(texts, terms, stem):
        raise AssertionError(f"{len(texts)} records stemmed at search time")

    monkeypatch.setattr(embedded_sqlite, "held_stems", unused)


KEY_RECORD = '{"content_summary":"Rotate the deploy keys every day","experience":{}}'


def test_a_search_gates_records_by_the_stems_stored_with_them(store, monkeypatch):
    store.write(f"{A}/keys.json", KEY_RECORD, actor_peer_id="peer-a", timeout=5)
    store.write(f"{A}/other.json", '{"content_summary":"unrelated"}', actor_peer_id=None)
    _gate_unused(monkeypatch)
    # "key" and "day" stem to "kei" and "dai", which their words do not start with.
    hits = store.search(A, "rotate key day", limit=5, actor_peer_id="peer-a", timeout=5)
    assert [hit.uri for hit in hits] == [f"{A}/keys.json"]
    with sqlite3.connect(store.path) as connection:
        head, body = connection.execute(
            "SELECT s.head, s.body FROM record_stems s JOIN records r ON r.rowid = s.record "
            "WHERE r.uri = ?",
            (f"{A}/keys.json",),
        ).fetchone()
    assert (
        set(head.split()) == set(body.split()) == {"rotat", "the", "deploi", "kei", "everi", "dai"}
    )
    store.delete(f"{A}/keys.json", actor_peer_id="peer-a", timeout=5)
    with sqlite3.connect(store.path) as connection:
        assert connection.execute("SELECT count(*) FROM record_stems").fetchone()[0] == 1


def test_a_record_changed_by_a_writer_without_stems_is_gated_by_its_text(store, monkeypatch):
    # An older version updates the record and its search row but not its stems: the
    # stored ones are then stale, and the record's updated_at no longer matches them.
    uri = f"{A}/changed.json"
    store.write(uri, '{"content_summary":"draining the shard map"}', actor_peer_id="peer-a")
    changed = '{"content_summary":"rotating vault tokens nightly"}'
    with sqlite3.connect(store.path) as connection:
        connection.execute(
            "UPDATE records SET content = ?, updated_at = 'later' WHERE uri = ?", (changed, uri)
        )
        connection.execute(
            "UPDATE records_fts SET body = 'rotating vault tokens nightly' WHERE uri = ?", (uri,)
        )
        connection.executemany(
            "INSERT OR IGNORE INTO term_docs VALUES (?, 1)",
            [("rotat",), ("vault",), ("token",), ("nightli",)],
        )
    hits = store.search(A, "rotating vault tokens", limit=5, actor_peer_id="peer-a", timeout=5)
    assert [hit.uri for hit in hits] == [uri]
    _gate_unused(monkeypatch)
    with pytest.raises(AssertionError, match="1 records stemmed"):
        store.search(A, "rotating vault tokens", limit=5, actor_peer_id="peer-a", timeout=5)


def test_rebuilding_an_old_store_stores_its_records_stems(tmp_path, monkeypatch):
    path = old_store(tmp_path / "local" / "memory.sqlite3")
    assert EmbeddedSqliteProvider(path).preflight(timeout=5).ok
    _gate_unused(monkeypatch)
    hits = EmbeddedSqliteProvider(path, read_only=True).search(
        A, "rebalancing shard partitions", limit=5, actor_peer_id="peer-a"
    )
    assert [hit.uri for hit in hits] == [f"{A}/old.json"]
