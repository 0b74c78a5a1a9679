"""Run the catalogue against one host and derive its coverage from what happened.

The report (``turn_hooks_host_coverage_v0``) is earned, never declared: an edge is
``connected*`` only when every scenario vouching for it passed on this host (a
scenario may be skipped only where its verification mode or provider cannot run it),
and ``uncovered`` otherwise. Evidence is compact and public-safe: counts, statuses,
sizes and reason text, never content or paths.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance import HOSTS
from conformance.drivers import driver_for
from conformance.scenarios import CATALOGUE, INGEST, RECALL, Failed, Harness, Skipped

SCHEMA = "turn_hooks_host_coverage_v0"
CONNECTED = {RECALL: "connected", INGEST: "connected_post_settlement"}
UNCOVERED = "uncovered"
DEFAULT_BINARIES = {"codex-cli": "codex", "claude-code": "claude", "dsh": "dsh"}
NO_DRIVER = {
    "codex-app": "no conformance driver for the Codex App refresh/spend path yet",
}


def edge_value(edge: str, rows: list[dict[str, Any]]) -> str:
    """The coverage an edge earned from these scenario rows."""
    mine = [row for row in rows if edge in row["edges"]]
    passed = [row for row in mine if row["result"] == "pass"]
    if passed and all(row["result"] in ("pass", "skipped") for row in mine):
        return CONNECTED[edge]
    return UNCOVERED


def _one(harness: Harness, scenario: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scenario": scenario.id,
        "edges": list(scenario.edges),
        "result": "pass",
        "reason": scenario.proves,
        "evidence": {},
    }
    started = time.monotonic()
    try:
        row["evidence"] = scenario.execute(harness)
    except Skipped as skipped:
        row.update(result="skipped", reason=skipped.reason)
    except Failed as failed:
        row.update(result="fail", reason=failed.reason, evidence=failed.evidence)
    except Exception as exc:  # a broken host or setup is a failed scenario, not a crash
        row.update(result="fail", reason=f"the scenario could not run ({type(exc).__name__})")
    finally:
        harness.close()
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def run(
    host: str,
    *,
    binary: str | None = None,
    provider: str = "embedded",
    without_events: frozenset[str] = frozenset(),
    scenario_ids: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Run the catalogue (or the named scenarios) against ``host``; the coverage report."""
    if host not in HOSTS:
        raise ValueError(f"unknown host {host!r}")
    found = binary or (shutil.which(DEFAULT_BINARIES[host]) if host in DEFAULT_BINARIES else None)
    driver = driver_for(host, Path(found) if found else None)
    chosen = [s for s in CATALOGUE if not scenario_ids or s.id in scenario_ids]
    rows: list[dict[str, Any]] = []
    if driver is None:
        reason = NO_DRIVER.get(host) or f"no {DEFAULT_BINARIES[host]} binary: pass --binary"
        rows = [
            {"scenario": s.id, "edges": list(s.edges), "result": "skipped", "reason": reason}
            for s in chosen
        ]
        verification = "not_verified"
    else:
        verification = driver.verification
        root = Path(tempfile.mkdtemp(prefix="turn-hooks-conformance-"))
        try:
            for index, scenario in enumerate(chosen):
                harness = Harness(driver, root / str(index), provider, without_events)
                rows.append(_one(harness, scenario))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    counts = {r: sum(row["result"] == r for row in rows) for r in ("pass", "fail", "skipped")}
    entry = {
        "host": host,
        "verification": verification if counts["pass"] else "not_verified",
        RECALL: edge_value(RECALL, rows),
        INGEST: edge_value(INGEST, rows),
        "passed": counts["pass"],
        "failed": counts["fail"],
        "skipped": counts["skipped"],
        "without_events": sorted(without_events),
    }
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "provider": provider,
        "hosts": [entry],
        "scenarios": [{"host": host, **row} for row in rows],
    }
