"""DSH: the `host dsh` hook commands and `install dsh` (hosts.md §4), without DSH itself.

The real DSH runs in test_dsh_real.py; these pin the command contract its plugin
relies on, and the installer's file handling.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures import f1
from test_host_generic import VALIDATOR, message, run_cli
from turn_support import bound_goal

from hosts.setup.dsh_install import PLUGIN_FILE
from sidecars import sidecar_root


def dsh_hook(event_name, registry, event, *extra):
    result = run_cli(
        "host",
        "dsh",
        event_name,
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        "--registry",
        str(registry),
        *extra,
        stdin=event if isinstance(event, str) else json.dumps(event),
    )
    assert result.returncode == 0, "a hook always exits 0"
    return result.stdout


def context(registry, turn_id, session):
    event = {"turn_id": turn_id, "session_id": session, "prompt": "a change touches one module"}
    out = dsh_hook("pre-turn", registry, event)
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_dsh_learns_then_recalls_once_per_session(tmp_path):
    registry = bound_goal(tmp_path)
    assert "<reward_memory_reflection_json>" in context(registry, "s0:1", "s0")
    stop = {"turn_id": "s0:1", "session_id": "s0", "last_assistant_message": message()}
    assert (
        json.loads(
            dsh_hook(
                "post-settlement",
                registry,
                stop,
                "--validation-command-json",
                json.dumps(VALIDATOR),
            )
        )
        == {}
    )

    assert "[memory 1]" in context(registry, "s1:1", "s1")
    assert "[memory 1]" not in context(registry, "s1:2", "s1"), "already in DSH's history"
    assert "[memory 1]" in context(registry, "s2:1", "s2")
    repo = registry.parent / "repo"
    injected = list((sidecar_root(repo) / "injected" / "dsh").glob("*.json"))
    assert len(injected) == 2 and all(p.stat().st_mode & 0o777 == 0o600 for p in injected)


@pytest.mark.parametrize("stdin", ["", "not json", "[]", json.dumps({"prompt": "no turn"})])
def test_bad_dsh_events_fail_open_and_are_logged_under_dsh(tmp_path, stdin):
    registry = bound_goal(tmp_path)
    assert dsh_hook("pre-turn", registry, stdin) == ""
    assert json.loads(dsh_hook("post-settlement", registry, stdin)) == {}
    log = json.loads((Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json").read_text())
    assert {entry["host"] for entry in log["entries"]} == {"dsh"}
    assert "no turn" not in json.dumps(log)


def install(tmp_path, *extra):
    result = run_cli(
        "install",
        "dsh",
        "--registry",
        str(tmp_path / "registry.json"),
        "--goal-id",
        f1.GOAL,
        "--agent-id",
        f1.AGENT,
        *extra,
        stdin="",
    )
    return result.returncode, json.loads(result.stdout)


def test_install_dsh_writes_one_patch_layer_idempotently_and_uninstalls_it(tmp_path):
    bound_goal(tmp_path)  # install checks the binding before it writes
    patch = tmp_path / "dsh" / "turn-hooks.patch.yml"
    argv = ("--patch-file", str(patch), "--validation-command-json", json.dumps(VALIDATOR))
    code, report = install(tmp_path, *argv)
    assert (code, report["changed"], report["host"]) == (0, True, "dsh")
    [layer] = json.loads(patch.read_text())
    [entry] = layer["insert"]
    assert entry["id"] == "turn-hooks"
    assert entry["name"] == PLUGIN_FILE.resolve().as_uri() and PLUGIN_FILE.is_file()
    assert entry["config"]["validationCommand"] == VALIDATOR
    assert Path(entry["config"]["command"][0]).is_absolute()
    assert install(tmp_path, *argv)[1]["changed"] is False
    assert install(tmp_path, *argv, "--uninstall")[1]["changed"] is True
    assert not patch.exists()
    assert str(tmp_path) not in json.dumps(report), "the report names no local path"


def test_install_dsh_refuses_bad_input_and_foreign_files(tmp_path):
    code, error = install(tmp_path)
    assert (code, error["reason_code"]) == (2, "dsh_patch_file_missing")
    # doctor too: DSH's hooks live in the patch layer, so without one there is nothing
    # to look at (an internal_error before).
    result = run_cli("doctor", "dsh", stdin="")
    error = json.loads(result.stdout)
    assert (result.returncode, error["reason_code"]) == (2, "dsh_patch_file_missing")
    foreign = tmp_path / "mine.yml"
    foreign.write_text("- id: something-else\n")
    for extra in ((), ("--uninstall",)):
        code, error = install(tmp_path, "--patch-file", str(foreign), *extra)
        assert (code, error["reason_code"]) == (2, "dsh_install_failed")
    assert foreign.read_text() == "- id: something-else\n", "nothing was lost"
    code, error = install(
        tmp_path, "--patch-file", str(tmp_path / "p.yml"), "--validation-command-json", "[1]"
    )
    assert (code, error["reason_code"]) == (2, "validation_declaration_invalid")
    assert not (tmp_path / "p.yml").exists()
