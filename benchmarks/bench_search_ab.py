"""Recall on one embedded store, two source trees alternated: the same results, for less?

    python benchmarks/bench_search_ab.py BEFORE_DIR AFTER_DIR STORE [records] [rounds]

``STORE`` is a directory (0700) that holds or will hold ``memory.sqlite3``; a missing
store is seeded with ``records`` synthetic records first (``corpus.seed``, 100,000 by
default; that takes minutes, so keep the directory for the next run). Each round
runs one process per tree, before then after, with ``PYTHONPATH`` at the tree. Each
process recalls 600 times (200 queries, each four words of one stored record's
summary, as ``bench_core.py`` asks them) and reports the wall p50, the CPU per
recall, how often the query's own record came back, and a digest of every result
list. Both trees must return the very same lists, or the script says so and exits 1:
a faster search that changes what a query returns is not this benchmark's to judge
(``bench_recall_quality.py`` is). With ``--changes-ok`` (a change meant to change
results, such as one for stores larger than that benchmark's) it counts the queries
whose results changed and exits 0; the hit rates then say which side found more.

    python benchmarks/bench_search_ab.py --changes-ok BEFORE_DIR AFTER_DIR STORE
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import hashlib, json, sqlite3, sys, time
sys.path.insert(0, sys.argv[1] + "/benchmarks")
sys.path.insert(0, sys.argv[1] + "/tests")
from pathlib import Path
import bench_core
from corpus import entry, seed
from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider

database = Path(sys.argv[2]) / "memory.sqlite3"
store = EmbeddedSqliteProvider(database)
if not database.exists():
    seed(store, int(sys.argv[3]))
with sqlite3.connect(database) as connection:
    probes = [
        json.loads(row[0])
        for row in connection.execute("SELECT content FROM records WHERE rowid % 97 = 3 LIMIT 200")
    ]
targets = [(" ".join(p["content_summary"].split()[:4]), p["candidate_ref"]) for p in probes]
corpus_entry = entry()
for query, _ in targets[:20]:  # warm-up: imports, the stemmer, the page cache
    bench_core.recall_once(store, corpus_entry, query)
walls, hits, digest, lists = [], 0, hashlib.sha256(), []
cpu = time.process_time()
for index in range(600):
    query, wanted = targets[index % len(targets)]
    started = time.perf_counter()
    found = bench_core.recall_once(store, corpus_entry, query)
    walls.append(time.perf_counter() - started)
    hits += wanted in found
    digest.update(json.dumps(found).encode())
    if index < len(targets):
        lists.append(hashlib.sha256(json.dumps(found).encode()).hexdigest()[:16])
walls.sort()
import capabilities
print(json.dumps({
    "tree": capabilities.__file__,
    "p50_ms": walls[len(walls) // 2] * 1000,
    "p95_ms": walls[int(len(walls) * 0.95)] * 1000,
    "max_ms": walls[-1] * 1000,
    "cpu_ms": (time.process_time() - cpu) / len(walls) * 1000,
    "hit_rate": hits / len(walls),
    "digest": digest.hexdigest(),
    "lists": lists,
}))
"""


def run(tree: Path, store: Path, records: int) -> dict[str, float | str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), str(store), str(records)],
        env=env,
        cwd=tree,  # ``-c`` puts the working directory first on the path
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.splitlines()[-1])


def main(
    before: Path,
    after: Path,
    store: Path,
    records: int = 100_000,
    rounds: int = 3,
    *,
    changes_ok: bool = False,
) -> int:
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(store, 0o700)
    rows: dict[str, list[dict[str, float | str]]] = {"before": [], "after": []}
    for index in range(rounds):
        for side, tree in (("before", before), ("after", after)):
            rows[side].append(run(tree, store, records))
            shown = {key: value for key, value in rows[side][-1].items() if key != "lists"}
            print(f"round {index + 1} {side}: {shown}", file=sys.stderr)
    digests = {str(row["digest"]) for side in rows.values() for row in side}
    print(
        "| tree | recall p50 ms (each round) | median | p95 ms | max ms "
        "| CPU ms per recall | target in top 5 |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    medians = {}
    for side, samples in rows.items():
        p50s = [float(row["p50_ms"]) for row in samples]
        medians[side] = statistics.median(p50s)
        cpu = statistics.median(float(row["cpu_ms"]) for row in samples)
        p95 = statistics.median(float(row["p95_ms"]) for row in samples)
        worst = statistics.median(float(row["max_ms"]) for row in samples)
        print(
            f"| {side} | {', '.join(f'{p:.2f}' for p in p50s)} | {medians[side]:.2f} "
            f"| {p95:.2f} | {worst:.1f} | {cpu:.2f} | {samples[0]['hit_rate']:.2f} |"
        )
    print(f"\nafter / before (median p50): {medians['after'] / medians['before']:.2f}")
    if len(digests) != 1:
        pairs = zip(rows["before"][0]["lists"], rows["after"][0]["lists"], strict=True)
        changed = sum(old != new for old, new in pairs)
        queries = len(rows["before"][0]["lists"])
        print(f"the two trees returned different results for {changed} of {queries} queries")
        return 0 if changes_ok else 1
    print("both trees returned the same results for every query")
    return 0


if __name__ == "__main__":
    arguments = [arg for arg in sys.argv[1:] if arg != "--changes-ok"]
    if len(arguments) < 3:
        raise SystemExit(__doc__)
    sys.exit(
        main(
            Path(arguments[0]).resolve(),
            Path(arguments[1]).resolve(),
            Path(arguments[2]),
            *(int(arg) for arg in arguments[3:]),
            changes_ok="--changes-ok" in sys.argv[1:],
        )
    )
