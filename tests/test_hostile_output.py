"""Where output goes (issue 13's adversarial follow-up, items 4-5): a stdout that
refuses writes, and ``schema --output`` at a path that is no directory.

``turn-hooks ... > /dev/full`` ended in a traceback and exit 1, even for a host hook
that must exit 0; ``schema --output`` at a file or FIFO was an ``internal_error``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_hostile_input import BINDING, hook_log, main
from test_store_faults import promptly

from turn_hooks import schema

ROOT = Path(__file__).parent.parent


def to_dev_full(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``turn-hooks ARGS > /dev/full``, a real redirect to a device that is always full."""
    with open("/dev/full", "wb") as full:
        return subprocess.run(
            [sys.executable, "-m", "hosts.cli", *args],
            input=stdin,
            stdout=full,
            stderr=subprocess.PIPE,
            check=False,
            cwd=ROOT,
            timeout=60,
        )


# --- item 4: stdout at /dev/full -----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("plugins",), id="receipt"),
        pytest.param(("dispatch", "pre-turn", "--input", "/nonexistent"), id="typed-error"),
        pytest.param(("plugins", "--format", "nope"), id="usage-error"),
    ],
)
def test_a_command_says_why_in_one_line_and_exits_1(args):
    result = to_dev_full(*args)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [
        "turn-hooks: reason_code=output_unwritable: stdout refused"
    ]


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        pytest.param(("host", "generic", "pre-turn", *BINDING), b'{"turn_id": "t"}', id="hook"),
        pytest.param(("host", "generic", "pre-turn", "--nope"), b"", id="argument-error"),
    ],
)
def test_a_host_hook_logs_the_reason_and_exits_0(args, stdin):
    result = to_dev_full(*args, stdin=stdin)
    assert (result.returncode, b"Traceback" in result.stderr) == (0, False)
    assert hook_log()[-1] == ("generic", "pre_turn", "adapter", "hook_output_unwritable")


# --- item 5: schema --output ---------------------------------------------------------------


def schema_output(capsys, monkeypatch, path):
    return main(capsys, monkeypatch, "schema", "--output", str(path))


def test_schemas_are_written_as_regular_files_and_rewritten_in_place(capsys, monkeypatch, tmp_path):
    out = tmp_path / "schemas"
    for _ in range(2):  # the second run replaces every file
        code, document = schema_output(capsys, monkeypatch, out)
        assert (code, document["written"]) == (0, list(schema.render_schemas()))
    assert sorted(p.name for p in out.iterdir()) == sorted(schema.render_schemas()), "no temp"
    for path in out.iterdir():
        assert stat.S_IMODE(os.lstat(path).st_mode) == schema.SCHEMA_FILE_MODE
        assert path.read_text() == schema.render_schemas()[path.name]


def refused(capsys, monkeypatch, path, reason):
    code, error = schema_output(capsys, monkeypatch, path)
    assert (code, error["reason_code"], error["error"]) == (2, reason, "InvalidInputError")


def test_a_file_where_the_directory_belongs_is_refused_untouched(capsys, monkeypatch, tmp_path):
    target = tmp_path / "schemas"
    target.write_text("mine")
    refused(capsys, monkeypatch, target, "schema_output_not_directory")
    assert target.read_text() == "mine"


def test_a_fifo_where_the_directory_belongs_is_refused_promptly(capsys, monkeypatch, tmp_path):
    target = tmp_path / "schemas"
    os.mkfifo(target)
    outcome = promptly(lambda: schema_output(capsys, monkeypatch, target), target)
    code, error = outcome["value"]
    assert (code, error["reason_code"]) == (2, "schema_output_not_directory")


def test_a_symlinked_directory_is_refused(capsys, monkeypatch, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "schemas").symlink_to(tmp_path / "real")
    refused(capsys, monkeypatch, tmp_path / "schemas", "schema_output_symlink")
    assert list((tmp_path / "real").iterdir()) == []


@pytest.mark.parametrize(
    ("plant", "reason"),
    [
        pytest.param(os.mkfifo, "schema_output_not_regular", id="fifo"),
        pytest.param(os.mkdir, "schema_output_not_regular", id="directory"),
        pytest.param(
            lambda path: os.symlink("/etc/passwd", path), "schema_output_symlink", id="link"
        ),
    ],
)
def test_a_schema_path_that_is_no_regular_file_is_refused_before_any_write(
    capsys, monkeypatch, tmp_path, plant, reason
):
    out = tmp_path / "schemas"
    out.mkdir()
    last = list(schema.render_schemas())[-1]  # checked last: nothing before it written
    plant(out / last)
    refused(capsys, monkeypatch, out, reason)
    assert [p.name for p in out.iterdir()] == [last]


def test_a_file_system_refusal_is_typed(capsys, monkeypatch, tmp_path):
    (tmp_path / "file").write_text("")
    refused(capsys, monkeypatch, tmp_path / "file" / "schemas", "schema_output_unwritable")


def test_a_failed_replace_leaves_no_temp_file(capsys, monkeypatch, tmp_path):
    def full_disk(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    refused(capsys, monkeypatch, tmp_path / "schemas", "schema_output_unwritable")
    assert list((tmp_path / "schemas").iterdir()) == []


def test_check_with_a_fifo_output_reports_stale_promptly(capsys, monkeypatch, tmp_path):
    target = tmp_path / "schemas"
    os.mkfifo(target)
    outcome = promptly(
        lambda: main(capsys, monkeypatch, "schema", "--check", "--output", str(target)), target
    )
    code, document = outcome["value"]
    assert (code, document["stale"]) == (2, list(schema.render_schemas()))
    assert json.dumps(document)


def test_a_check_of_a_name_the_system_refuses_is_typed(capsys, monkeypatch, tmp_path):
    # Found by the hypothesis fuzz of every command: `schema --output <5000 digits>
    # --check` was an internal_error (OSError: File name too long).
    code, error = main(
        capsys, monkeypatch, "schema", "--output", str(tmp_path / ("9" * 5000)), "--check"
    )
    assert (code, error["reason_code"], error["error"]) == (
        2,
        "schema_output_unusable",
        "InvalidInputError",
    )
