"""The `turn-hooks` command: receipts, JSON errors with exit 2, and no tracebacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.public_safety import public_safety_violations
from hosts.cli import command as cli
from sidecars import SidecarStore

GOLDEN = Path(__file__).parent / "golden"
TURN = {
    "host": "generic_cli",
    "host_turn_id": "t-1",
    "observed_at": "2026-08-15T00:00:00+00:00",
    "turn_envelope": {
        "goal_id": "g",
        "agent_id": "a",
        "boundary": {"capabilities": {"example_echo": True}},
    },
    "payload": {"turn_envelope": {"goal_id": "g", "agent_id": "a"}},
}


ECHO = "capabilities.example_echo:plugin"


@pytest.fixture(autouse=True)
def _example_plugin(monkeypatch):
    """The example plugin is no entry point; these tests name it explicitly."""
    monkeypatch.setenv("TURN_HOOKS_PLUGINS", ECHO)


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(stdin))
    code = cli.main(list(argv))
    out = capsys.readouterr().out
    return code, out


def json_out(capsys, *argv, **kwargs):
    code, out = run(capsys, *argv, **kwargs)
    document = json.loads(out)
    assert not public_safety_violations(document), document
    return code, document


def test_plugins_lists_the_built_in_hooks(capsys):
    code, document = json_out(capsys, "plugins", "--format", "json")
    assert code == 0
    [echo] = [p for p in document["plugins"] if p["name"] == ECHO]
    assert echo["hooks"] == ["post_settlement", "pre_turn"]
    assert document["load_failures"] == []


def test_markdown_is_a_readable_table(capsys):
    code, out = run(capsys, "plugins", "--format", "markdown")
    assert code == 0
    assert out.startswith("## Loaded turn-hooks plugins\n")
    assert "| name | hooks |" in out
    # A row's nested fields follow as its own key/value section, never JSON in a cell.
    assert "#### plugins: reward_memory\n" in out and "| distribution.name | turn-hooks |" in out
    assert "{" not in out


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="no-command"),
        pytest.param(["nope"], id="unknown-command"),
        pytest.param(["plugins", "--format", "xml"], id="bad-format"),
        pytest.param(["sidecar"], id="missing-subcommand"),
    ],
)
def test_usage_errors_are_one_json_object_and_exit_2(capsys, argv):
    code, document = json_out(capsys, *argv)
    assert code == 2
    assert document["ok"] is False and document["reason_code"] == "usage_invalid"
    assert "--help`" in document["message"], "it says where to read what is right"


@pytest.mark.parametrize(
    ("argv", "named"),
    [(["--bogus"], "--bogus"), (["status", "--bogus"], "--bogus"), (["nope"], "'nope'")],
)
def test_a_usage_error_names_the_word_at_fault(capsys, argv, named):
    code, document = json_out(capsys, *argv)
    assert code == 2 and named in document["message"], document


@pytest.mark.parametrize(
    ("stdin", "reason", "field"),
    [
        pytest.param("{", "input_not_json", None, id="not-json"),
        pytest.param("[]", "schema_validation_failed", None, id="not-an-object"),
        pytest.param('{"host": "x"}', "schema_validation_failed", "host", id="bad-host"),
        pytest.param(
            json.dumps({**TURN, "extra": 1}), "schema_validation_failed", "extra", id="unknown-key"
        ),
        pytest.param(
            json.dumps({**TURN, "prompt": 3}), "schema_validation_failed", "prompt", id="wrong-type"
        ),
    ],
)
def test_bad_turn_input_is_a_typed_error(capsys, monkeypatch, stdin, reason, field):
    code, document = json_out(capsys, "dispatch", "pre-turn", stdin=stdin, monkeypatch=monkeypatch)
    assert code == 2
    assert document["reason_code"] == reason
    assert document.get("field") == field


def test_unreadable_input_file_is_a_typed_error(capsys, tmp_path):
    code, document = json_out(capsys, "dispatch", "pre-turn", "--input", str(tmp_path / "nope"))
    assert (code, document["reason_code"]) == (2, "input_unreadable")
    assert str(tmp_path) not in json.dumps(document)


def test_dispatch_pre_turn_reports_contributions_and_projection(capsys, tmp_path):
    source = tmp_path / "turn.json"
    source.write_text(json.dumps(TURN))
    code, document = json_out(capsys, "dispatch", "pre-turn", "--input", str(source))
    assert code == 0
    assert [c["hook_id"] for c in document["contributions"]] == ["example-echo.turn-context"]
    assert document["projection"]["capability_context_fields"] == ["example_echo"]
    assert document["failures"] == []


def test_dispatch_post_settlement(capsys, monkeypatch):
    settlement = {"host_result": {}, "evidence": {"writeback": {"ok": True, "appended": True}}}
    code, receipt = json_out(
        capsys,
        "dispatch",
        "post-settlement",
        stdin=json.dumps({"turn": TURN, "settlement": settlement}),
        monkeypatch=monkeypatch,
    )
    assert code == 0
    assert receipt["results"]["example-echo.settlement"]["writeback_appended"] is True


@pytest.mark.parametrize(
    "document",
    [pytest.param({"turn": TURN}, id="missing-settlement"), pytest.param([], id="not-object")],
)
def test_dispatch_post_settlement_rejects_a_bad_shape(capsys, monkeypatch, document):
    code, error = json_out(
        capsys, "dispatch", "post-settlement", stdin=json.dumps(document), monkeypatch=monkeypatch
    )
    assert (code, error["reason_code"]) == (2, "input_shape_invalid")


def test_example_plugin_stays_silent_unless_enabled(capsys, monkeypatch):
    quiet = {**TURN, "turn_envelope": {"goal_id": "g", "agent_id": "a"}}
    settlement = {"host_result": {}, "evidence": {}}
    _, document = json_out(
        capsys, "dispatch", "pre-turn", stdin=json.dumps(quiet), monkeypatch=monkeypatch
    )
    assert document["contributions"] == []
    _, receipt = json_out(
        capsys,
        "dispatch",
        "post-settlement",
        stdin=json.dumps({"turn": quiet, "settlement": settlement}),
        monkeypatch=monkeypatch,
    )
    assert receipt["results"] == {}


def test_schema_prints_writes_and_checks(capsys, tmp_path):
    code, document = json_out(capsys, "schema")
    assert code == 0 and "turn_context.json" in document["schemas"]
    code, document = json_out(capsys, "schema", "--output", str(tmp_path))
    assert code == 0 and "settlement.json" in document["written"]
    code, document = json_out(capsys, "schema", "--check", "--output", str(tmp_path))
    assert (code, document["stale"]) == (0, [])
    (tmp_path / "settlement.json").write_text("{}")
    (tmp_path / "turn_context.json").unlink()
    code, document = json_out(capsys, "schema", "--check", "--output", str(tmp_path))
    assert code == 2
    assert document["stale"] == ["turn_context.json", "settlement.json"]
    assert document["regenerate"] == "turn-hooks schema --output turn_hooks/schemas"
    code, document = json_out(capsys, "schema", "--check")
    assert code == 0, "the committed schemas are fresh"


@pytest.fixture
def sidecar_root(tmp_path):
    store = SidecarStore(tmp_path / ".local" / "turn-hooks")
    store.write(
        store.path("journal", "a.json"),
        {"schema_version": "demo_v0", "status": "pending", "reflection": "private words"},
    )
    return store


def test_sidecar_check_all_and_repair(capsys, sidecar_root):
    root = str(sidecar_root.root)
    code, document = json_out(capsys, "sidecar", "check", "--root", root)
    assert (code, document["checked_count"], document["failed_count"]) == (0, 1, 0)
    assert document["sidecars"][0]["name"] == "journal/a.json"
    path = sidecar_root.path("journal", "a.json")
    os.chmod(path, 0o644)
    code, document = json_out(capsys, "sidecar", "check", "--root", root, str(path))
    assert (code, document["sidecars"][0]["status"]) == (2, "sidecar_permission_widened")
    code, document = json_out(capsys, "sidecar", "check", "--root", root, "--repair")
    assert (code, document["sidecars"][0]["status"]) == (0, "repaired")


def test_sidecar_check_of_an_empty_root(capsys, tmp_path):
    code, document = json_out(capsys, "sidecar", "check", "--root", str(tmp_path / "none"))
    assert (code, document["checked_count"]) == (0, 0)


def test_sidecar_check_defaults_to_the_working_directory(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, document = json_out(capsys, "sidecar", "check")
    assert (code, document["checked_count"]) == (0, 0)


def test_sidecar_show_summarises_without_content(capsys, sidecar_root):
    path = str(sidecar_root.path("journal", "a.json"))
    root = str(sidecar_root.root)
    code, document = json_out(capsys, "sidecar", "show", "--root", root, path)
    assert code == 0
    assert document["status"] == "pending" and document["name"] == "journal/a.json"
    assert "private words" not in json.dumps(document)
    code, out = run(capsys, "sidecar", "show", "--root", root, "--raw", path)
    assert json.loads(out)["reflection"] == "private words"


def test_sidecar_show_of_a_missing_or_corrupt_file(capsys, sidecar_root):
    root = str(sidecar_root.root)
    code, document = json_out(
        capsys, "sidecar", "show", "--root", root, str(sidecar_root.path("journal", "missing.json"))
    )
    assert (code, document["reason_code"]) == (2, "sidecar_missing")
    path = sidecar_root.path("journal", "a.json")
    path.write_text("{broken")
    code, document = json_out(capsys, "sidecar", "show", "--root", root, str(path))
    assert (code, document["reason_code"]) == (2, "sidecar_corrupt")
    assert str(path) not in json.dumps(document), "errors never carry local paths"


def test_an_unexpected_error_is_json_without_a_traceback(capsys, monkeypatch):
    def broken(args):
        raise RuntimeError("/home/someone/secret path")

    monkeypatch.setattr(cli, "_cmd_plugins", broken)
    code, document = json_out(capsys, "plugins")
    assert code == 1
    assert document == {
        "ok": False,
        "schema_version": "turn_hooks_error_v0",
        "error": "InternalError",
        "reason_code": "internal_error",
        "message": "RuntimeError",
    }
    monkeypatch.setenv("TURN_HOOKS_DEBUG", "1")
    with pytest.raises(RuntimeError):
        cli.main(["plugins"])


def help_texts():
    parser = cli.build_parser()
    texts = {"turn-hooks": parser.format_help()}
    stack = [("turn-hooks", parser)]
    while stack:
        prefix, current = stack.pop()
        for action in current._actions:
            for name, sub in (
                getattr(action, "choices", None)
                and isinstance(action.choices, dict)
                and action.choices.items()
            ) or ():
                texts[f"{prefix} {name}"] = sub.format_help()
                stack.append((f"{prefix} {name}", sub))
    return "".join(f"=== {name}\n{text}" for name, text in sorted(texts.items()))


def test_help_matches_the_golden_file(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    golden = GOLDEN / "help.txt"
    if os.environ.get("UPDATE_GOLDEN") == "1":  # pragma: no cover - manual
        golden.write_text(help_texts(), encoding="utf-8")
    assert help_texts() == golden.read_text(encoding="utf-8"), (
        "--help changed: review it, then run `UPDATE_GOLDEN=1 pytest tests/test_cli.py -k golden`"
    )


def test_each_command_built_alone_parses_and_explains_as_in_the_whole_tree(monkeypatch):
    # A command line that starts with a core command word is parsed by that branch
    # alone (the whole tree costs a hook process milliseconds on every Turn).
    monkeypatch.setenv("COLUMNS", "100")

    def branches(parser):
        [commands] = [a for a in parser._actions if isinstance(a.choices, dict)]
        return commands.choices

    whole = branches(cli.build_parser(with_plugins=False))
    assert set(whole) == cli.CORE_COMMANDS
    for name in sorted(cli.CORE_COMMANDS):
        alone = branches(cli.build_parser(with_plugins=False, only=name))
        # Its branch, and at most the command that shares its builder (install and
        # doctor share their checks), never the whole tree.
        assert name in alone and len(alone) <= 2
        assert alone[name].format_help() == whole[name].format_help()
    argv = ["host", "generic", "pre-turn", "--goal-id", "g", "--agent-id", "a"]
    alone = cli.build_parser(with_plugins=False, only="host").parse_args(argv)
    assert vars(alone) == vars(cli.build_parser(with_plugins=False).parse_args(argv))


def test_a_prebuilt_parser_serves_one_call_only(monkeypatch, capsys):
    built = []
    real = cli.build_parser

    def counting(**kwargs):
        built.append(kwargs)
        return real(**kwargs)

    cli.prebuild()
    monkeypatch.setattr(cli, "build_parser", counting)
    bad = ["host", "generic", "pre-turn"]  # no --goal-id: a hook's own usage error
    assert cli.main(bad) == 0 and built == []
    assert cli.main(bad) == 0 and built == [{"with_plugins": False, "only": "host"}]
    assert capsys.readouterr().out == "{}\n{}\n"
    # The MCP server's branch too: parsed with the one made ahead, then made anew.
    with pytest.raises(SystemExit):
        cli.main(["mcp", "serve", "--help"])
    assert len(built) == 1
    with pytest.raises(SystemExit):
        cli.main(["mcp", "serve", "--help"])
    assert built[1:] == [{"with_plugins": False, "only": "mcp"}]
    assert capsys.readouterr().out.count("--registry") >= 2
    # An option before the command word keeps the whole core tree: its help lists all.
    with pytest.raises(SystemExit):
        cli.main(["-h", "host"])
    assert built[-1] == {"with_plugins": False}
    assert "install" in capsys.readouterr().out


def test_console_script_runs_in_a_subprocess():
    script = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
    assert script, "the console script is installed beside the interpreter"
    result = subprocess.run([script, "plugins"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and json.loads(result.stdout)["ok"] is True
    bad = subprocess.run(
        [script, "dispatch", "pre-turn"],
        input="not json",
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr + bad.stdout
    assert json.loads(bad.stdout)["reason_code"] == "input_not_json"
    helped = subprocess.run([script, "--help"], capture_output=True, text=True, check=False)
    assert helped.returncode == 0 and "usage: turn-hooks" in helped.stdout


@pytest.mark.parametrize("limit", ["0", "-1", "1001", "99999999999999999999"])
def test_settle_limit_outside_its_range_is_a_typed_error(capsys, tmp_path, limit):
    from fixtures import f1

    registry = f1.write_goal(tmp_path, f1.config())
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, error = json_out(
        capsys,
        *("settle", "--pending", "--registry", str(registry)),
        *("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--limit", limit),
    )
    assert (code, error["reason_code"]) == (2, "settle_limit_invalid")
    assert "1 and 1000" in error["message"]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_version_prints_the_installed_version_and_exits_0(capsys):
    from importlib.metadata import version

    code, out = run(capsys, "--version")
    assert code == 0
    assert out == f"turn-hooks {version('turn-hooks')}\n"
    # With a command word it is still the version, not a usage error.
    code, out = run(capsys, "--version", "status")
    assert (code, out) == (0, f"turn-hooks {version('turn-hooks')}\n")
