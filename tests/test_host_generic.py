"""The generic CLI host: fail-open hook commands, rendering and settlement (hosts.md §1, §5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from turn_support import RAW, bound_goal

from conformance.public_safety import public_safety_violations
from hosts.adapters.codex_cli import INJECTED_SCHEMA, delivered_refs
from hosts.facts.render import (
    NONE_WANTED,
    block_request,
    extract_block,
    extract_results,
    omission_note,
    render,
    render_context,
    tool_request,
    without_refs,
)
from hosts.settlement.settlement import run_validator, settlement_store
from sidecars import goal_repository, path_token
from turn_hooks import ContextItem, HostProjection

ROOT = Path(__file__).parent.parent
VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]


def run_cli(*args, stdin):
    """``turn-hooks ARGS`` as a host runs it: a new process; never a traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert "Traceback" not in result.stdout + result.stderr
    return result


def hook(event, registry, stdin=None, *extra, goal=f1.GOAL, command="generic"):
    # A Turn runs in the Goal's repository unless the event says otherwise: a hook
    # acts only there (hooks are installed machine-wide).
    event = {"cwd": str(Path(registry).parent / "repo"), **(event or {})}
    text = stdin if stdin is not None else json.dumps(event)
    result = run_cli(
        "host",
        command,
        *extra,
        "--goal-id",
        goal,
        "--agent-id",
        f1.AGENT,
        "--registry",
        str(registry),
        stdin=text,
    )
    assert result.returncode == 0, "a hook always exits 0"
    return json.loads(result.stdout)


def message(reflection=RAW):
    return f"All done.\n<reward_memory_reflection_json>{reflection}</reward_memory_reflection_json>"


def test_two_turn_loop_through_the_hook_commands(tmp_path):
    registry = bound_goal(tmp_path)
    first = hook({"turn_id": "t1", "prompt": "fix tests"}, registry, None, "pre-turn")
    assert "<reward_memory_reflection_json>" in first["additional_context"]
    assert "[memory " not in first["additional_context"]
    receipt = hook(
        {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")},
        registry,
        None,
        "post-settlement",
        "--validation-command-json",
        json.dumps(VALIDATOR),
    )
    ingest = receipt["results"]["reward-memory.outcome-ingest"]
    assert (ingest["status"], ingest["exact_readback_verified"]) == ("activated", True)
    assert not public_safety_violations(receipt, raw_texts=(f1.REFLECTION["content_summary"],))
    second = hook(
        {"turn_id": "t2", "prompt": "a change touches one module"}, registry, None, "pre-turn"
    )
    assert "[memory 1] candidate:" in second["additional_context"]
    assert "trigger: a change touches one module" in second["additional_context"]
    spool = list((tmp_path / "repo" / ".local" / "turn-hooks" / "settlements").rglob("*.json"))
    assert len(spool) == 1
    assert json.loads(spool[0].read_text())["post_settlement"]["status"] == "observed"


def test_without_a_validator_nothing_is_learned(tmp_path):
    registry = bound_goal(tmp_path)
    receipt = hook(
        {"turn_id": "t1", "last_assistant_message": message()}, registry, None, "post-settlement"
    )
    assert receipt["results"]["reward-memory.outcome-ingest"]["status"] == (
        "evidence_validation_required"
    )


def hook_log_entries():
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    if not path.exists():
        return []
    assert path.stat().st_mode & 0o777 == 0o600
    return json.loads(path.read_text())["entries"]


def logged_reasons():
    return [(entry["source"], entry["reason_code"]) for entry in hook_log_entries()]


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        ("", "hook_input_not_json"),
        ("not json", "hook_input_not_json"),
        ("[]", "hook_input_not_object"),
        (json.dumps({"prompt": "no turn id"}), "host_turn_id_missing"),
        (json.dumps({"turn_id": 7}), "host_turn_id_missing"),
        (json.dumps({"turn_id": "t1", "prompt": "p" * (4 * 1024 * 1024)}), "hook_input_too_large"),
    ],
)
@pytest.mark.parametrize("event", ["pre-turn", "post-settlement"])
def test_bad_stdin_fails_open_with_a_typed_reason_in_the_local_log(tmp_path, stdin, event, reason):
    assert hook(None, bound_goal(tmp_path), stdin, event) == {}
    assert logged_reasons() == [("adapter", reason)]
    (entry,) = hook_log_entries()
    assert (entry["host"], entry["event"]) == ("generic", event.replace("-", "_"))
    log = (Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json").read_text()
    assert "no turn id" not in log and "ppp" not in log, "the log holds no prompt text"


def test_a_claude_stop_without_final_text_is_not_a_settlement(tmp_path):
    registry = bound_goal(tmp_path)
    result = run_cli(
        "host",
        "generic",
        "post-settlement",
        "--dialect",
        "claude-code",
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        "--registry",
        str(registry),
        stdin=json.dumps({"prompt_id": "p1", "hook_event_name": "Stop"}),
    )
    assert (result.returncode, result.stdout) == (0, "")
    assert logged_reasons() == [("adapter", "host_turn_not_completed")]
    assert not (tmp_path / "repo" / ".local" / "turn-hooks" / "settlements").exists()


def test_an_unknown_event_fails_open_not_a_crash(tmp_path):
    # Exit 2 from a prompt hook would block the prompt: a hook's own usage error is
    # logged and exits 0 like any other failure of the hook (issue 13, item 5).
    result = run_cli("host", "generic", "turn-start", stdin="{}")
    assert (result.returncode, json.loads(result.stdout)) == (0, {})
    assert logged_reasons() == [("adapter", "hook_arguments_invalid")]


def test_a_missing_registry_injects_nothing_and_logs_why(tmp_path):
    assert (
        hook(
            {"turn_id": "t1", "prompt": "secret words"}, tmp_path / "absent.json", None, "pre-turn"
        )
        == {}
    )
    assert logged_reasons() == [("reward_memory", "registry_unreadable")]
    assert "secret words" not in json.dumps(hook_log_entries())


def test_a_binding_missing_from_the_registry_injects_nothing_and_logs_why(tmp_path):
    event = {"turn_id": "t1", "prompt": "p"}
    assert hook(event, bound_goal(tmp_path), None, "pre-turn", goal="goal-not-bound") == {}
    assert logged_reasons() == [("reward_memory", "goal_not_found")]


@pytest.mark.parametrize(
    ("final", "reason"),
    [
        (message() + message(), "reflection_block_repeated"),
        (message().replace("</reward_memory_reflection_json>", ""), "reflection_block_malformed"),
    ],
)
def test_a_repeated_or_malformed_reflection_block_learns_nothing(tmp_path, final, reason):
    registry = bound_goal(tmp_path)
    receipt = hook(
        {"turn_id": "t1", "last_assistant_message": final, "cwd": str(tmp_path / "repo")},
        registry,
        None,
        "post-settlement",
        "--validation-command-json",
        json.dumps(VALIDATOR),
    )
    assert receipt["results"]["reward-memory.outcome-ingest"]["status"] != "activated"
    assert logged_reasons()[0] == ("adapter", reason)
    assert f1.REFLECTION["content_summary"] not in json.dumps(hook_log_entries())


def projection(items, instructions=("be careful",), fields=("answer_field",)):
    return HostProjection(
        context_items=[
            ContextItem(ref=f"item:{i}", text=f"item {i}\n" + "s" * 500) for i in range(items)
        ],
        capability_instructions=list(instructions),
        capability_result_fields={field: {"type": "string", "maxLength": 9} for field in fields},
    )


def test_render_orders_instructions_items_then_one_request_per_field():
    text = render_context(projection(2, fields=("first_answer", "second_answer")))
    assert text.split("\n\n") == [
        "be careful",
        "item 0\n" + "s" * 500,
        "item 1\n" + "s" * 500,
        block_request("first_answer"),
        block_request("second_answer"),
    ]
    assert "<first_answer>…</first_answer>" in block_request("first_answer")


def test_render_drops_whole_items_from_the_end_and_keeps_the_requests():
    rendering = render(projection(30), limit=8000)
    text = rendering.text
    assert len(text) <= 8000
    assert text.endswith(
        omission_note(30 - len(rendering.item_refs)) + "\n\n" + block_request("answer_field")
    )
    kept = len(rendering.item_refs)
    assert 0 < kept < 30 and rendering.item_refs == tuple(f"item:{i}" for i in range(kept))
    assert text.count("s" * 500) == kept, "items are whole, never cut"


def test_render_never_cuts_what_is_not_an_item():
    long = HostProjection(capability_instructions=["x" * 9000], context_items=[])
    assert render_context(long) == "x" * 9000


def test_render_without_anything_is_empty():
    assert render(HostProjection()) == render(HostProjection(), limit=1)
    assert render_context(HostProjection()) == ""
    assert "answer_field" not in render_context(projection(1, fields=()))


def test_delivered_refs_are_not_rendered_again():
    both = projection(2)
    assert without_refs(both, set()) is both
    assert [item.ref for item in without_refs(both, {"item:0", "other"}).context_items] == [
        "item:1"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, (None, None)),
        ("no block here", (None, None)),
        ("<answer_field></answer_field>", (None, None)),
        ('<answer_field> {"a":1} </answer_field>', ('{"a":1}', None)),
        (
            "<answer_field>first</answer_field> then <answer_field>last</answer_field>",
            (None, "repeated"),
        ),
        ("dangling </answer_field>", (None, "malformed")),
        ("<answer_field>{} unclosed", (None, "malformed")),
        ("</answer_field>{}<answer_field>", (None, "malformed")),
        # Gemini CLI shows the model our request with < and > escaped; that form counts.
        ("&lt;answer_field&gt;{&quot;a&quot;:1}&lt;/answer_field&gt;", ('{"a":1}', None)),
        ("&lt;answer_field&gt;{}", (None, "malformed")),
        ("&lt;answer_field&gt; &lt;/answer_field&gt;", (None, None)),
        ("<answer_field>raw</answer_field> &lt;answer_field&gt;x", ("raw", None)),
    ],
)
def test_extract_the_one_block_of_a_field(text, expected):
    assert extract_block(text, "answer_field") == expected


def test_extract_results_gives_every_field_a_value_and_names_each_fault():
    message = "<a_field>1</a_field><b_field>2</b_field><b_field>3</b_field><c_field>"
    prefixes = {
        "a_field": "a_block",
        "b_field": "b_block",
        "c_field": "result_block",
        "d_field": "d",
    }
    assert extract_results(message, prefixes) == (
        {"a_field": "1", "b_field": "", "c_field": "", "d_field": ""},
        ["b_block_repeated", "result_block_malformed"],
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (None, {"ok": False, "status": "unavailable", "validator_kind": "none"}),
        (
            [sys.executable, "-c", "import sys; sys.exit(3)"],
            {"ok": False, "status": "failed", "exit_code": 3},
        ),
        (
            [sys.executable, "-c", "import time; time.sleep(5)"],
            {"ok": False, "status": "inconclusive", "reason_code": "external_timeout"},
        ),
        (
            ["/nonexistent/validator"],
            {"ok": False, "status": "inconclusive", "reason_code": "external_unavailable"},
        ),
        (
            # A failing validator's own reason code is kept; its other output is not.
            [sys.executable, "-c", 'print(\'{"reason_code": "tests_red", "x": 1}\'); exit(1)'],
            {"ok": False, "status": "failed", "exit_code": 1, "reason_code": "tests_red"},
        ),
        (
            [sys.executable, "-c", 'print(\'{"reason_code": "Not A Code"}\'); exit(1)'],
            {"ok": False, "status": "failed", "exit_code": 1},
        ),
        (
            [sys.executable, "-c", "print('fine')"],
            {"ok": True, "status": "passed", "validator_kind": "command"},
        ),
    ],
)
def test_validator_outcomes(argv, expected):
    assert run_validator(argv, request={}, cwd=None, timeout=1) == expected


def test_validator_attestation_is_attached(tmp_path):
    result = run_validator(
        VALIDATOR, request={"reward_memory_reflection_json": RAW}, cwd=None, timeout=10
    )
    assert result["attestation"]["status"] == "validated"


def test_goal_repository_lookup(tmp_path):
    registry = bound_goal(tmp_path)
    assert goal_repository(str(registry), f1.GOAL) == tmp_path / "repo"
    assert goal_repository(str(registry), "other") is None
    assert goal_repository(str(tmp_path / "none.json"), f1.GOAL) is None
    assert goal_repository(None, f1.GOAL) is None


def test_codex_cli_does_not_reinject_a_memory_in_the_same_session(tmp_path):
    registry = bound_goal(tmp_path)
    hook(
        {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")},
        registry,
        None,
        "post-settlement",
        "--validation-command-json",
        json.dumps(VALIDATOR),
    )

    def codex_pre_turn(turn_id, session):
        result = run_cli(
            "host",
            "codex-cli",
            "pre-turn",
            "--goal-id",
            f1.GOAL,
            "--agent-id",
            f1.AGENT,
            "--registry",
            str(registry),
            stdin=json.dumps(
                {
                    "turn_id": turn_id,
                    "session_id": session,
                    "prompt": "a change touches one module",
                    "cwd": str(tmp_path / "repo"),
                }
            ),
        )
        assert result.returncode == 0
        return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]

    assert "[memory 1]" in codex_pre_turn("t2", "session-a")
    assert "[memory 1]" not in codex_pre_turn("t3", "session-a"), "already in Codex's history"
    assert "[memory 1]" in codex_pre_turn("t4", "session-b")


def test_an_injected_context_sidecar_v0_is_still_read(tmp_path):
    """Before items were generic the sidecar kept reward memory's candidate refs under
    its own key (v0); an upgrade must not deliver those memories a second time."""
    registry = bound_goal(tmp_path)
    settle_one = {
        "turn_id": "t1",
        "last_assistant_message": message(),
        "cwd": str(tmp_path / "repo"),
    }
    validator = ("--validation-command-json", json.dumps(VALIDATOR))
    hook(settle_one, registry, None, "post-settlement", *validator)
    event = {"turn_id": "t2", "session_id": "new", "prompt": "a change touches one module"}
    assert (
        "[memory 1]"
        in hook(event, registry, None, "pre-turn", command="codex-cli")["hookSpecificOutput"][
            "additionalContext"
        ]
    )
    store = settlement_store(str(registry), f1.GOAL)
    [new] = (store.root / "injected" / "codex_cli").glob("*.json")
    current = json.loads(new.read_text())
    assert current["schema_version"] == INJECTED_SCHEMA and current["item_refs"]
    old = store.path("injected", "codex_cli", path_token("old", "session") + ".json")
    legacy = {"schema_version": "turn_hooks_injected_context_v0", "host": "codex_cli"}
    store.write(old, {**legacy, "candidate_refs": current["item_refs"]})
    event = {**event, "turn_id": "t3", "session_id": "old"}
    context = hook(event, registry, None, "pre-turn", command="codex-cli")
    assert "[memory 1]" not in context["hookSpecificOutput"]["additionalContext"]
    assert delivered_refs(store.read(old)) == set(current["item_refs"])
    assert delivered_refs(None) == delivered_refs({"schema_version": INJECTED_SCHEMA}) == set()


@pytest.mark.parametrize("broken", ["fifo", "symlink", "garbage"])
def test_a_broken_injected_context_sidecar_costs_only_the_deduplication(tmp_path, broken):
    """The record of what a session was given is bookkeeping: when it cannot be read,
    the Turn still gets its memories and the reflection request, and the log says why."""
    registry = bound_goal(tmp_path)
    settle_one = {"turn_id": "t1", "last_assistant_message": message()}
    hook(
        settle_one,
        registry,
        None,
        "post-settlement",
        "--validation-command-json",
        json.dumps(VALIDATOR),
    )
    store = settlement_store(str(registry), f1.GOAL)
    path = store.path("injected", "codex_cli", path_token("s", "session") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if broken == "fifo":
        os.mkfifo(path, 0o600)
    elif broken == "symlink":
        (tmp_path / "elsewhere.json").write_text("{}")
        path.symlink_to(tmp_path / "elsewhere.json")
    else:
        path.write_bytes(b"\xff not json")
        path.chmod(0o600)
    event = {"turn_id": "t2", "session_id": "s", "prompt": "a change touches one module"}
    for turn in ("t2", "t3"):  # nothing remembered: delivered again, never lost
        context = hook({**event, "turn_id": turn}, registry, None, "pre-turn", command="codex-cli")
        text = context["hookSpecificOutput"]["additionalContext"]
        assert "[memory 1]" in text and "reward_memory_reflection_json" in text
    reasons = [code for source, code in logged_reasons() if source == "adapter"]
    assert reasons and all(code.startswith("sidecar_") for code in reasons), reasons


def test_codex_cli_prints_nothing_when_it_has_nothing(tmp_path):
    result = run_cli(
        "host",
        "codex-cli",
        "pre-turn",
        "--goal-id",
        "g",
        "--agent-id",
        "a",
        "--registry",
        str(tmp_path / "none.json"),
        stdin="not json",
    )
    assert (result.returncode, result.stdout) == (0, "")
    stop = run_cli(
        "host",
        "codex-cli",
        "post-settlement",
        "--goal-id",
        "g",
        "--agent-id",
        "a",
        stdin="{}",
    )
    assert (stop.returncode, json.loads(stop.stdout)) == (0, {}), "Stop always prints JSON"


GEMINI_BEFORE = {
    "session_id": "gem-1",
    "hook_event_name": "BeforeAgent",
    "timestamp": "2026-11-29T10:00:00Z",
    "prompt": "fix the tests",
}


def test_gemini_dialect_on_its_documented_payloads(tmp_path):
    registry = bound_goal(tmp_path)
    before = {**GEMINI_BEFORE, "cwd": str(tmp_path / "repo")}
    context = hook(before, registry, None, "pre-turn", "--dialect", "gemini")
    assert context["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "<reward_memory_reflection_json>" in context["hookSpecificOutput"]["additionalContext"]
    after = {
        "session_id": "gem-1",
        "hook_event_name": "AfterAgent",
        "cwd": str(tmp_path / "repo"),
        "timestamp": "2026-11-29T10:00:09Z",
        "prompt": "fix the tests",
        "prompt_response": message(),
        "stop_hook_active": False,
    }
    assert (
        hook(
            after,
            registry,
            None,
            "post-settlement",
            "--dialect",
            "gemini",
            "--validation-command-json",
            json.dumps(VALIDATOR),
        )
        == {}
    ), "stdout is JSON"
    spool = list((tmp_path / "repo" / ".local" / "turn-hooks" / "settlements").rglob("*.json"))
    assert [json.loads(p.read_text())["turn_key"] for p in spool] == [
        "gem-1:2026-11-29T10:00:00Z"
    ], "AfterAgent joins BeforeAgent's turn"
    assert hook({"bad": 1}, registry, None, "pre-turn", "--dialect", "gemini") == {}


def test_claude_code_dialect_prints_nothing_when_it_has_nothing(tmp_path):
    result = run_cli(
        "host",
        "generic",
        "post-settlement",
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        "--registry",
        str(bound_goal(tmp_path)),
        "--dialect",
        "claude-code",
        stdin=json.dumps({"prompt_id": "p1", "last_assistant_message": "done"}),
    )
    assert (result.returncode, result.stdout) == (0, "")


def _recall_fingerprint(tmp_path):
    (receipt,) = (tmp_path / "repo" / ".local" / "turn-hooks" / "agent-turn-recall").rglob("*.json")
    return json.loads(receipt.read_text())["situation_fingerprint"]


@pytest.mark.parametrize("withheld", [False, True])
def test_no_prompt_in_recall_keys_the_situation_on_goal_and_project_alone(tmp_path, withheld):
    registry = bound_goal(tmp_path)
    flag = ("--no-prompt-in-recall",) if withheld else ()
    fingerprints = set()
    for turn_id, prompt in (("t1", "fix the tests"), ("t1", "write the docs")):
        hook({"turn_id": turn_id, "prompt": prompt}, registry, None, "pre-turn", *flag)
        fingerprints.add(_recall_fingerprint(tmp_path))
    assert len(fingerprints) == (1 if withheld else 2)


def test_the_installer_bakes_no_prompt_in_recall_into_the_pre_turn_hook_only():
    from hosts.setup.codex_install import hook_command

    binding = {"registry": "r.json", "goal_id": "g", "agent_id": "a", "validation_argv": None}
    pre = hook_command("UserPromptSubmit", prompt_in_recall=False, **binding)
    stop = hook_command("Stop", prompt_in_recall=False, **binding)
    assert pre.endswith(" --no-prompt-in-recall")
    assert "--no-prompt-in-recall" not in stop
    assert "--no-prompt-in-recall" not in hook_command("UserPromptSubmit", **binding)


def test_an_unwritable_hook_log_never_costs_the_turn(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(blocker))
    assert hook(None, bound_goal(tmp_path), "not json", "pre-turn") == {}
    assert blocker.read_text() == ""


def test_a_busy_hook_log_loses_no_line(tmp_path):
    """Hooks that find the log's lock held past their 0.5 s wait used to drop their
    entries; now they leave them in ``hook-log.spill/`` and the next writer folds
    them in. The lock is held here by the test, so the contention is a fact."""
    import filelock

    from sidecars import lock_path

    registry = bound_goal(tmp_path)
    state = Path(os.environ["TURN_HOOKS_STATE_DIR"])
    assert hook(None, registry, "{not json", "pre-turn") == {}  # creates the log
    log = state / "hook-log.json"
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", "pre-turn"]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    with filelock.FileLock(str(lock_path(log))):
        busy = [
            subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(5)
        ]
        for process in busy:
            assert process.communicate("{not json", timeout=60)[0].strip() == "{}"
        assert len(list((state / "hook-log.spill").glob("*.json"))) == 5
    assert hook(None, registry, "{not json", "pre-turn") == {}  # the next writer folds
    assert [entry["reason_code"] for entry in hook_log_entries()] == ["hook_input_not_json"] * 7
    assert list((state / "hook-log.spill").glob("*.json")) == []


def test_only_well_formed_spilled_entries_are_folded_in(tmp_path):
    from hosts.settlement import hook_log
    from sidecars import SidecarStore

    store = SidecarStore(hook_log.log_root())
    good = {
        "observed_at": "2026-12-01T00:00:00+00:00",
        "host": "generic",
        "event": "pre_turn",
        "source": "adapter",
        "reason_code": "hook_input_not_json",
    }
    planted = [good, {**good, "reason_code": "a prompt with spaces"}, {**good, "extra": "x"}, 7]
    store.write(store.path(hook_log.SPILL_DIR, "1-1.json"), {"entries": planted})
    garbled = store.path(hook_log.SPILL_DIR, "2-2.json")
    store.write(garbled, {"entries": []})
    garbled.write_text("{not json")  # not ours to fold: left for a person
    hook_log.record("generic", "pre_turn", [("adapter", "host_turn_id_missing")])
    assert [entry["reason_code"] for entry in hook_log_entries()] == [
        "hook_input_not_json",
        "host_turn_id_missing",
    ]
    assert sorted(p.name for p in (store.root / hook_log.SPILL_DIR).glob("*.json")) == ["2-2.json"]


WRITE_PATH = (
    "capabilities.reward_memory.memory.ingest",
    "capabilities.reward_memory.memory.verify",
    "capabilities.reward_memory.turn.post_settlement",
    "turn_hooks._settlement_documents",
)
"""What only a settlement uses: the ingest, its verification and the documents."""


def test_a_pre_turn_imports_no_lock_library_no_process_machinery_and_no_write_path(tmp_path):
    # A PreTurn with an empty settlement queue starts no process and takes its locks
    # with flock(2): subprocess (with signal and selectors) and filelock would be
    # import time on every Turn for nothing. With no pending journal it writes no
    # memory either, so none of the write path is imported.
    registry = bound_goal(tmp_path / "goal")
    names = ("subprocess", "filelock", "selectors", *WRITE_PATH)
    code = (
        "import sys; from hosts.cli.command import main; "
        "status = main(sys.argv[1:]); "
        f"print(sorted(m for m in {names!r} if m in sys.modules), "
        "file=sys.stderr); sys.exit(status)"
    )
    argv = ["host", "generic", "pre-turn", "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    result = subprocess.run(
        [sys.executable, "-c", code, *argv, "--registry", str(registry)],
        input=json.dumps(
            {"turn_id": "turn-1", "prompt": "module tests", "cwd": str(registry.parent / "repo")}
        ),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        # Without a coverage run's variables: coverage itself imports selectors.
        env={k: v for k, v in os.environ.items() if not k.startswith(("COVERAGE_", "COV_"))},
    )
    assert json.loads(result.stdout)["additional_context"], "the Turn was recalled for"
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_a_failing_validator_says_why_in_the_hook_log(tmp_path):
    """The log names the validator's own reason (``validate command``'s), not only the
    plugin's "not validated", so a person sees that the project's check failed."""
    registry = bound_goal(tmp_path)
    failing = [sys.executable, "-m", "hosts.cli", "validate", "command", "--", "false"]
    receipt = hook(
        {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")},
        registry,
        None,
        "post-settlement",
        "--validation-command-json",
        json.dumps(failing),
    )
    assert receipt["results"]["reward-memory.outcome-ingest"]["status"] != "activated"
    assert ("validator", "validated_command_failed") in logged_reasons()
    assert f1.REFLECTION["content_summary"] not in json.dumps(hook_log_entries())


def test_one_host_has_one_spelling_in_the_hook_log():
    """The adapter logs the host as the command line names it (``codex-cli``); the
    plugin results of the same Turn, logged by its Turn's host id, read the same."""
    from hosts.settlement import hook_log

    hook_log.record("codex_cli", "pre_turn", [("reward_memory", "a_reason")])
    hook_log.record("codex-cli", "pre_turn", [("adapter", "b_reason")])
    hook_log.record("claude_code", "post_settlement", [("adapter", "c_reason")])
    hook_log.record("generic_cli", "post_settlement", [("validator", "d_reason")])
    hook_log.record("generic", "post_settlement", [("adapter", "e_reason")])
    assert [entry["host"] for entry in hook_log_entries()] == [
        "codex-cli",
        "codex-cli",
        "claude-code",
        "generic",
        "generic",
    ]


def test_the_hook_log_keeps_its_newest_entries_in_pages():
    """A hook rewrites only the current page (at most ``PAGE_ENTRIES`` entries), so its
    cost does not grow with the log; the log as a whole still keeps the newest
    ``KEEP_ENTRIES``, in order, and ``turn-hooks log`` shows them newest first."""
    from hosts.settlement import hook_log
    from hosts.setup.status import hook_log as view
    from sidecars import SidecarStore

    written = [
        f"code_{n:03d}" for n in range(hook_log.KEEP_ENTRIES + 2 * hook_log.PAGE_ENTRIES + 7)
    ]
    for start in range(0, len(written), 3):  # several entries per call, as a hook logs
        hook_log.record("generic", "pre_turn", [("adapter", c) for c in written[start : start + 3]])
        assert 1 <= len(hook_log_entries()) <= hook_log.PAGE_ENTRIES
    store = SidecarStore(hook_log.log_root())
    pages = hook_log.pages(store)
    assert len(pages) == hook_log.KEEP_ENTRIES // hook_log.PAGE_ENTRIES - 1
    assert all(len(store.read(page)["entries"]) == hook_log.PAGE_ENTRIES for page in pages)
    assert all(page.stat().st_mode & 0o777 == 0o600 for page in pages)
    shown = view(hook_log.KEEP_ENTRIES)
    assert shown["entry_count"] <= hook_log.KEEP_ENTRIES
    assert shown["entry_count"] > hook_log.KEEP_ENTRIES - hook_log.PAGE_ENTRIES
    newest_first = [entry["reason_code"] for entry in shown["entries"]]
    assert newest_first == written[::-1][: len(newest_first)]


def test_a_spill_larger_than_a_page_is_folded_into_pages():
    from hosts.settlement import hook_log
    from hosts.setup.status import hook_log as view
    from sidecars import SidecarStore

    store = SidecarStore(hook_log.log_root())
    spilled = [
        {
            "observed_at": "2026-12-01T00:00:00+00:00",
            "host": "generic",
            "event": "pre_turn",
            "source": "adapter",
            "reason_code": f"spilled_{n:03d}",
        }
        for n in range(3 * hook_log.PAGE_ENTRIES + 1)
    ]
    store.write(
        store.path(hook_log.SPILL_DIR, "00000000000000000001-1.json"),
        {"schema_version": hook_log.SPILL_SCHEMA, "entries": spilled},
    )
    hook_log.record("generic", "pre_turn", [("adapter", "last_one")])
    codes = [entry["reason_code"] for entry in view(hook_log.KEEP_ENTRIES)["entries"]]
    assert codes == ["last_one", *[entry["reason_code"] for entry in spilled][::-1]]
    assert len(hook_log_entries()) == 2
    assert list(store.iter_documents(hook_log.SPILL_DIR)) == []


def test_a_field_with_a_tool_on_this_host_is_asked_for_through_the_tool_alone():
    # Issue 36: a model asked for the tool and the block writes both, and the user
    # reads the JSON. The tool's request names no block; neither asks for an empty one.
    both = projection(1, fields=("first_answer", "second_answer"))
    text = render_context(both, tools={"first_answer": "hand_over"})
    assert text.split("\n\n")[-2:] == [
        tool_request("first_answer", "hand_over"),
        block_request("second_answer"),
    ]
    assert "<first_answer>" not in text and "<second_answer>…</second_answer>" in text
    for request in (tool_request("first_answer", "hand_over"), block_request("first_answer")):
        assert request.endswith(NONE_WANTED) and "empty" not in request
    assert "block" not in tool_request("first_answer", "hand_over")
    assert render_context(both, tools={}) == render_context(both)


def _serve(host, home, command=None):
    """Our MCP server in a host home, as `install` wires it (``command``: another one)."""
    from hosts.setup import mcp_install

    server = mcp_install.server_command(registry="r")
    if command is not None:
        server = (command, server[1])
    if host == "codex-cli":
        mcp_install.codex_config(home / "config.toml", server=server)
    else:
        mcp_install.claude_code(home, {}, server=server)


CHANNEL_HOSTS = {  # command, dialect, whose home holds its MCP servers
    "codex-cli": ("codex-cli", None, "CODEX_HOME"),
    "claude-code": ("generic", "claude-code", "CLAUDE_CONFIG_DIR"),
    "gemini": ("generic", "gemini", None),
    "dsh": ("dsh", None, None),
    "plain": ("generic", None, None),
}


def _pre_turn_text(host, registry, n):
    command, dialect, _ = CHANNEL_HOSTS[host]
    event = {"turn_id": f"t{n}", "prompt_id": f"t{n}", "session_id": "s", "prompt": "fix"}
    event |= {"timestamp": f"2026-11-29T10:00:0{n}Z", "hook_event_name": "BeforeAgent"}
    extra = ("--dialect", dialect) if dialect else ()
    document = hook(event, registry, None, *extra, "pre-turn", command=command) or {}
    return document.get("additional_context") or document.get("hookSpecificOutput", {}).get(
        "additionalContext", ""
    )


@pytest.mark.parametrize("host", list(CHANNEL_HOSTS))
def test_each_host_asks_for_one_channel_as_it_is_wired_at_run_time(tmp_path, monkeypatch, host):
    registry = bound_goal(tmp_path)
    codex, claude = tmp_path / "codex-home", tmp_path / "claude-home"
    for home in (codex, claude):
        home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    field, tooled = "reward_memory_reflection_json", CHANNEL_HOSTS[host][2] is not None
    blocked = _pre_turn_text(host, registry, 1)
    assert blocked.endswith(block_request(field)) and "record_reflection" not in blocked
    _serve("codex-cli", codex)
    _serve("claude-code", claude)
    served = _pre_turn_text(host, registry, 2)
    if tooled:  # read from the host's own file on this Turn, not baked in at install
        assert served.endswith(tool_request(field, "record_reflection"))
        assert f"<{field}>" not in served and "block" not in served
    else:  # Gemini, DSH and generic runtimes run no MCP server of ours
        assert served.endswith(block_request(field)) and "record_reflection" not in served
    # A server whose interpreter is gone offers no tool: the block is asked for again.
    _serve("codex-cli", codex, command=str(tmp_path / "gone" / "python"))
    _serve("claude-code", claude, command=str(tmp_path / "gone" / "python"))
    assert _pre_turn_text(host, registry, 3).endswith(block_request(field))


def test_a_resident_call_records_what_it_delivered_after_its_reply(tmp_path):
    # A resident child answers its host first and writes the record of delivered items
    # (a locked, fsynced sidecar) afterwards; the record it writes is the same.
    from hosts.adapters.generic import build_turn, render_once
    from hosts.settlement import after_reply

    registry = bound_goal(tmp_path)
    event = {"turn_id": "t1", "session_id": "session-a", "cwd": str(tmp_path / "repo")}
    turn = build_turn(
        event, host="claude_code", goal_id=f1.GOAL, agent_id=f1.AGENT, registry=str(registry)
    )
    name = path_token("session-a", "session") + ".json"
    record = settlement_store(str(registry), f1.GOAL).path("injected", "claude_code", name)
    after_reply.accept()
    try:
        assert "item 1\n" in render_once(turn, projection(2), f1.GOAL)
        assert not record.exists(), "the host's answer waits for no record"
        assert after_reply.pending()
        after_reply.run()
    finally:
        after_reply._queue = None
    assert delivered_refs(json.loads(record.read_text())) == {"item:0", "item:1"}
    assert "item 0\n" not in render_once(turn, projection(2), f1.GOAL), "already delivered"
