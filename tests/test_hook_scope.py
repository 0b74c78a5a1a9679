"""Installed hooks are machine-wide; each Goal's hook acts only in its own repository.

Two scratch git repositories, `init` in each, both installed into one Codex home (and
one Claude Code config directory): a Turn in B gets B's memory alone and never runs
A's validator, and a Turn anywhere else gets nothing and settles nothing. The hook
commands are the ones `install` wrote, run as real processes the way the host runs
them; one test drives the real Codex CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from test_codex_real import CODEX, developer_texts
from test_install_hosts import TURN_HOOKS, turn_hooks
from turn_support import journals_after_settlement

from conformance.drivers import run_host
from conformance.fakes import FakeResponses
from conformance.workspace import final_message, reflection
from sidecars import serves_directory

PROMPT = "a change touches one module: which tests first?"


def learned(tag: str) -> str:
    """A final message whose reflection names ``tag`` in what it teaches."""
    experience = json.loads(json.dumps(f1.EXPERIENCE))
    experience["future_behavior"]["action"] = f"Run the {tag} suite first."
    return final_message(reflection(f"Run the {tag} suite first.", experience=experience))


def hook_log() -> list[tuple[str, str, str]]:
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    entries = json.loads(path.read_text())["entries"] if path.exists() else []
    return [(e["host"], e["event"], e["reason_code"]) for e in entries]


@pytest.fixture
def two_goals(tmp_path):
    """Repositories ``alpha`` and ``beta``, each bound by `init`, each with a validator
    that leaves a mark when it runs."""
    goals = {}
    for name in ("alpha", "beta"):
        repo = tmp_path / name
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        code, done = turn_hooks(repo, "init")
        assert (code, done["goal_id"]) == (0, name), done
        mark = tmp_path / f"{name}-validator-ran"
        script = f"open({str(mark)!r}, 'a').write('x')"
        validator = ["turn-hooks", "validate", "command", "--", sys.executable, "-c", script]
        goals[name] = {"repo": repo, "mark": mark, "validator": validator}
    return goals


def handlers(document: dict, event: str) -> list[str]:
    return [h["command"] for group in document["hooks"][event] for h in group["hooks"]]


def run_handlers(commands: list[str], event: dict, cwd: Path) -> list[str]:
    """Every handler of one host event, as the host runs them: ``sh -c``, in ``cwd``."""
    outputs = []
    for command in commands:
        result = subprocess.run(
            command,
            shell=True,
            input=json.dumps(event),
            capture_output=True,
            text=True,
            cwd=cwd,
            check=False,
            timeout=120,
        )
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        outputs.append(result.stdout)
    return outputs


def contexts(outputs: list[str]) -> list[str]:
    return [
        json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""
        for out in outputs
    ]


def test_two_codex_goals_each_act_only_in_their_own_repository(two_goals, tmp_path):
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    home = tmp_path / "codex-home"
    home.mkdir()
    for goal in two_goals.values():
        # The validators mark each run: install's own run of them is not what is counted.
        install = ["install", "codex", "--codex-home", str(home), "--codex-bin", str(CODEX)]
        install.append("--skip-validator-run")
        code, report = turn_hooks(
            goal["repo"], *install, "--validation-command-json", json.dumps(goal["validator"])
        )
        assert code == 0, report
    document = json.loads((home / "hooks.json").read_text())
    stop, prompt = handlers(document, "Stop"), handlers(document, "UserPromptSubmit")
    assert (len(stop), len(prompt)) == (2, 2), "one handler per Goal and event, in one file"
    alpha, beta = two_goals["alpha"], two_goals["beta"]

    # status and doctor say which repository each installed hook acts in, by name.
    code, status = turn_hooks(beta["repo"], "status", "--codex-home", str(home))
    [codex] = [view for view in status["hosts"] if view["host"] == "codex_cli"]
    assert (code, codex["acts_in"]) == (0, "alpha: alpha, beta: beta (here)"), codex
    assert str(tmp_path) not in json.dumps(status)
    code, doctor = turn_hooks(tmp_path, "doctor", "codex", "--codex-home", str(home))
    bindings = sorted(row["message"] for row in doctor["checks"] if row["check"] == "binding")
    assert (code, bindings) == (
        0,
        [
            "Goal alpha, Agent agent, acts only in repository alpha",
            "Goal beta, Agent agent, acts only in repository beta",
        ],
    ), doctor
    assert str(tmp_path) not in json.dumps(doctor)

    for name, goal in two_goals.items():  # one Turn in each repository learns its own
        event = {"session_id": f"s-{name}", "turn_id": f"{name}:1", "cwd": str(goal["repo"])}
        event |= {"hook_event_name": "Stop", "last_assistant_message": learned(name)}
        assert run_handlers(stop, event, goal["repo"]) == ["{}\n", "{}\n"]
        [journal] = journals_after_settlement(goal["repo"])
        assert journal["public_receipt"]["status"] == "activated"
        assert goal["mark"].read_text() == "x", "its own validator ran once"
    assert alpha["mark"].read_text() == beta["mark"].read_text() == "x", "never the other's"

    src = beta["repo"] / "src"
    src.mkdir()
    link = tmp_path / "beta-link"
    link.symlink_to(beta["repo"], target_is_directory=True)
    for where in (src, link):  # anywhere inside beta, links resolved as discovery does
        event = {"session_id": f"b-{where.name}", "turn_id": "b:2", "cwd": str(where)}
        event |= {"hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
        texts = contexts(run_handlers(prompt, event, where))
        assert [("beta suite" in t, "alpha suite" in t) for t in texts] == [
            (False, False),
            (True, False),
        ], "beta's hook recalls beta's memory; alpha's hook adds nothing"

    elsewhere = tmp_path / "unrelated"
    elsewhere.mkdir()
    event = {"session_id": "x", "turn_id": "x:1", "cwd": str(elsewhere), "prompt": PROMPT}
    assert run_handlers(prompt, event, elsewhere) == ["", ""], "nothing to inject"
    event |= {"hook_event_name": "Stop", "last_assistant_message": learned("stray")}
    assert run_handlers(stop, event, elsewhere) == ["{}\n", "{}\n"]
    assert alpha["mark"].read_text() == beta["mark"].read_text() == "x", "no validator ran"
    for goal in two_goals.values():
        assert len(journals_after_settlement(goal["repo"])) == 1, "nothing settled"
    assert not (elsewhere / ".local").exists()
    assert not any(reason == "outside_goal_repository" for *_, reason in hook_log()), (
        "a routine skip is not logged: it would fill the log"
    )


def test_two_claude_code_goals_each_act_only_in_their_own_repository(two_goals, tmp_path):
    config = tmp_path / "claude-config"
    for goal in two_goals.values():
        validator = ["--validation-command-json", json.dumps(goal["validator"])]
        code, report = turn_hooks(
            goal["repo"], "install", "claude-code", "--home", str(config), *validator,
            "--skip-validator-run",  # its mark counts the Turns' runs only
        )  # fmt: skip
        assert code == 0, report
    document = json.loads((config / "settings.json").read_text())
    stop, prompt = handlers(document, "Stop"), handlers(document, "UserPromptSubmit")
    alpha, beta = two_goals["alpha"], two_goals["beta"]

    event = {"session_id": "s-b", "prompt_id": "p1", "cwd": str(beta["repo"])}
    event |= {"hook_event_name": "Stop", "last_assistant_message": learned("beta")}
    assert run_handlers(stop, event, beta["repo"]) == ["", ""], "Claude Code's Stop prints nothing"
    [journal] = journals_after_settlement(beta["repo"])
    assert journal["public_receipt"]["status"] == "activated"
    assert beta["mark"].read_text() == "x" and not alpha["mark"].exists()
    assert journals_after_settlement(alpha["repo"]) == []

    event = {"session_id": "s-b2", "prompt_id": "p2", "cwd": str(beta["repo"]), "prompt": PROMPT}
    texts = contexts(run_handlers(prompt, event, beta["repo"]))
    assert [bool(t) for t in texts] == [False, True] and "beta suite" in texts[1]
    event["cwd"] = str(alpha["repo"])
    texts = contexts(run_handlers(prompt, event, alpha["repo"]))
    assert texts[1] == "" and "[memory" not in texts[0], "alpha's hook, and alpha knows nothing"
    elsewhere = tmp_path / "unrelated"
    elsewhere.mkdir()
    event["cwd"] = str(elsewhere)
    assert run_handlers(prompt, event, elsewhere) == ["", ""]
    assert not any(reason == "outside_goal_repository" for *_, reason in hook_log())


def test_real_codex_in_an_unrelated_directory_receives_no_memory(two_goals, tmp_path):
    assert CODEX.exists(), f"codex is not installed at {CODEX}: run `make test`"
    beta = two_goals["beta"]
    with FakeResponses() as fake:
        home = tmp_path / "codex-home"
        home.mkdir()
        (home / "config.toml").write_text(
            'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "http://127.0.0.1:{fake.port}/v1"\n'
            'wire_api = "responses"\nenv_key = "FAKE_API_KEY"\nrequest_max_retries = 0\n'
            "stream_max_retries = 0\n"
        )
        # The validators mark each run: install's own run of them is not what is counted.
        install = ["install", "codex", "--codex-home", str(home), "--codex-bin", str(CODEX)]
        install.append("--skip-validator-run")
        validator = ["--validation-command-json", json.dumps(beta["validator"])]
        assert turn_hooks(beta["repo"], *install, *validator)[0] == 0
        env = {**os.environ, "CODEX_HOME": str(home), "FAKE_API_KEY": "dummy"}
        assert TURN_HOOKS
        env["PATH"] = f"{Path(TURN_HOOKS).parent}:{env['PATH']}"

        def codex_exec(cwd: Path, prompt: str) -> None:
            argv = [str(CODEX), "exec", "--skip-git-repo-check", prompt]
            result = run_host(argv, cwd=cwd, env=env)
            assert result.returncode == 0, result.stderr[-2000:]

        fake.reply(learned("beta"))
        codex_exec(beta["repo"], "fix the flaky parser test")
        assert len(journals_after_settlement(beta["repo"])) == 1
        fake.reply("Module tests first.")
        codex_exec(beta["repo"], PROMPT)
        assert any("beta suite" in t for t in developer_texts(fake.requests[-1]))

        elsewhere = tmp_path / "unrelated"
        elsewhere.mkdir()
        fake.reply(learned("stray"))
        codex_exec(elsewhere, PROMPT)
        assert not any("[memory" in t for t in developer_texts(fake.requests[-1]))
        assert len(journals_after_settlement(beta["repo"])) == 1, "the stray Turn settled nothing"
        assert beta["mark"].read_text() == "x", "its validator ran for its own Turn only"
    assert not any(reason == "outside_goal_repository" for *_, reason in hook_log())


def test_serves_directory_follows_the_registry(tmp_path):
    repo, other = tmp_path / "repo", tmp_path / "other"
    nested = repo / "vendor" / "lib"
    for path in (nested, other):
        path.mkdir(parents=True)
    registry = tmp_path / "registry.json"
    goals = [
        {"id": "outer", "repo": str(repo)},
        {"id": "inner", "repo": str(nested)},
        {"id": "old"},
        "not a goal",
    ]
    registry.write_text(json.dumps({"goals": goals}))
    assert serves_directory(str(registry), "outer", str(repo / "vendor"))
    assert not serves_directory(str(registry), "outer", str(nested)), "the nearer Goal's"
    assert serves_directory(str(registry), "inner", str(nested / "deep"))
    assert not serves_directory(str(registry), "outer", str(other))
    assert not serves_directory(str(registry), "outer", "bad\0path")
    # A Goal without a repository, an unknown Goal and an unreadable registry act as
    # before: the hook's own checks report those.
    assert serves_directory(str(registry), "old", str(other))
    assert serves_directory(str(registry), "nobody", str(other))
    assert serves_directory(str(tmp_path / "absent.json"), "outer", str(other))
    assert serves_directory(None, "outer", str(other))
    assert serves_directory(str(registry), None, str(other))


def test_an_event_without_a_cwd_is_not_scoped(tmp_path, monkeypatch):
    """The generic contract's cwd is optional; every installed host sends one."""
    repo, other = tmp_path / "repo", tmp_path / "other"
    (repo / "src").mkdir(parents=True)
    other.mkdir()
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"goals": [{"id": "g", "repo": str(repo)}]}))
    monkeypatch.chdir(other)
    assert serves_directory(str(registry), "g", None)
    assert serves_directory(str(registry), "g", "")
    assert not serves_directory(str(registry), "g", "src"), "relative: from the process's"
    monkeypatch.chdir(repo)
    assert serves_directory(str(registry), "g", "src")
