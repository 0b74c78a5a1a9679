"""A lexical re-rank of a vector search's candidates: hybrid ranking for OpenViking.

OpenViking ranks by embedding similarity alone. An embedding of a whole record sees
its boilerplate as much as its lesson, so the record holding the prompt's own rare
words is often not first. One search asks for more candidates than it returns
(:data:`CANDIDATES`); each gains up to :data:`LEXICAL_WEIGHT` for the query's words
its text holds, in their own form or another (:mod:`capabilities.providers.query`,
as the embedded store searches), weighted
by their rarity among the candidates, those in its summary or trigger counting
:data:`~capabilities.providers.terms.HEAD_WEIGHT` times. The server's
similarity still decides between candidates with the same words, and a candidate with
none of them can still win on meaning (a synonym).
"""

from __future__ import annotations

import dataclasses
import math

from capabilities.providers.base import Hit
from capabilities.providers.query import query_words
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


def rerank(query: str, rows: list[tuple[Hit, str]]) -> list[Hit]:
    """``rows`` (each hit with its text, as the server returned them) in hybrid order.

    A hit's score becomes its similarity plus its lexical share; ties keep the
    server's order. Without a query stem any candidate holds, the order is the server's.
    """
    stem = _stemmer()
    words = query_words(query, stem)
    held = held_stems([text for _hit, text in rows], words.stems, stem)
    counts = {
        term: sum(1 for head, body in held if words.held({term: 1.0}, head, body))
        for term in words.variants
    }
    # Rarity among the candidates: a word every candidate holds tells them apart by nothing.
    weights = {
        term: math.log((len(rows) + 1) / (count + 0.5)) for term, count in counts.items() if count
    }
    reach = HEAD_WEIGHT * sum(weights.values())
    if not reach:
        return [hit for hit, _text in rows]
    ranked = []
    for (hit, _text), (head, body) in zip(rows, held, strict=True):
        share = words.held(weights, head, body)
        ranked.append(dataclasses.replace(hit, score=hit.score + LEXICAL_WEIGHT * share / reach))
    return sorted(ranked, key=lambda hit: -hit.score)
