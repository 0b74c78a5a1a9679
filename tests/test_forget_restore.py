"""Forgetting that sticks, and its undo (issue 36): `memory forget`, `memory restore`, import.

A forgotten memory's lesson is remembered as forgotten in the store, so a later Turn
that draws it is refused (``experience_forgotten``, final, logged); `memory restore`
brings the memory back with exact readback and lets the lesson be learned again; an
export taken before the forget, imported, restores it. On both providers (the real
embedded store and a real `openviking-server`), and through real hook processes.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from test_memory_cli import QUERY, bound, call, goal_name, learn
from test_openviking_real import event_for, ov_env, ov_server  # noqa: F401 (fixtures)
from turn_support import ROOT, bound_goal, hook_argv, reflection_message, run_process

from capabilities.reward_memory.memory.forgotten import lesson_digest, mark_scope, mark_uri
from hosts.cli import command as cli


@pytest.fixture(params=["embedded_sqlite", "openviking"])
def provider_id(request):
    """The same test on both providers, chosen only by the config."""
    if request.param == "openviking":
        request.getfixturevalue("ov_env")
    return request.param


def later_turn(goal, n=2):
    """The same lesson, drawn by a later Turn: another feedback ref, another time."""
    route = event_for(goal)
    event = route["event"]
    event["feedback_ref"] = event["source"]["source_ref"] = f"feedback:later-turn-{n}"
    route["observed_at"] = f"2026-05-0{n}T12:00:00+00:00"
    return route


def ingest(capsys, tmp_path, args, route, name="later"):
    source = tmp_path / f"{name}.json"
    source.write_text(json.dumps(route))
    return call(capsys, "reward-memory", "ingest-event", *args, "--input", str(source), "--execute")


def listed(capsys, args):
    _code, document = call(capsys, "memory", "list", *args, public=False)
    return document


def test_a_forgotten_lesson_is_not_learned_again_until_restored(provider_id, capsys, tmp_path):
    goal = goal_name("stick", provider_id)
    args = bound(tmp_path, goal, provider_id)
    ref = learn(capsys, tmp_path, goal, args)["provider_ref"]

    code, forgotten = call(capsys, "memory", "forget", ref, *args)
    assert (code, forgotten["status"], forgotten["lessons_marked_count"]) == (0, "forgotten", 1)
    assert forgotten["records"][0]["lesson_mark"] == "marked"

    code, refused = ingest(capsys, tmp_path, args, later_turn(goal))
    assert (code, refused["status"], refused["reason_codes"]) == (
        0,
        "guard_blocked",
        ["experience_forgotten"],
    )
    assert refused["guard"]["reason_codes"] == ["experience_forgotten"]
    assert refused["external_writes_performed"] is False
    after = listed(capsys, args)
    assert (after["active_count"], after["retired_count"]) == (0, 1), "nothing learned again"

    code, planned = call(capsys, "memory", "restore", ref[:14], *args, "--dry-run")
    assert (code, planned["status"], planned["would_restore_count"]) == (0, "planned", 1)
    assert listed(capsys, args)["active_count"] == 0, "a dry run writes nothing"

    code, restored = call(capsys, "memory", "restore", ref, *args)
    assert (code, restored["status"], restored["restored_count"]) == (0, "restored", 1)
    [row] = restored["records"]
    assert (row["exact_readback_verified"], row["lesson_mark"]) == (True, "cleared")
    back = listed(capsys, args)
    assert (back["active_count"], back["retired_count"]) == (1, 0)
    assert back["records"][0]["memory_ref"] == ref, "the same record, at the same address"
    _code, found = call(capsys, "memory", "search", QUERY, *args, public=False)
    assert [r["memory_ref"] for r in found["results"]] == [ref], "recalled again"

    code, learned = ingest(capsys, tmp_path, args, later_turn(goal))
    assert (code, learned["status"]) == (0, "activated"), "the lesson may be learned again"
    assert listed(capsys, args)["active_count"] == 2


def test_the_mark_lives_beside_the_corpus_never_where_recall_looks(provider_id, capsys, tmp_path):
    goal = goal_name("beside", provider_id)
    args = bound(tmp_path, goal, provider_id)
    ref = learn(capsys, tmp_path, goal, args)["provider_ref"]
    call(capsys, "memory", "forget", ref, *args)
    _code, exported = call(capsys, "memory", "export", *args, "--output", str(tmp_path / "x"))
    assert exported["record_count"] == 1, "the mark is not a record: export skips it"
    _code, health = call(capsys, "reward-memory", "health-check", *args)
    assert health["corpora"][0]["record_count"] == 1, "nor does health-check count it"
    _code, found = call(capsys, "reward-memory", "recall", *args, "--query", QUERY)
    assert found["status"] != "applied", "recall meets neither the record nor its mark"


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        pytest.param("provider-ffffffffffff", "memory_ref_unknown", id="unknown"),
        pytest.param("not a ref", "memory_ref_invalid", id="invalid"),
    ],
)
def test_restore_refuses_a_ref_that_names_no_memory(ref, reason, capsys, tmp_path):
    args = bound(tmp_path, "restore-bad", "embedded_sqlite")
    learn(capsys, tmp_path, "restore-bad", args)
    code, error = call(capsys, "memory", "restore", ref, *args)
    assert (code, error["reason_code"]) == (2, reason)


def test_restore_refuses_an_active_memory_and_writes_nothing(capsys, tmp_path):
    args = bound(tmp_path, "restore-active", "embedded_sqlite")
    ref = learn(capsys, tmp_path, "restore-active", args)["provider_ref"]
    before = listed(capsys, args)
    code, error = call(capsys, "memory", "restore", ref, *args)
    assert (code, error["reason_code"], error["field"]) == (2, "memory_not_forgotten", "ref")
    assert "memory list --state retired" in error["message"], "the error says what to do"
    assert listed(capsys, args) == before
    assert cli.main(["memory", "restore", ref, *args, "--format", "markdown"]) == 2
    assert "memory_not_forgotten" in capsys.readouterr().out


def test_importing_the_earlier_export_undoes_a_mistaken_forget(provider_id, capsys, tmp_path):
    goal = goal_name("undo", provider_id)
    args = bound(tmp_path, goal, provider_id)
    ref = learn(capsys, tmp_path, goal, args)["provider_ref"]
    backup = tmp_path / "before.jsonl"
    call(capsys, "memory", "export", *args, "--output", str(backup))
    call(capsys, "memory", "forget", ref, *args)

    code, planned = call(capsys, "memory", "import", str(backup), *args, "--dry-run")
    assert (code, planned["status"], planned["would_restore_count"], planned["conflict_count"]) == (
        0,
        "planned",
        1,
        0,
    ), "a dry run says it would restore, not that it conflicts"
    assert listed(capsys, args)["active_count"] == 0, "a dry run writes nothing"
    code, imported = call(capsys, "memory", "import", str(backup), *args)
    assert (code, imported["status"], imported["restored_count"]) == (0, "restored", 1)
    assert imported["reason_codes"] == []
    back = listed(capsys, args)
    assert (back["active_count"], back["retired_count"]) == (1, 0)
    _code, again = call(capsys, "memory", "import", str(backup), *args)
    assert (again["status"], again["unchanged_count"]) == ("unchanged", 1)
    code, learned = ingest(capsys, tmp_path, args, later_turn(goal))
    assert (code, learned["status"]) == (0, "activated"), "the mark went with the forget"


def test_an_import_never_forgets_what_the_store_holds_active(capsys, tmp_path):
    args = bound(tmp_path, "keep-active", "embedded_sqlite")
    ref = learn(capsys, tmp_path, "keep-active", args)["provider_ref"]
    call(capsys, "memory", "forget", ref, *args)
    after = tmp_path / "after.jsonl"
    call(capsys, "memory", "export", *args, "--output", str(after))
    call(capsys, "memory", "restore", ref, *args)
    code, imported = call(capsys, "memory", "import", str(after), *args)
    assert (code, imported["conflict_count"], imported["reason_codes"]) == (
        2,
        1,
        ["provider_sync_revision_conflict"],
    ), "`memory forget` forgets; an import only restores"
    assert listed(capsys, args)["active_count"] == 1


def test_an_export_carries_the_forgetting_to_another_store(provider_id, capsys, tmp_path):
    goal = goal_name("carry", provider_id)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    here = bound(tmp_path / "a", goal, "embedded_sqlite")
    there = bound(tmp_path / "b", goal, provider_id)
    ref = learn(capsys, tmp_path, goal, here)["provider_ref"]
    call(capsys, "memory", "forget", ref, *here)
    exported = tmp_path / "forgotten.jsonl"
    call(capsys, "memory", "export", *here, "--output", str(exported))
    code, imported = call(capsys, "memory", "import", str(exported), *there)
    assert (code, imported["imported_count"]) == (0, 1)
    code, refused = ingest(capsys, tmp_path, there, later_turn(goal))
    assert (code, refused["reason_codes"]) == (0, ["experience_forgotten"])


def test_forgetting_again_marks_a_lesson_forgotten_before_marks_existed(capsys, tmp_path):
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.binding.registry import load_registry, resolve

    args = bound(tmp_path, "old-forget", "embedded_sqlite")
    ref = learn(capsys, tmp_path, "old-forget", args)["provider_ref"]
    call(capsys, "memory", "forget", ref, *args)
    resolution = resolve(load_registry(args[1]), "old-forget", f1.AGENT)
    [entry] = resolution.config["corpora"].values()
    binding = entry["provider_binding"]
    provider = build_provider(binding, repo=resolution.repo)
    uri = mark_uri(binding["scope_ref"], lesson_digest(f1.EXPERIENCE))
    assert provider.delete(uri, actor_peer_id=binding["actor_peer_id"], timeout=5)
    assert mark_scope(binding["scope_ref"]) == binding["scope_ref"] + "-forgotten"

    code, again = call(capsys, "memory", "forget", ref, *args)
    assert (code, again["status"], again["retired_count"]) == (0, "unchanged", 0)
    assert (again["lessons_marked_count"], again["records"][0]["lesson_mark"]) == (1, "marked")
    _code, twice = call(capsys, "memory", "forget", ref, *args)
    assert twice["records"][0]["lesson_mark"] == "present"
    assert twice["external_writes_performed"] is False


def test_the_same_lesson_from_other_evidence_is_the_same_lesson():
    other = copy.deepcopy(f1.EXPERIENCE)
    other["evidence_refs"] = ["validation:command:0123456789abcdef0123"]
    assert lesson_digest(other) == lesson_digest(f1.EXPERIENCE)
    other["future_behavior"]["action"] += " Then rerun the suite."
    assert lesson_digest(other) != lesson_digest(f1.EXPERIENCE)


def test_restore_has_help():
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", "memory", "restore", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0
    assert "memory_not_forgotten" in result.stdout and "--dry-run" in result.stdout


# --- through real hook processes ----------------------------------------------------


def cli_json(*argv):
    result = run_process([sys.executable, "-m", "hosts.cli", *argv])
    return result.returncode, json.loads(result.stdout)


def stop_hook(registry, turn_id):
    event = {"turn_id": turn_id, "last_assistant_message": reflection_message()}
    event["cwd"] = str(registry.parent / "repo")
    result = run_process(hook_argv(registry), json.dumps(event))
    assert result.returncode == 0
    return json.loads(result.stdout)["results"]["reward-memory.outcome-ingest"]


def recalled(registry, turn_id):
    """Whether a real PreTurn hook delivers a memory to the Turn."""
    event = {"turn_id": turn_id, "prompt": QUERY + ": which tests first?"}
    event["cwd"] = str(registry.parent / "repo")
    result = run_process(hook_argv(registry, "pre-turn"), json.dumps(event))
    assert result.returncode == 0
    return "[memory 1]" in json.loads(result.stdout).get("additional_context", "")


def logged():
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    entries = json.loads(path.read_text())["entries"] if path.exists() else []
    return [entry["reason_code"] for entry in entries]


def test_a_later_turn_does_not_learn_a_forgotten_lesson_and_the_log_says_why(tmp_path):
    registry = bound_goal(tmp_path)
    args = ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)
    assert stop_hook(registry, "t1")["status"] == "activated"
    _code, first = cli_json("memory", "list", *args)
    [row] = first["records"]
    code, forgotten = cli_json("memory", "forget", row["memory_ref"], *args)
    assert (code, forgotten["status"]) == (0, "forgotten")

    refused = stop_hook(registry, "t2")
    assert (refused["status"], refused["reason_code"]) == ("guard_blocked", "experience_forgotten")
    assert refused["reconciliation_state"] == "rejected"
    _code, after = cli_json("memory", "list", *args)
    assert (after["active_count"], after["retired_count"]) == (0, 1), "not learned again"
    assert "experience_forgotten" in logged(), "the hook log says why nothing was learned"
    journals = sorted(
        (registry.parent / "repo" / ".local" / "turn-hooks").rglob(
            "reward-memory-outcomes/**/*.json"
        )
    )
    states = sorted(json.loads(path.read_text())["status"] for path in journals)
    assert states == ["completed", "rejected"], "final: the refusal is not retried"
    settle = [sys.executable, "-m", "hosts.cli", "settle", "--pending", *args]
    assert json.loads(run_process(settle).stdout)["settled_count"] == 0

    assert not recalled(registry, "t2-recall"), "forgotten: not recalled"

    code, restored = cli_json("memory", "restore", row["memory_ref"], *args)
    assert (code, restored["status"]) == (0, "restored")
    assert recalled(registry, "t3-recall"), "restored: recalled again"
    assert stop_hook(registry, "t3")["status"] == "activated"
    _code, learned = cli_json("memory", "list", *args)
    assert learned["active_count"] == 2, "after restore, a Turn learns the lesson again"


def test_a_retirement_by_review_is_not_the_owner_forgetting(capsys, tmp_path):
    from capabilities.providers.factory import build_provider
    from capabilities.reward_memory.binding.registry import load_registry, resolve
    from capabilities.reward_memory.curation.retirement import retired_form
    from capabilities.reward_memory.memory.inventory import all_records

    args = bound(tmp_path, "reviewed", "embedded_sqlite")
    ref = learn(capsys, tmp_path, "reviewed", args)["provider_ref"]
    resolution = resolve(load_registry(args[1]), "reviewed", f1.AGENT)

    def provider_for(binding):
        return build_provider(binding, repo=resolution.repo)

    [stored] = all_records(resolution, provider_for)
    retired = retired_form(stored.record, "reviewed_retirement", "control:operator-1")
    provider_for(stored.binding).write(
        stored.uri, retired, actor_peer_id=stored.binding["actor_peer_id"], timeout=5
    )
    code, error = call(capsys, "memory", "restore", ref, *args)
    assert (code, error["reason_code"]) == (2, "memory_not_forgotten")
    assert "retired by review" in error["message"]
    code, forgotten = call(capsys, "memory", "forget", ref, *args)
    assert (code, forgotten["records"][0]["lesson_mark"]) == (0, "not_applicable")
    code, learned = ingest(capsys, tmp_path, args, later_turn("reviewed"))
    assert (code, learned["status"]) == (0, "activated"), "the operator retired a record only"
