"""Synthetic active records for benchmarks: realistic size, varied vocabulary, seeded fast."""

from __future__ import annotations

import copy
import itertools
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures import f1  # noqa: E402

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider  # noqa: E402
from capabilities.providers.sync import stored_form  # noqa: E402
from capabilities.reward_memory.contract.candidate import (  # noqa: E402
    build_active_record,
    build_candidate,
    normalise_event,
)
from capabilities.reward_memory.contract.config import normalise_config  # noqa: E402
from capabilities.reward_memory.contract.identities import (  # noqa: E402
    STANDING_POLICY_REASONING,
    record_body,
    review_ref,
    target_uri,
)

SYLLABLES = [c + v for c in "bcdfgklmnprstvz" for v in "aeiou"]
WORDS = [a + b + c for a in SYLLABLES[:40] for b in SYLLABLES[:25] for c in SYLLABLES[:20]]
"""20,000 synthetic words, drawn Zipf-like: natural text reuses a few words a lot
and most words rarely, which is what decides how many records a query touches."""
CUMULATIVE = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(WORDS))))


def entry() -> dict[str, Any]:
    """The embedded-store F1 corpus entry."""
    return normalise_config(f1.config("embedded_sqlite"))["corpora"]["experience"]


def phrase(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, cum_weights=CUMULATIVE, k=n))


def event(rng: random.Random, index: int) -> dict[str, Any]:
    """A valid F1-shaped event with its own vocabulary."""
    document = f1.event()
    document["content_summary"] = f"{phrase(rng, 8)} case {index}"
    experience = copy.deepcopy(document["experience"])
    experience["applicability"] = [phrase(rng, 6)]
    experience["future_behavior"] = {key: phrase(rng, 5) for key in experience["future_behavior"]}
    document["experience"] = experience
    return document


def record_text(rng: random.Random, index: int, corpus_entry: dict[str, Any]) -> tuple[str, str]:
    """(uri, stored text) of one synthetic active record."""
    packet = build_candidate(normalise_event(event(rng, index)))
    candidate = packet["candidate"]
    policy = corpus_entry["standing_policy"]
    review = {
        "reviewer_ref": policy["reviewer_ref"],
        "review_ref": review_ref(policy["policy_id"], candidate["candidate_ref"]),
        "reasoning_summary": STANDING_POLICY_REASONING,
    }
    record = build_active_record(candidate, corpus_entry["corpus"], review, f1.OBSERVED_AT)
    uri = target_uri(
        corpus_entry["provider_binding"]["scope_ref"],
        policy["policy_id"],
        candidate["candidate_ref"],
    )
    return uri, stored_form(record_body(record))


def seed(store: EmbeddedSqliteProvider, count: int, *, seed_value: int = 7) -> list[str]:
    """Insert ``count`` records in one transaction; return every 50th stored text."""
    rng = random.Random(seed_value)
    corpus_entry = entry()
    items, probes = [], []
    for index in range(count):
        uri, text = record_text(rng, index, corpus_entry)
        items.append((uri, text))
        if index % max(1, count // 50) == 0:
            probes.append(text)
    store.write_many(items, actor_peer_id=f1.PEER, timeout=600)
    return probes
