"""The rank prior (utility RFC §6, Stage 3): relevance times a bounded utility modifier.

Pure and deterministic. From a projection's item subjects (:mod:`.reducer`) it
derives, per memory ref digest, one factor in ``[lower, upper]``; a recall re-ranks
the hits its search already judged relevant by ``relevance * factor``. It only
re-orders: which hits are recalled is the relevance gate's decision alone, so a
factor can neither rescue an unrelated memory nor push a relevant one out of the
result. It writes nothing anywhere (no provider write, RFC §8); the caller records
the factors it applied, by digest (:func:`modifier_record`), so a ranking can be
replayed and audited.

Only an item subject moves its memory: set-level credit is never copied into an
item (RFC §4.1), and an unattributed subject names no memory. The reducer already
lets the strongest evidence tier decide the label and the estimate; here an
``unknown`` or ``neutral`` label, the ``insufficient`` tier, a tier weighed at 0,
or too few observations behind the governing label all give exactly 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from capabilities.reward_memory.utility import observation as u

NEUTRAL = 1.0
"""The factor of a memory without (enough) evidence: its relevance alone decides."""

DEFAULT_LOWER = 0.5
"""The least a harmful memory keeps of its relevance. Halved, it ranks below every
relevant memory more than half as relevant as it (an equally relevant neutral twin
first of all), yet one that matches the query more than twice as well as anything
else still comes first: relevance stays the anchor, and a demotion goes with a
review proposal, never a deletion. (0.7 ranked the same on the development half of
``benchmarks/bench_utility_ranking.py``; the lower bound rarely binds there.)"""
DEFAULT_UPPER = 1.25
"""The most a helpful memory gains. Smaller than the demotion: lifting one memory
pushes every other relevant one down, and a lift on wrong evidence hides what the
query asked for more than a demotion on wrong evidence does (which leaves the
memory recalled, lower). A quarter lifts a helpful memory over an equally relevant
one and one up to a quarter more relevant; one more rare query word held (a share
of about half, :data:`~capabilities.providers.terms.HEAD_WEIGHT` times its rarity)
usually outweighs it. 1.5 gained 1.5 points of quality on the benchmark's
development half and was not taken (``benchmarks/RESULTS.md``, "Utility ranking")."""

DEFAULT_TIER_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "owner_correction": 1.0,
        "controlled_replay": 1.0,
        "deterministic_effect": 1.0,
        # Model inference alone is weak evidence (RFC §4.2): half the movement.
        "evaluator_inference": 0.5,
        # Lineage without attribution moves nothing, ever.
        "insufficient": 0.0,
    }
)
"""How far each governing evidence tier may move a factor towards its bound."""

DEFAULT_MIN_SUPPORT: Mapping[str, int] = MappingProxyType(
    {
        "owner_correction": 1,
        "controlled_replay": 1,
        "deterministic_effect": 1,
        # One model judgement is one noisy draw; two agreeing ones are a signal.
        "evaluator_inference": 2,
        "insufficient": 1,
    }
)
"""Observations of the governing tier and label a memory needs before it moves."""


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class RankPriorConfig:
    """The rank prior's bounds and evidence policy.

    :param lower: the least factor, for a certainly harmful memory (``0 < lower <= 1``).
    :param upper: the largest factor, for a certainly helpful memory (``upper >= 1``).
    :param tier_weights: per evidence basis, the share of the way to a bound its
        estimate may move a factor (``0`` switches the tier off); a basis left out
        weighs 0.
    :param min_support: per evidence basis, the observations of the governing label
        at that tier needed before anything moves; a basis left out needs 1.
    """

    lower: float = DEFAULT_LOWER
    upper: float = DEFAULT_UPPER
    tier_weights: Mapping[str, float] = field(default_factory=lambda: DEFAULT_TIER_WEIGHTS)
    min_support: Mapping[str, int] = field(default_factory=lambda: DEFAULT_MIN_SUPPORT)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and 0 < self.lower <= NEUTRAL):
            raise ValueError("lower must be a number in (0, 1]")
        if not (math.isfinite(self.upper) and self.upper >= NEUTRAL):
            raise ValueError("upper must be a finite number of at least 1")
        unknown = sorted((set(self.tier_weights) | set(self.min_support)) - set(u.EVIDENCE_BASES))
        if unknown:
            raise ValueError(
                f"{unknown[0]} is not an evidence basis ({', '.join(u.EVIDENCE_BASES)})"
            )
        if not all(math.isfinite(w) and 0 <= w <= 1 for w in self.tier_weights.values()):
            raise ValueError("a tier weight must be a number in [0, 1]")
        if not all(isinstance(n, int) and n >= 1 for n in self.min_support.values()):
            raise ValueError("a minimum support must be an integer of at least 1")
        # Frozen copies, so a caller's dict changed later cannot change a ranking.
        object.__setattr__(self, "tier_weights", _frozen(self.tier_weights))
        object.__setattr__(self, "min_support", _frozen(self.min_support))

    def without_inference(self) -> RankPriorConfig:
        """The same policy with evaluator inference moving nothing (RFC §4.2, §10)."""
        return RankPriorConfig(
            lower=self.lower,
            upper=self.upper,
            tier_weights={**self.tier_weights, "evaluator_inference": 0.0},
            min_support=self.min_support,
        )


DEFAULT_CONFIG = RankPriorConfig()


def item_subjects(projection: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The item subjects of a projection, by their one memory ref digest.

    A rejected projection (``ok`` false) gives none; set and unattributed subjects
    are left out, as their credit is not one memory's.
    """
    if projection.get("ok") is not True:
        return {}
    found: dict[str, Mapping[str, Any]] = {}
    for subject in projection.get("subjects") or ():
        digests: list[str] = subject.get("memory_ref_digests") or []
        if subject.get("attribution_level") == "item" and len(digests) == 1:
            found[str(digests[0])] = subject
    return found


def _support(subject: Mapping[str, Any], basis: str, label: str) -> int:
    for entry in subject.get("evidence_label_summary") or ():
        if entry.get("evidence_basis") == basis and entry.get("utility_label") == label:
            return int(entry.get("observation_count", 0))
    return 0


def modifier(subject: Mapping[str, Any] | None, config: RankPriorConfig = DEFAULT_CONFIG) -> float:
    """One memory's factor in ``[config.lower, config.upper]`` from its item subject.

    ``None`` (no observation of the memory), a subject that is not an item, an
    ``unknown`` or ``neutral`` effective label, a governing tier weighed at 0 or
    observed fewer than its minimum support: exactly :data:`NEUTRAL`. Otherwise the
    estimate (direction * confidence, in ``[-1, 1]``) times the tier's weight moves
    the factor that share of the way from 1 to the bound of its direction.
    """
    if subject is None or subject.get("attribution_level") != "item":
        return NEUTRAL
    label = subject.get("effective_utility_label")
    if label not in ("helpful", "harmful"):
        return NEUTRAL
    basis = str(subject.get("effective_evidence_basis"))
    weight = config.tier_weights.get(basis, 0.0)
    if weight <= 0 or _support(subject, basis, str(label)) < config.min_support.get(basis, 1):
        return NEUTRAL
    estimate = subject.get("utility_estimate")
    if isinstance(estimate, bool) or not isinstance(estimate, int | float):
        return NEUTRAL
    if not math.isfinite(estimate):
        return NEUTRAL
    # The label fixes the direction; a disagreeing sign is a malformed subject.
    share = min(1.0, abs(float(estimate))) * weight
    if label == "helpful" and estimate > 0:
        factor = NEUTRAL + share * (config.upper - NEUTRAL)
    elif label == "harmful" and estimate < 0:
        factor = NEUTRAL - share * (NEUTRAL - config.lower)
    else:
        return NEUTRAL
    # Rounded for a stable receipt, then clamped: rounding must not cross a bound.
    return min(config.upper, max(config.lower, round(factor, 6)))


def modifiers(
    projection: Mapping[str, Any], config: RankPriorConfig = DEFAULT_CONFIG
) -> dict[str, float]:
    """Every memory ref digest of the projection whose factor is not :data:`NEUTRAL`."""
    found = {}
    for digest, subject in item_subjects(projection).items():
        factor = modifier(subject, config)
        if factor != NEUTRAL:
            found[digest] = factor
    return found


T = TypeVar("T")


@dataclass(frozen=True)
class Ranked(Generic[T]):
    """One item after the re-rank.

    :param item: what the caller passed (a hit).
    :param digest: its memory ref digest.
    :param relevance: its relevance, ``None`` where it failed the relevance gate.
    :param modifier: the factor applied (:data:`NEUTRAL` for an item that failed it).
    :param score: ``relevance * modifier`` (for a negative relevance, ``/``, so a
        larger factor still ranks higher); ``None`` where it failed the gate.
    """

    item: T
    digest: str
    relevance: float | None
    modifier: float
    score: float | None

    @property
    def passed(self) -> bool:
        """Whether the item passed the relevance gate (and so may be recalled)."""
        return self.relevance is not None


def _score(relevance: float, factor: float) -> float:
    return relevance * factor if relevance >= 0 else relevance / factor


def rerank(
    items: Iterable[tuple[T, str, float | None]],
    factors: Mapping[str, float],
    config: RankPriorConfig = DEFAULT_CONFIG,
) -> list[Ranked[T]]:
    """Re-rank ``(item, memory ref digest, relevance)`` triples by relevance * factor.

    ``relevance`` is what the search scored, or ``None`` for an item its relevance
    gate refused. ``factors`` maps digests to factors (:func:`modifiers`); a digest
    not in it, and every factor, is clamped into the config's bounds, so no input
    moves an item further than they allow. Items that passed the gate come first,
    by descending score; ties keep the order given (a stable sort), so the result
    is a function of the input alone. Items that failed it follow in the order
    given, untouched: a factor never lifts one over any item that passed.
    """
    passed: list[tuple[float, int, Ranked[T]]] = []
    failed: list[Ranked[T]] = []
    for index, (item, digest, relevance) in enumerate(items):
        if relevance is None or not math.isfinite(relevance):
            failed.append(Ranked(item, digest, None, NEUTRAL, None))
            continue
        raw = factors.get(digest, NEUTRAL)
        factor = NEUTRAL if not math.isfinite(raw) else min(config.upper, max(config.lower, raw))
        score = _score(float(relevance), factor)
        passed.append((score, index, Ranked(item, digest, float(relevance), factor, score)))
    passed.sort(key=lambda entry: (-entry[0], entry[1]))
    return [ranked for _score_, _index, ranked in passed] + failed


def modifier_record(ranked: Sequence[Ranked[Any]]) -> list[dict[str, Any]]:
    """The recall receipt's audit of a re-rank: per recalled item, in rank order, its
    digest and the factor applied (digests only: nothing of a memory's text)."""
    return [
        {"memory_ref_digest": entry.digest, "modifier": entry.modifier}
        for entry in ranked
        if entry.passed
    ]
