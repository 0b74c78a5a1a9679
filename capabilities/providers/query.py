"""What a search looks for: a query's informative words, each with what counts for it.

A developer names the same thing in other words ("DB" for "database", "intermittent"
for "flaky"). Stemming joins forms of one word, never two words, so each informative
word of a query also stands for its alternatives in the synonym table
(:mod:`capabilities.providers.synonyms`). A record holding an alternative counts for
the word, :data:`SYNONYM_FACTOR` as much as holding the word itself; an alternative of
several words ("pull request" for "PR") counts only where the record holds them all,
and a phrase of the query ("pull request") stands for its alternatives ("PR") too.
One rule for the embedded store and for OpenViking's lexical re-rank, so a synonym
counts the same in both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capabilities.providers.synonyms import alternatives, phrase_alternatives
from capabilities.providers.terms import HEAD_WEIGHT, STOP_WORDS, _Stems, _words

SYNONYM_FACTOR = 0.8
"""What holding an alternative counts for, against holding the query's own word: the
record names the same thing, a little less surely (a table cannot know every sense)."""

RELEVANCE_FLOOR = 1.8
"""The relevance a record needs to be recalled (:meth:`QueryWords.relevance`): about
two rare query terms, or one in its summary or trigger and a common one. Chosen on
the development half of ``benchmarks/recall_quality.json``: each floor trades recall
for silence there (1.6: recall@5 0.80, silence 0.64; 1.8: 0.77, 0.72; 2.0: 0.74,
0.78), and 1.8 is where the trade turns (``benchmarks/RESULTS.md``)."""
RELEVANCE_COVER = 0.7
"""A record that covers this share of all the query could match also qualifies: a one-
or two-word query cannot reach the floor, but a record holding every word it has fits."""
PRIOR_RECORDS = 60
"""Records assumed absent of every term (:meth:`QueryWords.rarity`), so that among few
records no term looks common just because there are few."""

Variant = tuple[frozenset[str], float]
"""Stems a record must all hold to count for a query word, and what that counts for."""


@dataclass(frozen=True)
class QueryWords:
    """A query's informative words: for each word's stem, what a record may hold for it.

    ``variants`` maps each stem to its variants, the word itself first (``{stem}``,
    1.0), then its alternatives; ``phrases`` maps it to the texts an FTS5 query
    matches them by (quoted: the index stems them as it stemmed the records).
    """

    variants: dict[str, tuple[Variant, ...]]
    phrases: dict[str, tuple[str, ...]]

    @property
    def stems(self) -> set[str]:
        """Every stem some variant needs (what a record's text is searched for)."""
        return {s for variants in self.variants.values() for need, _f in variants for s in need}

    def held(self, weights: Mapping[str, float], head: set[str], body: set[str]) -> float:
        """The weight of the query words a text holds: each word's weight times the best
        its variants reach there, a variant all in the head :data:`HEAD_WEIGHT` times."""
        total = 0.0
        for term, weight in weights.items():
            best = 0.0
            for need, factor in self.variants.get(term, ((frozenset((term,)), 1.0),)):
                if need <= head:
                    best = max(best, factor * HEAD_WEIGHT)
                elif all(s in head or s in body for s in need):
                    best = max(best, factor)
            total += weight * best
        return total

    def rarity(
        self, frequencies: Mapping[str, int], records: int, prior: int = PRIOR_RECORDS
    ) -> dict[str, float]:
        """Each query word's rarity in ``(0, 1]``: its idf over the idf of a term no
        record has, among ``records`` records of which ``frequencies[stem]`` hold a stem,
        plus ``prior`` that hold none (:data:`PRIOR_RECORDS`).

        Relative to the count, so the floor means the same among ten records and ten
        thousand. A word no record holds weighs as its rarest known alternative, or 1
        when it has none (it still counts in how much of the query a record covers):
        "DB" where the records only say "database" weighs what "database" weighs.
        """
        total = records + prior
        top = math.log(max(total, 2))

        def rarity(need: frozenset[str]) -> float | None:
            counts = [frequencies[s] for s in need if frequencies.get(s)]
            return math.log(total / min(counts)) / top if len(counts) == len(need) else None

        weights = {}
        for term, variants in self.variants.items():
            own = rarity(variants[0][0])
            others = [w for need, _f in variants[1:] if (w := rarity(need)) is not None]
            weights[term] = own if own is not None else max(others, default=1.0)
        return weights

    def relevance(
        self, weights: Mapping[str, float], held: Sequence[tuple[set[str], set[str]]]
    ) -> list[float | None]:
        """Each text's relevance (its stems' head and whole meaning in ``held``), or
        ``None`` where it is not relevant enough to recall.

        A text's relevance is the weight of the query words it holds, in their own
        form or another (:meth:`held`). It qualifies at :data:`RELEVANCE_FLOOR`, or
        when it covers :data:`RELEVANCE_COVER` of the query's whole weight: two shared
        common words never make a text relevant. One rule for the embedded store and
        for OpenViking's candidates.
        """
        reach = HEAD_WEIGHT * sum(weights.values())
        scores = [self.held(weights, head, body) for head, body in held]
        return [
            score if score >= RELEVANCE_FLOOR or score >= RELEVANCE_COVER * reach else None
            for score in scores
        ]


def query_words(query: str, stem: _Stems, *, expand: bool = True) -> QueryWords:
    """The informative words of ``query`` (stop words dropped), stemmed, with their
    alternatives when ``expand`` (a store indexed before stemming is searched without:
    its words are unstemmed, and an alternative's stem would match nothing there)."""
    every = _words(query)
    words = [word for word in every if word not in STOP_WORDS]
    if not words:
        return QueryWords({}, {})
    own = stem.of(words)
    found = dict(alternatives(own)) if expand else {}
    # A phrase's alternative ("pr" for "pull request") stands for each of its words,
    # as a record holding the phrase holds each of them.
    for phrase, others in (phrase_alternatives(every) if expand else {}).items():
        for word in phrase:
            found[word] = (*found.get(word, ()), *others)
    spelled = sorted({w for phrases in found.values() for phrase in phrases for w in phrase})
    stems_of = stem.of(spelled) if spelled else {}
    variants: dict[str, tuple[Variant, ...]] = {}
    phrases: dict[str, tuple[str, ...]] = {}
    for word, term in own.items():
        if term in variants:
            continue  # another form of a word already taken ("test", "tests")
        mine: list[Variant] = [(frozenset((term,)), 1.0)]
        texts = [word]
        for phrase in found.get(word, ()):
            # A phrase's stop words ("out of memory") are matched by FTS5's phrase,
            # not required of a record's stems: they say nothing of its topic.
            informative = {w for w in phrase if w not in STOP_WORDS}
            need = frozenset(stems_of[w] for w in informative if w in stems_of)
            if need and len(need) == len(informative) and need != {term}:
                mine.append((need, SYNONYM_FACTOR))
                texts.append(" ".join(phrase))
        variants[term] = tuple(mine)
        phrases[term] = tuple(dict.fromkeys(texts))
    return QueryWords(variants, phrases)
