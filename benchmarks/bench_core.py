"""Reward-memory core on the embedded store: recall and ingest at 1k, 10k, 100k records.

Run with ``make bench`` (or ``python benchmarks/bench_core.py [sizes...]``). Prints a
Markdown table of p50/p95 in milliseconds and the growth from the smallest size.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from corpus import entry, event, seed

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.memory.ingest import ingest_scoped_event
from capabilities.reward_memory.memory.recall import execute_recall
from capabilities.reward_memory.memory.request import build_recall_request

CHECKPOINT = {
    "verified": True,
    "corpus_id": "experience",
    "workspace_ref": "workspace:demo",
    "project_ref": "project:demo",
    "surface_id": "agent_workflow.turn_admission",
    "read_authority": "actor_scoped",
    "source_ref": "registry:demo-goal:reward-memory",
    "peer_ref": "agent:explorer",
}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def recall_once(store: EmbeddedSqliteProvider, corpus_entry: dict, query: str) -> list[str]:
    request = {
        "workspace_ref": "workspace:demo",
        "project_ref": "project:demo",
        "peer_ref": "agent:explorer",
        "surface_id": "agent_workflow.turn_admission",
        "mode": "function_boundary",
        "queries": [{"query": query, "query_summary": "bench"}],
        "limit": 5,
        "observed_at": "2026-08-16T00:00:00+00:00",
        "conflict_state": "clear",
        "freshness_context": {"source_truth_current": True},
        "raw_content_captured": False,
    }
    packet = build_recall_request(
        corpus_entry["corpus"], request, read_authority_checkpoint=CHECKPOINT
    )
    session = execute_recall(
        packet, provider_binding=corpus_entry["provider_binding"], provider=store
    )
    return [item["candidate_ref"] for item in session.packet["results"]]


def measure(size: int, recalls: int = 200, ingests: int = 60) -> dict[str, float]:
    corpus_entry = entry()
    with tempfile.TemporaryDirectory() as scratch:
        store = EmbeddedSqliteProvider(Path(scratch) / "memory.sqlite3")
        started = time.perf_counter()
        probes = seed(store, size)
        seeded = time.perf_counter() - started
        rng = random.Random(11)
        # Each query is four words of one stored record's summary; a hit means that
        # very record is among the five results.
        targets = [
            (
                " ".join(json.loads(text)["content_summary"].split()[:4]),
                json.loads(text)["candidate_ref"],
            )
            for text in probes
        ]
        recall_ms, hits = [], 0
        for index in range(recalls):
            query, wanted = targets[index % len(targets)]
            t0 = time.perf_counter()
            found = recall_once(store, corpus_entry, query)
            recall_ms.append((time.perf_counter() - t0) * 1000)
            hits += wanted in found
        ingest_ms = []
        for index in range(ingests):
            document = event(rng, size + index)
            t0 = time.perf_counter()
            receipt = ingest_scoped_event(
                document,
                corpus=corpus_entry["corpus"],
                standing_policy=corpus_entry["standing_policy"],
                provider_binding=corpus_entry["provider_binding"],
                observed_at="2026-08-16T00:00:00+00:00",
                execute=True,
                provider=store,
            )
            ingest_ms.append((time.perf_counter() - t0) * 1000)
            assert receipt["status"] == "activated", receipt["status"]
    return {
        "size": size,
        "seed_s": seeded,
        "hit_rate": hits / recalls,
        "recall_p50": statistics.median(recall_ms),
        "recall_p95": percentile(recall_ms, 0.95),
        "ingest_p50": statistics.median(ingest_ms),
        "ingest_p95": percentile(ingest_ms, 0.95),
    }


def main(sizes: list[int]) -> None:
    rows = [measure(size) for size in sizes]
    base = rows[0]
    print(
        "| records | recall p50 ms | recall p95 ms | ingest+readback p50 ms | "
        "ingest+readback p95 ms | recall p50 vs smallest | target in top 5 | seed s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        growth = row["recall_p50"] / base["recall_p50"]
        print(
            f"| {row['size']:,} | {row['recall_p50']:.2f} | {row['recall_p95']:.2f} | "
            f"{row['ingest_p50']:.2f} | {row['ingest_p95']:.2f} | {growth:.2f}x | "
            f"{row['hit_rate']:.2f} | {row['seed_s']:.0f} |"
        )


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1_000, 10_000, 100_000])
