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

from collections.abc import Mapping
from dataclasses import dataclass

from capabilities.providers.synonyms import alternatives, phrase_alternatives
from capabilities.providers.terms import HEAD_WEIGHT, STOP_WORDS, _Stems, _words

SYNONYM_FACTOR = 0.8
"""What holding an alternative counts for, against holding the query's own word: the
record names the same thing, a little less surely (a table cannot know every sense)."""

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
