"""OpenViking's lesson index, on a real `openviking-server` 0.5.2 on loopback.

Beside each active record the provider writes an index entry (the lesson in plain
words) in a sibling scope; recall searches the entries and reads the records they
point at. What must hold: the records are the bytes they always were and the corpus
scope holds nothing else; an entry comes and goes with its record (written, retired by
`memory forget`, restored, deleted); an entry pointing at nothing, or a file that is
no entry, is never recalled; an entry that failed to write leaves the record standing
and is written by the next sync of it; a store without entries is still searched.
"""

from __future__ import annotations

import json

import pytest
from fixtures import f1
from test_memory_cli import QUERY, bound, call, goal_name, learn
from test_openviking_real import (  # noqa: F401 (fixtures)
    goal_config,
    ov_env,
    ov_server,
    provider,
    seed_active_records,
)

from capabilities.providers import lesson_index
from capabilities.providers.sync import retrieve, stored_form, sync
from capabilities.reward_memory.contract.identities import peer_token

LESSONS = [
    "Pin the container base image by digest, not by tag.",
    "Run the migration check before rebasing the schema branch.",
]


@pytest.fixture
def server(ov_env):  # noqa: F811 (the imported fixture)
    """The session's server, every provider built from config pointed at it."""
    return ov_env


def corpus(goal):
    """The provider, corpus scope, index scope and peer of ``goal``'s corpus."""
    scope = goal_config(goal)["project_provider_binding"]["corpus_scopes"][0]["scope_ref"]
    index = lesson_index.index_scope(scope)
    assert index == scope + "-lessons", "a sibling of the corpus scope, never below it"
    return scope, index, peer_token(goal, f1.AGENT)


def recalled(server_provider, scope, peer, query):
    """The record URIs a recall reads back for ``query``, as the hooks read them."""
    found = retrieve(server_provider, scope, query, max_results=5, actor_peer_id=peer, timeout=30)
    assert found.status == "completed"
    return [item.uri for item in found.items]


def test_each_record_gets_an_entry_beside_its_corpus_and_keeps_its_bytes(server):
    server_provider = provider(server)
    scope, index, peer = corpus("lessons-beside")
    uris = seed_active_records(server_provider, "lessons-beside", len(LESSONS), LESSONS)
    listed = server_provider.list(scope, limit=10, actor_peer_id=peer)
    assert sorted(listed) == sorted(uris), "the corpus scope holds the records, nothing else"
    for uri, lesson in zip(uris, LESSONS, strict=True):
        record = server_provider.read_exact(uri, actor_peer_id=peer)
        assert record is not None and json.loads(record)["content_summary"] == lesson
        assert stored_form(record) == record, "the record is stored as written, JSON as before"
        entry = server_provider.read_exact(lesson_index.entry_uri(uri), actor_peer_id=peer)
        assert entry == lesson_index.entry_text(record)
        assert entry.splitlines()[0] == lesson and "{" not in entry, "plain words, no JSON"
    listed = server_provider.list(index, limit=10, actor_peer_id=peer)
    mark = lesson_index.complete_uri(index)
    assert mark in listed, "every record has its entry: the index is marked complete"
    assert {lesson_index.record_uri(scope, uri) for uri in listed if uri != mark} == set(uris)
    assert lesson_index.record_uri(scope, mark) is None, "the mark is no entry"
    assert recalled(server_provider, scope, peer, "rebase the schema branch migrations") == [
        uris[1]
    ], "a hit on an entry reads back the record it points at"


def test_an_entry_pointing_at_nothing_and_a_foreign_file_are_never_recalled(server):
    server_provider = provider(server)
    scope, index, peer = corpus("lessons-stale")
    [uri] = seed_active_records(server_provider, "lessons-stale", 1, LESSONS[1:])
    entry = server_provider.read_exact(lesson_index.entry_uri(uri), actor_peer_id=peer)
    # The same words where no record is: a stale entry, and a file that is no entry.
    stale = f"{index}/reward-memory-000000000000-00000000000000000000.md"
    server_provider.client.request(
        "POST",
        "/api/v1/content/write",
        peer=peer,
        body={"uri": stale, "content": entry, "mode": "replace", "wait": True},
        timeout=30,
    )
    server_provider.client.request(
        "POST",
        "/api/v1/content/write",
        peer=peer,
        body={"uri": f"{index}/notes.txt", "content": entry, "mode": "replace", "wait": True},
        timeout=30,
    )
    query = "check the migrations before I rebase the schema branch"
    assert recalled(server_provider, scope, peer, query) == [uri], "only the real record"


def test_forget_takes_the_entry_away_restore_brings_it_back(server, capsys, tmp_path):
    goal = goal_name("lessons-forget", "openviking")
    args = bound(tmp_path, goal, "openviking")
    ref = learn(capsys, tmp_path, goal, args)["provider_ref"]
    server_provider = provider(server)
    scope, _index, peer = corpus(goal)
    [uri] = server_provider.list(scope, limit=10, actor_peer_id=peer)
    entry = lesson_index.entry_uri(uri)
    assert server_provider.read_exact(entry, actor_peer_id=peer) is not None

    code, forgotten = call(capsys, "memory", "forget", ref, *args)
    assert (code, forgotten["status"]) == (0, "forgotten")
    assert server_provider.read_exact(uri, actor_peer_id=peer) is not None, "retired, kept"
    assert server_provider.read_exact(entry, actor_peer_id=peer) is None, "its entry is gone"

    code, restored = call(capsys, "memory", "restore", ref, *args)
    assert (code, restored["status"]) == (0, "restored")
    assert server_provider.read_exact(entry, actor_peer_id=peer) is not None
    _code, found = call(capsys, "memory", "search", QUERY, *args, public=False)
    assert [r["memory_ref"] for r in found["results"]] == [ref]

    assert server_provider.delete(uri, actor_peer_id=peer) is True
    assert server_provider.read_exact(entry, actor_peer_id=peer) is None, "deleted together"


def test_a_failed_entry_write_keeps_the_record_and_the_next_sync_writes_it(server):
    server_provider = provider(server)
    scope, _index, peer = corpus("lessons-repair")
    [first] = seed_active_records(server_provider, "lessons-repair", 1, LESSONS[:1])
    second = first.rsplit("/", 1)[0] + "/reward-memory-111111111111-11111111111111111111.json"
    record = json.loads(server_provider.read_exact(first, actor_peer_id=peer))
    record["content_summary"] = LESSONS[1]
    body = json.dumps(record, separators=(",", ":"), sort_keys=True)
    # A directory where the entry belongs: the server refuses the entry's write.
    blocker = lesson_index.entry_uri(second)
    server_provider.client.request(
        "POST", "/api/v1/fs/mkdir", peer=peer, body={"uri": blocker}, timeout=30
    )

    def synced():
        result = sync(
            server_provider,
            [(body, second)],
            namespace="reward_memory",
            execute=True,
            actor_peer_id=peer,
            timeout=30,
            observed_at=f1.OBSERVED_AT,
        )
        return result.status, result.completed_count

    assert synced() == ("completed", 1), "the record write is what counts"
    assert server_provider.read_exact(second, actor_peer_id=peer) == body
    query = "check the migrations before I rebase the schema branch"
    assert recalled(server_provider, scope, peer, query) == [], "no entry, not found by it"

    server_provider.client.request(
        "DELETE", "/api/v1/fs", peer=peer, params={"uri": blocker, "recursive": True}, timeout=30
    )
    assert synced() == ("completed", 1), "already written: read back, not written again"
    assert server_provider.read_exact(blocker, actor_peer_id=peer) == lesson_index.entry_text(body)
    assert recalled(server_provider, scope, peer, query) == [second]


def test_a_store_without_entries_is_searched_record_by_record(server):
    server_provider = provider(server)
    scope, index, peer = corpus("lessons-none")
    [uri] = seed_active_records(server_provider, "lessons-none", 1, LESSONS[1:])
    server_provider.client.request(
        "DELETE", "/api/v1/fs", peer=peer, params={"uri": index, "recursive": True}, timeout=30
    )
    assert server_provider.list(index, limit=10, actor_peer_id=peer) == []
    query = "check the migrations before I rebase the schema branch"
    assert recalled(server_provider, scope, peer, query) == [uri], "found by its words"
    assert recalled(server_provider, scope, peer, "write a haiku about autumn leaves") == []


def test_an_entry_is_only_kept_for_active_records_of_an_indexed_corpus():
    active = json.dumps(
        {
            "schema_version": lesson_index.RECORD_SCHEMA,
            "content_summary": "Pin the image\n by digest.",
            "experience": {"future_behavior": {"trigger": "a deploy", "action": "pin it"}},
            "lifecycle": {"state": "active"},
        }
    )
    assert lesson_index.entry_text(active) == "Pin the image by digest.\npin it\na deploy"
    retired = active.replace('"active"', '"retired"')
    assert lesson_index.is_record(retired) and lesson_index.entry_text(retired) is None
    assert lesson_index.entry_text('{"schema_version": "other"}') is None
    assert lesson_index.index_scope("viking://user/alice/memories") is None, "a root: no sibling"
    assert lesson_index.entry_uri("viking://user/alice/memories/x.json") is None
    corpus_scope = "viking://user/alice/memories/reward-memory/goals/g/experience"
    assert lesson_index.record_uri(corpus_scope, corpus_scope + "-lessons/a.md") == (
        corpus_scope + "/a.json"
    )
    assert lesson_index.record_uri(corpus_scope, corpus_scope + "-lessons/.abstract.md") is None
    assert lesson_index.record_uri(corpus_scope, corpus_scope + "/a.md") is None


def test_importing_a_stores_own_export_fills_the_index_of_an_older_store(server, capsys, tmp_path):
    goal = goal_name("lessons-import", "openviking")
    args = bound(tmp_path, goal, "openviking")
    learn(capsys, tmp_path, goal, args)
    server_provider = provider(server)
    scope, index, peer = corpus(goal)
    [uri] = server_provider.list(scope, limit=10, actor_peer_id=peer)
    server_provider.client.request(
        "DELETE", "/api/v1/fs", peer=peer, params={"uri": index, "recursive": True}, timeout=30
    )
    backup = tmp_path / "store.jsonl"
    call(capsys, "memory", "export", *args, "--output", str(backup))
    code, imported = call(capsys, "memory", "import", str(backup), *args)
    assert (code, imported["status"], imported["unchanged_count"]) == (0, "unchanged", 1)
    entry = server_provider.read_exact(lesson_index.entry_uri(uri), actor_peer_id=peer)
    assert entry == lesson_index.entry_text(server_provider.read_exact(uri, actor_peer_id=peer))


def test_an_older_store_is_searched_by_its_words_until_a_write_fills_its_index(server, monkeypatch):
    # Records an older version wrote have no entries: recall still finds them, by
    # their words, until a write fills the index in and marks it complete.
    from capabilities.providers import openviking

    server_provider = provider(server)
    scope, index, peer = corpus("lessons-upgrade")
    [old] = seed_active_records(server_provider, "lessons-upgrade", 1, LESSONS[1:])
    text = server_provider.read_exact(old, actor_peer_id=peer)
    server_provider.client.request(
        "DELETE", "/api/v1/fs", peer=peer, params={"uri": index, "recursive": True}, timeout=30
    )
    query = "check the migrations before I rebase the schema branch"
    monkeypatch.setattr(openviking, "FILL_RESERVE", 1e6)  # no time left to fill in
    [new] = seed_active_records(server_provider, "lessons-upgrade", 1, LESSONS[:1])
    mark = lesson_index.complete_uri(index)
    assert server_provider.read_exact(mark, actor_peer_id=peer) is None
    assert server_provider.read_exact(lesson_index.entry_uri(old), actor_peer_id=peer) is None
    assert recalled(server_provider, scope, peer, query) == [old], "by its words, meanwhile"
    assert recalled(server_provider, scope, peer, "pin the base image digest") == [new]

    monkeypatch.setattr(openviking, "FILL_RESERVE", 1.0)
    server_provider.write(
        new, server_provider.read_exact(new, actor_peer_id=peer), actor_peer_id=peer
    )
    entry = server_provider.read_exact(lesson_index.entry_uri(old), actor_peer_id=peer)
    assert entry == lesson_index.entry_text(text), "the older record's entry filled in"
    assert server_provider.read_exact(mark, actor_peer_id=peer) is not None
    assert recalled(server_provider, scope, peer, query) == [old], "now by its entry"
