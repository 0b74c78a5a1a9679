"""Ingest with exact readback and recall on the real OpenViking server next to the
embedded store, at 1k stored records, with provider calls counted per operation.

Needs the cached server install (`make openviking`); starts and stops it itself.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_core import percentile, recall_once  # noqa: E402
from corpus import entry, event, record_text  # noqa: E402
from fixtures import f1  # noqa: E402
from ovserver.server import start_server, stop_server  # noqa: E402
from rm_support import Recording  # noqa: E402

from capabilities.providers.client import OpenVikingSettings, ProviderClient  # noqa: E402
from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider  # noqa: E402
from capabilities.providers.openviking import OpenVikingProvider  # noqa: E402
from capabilities.reward_memory.memory.ingest import ingest_scoped_event  # noqa: E402


def seed(provider, count: int) -> list[str]:
    rng = random.Random(7)
    corpus_entry = entry()
    items = [record_text(rng, index, corpus_entry) for index in range(count)]
    if isinstance(provider, EmbeddedSqliteProvider):
        provider.write_many(items, actor_peer_id=f1.PEER)
    else:
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda item: provider.write(item[0], item[1], actor_peer_id=f1.PEER), items
                )
            )
    return [text for _uri, text in items[:: max(1, count // 40)]]


def measure(name: str, provider, count: int, recalls: int = 60, ingests: int = 20) -> dict:
    import json
    import time

    probes = seed(provider, count)
    counted = Recording(provider)
    corpus_entry = entry()
    recall_ms, recall_calls = [], []
    for index in range(recalls):
        text = probes[index % len(probes)]
        query = " ".join(json.loads(text)["content_summary"].split()[:4])
        counted.calls.clear()
        started = time.perf_counter()
        recall_once(counted, corpus_entry, query)
        recall_ms.append((time.perf_counter() - started) * 1000)
        recall_calls.append(len(counted.calls))
    rng = random.Random(13)
    ingest_ms, write_phase_calls, activated = [], [], 0
    for index in range(ingests):
        counted.calls.clear()
        started = time.perf_counter()
        receipt = ingest_scoped_event(
            event(rng, 10_000 + index),
            corpus=corpus_entry["corpus"],
            standing_policy=corpus_entry["standing_policy"],
            provider_binding=corpus_entry["provider_binding"],
            observed_at="2026-08-16T00:00:00+00:00",
            execute=True,
            provider=counted,
        )
        ingest_ms.append((time.perf_counter() - started) * 1000)
        activated += receipt["status"] == "activated"
        assert receipt["exact_readback_verified"], receipt["status"]
        first_search = counted.calls.index("search")
        write_phase_calls.append(counted.calls[:first_search])
    return {
        "name": name,
        "recall_p50": statistics.median(recall_ms),
        "recall_p95": percentile(recall_ms, 0.95),
        "recall_calls": statistics.median(recall_calls),
        "ingest_p50": statistics.median(ingest_ms),
        "ingest_p95": percentile(ingest_ms, 0.95),
        "write_calls": "+".join(write_phase_calls[0]),
        "activated": activated / ingests,
    }


def main(count: int = 1000) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        rows.append(
            measure(
                "embedded_sqlite", EmbeddedSqliteProvider(Path(scratch) / "memory.sqlite3"), count
            )
        )
    server = start_server()
    try:
        settings = OpenVikingSettings(
            url=server.url, api_key=server.key, account="ci", user="alice"
        )
        rows.append(
            measure("openviking (loopback)", OpenVikingProvider(ProviderClient(settings)), count)
        )
    finally:
        stop_server(server)
    print(f"{count:,} stored records\n")
    print(
        "| provider | recall p50 ms | recall p95 ms | provider calls per recall | "
        "ingest+readback p50 ms | ingest+readback p95 ms | calls before readback | "
        "activated |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for row in rows:
        print(
            f"| {row['name']} | {row['recall_p50']:.1f} | {row['recall_p95']:.1f} | "
            f"{row['recall_calls']:.0f} | {row['ingest_p50']:.1f} | {row['ingest_p95']:.1f} | "
            f"{row['write_calls']} | {row['activated']:.2f} |"
        )


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:]))
