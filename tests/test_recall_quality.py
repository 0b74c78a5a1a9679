"""Recall that helps and stays out of the way (issue 17), through the real pre-turn hook.

The query is the user's words (paths and secrets cut out, not the prompt dropped),
stemmed as the store stems its records; a prompt that matches nothing, or only
acknowledges, gets no memory; and a generic host delivers a memory once per session.
The numbers behind the thresholds are in ``benchmarks/bench_recall_quality.py``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import sys
from collections import Counter

import pytest
from fixtures import f1
from turn_support import ROOT, bound_goal, run_process

from capabilities.providers.factory import build_provider
from capabilities.reward_memory.contract.config import normalise_config
from capabilities.reward_memory.contract.values import redact
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from turn_hooks._secrets import SECRET as SECRET_SHAPE

MEMORIES = [
    (
        "Run the migration check before rebasing the schema branch.",
        "a schema branch needs a rebase onto main",
        "run the migration consistency check before starting the rebase",
    ),
    (
        "Vacuum the SQLite database after bulk deletes.",
        "many rows were deleted from a SQLite file",
        "run VACUUM while no writer is connected",
    ),
    (
        "Quote shell variables that hold file names.",
        "a shell script handles user file names",
        "wrap every expansion of a file name in double quotes",
    ),
]
SECRET = "ghp_" + "Q7x" * 7  # secret-shaped, built here so no file holds one


def learn(registry, memories=MEMORIES):
    """Ingest memories through the real path: guard, activate, write, exact readback."""
    config = json.loads((registry.parent / "repo" / f1.CONFIG_PATH).read_text())
    entry = normalise_config(config)["corpora"]["experience"]
    provider = build_provider(entry["provider_binding"], repo=registry.parent / "repo")
    for index, (summary, trigger, action) in enumerate(memories):
        event = f1.event()
        event["feedback_ref"] = event["source"]["source_ref"] = f"test-recall:{index}"
        event["content_summary"] = summary
        experience = copy.deepcopy(event["experience"])
        experience["applicability"] = [trigger]
        experience["future_behavior"] = {**experience["future_behavior"], "trigger": trigger}
        experience["future_behavior"]["action"] = action
        event["experience"] = experience
        receipt = ingest_scoped_event(
            event,
            corpus=entry["corpus"],
            standing_policy=entry["standing_policy"],
            provider_binding=entry["provider_binding"],
            observed_at=f1.OBSERVED_AT,
            execute=True,
            provider=provider,
        )
        assert receipt["status"] == "activated"


def pre_turn(registry, prompt, turn_id="t1", session=None, dialect=None):
    """One real ``turn-hooks host generic pre-turn`` process; the context it prints."""
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", "pre-turn"]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    if dialect:
        argv += ["--dialect", dialect]
    event = {"turn_id": turn_id, "prompt": prompt}
    if session:
        event["session_id"] = session
    result = run_process(argv, json.dumps(event))
    assert result.returncode == 0
    document = json.loads(result.stdout)
    if dialect == "claude-code":
        return document["hookSpecificOutput"]["additionalContext"]
    return document["additional_context"]


@pytest.fixture
def learned(tmp_path):
    registry = bound_goal(tmp_path)
    learn(registry)
    return registry


def test_a_prompt_that_matches_no_memory_gets_none(learned):
    """The OR fallback used to fill the limit with any record sharing a word."""
    text = pre_turn(learned, "add a dark mode toggle to the settings file page")
    assert "[memory " not in text
    assert "<reward_memory_reflection_json>" in text, "the reflection request still goes out"


def test_a_stemmed_paraphrase_is_recalled(learned):
    """ "rebased", "schemas", "migrations" find "rebasing", "schema", "migration"."""
    text = pre_turn(learned, "rebased schemas migrations")
    assert "[memory 1]" in text
    assert "summary: Run the migration check before rebasing the schema branch." in text
    assert "[memory 2]" not in text


@pytest.mark.parametrize(
    "prompt",
    [
        "rebasing the schema branch in /home/dev/shop/db/migrations/0042.py, what first",
        f"rebasing the schema branch with {SECRET} in the env, what first",
    ],
)
def test_a_path_or_secret_is_cut_from_the_query_not_the_prompt_dropped(learned, prompt):
    text = pre_turn(learned, prompt)
    assert "summary: Run the migration check before rebasing the schema branch." in text
    assert "/home/" not in text and SECRET not in text
    receipts = list((learned.parent / "repo" / ".local" / "turn-hooks").rglob("*.json"))
    assert not any(
        SECRET in path.read_text() or "/home/dev" in path.read_text() for path in receipts
    )


@pytest.mark.parametrize("prompt", ["thanks", "ok", "continue", "Yes, please!"])
def test_a_trivial_prompt_gets_no_memory(learned, prompt):
    assert "[memory " not in pre_turn(learned, prompt)


@pytest.mark.parametrize("dialect", [None, "claude-code"])
def test_a_generic_host_delivers_a_memory_once_per_session(learned, dialect):
    prompt = "vacuum the sqlite database after deleting rows"
    assert "[memory 1]" in pre_turn(learned, prompt, "t1", "s-1", dialect)
    again = pre_turn(learned, prompt, "t2", "s-1", dialect)
    assert "[memory " not in again, "already in this session's conversation"
    assert "<reward_memory_reflection_json>" in again, "instructions are not items"
    assert "[memory 1]" in pre_turn(learned, prompt, "t3", "s-2", dialect)
    assert "[memory 1]" in pre_turn(learned, prompt, "t4", None, dialect), "no session: no memo"
    host = "claude_code" if dialect else "generic_cli"
    sidecars = list(
        (learned.parent / "repo" / ".local" / "turn-hooks" / "injected" / host).glob("*.json")
    )
    assert len(sidecars) == 2
    assert all(stat.S_IMODE(os.stat(path).st_mode) == 0o600 for path in sidecars)


def test_no_prompt_in_recall_still_withholds_the_prompt(learned):
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", "pre-turn", "--goal-id"]
    argv += [f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(learned)]
    argv.append("--no-prompt-in-recall")
    event = {"turn_id": "t1", "prompt": "rebased schemas migrations"}
    result = run_process(argv, json.dumps(event))
    assert result.returncode == 0
    assert "[memory " not in json.loads(result.stdout)["additional_context"]


def test_redact_cuts_paths_and_secrets_and_keeps_the_rest():
    assert redact("fix /home/ana/x.py now") == "fix now"
    assert redact(f"token {SECRET} leaked") == "token leaked"
    assert redact("Bearer " + "a1b2c3d4" * 3 + " was sent") == "was sent"
    assert redact("  plain   words ") == "plain words"


def _quality_data():
    data = json.loads((ROOT / "benchmarks" / "recall_quality.json").read_text())
    for name in (
        "recall_quality_fresh.json",
        "recall_quality_blind.json",
        "recall_quality_blind2.json",
        "recall_quality_blind3.json",
    ):
        extra = json.loads((ROOT / "benchmarks" / name).read_text())
        for group in ("prompts", "no_match", "trivial"):
            data[group] += extra[group]
    return data


def test_the_benchmark_data_is_large_enough_that_no_prompt_decides_it():
    data = _quality_data()
    ids = [memory["id"] for memory in data["memories"]]
    summaries = {memory["summary"] for memory in data["memories"]}
    assert len(ids) == len(set(ids)) == len(summaries) >= 200
    assert len(data["prompts"]) >= 100 and len(data["no_match"]) >= 20
    assert {prompt["expect"] for prompt in data["prompts"]} <= set(ids)


def test_every_benchmark_prompt_has_a_half_and_appears_once():
    data = _quality_data()
    cases = [case for group in ("prompts", "no_match", "trivial") for case in data[group]]
    assert all(
        case["half"] in ("dev", "held", "fresh", "blind", "blind2", "blind3") for case in cases
    )
    texts = [" ".join(case["prompt"].lower().split()) for case in cases]
    assert len(texts) == len(set(texts)), "a prompt listed twice would count twice"
    assert {case["kind"] for case in data["no_match"]} == {"shared_words", "unrelated"}
    # The prompts earlier work tuned on are all in the development half.
    assert all(case["half"] == "dev" for case in data["prompts"][:165])
    assert all(case["half"] == "dev" for case in data["no_match"][:25])


def test_the_held_out_half_meets_the_issues_minimums_in_every_kind():
    # Issue 38: at least 60 no-match prompts that share everyday words with stored
    # memories, and at least 50 synonym and abbreviation prompts; the held-out half
    # has prompts of every kind, so each figure is reported on prompts not tuned on.
    data = _quality_data()
    no_match = Counter((case["kind"], case["half"]) for case in data["no_match"])
    labelled = Counter((case["kind"], case["half"]) for case in data["prompts"])
    assert no_match["shared_words", "dev"] + no_match["shared_words", "held"] >= 60
    assert sum(n for (kind, _), n in labelled.items() if kind in ("syn", "abbrev")) >= 50
    kinds = {kind for kind, _ in labelled}
    assert {"para", "syn", "abbrev", "sparse", "noisy"} <= kinds
    for kind in kinds:
        assert labelled[kind, "held"] >= 2, kind
    assert labelled["syn", "held"] + labelled["abbrev", "held"] >= 25
    assert no_match["shared_words", "held"] >= 30 and no_match["unrelated", "held"] >= 5
    assert any(case["half"] == "held" for case in data["trivial"])


def test_the_fresh_half_is_large_enough_to_report_on():
    # The held half was reported twice; the fresh one holds at least 40 labelled
    # prompts (a third synonyms or abbreviations) and 40 no-match prompts (half
    # sharing words with a lesson), over the same memories.
    data = json.loads((ROOT / "benchmarks" / "recall_quality_fresh.json").read_text())
    cases = [case for group in ("prompts", "no_match", "trivial") for case in data[group]]
    assert {case["half"] for case in cases} == {"fresh"}
    labelled = Counter(case["kind"] for case in data["prompts"])
    assert sum(labelled.values()) >= 40
    assert 3 * (labelled["syn"] + labelled["abbrev"]) >= sum(labelled.values())
    no_match = Counter(case["kind"] for case in data["no_match"])
    assert sum(no_match.values()) >= 40 and 2 * no_match["shared_words"] >= sum(no_match.values())
    assert "memories" not in data  # the main file's memories, not a set of its own


@pytest.mark.parametrize("half", ["blind", "blind2", "blind3"])
def test_each_blind_half_is_large_enough_to_judge_the_targets_on(half):
    # Written from the memories alone, by someone who had seen neither the recall code
    # nor the other halves: at least 100 labelled prompts (half of them synonyms or
    # abbreviations) and 60 no-match prompts (most sharing words with a lesson).
    data = json.loads((ROOT / "benchmarks" / f"recall_quality_{half}.json").read_text())
    cases = [case for group in ("prompts", "no_match", "trivial") for case in data[group]]
    assert {case["half"] for case in cases} == {half}
    labelled = Counter(case["kind"] for case in data["prompts"])
    assert sum(labelled.values()) >= 100 and labelled["syn"] + labelled["abbrev"] >= 50
    assert {"para", "syn", "abbrev", "sparse", "noisy"} <= set(labelled)
    no_match = Counter(case["kind"] for case in data["no_match"])
    assert no_match["shared_words"] >= 40 and sum(no_match.values()) >= 60
    assert "memories" not in data


def test_the_benchmark_data_stores_no_secret_shaped_text():
    # Secret-shaped prompts hold placeholders, filled in by the benchmark at run time.
    for path in (ROOT / "benchmarks").glob("recall_quality*.json"):
        assert SECRET_SHAPE.search(path.read_text()) is None, path.name
    secret = [case for case in _quality_data()["prompts"] if case["kind"] == "secret"]
    assert secret and all(
        re.search(r"<(gh-token|aws-key|bearer|raw)>", c["prompt"]) for c in secret
    )


def test_the_fusion_replays_on_a_dev_capture(tmp_path, capsys):
    # A capture holds what the extra's fusion was given per record; the replay scores
    # the fusion as it is now on it, so its constants are chosen without a search.
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_recall_quality as bench

    close, vague = [0.0, False, 0.9, 0.9], [0.0, False, 0.2, 0.2]
    prompts = [
        {"group": "prompts", "kind": "syn", "expect": "m1", "records": {"m1": close, "m2": vague}},
        {"group": "prompts", "kind": "para", "expect": "m2", "records": {"m1": close, "m2": vague}},
        {"group": "no_match", "kind": "shared_words", "expect": None, "records": {"m1": vague}},
        {"group": "no_match", "kind": "unrelated", "expect": None, "records": {"m1": close}},
    ]
    path = tmp_path / "capture.json"
    path.write_text(json.dumps({"half": "dev", "prompts": prompts}))
    figures = bench.replay(path)
    assert figures == {
        "recall@1": 0.5,
        "recall@5": 0.5,
        "recall@5 syn+abbrev": 1.0,
        "no-match silence": 0.5,
        "memories per prompt": 0.75,
    }
    assert "recall@1: 0.500" in capsys.readouterr().out
