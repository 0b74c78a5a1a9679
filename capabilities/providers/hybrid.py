"""A lexical re-rank and relevance gate of a vector search's candidates, for OpenViking.

OpenViking ranks by embedding similarity alone, and always returns its nearest rows,
however far they are. An embedding of a whole record sees its boilerplate as much as
its lesson, so the record holding the prompt's own rare words is often not first,
and a prompt about nothing stored still gets the nearest records. One search asks
for more candidates than it returns (:data:`CANDIDATES`); each is kept only if it is
relevant by the embedded store's own rule
(:meth:`~capabilities.providers.query.QueryWords.relevance`): the weight of the
query's words its text holds, in their own form or another, those in its summary or
trigger counting :data:`~capabilities.providers.terms.HEAD_WEIGHT` times. A kept
candidate gains up to :data:`LEXICAL_WEIGHT` for the words it holds (weighted by
their rarity among the candidates alone, the order measured before the gate), so the
server's similarity still decides between candidates holding the same words.

The gate's weight of a word is its rarity among the candidates
(:meth:`~capabilities.providers.query.QueryWords.rarity`), since the server tells
nothing of the rest of the store. A short page is the whole scope, so the store's
own prior of absent records applies and the gate is exactly the embedded store's. A
full page is a sample of a larger store, chosen for its closeness to the prompt; the
records it leaves out are not known to lack any word, so it has no prior: measured
against exact store-wide counts (benchmarks/RESULTS.md, "OpenViking relevance gate"),
the prior only made words look rarer than they are. The gate rests on the words, not
on the similarity: the score's scale is the configured embedder's, so no floor on it
means the same on two servers.

Unless the user names one for the embedder they run (:data:`SIMILARITY_FLOOR_ENV`):
with a real embedder behind the server, its similarity is evidence of meaning, and
recall becomes the embedded store's semantic rule
(:func:`~capabilities.providers.semantic.fuse`): the server's score plus a capped
lexical share, silence when the best falls below the floor, the others kept within a
margin of the best. A floor is calibrated for one model (all-MiniLM-L6-v2's,
:data:`MINILM_FLOOR`, on the benchmark's development half); another embedder's scores
lie elsewhere, so none is assumed.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import Counter

from capabilities.providers.base import Hit
from capabilities.providers.query import PRIOR_RECORDS, QueryWords, query_words
from capabilities.providers.terms import HEAD_WEIGHT, _stemmer, held_stems

CANDIDATES = 50
"""How many rows the one search asks the server for, to re-rank. More candidates let a
lexically strong record from further down the vector ranking in; the response grows
by one abstract per row, and nothing more is read back than before."""
LEXICAL_WEIGHT = 0.5
"""What holding every query stem adds to a candidate's similarity score (cosine, 0 to 1).
Half the scale: enough to lift the record that names the prompt's rare words over
ones that are merely close in embedding space, not so much that the server's score
stops counting between candidates that hold the same words."""
SIMILARITY_FLOOR_ENV = "TURN_HOOKS_OPENVIKING_SIMILARITY_FLOOR"
"""The server's similarity, plus the lexical share, at which its best candidate is
recalled (0 to 1): set it for the embedder the server runs. Unset, empty or not a
number: the lexical gate alone (the default)."""
MINILM_FLOOR = 0.40
"""The floor calibrated for all-MiniLM-L6-v2 behind OpenViking 0.5.2 (benchmarks/
HISTORY.md, "OpenViking recall by a lesson index"); a documented value, never a
default. On the cosine's scale (:func:`server_cosine`) with the words' share, as the
embedded store's :data:`~capabilities.providers.semantic.RECALL_FLOOR`, and the same
number: the server embeds each record's lesson index entry, its plain words, as the
embedded store embeds a record. On the dev half: 94 % of no-match prompts silent
(0.39: 90 %, 0.38: 89 %). The same number holds for all-mpnet-base-v2, as on the
embedded store (blind3: 94 % silent)."""


def server_cosine(score: float) -> float:
    """The cosine similarity behind an OpenViking 0.5.2 score: its vector store reports
    a cosine ``c`` as ``(1 + c) / 2`` (measured: all-MiniLM-L6-v2's own cosines of a
    query and four stored texts, 0.70, 0.54, 0.48, 0.46, came back as 0.85, 0.77,
    0.74, 0.73). On the cosine's own scale the words' share and the margin weigh as
    on the embedded store."""
    return 2.0 * score - 1.0


def similarity_floor(environ: dict[str, str] | None = None) -> float | None:
    """The user's floor for the server's embedder (:data:`SIMILARITY_FLOOR_ENV`), or
    ``None``: unset, or not a number from 0 to 1 (then the lexical gate decides)."""
    value = (os.environ if environ is None else environ).get(SIMILARITY_FLOOR_ENV, "").strip()
    try:
        floor = float(value)
    except ValueError:
        return None
    return floor if 0.0 <= floor <= 1.0 else None


def rerank(
    query: str,
    rows: list[tuple[Hit, str]],
    *,
    sample: bool = False,
    floor: float | None = None,
) -> list[Hit]:
    """The relevant ones of ``rows`` (each hit with its text, as the server returned
    them), in hybrid order.

    ``sample`` says the server's page was full: the store holds more than ``rows``.
    A kept hit's score becomes its similarity plus its lexical share, weighted by
    the words' rarity among the candidates (a word every candidate holds tells them
    apart by nothing); ties keep the server's order. A query without an informative
    word keeps nothing, as on the embedded store.

    With a ``floor`` (:func:`similarity_floor`) the server's similarity decides
    instead, fused with the words as on the embedded store (:func:`_by_meaning`).
    """
    stem = _stemmer()
    words = query_words(query, stem)
    if not rows or not words.variants:
        return []
    held = held_stems([text for _hit, text in rows], words.stems, stem)
    frequencies = Counter(s for _head, body in held for s in body)
    rarity = words.rarity(frequencies, len(rows), 0 if sample else PRIOR_RECORDS)
    if floor is not None:
        return _by_meaning(rows, words, rarity, held, floor)
    gate = words.relevance(rarity, held)
    counts = {
        term: sum(1 for head, body in held if words.held({term: 1.0}, head, body))
        for term in words.variants
    }
    weights = {
        term: math.log((len(rows) + 1) / (count + 0.5)) for term, count in counts.items() if count
    }
    reach = HEAD_WEIGHT * sum(weights.values()) or 1.0
    ranked = [
        dataclasses.replace(
            hit, score=hit.score + LEXICAL_WEIGHT * words.held(weights, head, body) / reach
        )
        for (hit, _text), (head, body), relevance in zip(rows, held, gate, strict=True)
        if relevance is not None
    ]
    return sorted(ranked, key=lambda hit: -hit.score)


def _by_meaning(
    rows: list[tuple[Hit, str]],
    words: QueryWords,
    rarity: dict[str, float],
    held: list[tuple[set[str], set[str]]],
    floor: float,
) -> list[Hit]:
    """The candidates recalled by the server's similarity and the words together.

    Each candidate scores its cosine (:func:`server_cosine`) plus its capped lexical
    share (:func:`~capabilities.providers.semantic.fused_score`, the relevance weighed
    by rarity among the candidates); none is recalled unless the best reaches
    ``floor``, and then those within
    :data:`~capabilities.providers.semantic.KEEP_MARGIN` of it.
    """
    from capabilities.providers.semantic import KEEP_MARGIN, fused_score

    scored = [
        dataclasses.replace(
            hit, score=fused_score(words.held(rarity, head, body), server_cosine(hit.score))
        )
        for (hit, _text), (head, body) in zip(rows, held, strict=True)
    ]
    best = max(hit.score for hit in scored)
    if best < floor:
        return []
    return sorted((h for h in scored if h.score >= best - KEEP_MARGIN), key=lambda h: -h.score)
