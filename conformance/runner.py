"""Run the catalogue against one host and derive its coverage from what happened.

The report (``turn_hooks_host_coverage_v0``) is earned, never declared. An edge is
``connected*`` only when every *delivery* scenario for it that can run with this
driver and provider ran and passed in this run, and no scenario for it failed;
otherwise it is ``uncovered``. A *guard* scenario ("nothing was written") can take an
edge away but never vouches for one: it holds trivially when the hook is missing. A
run restricted with ``--scenario`` is ``partial``: the delivery scenarios it left out
did not run, so it cannot raise an edge they are needed for. Evidence is compact and
public-safe: counts, statuses, sizes and reason text, never content or paths.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance import HOSTS
from conformance.drivers import HostDriver, driver_for
from conformance.scenarios import (
    CATALOGUE,
    DELIVERY,
    INGEST,
    RECALL,
    Failed,
    Harness,
    Scenario,
    Skipped,
)

SCHEMA = "turn_hooks_host_coverage_v0"
CONNECTED = {RECALL: "connected", INGEST: "connected_post_settlement"}
UNCOVERED = "uncovered"
NOT_VERIFIED = "not_verified"
DEFAULT_BINARIES = {
    "codex-cli": "codex",
    "codex-app": "codex",
    "claude-code": "claude",
    "dsh": "dsh",
    "gemini": "gemini",
}
Progress = Callable[[int, int, dict[str, Any]], None]
"""Called after each scenario with (its 1-based number, the total, its row)."""


def required(edge: str, driver: HostDriver | None, provider: str) -> list[str]:
    """The delivery scenarios an edge needs with this driver and provider."""
    return [
        s.id
        for s in CATALOGUE
        if edge in s.edges
        and s.kind == DELIVERY
        and (driver is None or s.inapplicable(driver, provider) is None)
    ]


def edge_verdict(edge: str, rows: list[dict[str, Any]], needed: list[str]) -> dict[str, Any]:
    """The coverage an edge earned from these rows: its value and why.

    ``needed`` are the delivery scenarios the edge requires (:func:`required`).
    """
    mine = [row for row in rows if edge in row["edges"]]
    results = {row["scenario"]: row["result"] for row in mine}
    failed = [row["scenario"] for row in mine if row["result"] == "fail"]
    missing = [s for s in needed if s not in results]
    unproven = [s for s in needed if results.get(s, "pass") != "pass"]
    proven = [s for s in needed if results.get(s) == "pass"]
    if failed:
        reason = f"failed: {', '.join(failed)}"
    elif not needed:
        reason = "no delivery scenario for this edge can run here"
    elif missing:
        reason = f"not run in this run: {', '.join(missing)}"
    elif unproven:  # only skips are left: a skip proves nothing
        reason = f"skipped, so unproven: {', '.join(unproven)}"
    else:
        reason = f"all {len(needed)} delivery scenarios passed, no scenario failed"
    connected = bool(needed) and not failed and len(proven) == len(needed)
    return {
        "edge": edge,
        "value": CONNECTED[edge] if connected else UNCOVERED,
        "delivery_passed": f"{len(proven)}/{len(needed)}",
        "reason": reason,
    }


def edge_value(edge: str, rows: list[dict[str, Any]], needed: list[str]) -> str:
    """The coverage value an edge earned from these rows (see :func:`edge_verdict`)."""
    return str(edge_verdict(edge, rows, needed)["value"])


def _one(harness: Harness, scenario: Scenario) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scenario": scenario.id,
        "edges": list(scenario.edges),
        "kind": scenario.kind,
        "result": "pass",
        "reason": "",
        "evidence": {},
    }
    started = time.monotonic()
    try:
        evidence = dict(scenario.execute(harness))
        row["reason"] = str(evidence.pop("observed", "")) or "passed (nothing more was recorded)"
        row["evidence"] = evidence
    except Skipped as skipped:
        row.update(result="skipped", reason=skipped.reason)
    except Failed as failed:
        row.update(result="fail", reason=failed.reason, evidence=failed.evidence)
    except Exception as exc:  # a broken host or setup is a failed scenario, not a crash
        detail = str(exc) if isinstance(exc, RuntimeError) else ""
        row.update(
            result="fail",
            reason=f"the scenario could not run ({type(exc).__name__}{': ' if detail else ''}"
            f"{detail[:200]})",
        )
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
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the catalogue (or the named scenarios) against ``host``; the coverage report.

    ``binary`` is the host binary already checked by the caller (or ``None``: none).
    """
    if host not in HOSTS:
        raise ValueError(f"unknown host {host!r}")
    driver = driver_for(host, Path(binary) if binary else None)
    chosen = [s for s in CATALOGUE if not scenario_ids or s.id in scenario_ids]
    rows: list[dict[str, Any]] = []
    if driver is None:
        reason = f"no {DEFAULT_BINARIES[host]} binary: pass --binary"
        for index, s in enumerate(chosen, 1):
            rows.append(
                {
                    "scenario": s.id,
                    "edges": list(s.edges),
                    "kind": s.kind,
                    "result": "skipped",
                    "reason": reason,
                }
            )
            if progress:
                progress(index, len(chosen), rows[-1])
        verification = NOT_VERIFIED
    else:
        verification = driver.verification
        root = Path(tempfile.mkdtemp(prefix="turn-hooks-conformance-"))
        try:
            for index, scenario in enumerate(chosen):
                harness = Harness(driver, root / str(index), provider, without_events)
                rows.append(_one(harness, scenario))
                if progress:
                    progress(index + 1, len(chosen), rows[-1])
        finally:
            shutil.rmtree(root, ignore_errors=True)
    partial = len(chosen) < len(CATALOGUE)
    counts = {r: sum(row["result"] == r for row in rows) for r in ("pass", "fail", "skipped")}
    verdicts = [edge_verdict(e, rows, required(e, driver, provider)) for e in (RECALL, INGEST)]
    earned = any(v["value"] != UNCOVERED for v in verdicts)
    for verdict in verdicts:
        verdict["verification"] = verification if verdict["value"] != UNCOVERED else NOT_VERIFIED
    entry = {
        "host": host,
        "verification": verification if earned else NOT_VERIFIED,
        RECALL: verdicts[0]["value"],
        INGEST: verdicts[1]["value"],
        "passed": counts["pass"],
        "failed": counts["fail"],
        "skipped": counts["skipped"],
        "partial": partial,
        "without_events": sorted(without_events),
    }
    return {
        "ok": counts["fail"] == 0,
        "schema_version": SCHEMA,
        "provider": provider,
        "partial": partial,
        "hosts": [entry],
        "edges": [{"host": host, **v} for v in verdicts],
        "scenarios": [{"host": host, **row} for row in rows],
    }
