"""The rank prior in a Turn's recall: our re-rank.

Off by default. ``turn-hooks init --ranking utility`` switches a binding to
``relevance * bounded modifier`` (:mod:`capabilities.reward_memory.utility.rank_prior`),
``--ranking relevance`` back; the choice is one of the binding's settings
(:mod:`capabilities.reward_memory.turn.settings`). PreTurn imports this module only
for a binding that ranks by utility: it pulls in the ledger and the rank prior.

The re-rank wraps the provider (:class:`UtilityRanked`): both stores, the embedded one
and OpenViking, answer a search with hits that already passed their relevance floor,
best first, with a score. Only those hits are re-ordered, by score * factor; nothing
below the floor is ever seen here, so nothing is rescued, and every hit found is kept,
so nothing relevant is dropped. Lifecycle, scope and expiry filters run after, as
ever. No provider write: the factors come from the binding's own utility projection
(RFC §8). Every re-rank is recorded by digest (:func:`modifier_record`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capabilities.reward_memory.contract.identities import memory_ref_digest
from capabilities.reward_memory.turn.application import snapshot_refs
from capabilities.reward_memory.utility.ledger import Ledger, utility_context
from capabilities.reward_memory.utility.rank_prior import (
    DEFAULT_CONFIG,
    modifier_record,
    modifiers,
    rerank,
)
from sidecars import SidecarStore
from turn_hooks import SidecarError


def rank_factors(
    store: SidecarStore,
    *,
    goal_id: str,
    agent_id: str,
    config: dict[str, Any],
    surface_id: str,
) -> dict[str, float]:
    """The non-neutral factors of every memory of the surface's corpora, by digest.

    Each corpus's factors come from its own projection: a digest names one raw ref,
    which lives in one corpus, so no factor crosses a corpus, Agent or Goal.
    """
    factors: dict[str, float] = {}
    for corpus_id in config["surfaces"][surface_id]["corpus_ids"]:
        context = utility_context(
            goal_id=goal_id,
            agent_id=agent_id,
            corpus_id=corpus_id,
            surface_id=surface_id,
            **snapshot_refs(config["corpora"][corpus_id], corpus_id),
        )
        try:
            projection = Ledger(store, goal_id, agent_id, context).projection()
        except SidecarError:
            continue  # fail open: an unreadable projection ranks by relevance
        if projection is not None:
            factors.update(modifiers(projection, DEFAULT_CONFIG))
    return factors


class UtilityRanked:
    """A provider whose search hits come re-ranked by relevance * factor.

    Every other call is the provider's. ``audit`` receives, per search, each hit's
    digest and the factor it carried (:func:`modifier_record`).
    """

    def __init__(
        self, provider: Any, factors: dict[str, float], audit: list[dict[str, Any]]
    ) -> None:
        self._provider = provider
        self._factors = factors
        self._audit = audit

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._provider, name)
        if name == "search":
            return self._ranked(attribute, lambda hit: hit)
        if name == "search_read":
            return self._ranked(attribute, lambda pair: pair[0])
        return attribute

    def _ranked(self, search: Callable[..., Any], hit_of: Callable[[Any], Any]) -> Any:
        def ranked_search(*args: Any, **options: Any) -> list[Any]:
            found = list(search(*args, **options))
            order = rerank(
                ((item, memory_ref_digest(hit_of(item).uri), hit_of(item).score) for item in found),
                self._factors,
                DEFAULT_CONFIG,
            )
            self._audit.extend(modifier_record(order))
            return [entry.item for entry in order]

        return ranked_search


def ranked_provider_for(
    provider_for: Callable[[dict[str, Any]], Any],
    factors: dict[str, float],
    audit: list[dict[str, Any]],
) -> Callable[[dict[str, Any]], Any]:
    """``provider_for`` whose providers re-rank by ``factors``."""
    return lambda binding: UtilityRanked(provider_for(binding), factors, audit)
