"""The OpenViking provider against a real `openviking-server` 0.5.2 on loopback.

The server and a deterministic fake embedder are started once for the session from
the cached install that `make test` provides; if the server cannot start, the tests
fail with its log tail (never skipped). Each test uses its own Goal, so its own peer
and its own `goals/<goal>` scope.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading

import pytest
import tenacity
from fixtures import f1
from ovserver.server import start_server, stop_server
from rm_support import operator_checkpoint
from turn_support import RAW, evidence

from capabilities.providers.client import OpenVikingSettings, ProviderClient
from capabilities.providers.factory import build_provider
from capabilities.providers.openviking import OpenVikingProvider
from capabilities.reward_memory.binding.registry import load_registry, resolve
from capabilities.reward_memory.contract.identities import peer_token
from capabilities.reward_memory.turn.post_settlement import run_turn_ingest_fail_open
from capabilities.reward_memory.turn.reconcile import reconcile
from conformance.public_safety import public_safety_violations
from hosts.cli import command as cli

USER = "alice"


@pytest.fixture(scope="session")
def ov_server():
    running = start_server()
    yield running
    stop_server(running)


@pytest.fixture
def ov_env(ov_server, monkeypatch, tmp_path):
    """Point every provider built from config at the session's server."""
    monkeypatch.setenv("OPENVIKING_URL", ov_server.url)
    monkeypatch.setenv("OPENVIKING_API_KEY", ov_server.key)
    monkeypatch.setenv("OPENVIKING_ACCOUNT", "ci")
    monkeypatch.setenv("OPENVIKING_USER", USER)
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "no-ovcli.conf"))
    return ov_server


def goal_config(goal: str, agent: str = f1.AGENT) -> dict:
    """F1's openviking config, moved to another Goal (and so another peer and scope)."""
    peer = peer_token(goal, agent)
    scope_ref = f"viking://user/{USER}/peers/{peer}/memories/reward-memory/goals/{goal}/experience"
    text = json.dumps(f1.config())
    text = text.replace(f1.SCOPE_REF, scope_ref).replace(f1.PEER, peer)
    document = json.loads(text.replace("registry:demo-goal:", f"registry:{goal}:"))
    document["corpora"][0]["corpus"]["provider_scope_ref_digest"] = hashlib.sha256(
        scope_ref.encode()
    ).hexdigest()[:16]
    return document


def write_goal(root, goal, agent=f1.AGENT):
    registry = f1.write_goal(root, goal_config(goal, agent))
    text = registry.read_text().replace('"demo-goal"', json.dumps(goal))
    if agent != f1.AGENT:
        text = text.replace('"explorer"', json.dumps(agent))
    registry.write_text(text)
    return registry


def provider(server):
    settings = OpenVikingSettings(url=server.url, api_key=server.key, account="ci", user=USER)
    return OpenVikingProvider(ProviderClient(settings))


def run(capsys, *argv):
    code = cli.main(list(argv))
    document = json.loads(capsys.readouterr().out)
    assert not public_safety_violations(document, raw_texts=(f1.REFLECTION["content_summary"],))
    return code, document


def event_for(goal):
    event = json.loads(json.dumps(f1.event()).replace("demo-goal", goal))
    return {"event": event, "observed_at": f1.OBSERVED_AT}


@pytest.fixture(params=["embedded_sqlite", "openviking"])
def provider_id(request):
    """The same end-to-end test on both providers, chosen only by the config."""
    if request.param == "openviking":
        request.getfixturevalue("ov_env")
    return request.param


def test_configure_ingest_replay_recall_loop(provider_id, capsys, tmp_path):
    goal = f"e2e-{provider_id.replace('_', '-')}"
    config = goal_config(goal)
    config["project_provider_binding"]["provider_id"] = provider_id
    config["corpora"][0]["corpus"]["provider_id"] = provider_id
    registry = f1.write_goal(tmp_path, config)
    document = json.loads(registry.read_text().replace('"demo-goal"', json.dumps(goal)))
    binding = document["goals"][0]["control_plane"]["reward_memory"]
    binding.pop("enablement_receipts")
    binding.update(enabled=False, enabled_agents=[])
    registry.write_text(json.dumps(document))
    args = ("--registry", str(registry), "--goal-id", goal, "--agent-id", f1.AGENT)
    _code, configured = run(
        capsys, "reward-memory", "configure", *args, "--config", f1.CONFIG_PATH, "--execute"
    )
    assert (configured["status"], configured["corpora"][0]["exact_readback_verified"]) == (
        "verified",
        True,
    ), "canary write + exact readback"
    source = tmp_path / "event.json"
    source.write_text(json.dumps(event_for(goal)))
    _code, first = run(
        capsys, "reward-memory", "ingest-event", *args, "--input", str(source), "--execute"
    )
    assert (
        first["status"],
        first["exact_readback_verified"],
        first["destination_recall"]["verified"],
        first["write"]["provider"],
    ) == ("activated", True, True, provider_id)
    _code, second = run(
        capsys, "reward-memory", "ingest-event", *args, "--input", str(source), "--execute"
    )
    assert (second["status"], second["deduplicated"], second["external_writes_performed"]) == (
        "activated",
        True,
        False,
    )
    _code, recalled = run(
        capsys, "reward-memory", "recall", *args, "--query", "a change touches one module"
    )
    assert recalled["status"] == "applied"
    assert recalled["output"]["guidance"][0]["candidate_ref"] == first["candidate_ref"]


def test_stored_bytes_equal_the_canonical_record(ov_env, tmp_path):
    goal = "ov-bytes"
    registry = write_goal(tmp_path, goal)
    server_provider = provider(ov_env)
    receipt = run_turn_ingest_fail_open(
        resolve(load_registry(registry), goal, f1.AGENT),
        turn_key="turn-0001",
        host_result={"reward_memory_reflection_json": RAW},
        evidence=evidence(),
        provider_for=lambda binding: server_provider,
        observed_at=f1.OBSERVED_AT,
    )
    assert receipt["status"] == "activated"
    scope = goal_config(goal)["project_provider_binding"]["corpus_scopes"][0]["scope_ref"]
    peer = peer_token(goal, f1.AGENT)
    [uri] = server_provider.list(scope, limit=10, actor_peer_id=peer)
    text = server_provider.read_exact(uri, actor_peer_id=peer)
    record = json.loads(text)
    assert text == json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_peer_isolation(ov_env, tmp_path):
    goal = "ov-isolation"
    registry = write_goal(tmp_path / "a", goal, "explorer")
    resolved = resolve(load_registry(registry), goal, "explorer")
    server_provider = provider(ov_env)
    receipt = run_turn_ingest_fail_open(
        resolved,
        turn_key="turn-0001",
        host_result={"reward_memory_reflection_json": RAW},
        evidence=evidence(),
        provider_for=lambda binding: server_provider,
        observed_at=f1.OBSERVED_AT,
    )
    assert receipt["status"] == "activated"
    scope_a = goal_config(goal)["project_provider_binding"]["corpus_scopes"][0]["scope_ref"]
    peer_a = peer_token(goal, "explorer")
    peer_b = peer_token(goal, "reviewer")
    [uri] = server_provider.list(scope_a, limit=10, actor_peer_id=peer_a)
    from capabilities.providers.base import ProviderPermissionError

    with pytest.raises(ProviderPermissionError):
        server_provider.read_exact(uri, actor_peer_id=peer_b)
    with pytest.raises(ProviderPermissionError):
        server_provider.list(scope_a, limit=10, actor_peer_id=peer_b)
    with pytest.raises(ProviderPermissionError):
        server_provider.search(scope_a, "focused test module", limit=5, actor_peer_id=peer_b)
    scope_b = goal_config(goal, "reviewer")["project_provider_binding"]["corpus_scopes"][0][
        "scope_ref"
    ]
    assert (
        server_provider.search(scope_b, "focused test module", limit=5, actor_peer_id=peer_b) == []
    )


def test_eight_concurrent_writers_to_one_target(ov_env):
    server_provider = provider(ov_env)
    peer = peer_token("ov-race", "explorer")
    uri = f"viking://user/{USER}/peers/{peer}/memories/race/target.json"
    errors = []

    def write(index):
        try:
            server_provider.write(uri, json.dumps({"writer": index}), actor_peer_id=peer)
        except Exception as exc:  # recorded and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [], "409 path_busy is retried until every writer lands"
    assert json.loads(server_provider.read_exact(uri, actor_peer_id=peer))["writer"] in range(8)


def test_server_stopped_mid_run_is_reconciled_after_restart(monkeypatch, tmp_path):
    server = start_server(tmp_path / "run")
    try:
        for name, value in {
            "OPENVIKING_URL": server.url,
            "OPENVIKING_API_KEY": server.key,
            "OPENVIKING_ACCOUNT": "ci",
            "OPENVIKING_USER": USER,
            "OPENVIKING_CLI_CONFIG_FILE": str(tmp_path / "none"),
        }.items():
            monkeypatch.setenv(name, value)
        goal = "ov-restart"
        registry = write_goal(tmp_path / "goal", goal)
        resolved = resolve(load_registry(registry), goal, f1.AGENT)

        def provider_for(binding):
            built = build_provider(binding, repo=resolved.repo)
            built.client.retrying = copy.copy(built.client.retrying)
            built.client.retrying.stop = tenacity.stop_after_attempt(2)  # a down server fails fast
            return built

        stop_server(server, remove=False)
        down = run_turn_ingest_fail_open(
            resolved,
            turn_key="turn-0001",
            host_result={"reward_memory_reflection_json": RAW},
            evidence=evidence(),
            provider_for=provider_for,
            observed_at=f1.OBSERVED_AT,
        )
        assert down["fail_open"] is True
        assert down["reconciliation_state"] == "pending" or down["status"] == "unavailable"
        server = start_server(server.run_dir, port=server.port, key=server.key)
        result = reconcile(resolved, provider_for=provider_for)
        assert result["receipts"][0]["status"] == "activated"
        scope = goal_config(goal)["project_provider_binding"]["corpus_scopes"][0]["scope_ref"]
        peer = peer_token(goal, f1.AGENT)
        assert (
            len(
                provider_for({"provider_id": "openviking", "timeout_seconds": 30}).list(
                    scope, limit=10, actor_peer_id=peer
                )
            )
            == 1
        ), "nothing lost, nothing duplicated"
    finally:
        stop_server(server)


def health_goal(tmp_path, goal, provider_id, **automation):
    """A verified binding of ``goal`` on ``provider_id`` (the config alone picks it)."""
    config = goal_config(goal)
    config["project_provider_binding"]["provider_id"] = provider_id
    config["corpora"][0]["corpus"]["provider_id"] = provider_id
    if automation:
        config["automation"] = automation
    registry = f1.write_goal(tmp_path, config)
    registry.write_text(registry.read_text().replace('"demo-goal"', json.dumps(goal)))
    return registry


def read_models(capsys, registry, goal):
    args = ("--registry", str(registry), "--goal-id", goal, "--agent-id", f1.AGENT)
    code, listed = run(capsys, "reward-memory", "corpus-registry", *args)
    assert code == 0 and listed["provider_call_count"] == 0
    code, checked = run(capsys, "reward-memory", "health-check", *args)
    assert code == 0, "an unavailable provider is a state, not an error exit"
    [row] = checked["corpora"]
    return row


def learn(registry, goal):
    """One validated settlement through the generic hook: the memory is written."""
    from test_host_generic import VALIDATOR, message, run_cli

    run_cli(
        "host",
        "generic",
        "post-settlement",
        *("--goal-id", goal, "--agent-id", f1.AGENT, "--registry", str(registry)),
        "--validation-command-json",
        json.dumps(VALIDATOR),
        stdin=json.dumps({"turn_id": "t1", "last_assistant_message": message()}),
    )


def learn_and_recall(registry, goal):
    """:func:`learn`, then one PreTurn that applies the memory."""
    from test_host_generic import run_cli

    learn(registry, goal)
    binding = ("--goal-id", goal, "--agent-id", f1.AGENT, "--registry", str(registry))
    recalled = run_cli(
        "host",
        "generic",
        "pre-turn",
        *binding,
        stdin=json.dumps({"turn_id": "t2", "prompt": "a change touches one module"}),
    )
    assert "[memory 1]" in recalled.stdout


STATES = (
    "corpus_present",
    "index_present",
    "retrieval_query_succeeded",
    "result_readback_verified",
    "memory_applied_with_receipt",
)


def test_health_states_on_an_empty_store_then_an_applied_memory(provider_id, capsys, tmp_path):
    goal = f"health-{provider_id.replace('_', '-')}"
    registry = health_goal(tmp_path, goal, provider_id)
    empty = read_models(capsys, registry, goal)
    assert empty["provider_status"] == "available"
    assert (empty["corpus_present"], empty["index_present"]) == (False, False)
    assert empty["result_readback_verified"] is None
    assert empty["memory_applied_with_receipt"] is False
    # OpenViking can search an empty scope; the embedded store does not exist yet
    # and the read-only check does not create it.
    assert empty["retrieval_query_succeeded"] is (provider_id == "openviking")
    if provider_id == "embedded_sqlite":
        assert not (tmp_path / "repo" / ".local" / "turn-hooks" / "memory.sqlite3").exists()

    learn_and_recall(registry, goal)
    applied = read_models(capsys, registry, goal)
    assert {state: applied[state] for state in STATES} == dict.fromkeys(STATES, True)
    assert applied["record_count"] == 1 and applied["automatic_recall"] is True


def test_a_corpus_can_exist_without_being_recalled_automatically(provider_id, capsys, tmp_path):
    goal = f"quiet-{provider_id.replace('_', '-')}"
    registry = health_goal(tmp_path, goal, provider_id, automatic_recall=False)
    learn(registry, goal)
    row = read_models(capsys, registry, goal)
    assert (row["corpus_present"], row["index_present"], row["automatic_recall"]) == (
        True,
        True,
        False,
    )
    assert row["memory_applied_with_receipt"] is False
    assert "not_recalled_automatically" in row["reason_codes"]


def _store_bytes(repo):
    directory = repo / ".local" / "turn-hooks"
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.glob("memory.sqlite3*"))
        if not path.name.endswith("-shm")
    }


def test_the_read_models_make_zero_writes(provider_id, capsys, tmp_path, monkeypatch):
    import httpx

    from capabilities.reward_memory.reports.corpora import corpus_health, corpus_registry

    goal = f"zero-{provider_id.replace('_', '-')}"
    registry = health_goal(tmp_path, goal, provider_id)
    learn_and_recall(registry, goal)
    resolved = resolve(load_registry(registry), goal, f1.AGENT)
    before = _store_bytes(tmp_path / "repo")
    calls: list[tuple[str, str]] = []
    hooks = {"request": [lambda request: calls.append((request.method, request.url.path))]}
    recording = httpx.Client(event_hooks=hooks)

    def provider_for(binding):
        built = build_provider(binding, repo=resolved.repo, read_only=True)
        if provider_id == "openviking":
            built.client.client = recording
        return built

    corpus_registry(resolved)
    with recording:
        [row] = corpus_health(resolved, provider_for=provider_for)["corpora"]
    assert row["result_readback_verified"] is True
    assert _store_bytes(tmp_path / "repo") == before, "not a byte of the store changed"
    if provider_id == "openviking":
        reads = {("GET", "/health"), ("GET", "/api/v1/fs/ls"), ("GET", "/api/v1/content/read")}
        assert calls and set(calls) <= reads | {("POST", "/api/v1/search/find")}


def test_a_stopped_provider_is_reported_unavailable_not_an_error(capsys, tmp_path, monkeypatch):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on: a stopped server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OPENVIKING_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OPENVIKING_API_KEY", "k")
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "none"))
    registry = health_goal(tmp_path, "stopped", "openviking")
    row = read_models(capsys, registry, "stopped")
    assert row["provider_status"] == "unavailable"
    assert all(row[state] is None for state in STATES[:4])
    assert row["reason_codes"] and row["memory_applied_with_receipt"] is False


def test_an_operator_retirement_is_written_read_back_and_no_longer_recalled(
    provider_id, capsys, tmp_path
):
    from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
    from capabilities.reward_memory.curation.operator import operator_control
    from capabilities.reward_memory.curation.review import review_candidate

    goal = f"retire-{provider_id.replace('_', '-')}"
    registry = health_goal(tmp_path, goal, provider_id)
    args = ("--registry", str(registry), "--goal-id", goal, "--agent-id", f1.AGENT)
    source = tmp_path / "event.json"
    source.write_text(json.dumps(event_for(goal)))
    _code, written = run(
        capsys, "reward-memory", "ingest-event", *args, "--input", str(source), "--execute"
    )
    assert written["status"] == "activated"
    packet = build_candidate(normalise_event(event_for(goal)["event"]))
    review = {
        "reviewer_ref": "reviewer:demo",
        "review_ref": "review:1",
        "reasoning_summary": "fits",
    }
    control = operator_control(
        {
            "reviewed_record": review_candidate(packet, {"decision": "accept", **review}),
            "corpus": goal_config(goal)["corpora"][0]["corpus"] | {"provider_id": provider_id},
            "operator_checkpoint": operator_checkpoint(),
        },
        action="retire",
        control_ref="control:1",
        reasoning_summary="superseded by a better practice",
    )
    decided = tmp_path / "control.json"
    decided.write_text(json.dumps(control))
    _code, planned = run(capsys, "reward-memory", "retire", *args, "--input", str(decided))
    assert (planned["status"], planned["provider_write_performed"]) == ("planned", False)
    _code, before = run(
        capsys, "reward-memory", "recall", *args, "--query", "a change touches one module"
    )
    assert before["status"] == "applied"
    code, retired = run(
        capsys, "reward-memory", "retire", *args, "--input", str(decided), "--execute"
    )
    assert (code, retired["status"], retired["exact_readback_verified"]) == (0, "retired", True)
    _code, after = run(
        capsys, "reward-memory", "recall", *args, "--query", "a change touches one module"
    )
    assert after["status"] != "applied", "a retired memory is not recalled"
    _code, again = run(
        capsys, "reward-memory", "retire", *args, "--input", str(decided), "--execute"
    )
    assert (again["status"], again["reason_code"]) == ("retired", "already_retired")


def seed_active_records(server_provider, goal, count, summaries=None):
    """``count`` distinct active records of ``goal``'s corpus, written straight to the server.

    Each is what an activated ingest stores (the same builders), so every one
    qualifies for the Goal's PreTurn recall. ``summaries`` (one per record) replaces
    the numbered default summaries; the URIs are returned in the same order.
    """
    from concurrent.futures import ThreadPoolExecutor

    from capabilities.providers.sync import stored_form
    from capabilities.reward_memory.contract.candidate import (
        build_active_record,
        build_candidate,
        normalise_event,
    )
    from capabilities.reward_memory.contract.config import normalise_config
    from capabilities.reward_memory.contract.identities import (
        STANDING_POLICY_REASONING,
        record_body,
        review_ref,
        target_uri,
    )

    entry = normalise_config(goal_config(goal))["corpora"]["experience"]
    policy = entry["standing_policy"]
    items = []
    for index in range(count):
        event = event_for(goal)["event"]
        event["content_summary"] = (
            summaries[index]
            if summaries
            else f"a change touches one module, run its tests first, case {index}"
        )
        candidate = build_candidate(normalise_event(event))["candidate"]
        review = {
            "reviewer_ref": policy["reviewer_ref"],
            "review_ref": review_ref(policy["policy_id"], candidate["candidate_ref"]),
            "reasoning_summary": STANDING_POLICY_REASONING,
        }
        record = build_active_record(candidate, entry["corpus"], review, f1.OBSERVED_AT)
        uri = target_uri(
            entry["provider_binding"]["scope_ref"], policy["policy_id"], candidate["candidate_ref"]
        )
        items.append((uri, stored_form(record_body(record))))
    assert len({uri for uri, _text in items}) == count, "distinct records"
    peer = peer_token(goal, f1.AGENT)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda item: server_provider.write(*item, actor_peer_id=peer), items))
    return [uri for uri, _text in items]


def test_a_pre_turn_recall_reads_only_until_limit_items_qualify_on_one_connection(
    ov_env, tmp_path, monkeypatch, capsys
):
    import io

    import httpx

    from capabilities.providers import lesson_index

    goal = "ov-lazy-reads"
    registry = write_goal(tmp_path, goal)
    seed_active_records(provider(ov_env), goal, 15)
    created: list[httpx.Client] = []
    requests: list[tuple[str, str, str]] = []

    class Counting(httpx.Client):
        def __init__(self, *args, **kwargs):
            kwargs["event_hooks"] = {
                "request": [
                    lambda request: requests.append(
                        (request.method, request.url.path, request.url.params.get("uri", ""))
                    )
                ]
            }
            super().__init__(*args, **kwargs)
            created.append(self)

    monkeypatch.setattr(httpx, "Client", Counting)
    event = json.dumps({"turn_id": "t1", "prompt": "a change touches one module"})
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(event.encode())))
    binding = ("--goal-id", goal, "--agent-id", f1.AGENT, "--registry", str(registry))
    assert cli.main(["host", "generic", "pre-turn", *binding]) == 0
    assert "[memory 5]" in json.loads(capsys.readouterr().out)["additional_context"]
    searches = [path for _method, path, _uri in requests if path.startswith("/api/v1/search/")]
    reads = [uri for _method, path, uri in requests if path == "/api/v1/content/read"]
    assert searches == ["/api/v1/search/find"], "one search (of the lesson index, complete)"
    marks = [uri for uri in reads if uri.endswith("/" + lesson_index.COMPLETE_MARK)]
    assert len(marks) == 1, "the index's completion mark, read once"
    records = [uri for uri in reads if uri not in marks]
    assert len(records) == 5, "the first five hits qualified: no further hit is read back"
    assert len(created) == 1, "one httpx client, so one connection, for the whole hook step"


FILLERS = [
    f"Keep the {topic} settings in one reviewed file and document each default."
    for topic in ("logging", "cache", "proxy", "theme", "locale", "retention", "quota", "backup")
]


LESSON = "Run the migration check before rebasing the schema branch."


def lesson_among_fillers(server, goal):
    """``goal``'s store on the server: the fillers and the lesson, last. Returns the
    provider, the scope, the peer and the records' URIs."""
    server_provider = provider(server)
    uris = seed_active_records(server_provider, goal, len(FILLERS) + 1, [*FILLERS, LESSON])
    scope = goal_config(goal)["project_provider_binding"]["corpus_scopes"][0]["scope_ref"]
    return server_provider, scope, peer_token(goal, f1.AGENT), uris


def server_order(server_provider, scope, peer, query):
    """The record URIs the server's own search returns for ``query``, in its order."""
    raw = server_provider.client.request(
        "POST",
        "/api/v1/search/find",
        peer=peer,
        body={"query": query, "target_uri": scope, "limit": 5},
        timeout=30,
    )
    return [row["uri"] for row in raw["memories"] if row.get("level") == 2]


def test_one_search_ranks_the_record_naming_the_prompts_words_first(ov_env):
    # The fake embedder hashes every word of a record's JSON alike, so the fillers
    # come close to the prompt on boilerplate; the lesson that names the prompt's own
    # (stemmed) words must still come first, from the same single search.
    server_provider, scope, peer, uris = lesson_among_fillers(ov_env, "ov-hybrid-rank")
    query = "I'm about to rebase the schema branch, what should I check on migrations first?"
    vector_order = server_order(server_provider, scope, peer, query)
    assert vector_order[0] != uris[-1], "the server alone does not put the lesson first"
    hits = server_provider.search(scope, query, limit=3, actor_peer_id=peer)
    assert [hit.uri for hit in hits] == [uris[-1]], "the fillers are about none of its words"


def test_a_prompt_about_nothing_stored_gets_no_memory_a_related_one_does(ov_env):
    # The server always returns its nearest records, however far; the relevance gate
    # keeps only those the prompt is about. "settings" and "file" are in every filler,
    # so sharing them is not enough.
    server_provider, scope, peer, uris = lesson_among_fillers(ov_env, "ov-relevance-gate")
    unrelated = "write a haiku about autumn leaves for the settings file"
    assert server_order(server_provider, scope, peer, unrelated), "the server answers"
    assert server_provider.search(scope, unrelated, limit=5, actor_peer_id=peer) == []
    related = "anything to check on the migrations before I rebase the schema branch?"
    hits = server_provider.search(scope, related, limit=5, actor_peer_id=peer)
    assert [hit.uri for hit in hits] == [uris[-1]]
