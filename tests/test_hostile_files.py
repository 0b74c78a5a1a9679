"""Files and streams a user or host names (issue 13's adversarial follow-up, items 1-2).

A registry, config, ``--input``, ``hooks.json`` or patch file could be ``/dev/zero``
(read whole, it filled memory) or a FIFO (opened, it waited for a writer for ever),
and hook stdin could be endless (``yes |`` was drained for ever). Each is now read by
the one bounded, non-blocking, regular-files-only reader in ``sidecars/files.py``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from test_hostile_input import INPUT_COMMANDS, hook_log, main
from test_store_faults import binding_args, promptly, turn_hooks
from turn_support import bound_goal

from capabilities.reward_memory.contract.config import read_config_bytes
from hosts.cli import command as cli
from sidecars import kind_problem, read_bounded, read_registry, read_source, read_stream
from turn_hooks import MAX_JSON_SIZE, InvalidInputError

ROOT = Path(__file__).parent.parent
HOOK = (sys.executable, "-m", "hosts.cli", "host")


def reason_of(call):
    with pytest.raises(InvalidInputError) as info:
        call()
    return info.value.reason_code


def fifo(path: Path) -> Path:
    os.mkfifo(path, 0o600)
    return path


def oversized(path: Path) -> Path:
    """A sparse regular file one byte over the bound: costs no disk, and no memory
    to a reader that keeps to the bound."""
    with open(path, "wb") as handle:
        handle.truncate(MAX_JSON_SIZE + 1)
    return path


# --- the reader ------------------------------------------------------------------------


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    path = fifo(tmp_path / "r.json")
    outcome = promptly(lambda: read_bounded(path, reason_prefix="registry"), path)
    assert outcome["error"].reason_code == "registry_not_regular"


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "/"], ids=["zero", "null", "dir"])
def test_devices_and_directories_are_not_regular(path):
    assert reason_of(lambda: read_bounded(path, reason_prefix="x")) == "x_not_regular"


def test_the_bound_is_exact(tmp_path):
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 10)
    assert read_bounded(exact, reason_prefix="x", limit=10) == b"x" * 10
    assert reason_of(lambda: read_bounded(exact, reason_prefix="x", limit=9)) == "x_too_large"
    big = oversized(tmp_path / "big")
    assert reason_of(lambda: read_bounded(big, reason_prefix="config")) == "config_too_large"


def test_absent_unopenable_and_invalid_paths_are_unreadable(tmp_path):
    absent = tmp_path / "absent"
    assert reason_of(lambda: read_bounded(absent, reason_prefix="x")) == "x_unreadable"
    assert read_bounded(absent, reason_prefix="x", missing=b"{}") == b"{}"
    assert reason_of(lambda: read_bounded("a\0b", reason_prefix="x")) == "x_unreadable"
    below_a_file = tmp_path / "file"
    below_a_file.write_bytes(b"")
    assert reason_of(lambda: read_bounded(below_a_file / "x", reason_prefix="x")) == "x_unreadable"


def test_a_socket_is_not_regular(tmp_path):
    import socket

    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert reason_of(lambda: read_bounded(path, reason_prefix="x")) == "x_not_regular"


def test_a_read_error_is_unreadable(tmp_path):
    # A directory opened through a link to it reads with EISDIR on some systems; a
    # real read error on a regular file is what /proc offers: a file that fails read.
    path = Path("/proc/self/mem")
    assert reason_of(lambda: read_bounded(path, reason_prefix="x")) == "x_unreadable"


def test_a_symlink_to_a_regular_file_is_followed(tmp_path):
    target = tmp_path / "target.json"
    target.write_bytes(b"{}")
    (tmp_path / "link.json").symlink_to(target)
    assert read_bounded(tmp_path / "link.json", reason_prefix="x") == b"{}"


def test_kind_problem_is_the_one_rule(tmp_path):
    (tmp_path / "f").write_bytes(b"")
    (tmp_path / "l").symlink_to(tmp_path / "f")
    assert kind_problem(os.lstat(tmp_path / "f").st_mode) is None
    assert kind_problem(os.lstat(tmp_path / "l").st_mode) == "symlink"
    assert kind_problem(os.lstat(tmp_path).st_mode) == "not_regular"
    assert kind_problem(os.lstat(tmp_path).st_mode, directory=True) is None
    assert kind_problem(os.lstat(tmp_path / "f").st_mode, directory=True) == "not_regular"


def test_a_stream_is_read_to_one_byte_over_the_bound_and_no_further():
    stream = io.BufferedReader(io.BytesIO(b" " * (MAX_JSON_SIZE + 10)))
    assert reason_of(lambda: read_stream(stream, reason_prefix="input")) == "input_too_large"
    assert len(stream.read()) == 9, "the rest is left unread"
    assert read_stream(None, reason_prefix="input") == b""
    assert read_stream(io.StringIO('"é"'), reason_prefix="input") == '"é"'.encode()
    closed = io.BytesIO(b"")
    closed.close()
    assert reason_of(lambda: read_stream(closed, reason_prefix="input")) == "input_unreadable"


def test_dash_is_stdin_and_bounded_too(monkeypatch, tmp_path):
    big = io.TextIOWrapper(io.BufferedReader(io.BytesIO(b"[" * (MAX_JSON_SIZE + 1))))
    monkeypatch.setattr(sys, "stdin", big)
    assert reason_of(lambda: read_source("-")) == "input_too_large"
    path = tmp_path / "in.json"
    path.write_bytes(b"[]")
    assert read_source(str(path)) == b"[]"


# --- every caller ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(fifo, "registry_not_regular", id="fifo"),
        pytest.param(lambda path: Path("/dev/zero"), "registry_not_regular", id="dev-zero"),
        pytest.param(oversized, "registry_too_large", id="oversized"),
    ],
)
def test_the_registry_is_read_bounded_and_without_blocking(tmp_path, make, reason):
    path = make(tmp_path / "registry.json")
    outcome = promptly(lambda: read_registry(path), path)
    assert outcome["error"].reason_code == reason
    assert "registry" in outcome["error"].message
    if reason == "registry_not_regular":
        assert "move it aside" in outcome["error"].message, "it says the way out"


def test_a_fifo_registry_is_exit_2_for_a_command_and_exit_0_for_a_hook(tmp_path):
    registry = fifo(tmp_path / "registry.json")
    result = turn_hooks("reward-memory", "recall", *binding_args(registry), "--query", "q")
    assert (result.returncode, json.loads(result.stdout)["reason_code"]) == (
        2,
        "registry_not_regular",
    )
    event = json.dumps({"turn_id": "t1", "prompt": "hi", "cwd": str(tmp_path)})
    result = turn_hooks("host", "codex-cli", "pre-turn", *binding_args(registry), stdin=event)
    assert (result.returncode, result.stdout) == (0, "")
    assert "registry_not_regular" in {entry[-1] for entry in hook_log()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["registry.json"], "nothing written"


def test_settle_pending_with_a_fifo_registry_returns(tmp_path):
    registry = fifo(tmp_path / "registry.json")
    result = turn_hooks("settle", "--pending", *binding_args(registry))
    assert result.returncode == 2, result.stdout  # a command: one typed error, at once
    assert json.loads(result.stdout)["reason_code"] == "registry_not_regular"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(fifo, "config_not_regular", id="fifo"),
        pytest.param(oversized, "config_too_large", id="big"),
    ],
)
def test_the_config_is_read_bounded_and_without_blocking(tmp_path, make, reason):
    registry = bound_goal(tmp_path)
    config = tmp_path / "repo" / f1.CONFIG_PATH
    config.unlink()
    make(config)
    outcome = promptly(lambda: read_config_bytes(tmp_path / "repo", f1.CONFIG_PATH), config)
    assert outcome["error"].reason_code == reason
    # A command that resolves the binding returns promptly and says the config is bad.
    result = turn_hooks("reward-memory", "recall", *binding_args(registry), "--query", "q")
    refused = json.loads(result.stdout)
    assert (result.returncode, refused["reason_code"]) == (2, "experiment_unavailable")
    assert "`turn-hooks init`" in json.dumps(refused), "it says how to set the config up again"


@pytest.mark.parametrize(("command", "schema"), INPUT_COMMANDS)
def test_every_input_file_refuses_a_fifo_and_a_device(
    capsys, monkeypatch, tmp_path, command, schema
):
    registry = ("--registry", str(bound_goal(tmp_path))) if command[1] == "retire" else ()
    source = fifo(tmp_path / "input.json")
    for path in (str(source), "/dev/zero"):
        outcome = promptly(
            lambda path=path: main(capsys, monkeypatch, *command, *registry, "--input", path),
            source,
        )
        code, error = outcome["value"]
        assert (code, error["schema_version"], error["reason_code"]) == (
            2,
            schema,
            "input_not_regular",
        )


def test_endless_stdin_input_is_too_large(tmp_path):
    with subprocess.Popen(["yes"], stdout=subprocess.PIPE) as endless:
        result = subprocess.run(
            [sys.executable, "-m", "hosts.cli", "dispatch", "pre-turn", "--input", "-"],
            stdin=endless.stdout,
            capture_output=True,
            check=False,
            cwd=ROOT,
            timeout=20,
        )
        endless.kill()
    assert (result.returncode, json.loads(result.stdout)["reason_code"]) == (2, "input_too_large")


def test_a_fifo_hooks_json_is_refused_before_anything_is_written(capsys, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    hooks = fifo(home / "hooks.json")
    argv = ["install", "codex", "--registry", "r.json", "--goal-id", "g", "--agent-id", "a"]
    argv += ["--codex-home", str(home), "--codex-bin", "/bin/true"]
    outcome = promptly(lambda: cli.main(argv), hooks)
    error = json.loads(capsys.readouterr().out)
    assert (outcome["value"], error["reason_code"]) == (2, "hooks_json_not_regular")
    assert sorted(p.name for p in home.iterdir()) == ["hooks.json"]


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(fifo, "patch_file_not_regular", id="fifo"),
        pytest.param(oversized, "patch_file_too_large", id="big"),
    ],
)
@pytest.mark.parametrize("uninstall", [(), ("--uninstall",)], ids=["install", "uninstall"])
def test_a_hostile_patch_file_is_refused_and_left_alone(capsys, tmp_path, make, reason, uninstall):
    patch = make(tmp_path / "patch.json")
    argv = ["install", "dsh", "--registry", "r.json", "--goal-id", "g", "--agent-id", "a"]
    argv += ["--patch-file", str(patch), *uninstall]
    outcome = promptly(lambda: cli.main(argv), patch)
    error = json.loads(capsys.readouterr().out)
    assert (outcome["value"], error["reason_code"]) == (2, reason)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patch.json"]


# --- item 2: endless hook stdin ----------------------------------------------------------


def test_endless_hook_stdin_stops_at_the_bound_and_fails_open(tmp_path):
    with subprocess.Popen(["yes"], stdout=subprocess.PIPE) as endless:
        result = subprocess.run(
            [*HOOK, "codex-cli", "pre-turn", *binding_args(tmp_path / "registry.json")],
            stdin=endless.stdout,
            capture_output=True,
            check=False,
            cwd=ROOT,
            timeout=20,
        )
        endless.kill()
    assert (result.returncode, result.stdout) == (0, b"")
    assert b"Traceback" not in result.stderr
    assert hook_log() == [("codex-cli", "pre_turn", "adapter", "hook_input_too_large")]
