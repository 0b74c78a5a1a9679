"""A realistic embedded-store corpus and its queries, for tests/test_embedded_search_order.py.

The 205 memories of ``benchmarks/recall_quality.json`` (real developer wording), each
stored in the peer the recall reads, plus filler records drawn Zipf-like from the same
vocabulary, some of them in another peer's partition and in the user's shared one,
so that common terms, the OR query's match budget and the peer filter all take part.
Everything is built from fixed seeds: the same store every run.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
USER = "viking://user/alice"
PEER = "peer-a"
SCOPE = f"{USER}/peers/{PEER}/memories/goals/g/experience"
OTHER = f"{USER}/peers/peer-b/memories/goals/g/experience"
SHARED = f"{USER}/memories/goals/g/experience"
FILLERS = 2600
LIMITS = (1, 5, 15)
GOLDEN = ROOT / "tests" / "golden" / "embedded_search_order.json"
PINNED = {"prompts": 165, "no_match": 25, "trivial": 7}
"""How many prompts of each group of the quality data the golden file pins."""


def _data() -> dict:
    return json.loads((ROOT / "benchmarks" / "recall_quality.json").read_text())


def _record(summary: str, behaviour: dict[str, str], applicability: list[str]) -> str:
    experience = {"applicability": applicability, "future_behavior": behaviour}
    return json.dumps(
        {"schema_version": "x", "content_summary": summary, "experience": experience},
        sort_keys=True,
        separators=(",", ":"),
    )


def records() -> list[tuple[str, str, str]]:
    """``(uri, text, peer)`` of every record, in insertion order."""
    data = _data()
    items = []
    for memory in data["memories"]:
        behaviour = {k: memory[k] for k in ("trigger", "action", "validation", "stop_condition")}
        text = _record(memory["summary"], behaviour, [memory["trigger"]])
        items.append((f"{SCOPE}/{memory['id']}.json", text, PEER))
    words = sorted(
        {
            w
            for m in data["memories"]
            for k in ("summary", "action")
            for w in re.findall(r"[a-z]+", m[k].lower())
        }
    )
    rng = random.Random(20261201)
    rng.shuffle(words)
    weights = list(itertools.accumulate(1.0 / (rank + 1) ** 0.8 for rank in range(len(words))))

    def phrase(n: int) -> str:
        return " ".join(rng.choices(words, cum_weights=weights, k=n))

    for index in range(FILLERS):
        place, peer = ((SCOPE, PEER), (SCOPE, PEER), (OTHER, "peer-b"), (SHARED, ""))[index % 4]
        behaviour = {k: phrase(5) for k in ("trigger", "action", "validation", "stop_condition")}
        text = _record(f"{phrase(8)} case {index}", behaviour, [phrase(6)])
        items.append((f"{place}/filler-{index:05d}.json", text, peer))
    return items


def queries() -> list[str]:
    """The pinned prompts of the quality data, and a few that stress the edges."""
    data = _data()
    # The golden file was recorded with the first prompts of each group; the prompts
    # added later (a held-out half among them) are the quality benchmark's, not the pin's.
    found = [case["prompt"] for case in data["prompts"][: PINNED["prompts"]]]
    for group in ("no_match", "trivial"):
        found += [case["prompt"] for case in data[group][: PINNED[group]]]
    found += ["the", "", "case", "check", "run the check", '"quoted" AND OR NEAR(x)', "migration*"]
    return found


def search_all(store, texts: dict[str, str]) -> dict[str, list[list]]:
    """``{"limit|query": [[uri, score, summary], ...]}`` for every query and limit.

    Each hit's text must be exactly the stored text of its record (``texts``).
    """
    out = {}
    for query in queries():
        for limit in LIMITS:
            rows = store.search_read(SCOPE, query, limit=limit, actor_peer_id=PEER, timeout=30)
            assert all(text == texts[hit.uri] for hit, text in rows)
            out[f"{limit}|{query}"] = [
                [hit.uri, round(hit.score, 9), hit.summary] for hit, _ in rows
            ]
    return out
