"""The rank prior: bounded factors from real projections, and a re-rank that only re-orders."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capabilities.reward_memory.utility import rank_prior as rp
from capabilities.reward_memory.utility.reducer import project
from tests.utility_cases import obs, projection_input

MEMORY = "34e0a8c2c217e248"
OTHER = "0123456789abcdef"


def _observation(n: int, **changes: Any) -> dict[str, Any]:
    """An observation of its own outcome ``n`` (a distinct id, a later instant)."""
    fields: dict[str, Any] = {
        "outcome_ref": f"outcome:turn-{n:04d}",
        "created_at": f"2026-08-16T00:00:{n:02d}Z",
        **changes,
    }
    return obs(**fields)


def _subject(*observations: dict[str, Any]) -> dict[str, Any]:
    projection = project(projection_input(*observations))
    assert projection["ok"] is True
    return rp.item_subjects(projection)[MEMORY]


INFERENCE = {
    "evidence_basis": "evaluator_inference",
    "evaluator_ref": "evaluator:reference",
    "reason_codes": ["evaluator_judged"],
}


def test_no_observation_is_neutral() -> None:
    assert rp.modifier(None) == rp.NEUTRAL
    assert rp.modifiers(project(projection_input())) == {}


def test_owner_correction_moves_to_its_share_of_the_bounds() -> None:
    helpful = _subject(_observation(1, confidence=1.0))
    harmful = _subject(_observation(1, utility_label="harmful", confidence=1.0))
    partly = _subject(_observation(1, utility_label="harmful", confidence=0.5))
    assert rp.modifier(helpful) == rp.DEFAULT_UPPER
    assert rp.modifier(harmful) == rp.DEFAULT_LOWER
    assert rp.modifier(partly) == pytest.approx(1 - 0.5 * (1 - rp.DEFAULT_LOWER))


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"utility_label": "neutral"}, id="neutral"),
        pytest.param({"utility_label": "unknown"}, id="unknown"),
        pytest.param(
            {
                "utility_label": "unknown",
                "evidence_basis": "insufficient",
                "evidence_refs": [],
                "reason_codes": ["attribution_not_established"],
            },
            id="insufficient",
        ),
    ],
)
def test_no_direction_moves_nothing(changes: dict[str, Any]) -> None:
    assert rp.modifier(_subject(_observation(1, **changes))) == rp.NEUTRAL


def test_unknown_at_the_strongest_tier_blocks_weaker_direction() -> None:
    subject = _subject(
        _observation(1, utility_label="unknown"),
        _observation(2, utility_label="harmful", confidence=0.9, **INFERENCE),
        _observation(3, utility_label="harmful", confidence=0.9, **INFERENCE),
    )
    assert subject["effective_utility_label"] == "unknown"
    assert rp.modifier(subject) == rp.NEUTRAL


def test_same_tier_conflict_moves_nothing() -> None:
    subject = _subject(_observation(1), _observation(2, utility_label="harmful"))
    assert subject["review"]["state"] == "conflict"
    assert rp.modifier(subject) == rp.NEUTRAL


def test_inference_needs_its_minimum_support_and_moves_half() -> None:
    one = _subject(_observation(1, utility_label="harmful", confidence=1.0, **INFERENCE))
    two = _subject(
        _observation(1, utility_label="harmful", confidence=1.0, **INFERENCE),
        _observation(2, utility_label="harmful", confidence=1.0, **INFERENCE),
    )
    assert rp.modifier(one) == rp.NEUTRAL
    assert rp.modifier(two) == pytest.approx(1 - 0.5 * (1 - rp.DEFAULT_LOWER))
    assert rp.modifier(two, rp.DEFAULT_CONFIG.without_inference()) == rp.NEUTRAL


def test_an_owner_correction_outranks_any_number_of_inferences() -> None:
    inferred = [
        _observation(n, utility_label="helpful", confidence=1.0, **INFERENCE) for n in range(1, 9)
    ]
    corrected = _subject(*inferred, _observation(9, utility_label="harmful", confidence=1.0))
    assert rp.modifier(corrected) == rp.DEFAULT_LOWER
    assert rp.modifier(corrected, rp.DEFAULT_CONFIG.without_inference()) == rp.DEFAULT_LOWER


def test_set_level_credit_never_reaches_an_item() -> None:
    as_set = obs(attribution_level="set", memory_ref_digests=sorted([MEMORY, OTHER]))
    projection = project(projection_input(as_set))
    assert projection["ok"] is True
    assert rp.item_subjects(projection) == {}
    assert rp.modifiers(projection) == {}


def test_a_rejected_projection_gives_no_factor() -> None:
    foreign = obs(retrieval_snapshot_ref="snapshot:other")
    projection = project(projection_input(foreign))
    assert projection["ok"] is False
    assert rp.modifiers(projection) == {}


def test_modifiers_lists_only_what_moves() -> None:
    moved = _observation(1, utility_label="harmful", confidence=1.0)
    still = _observation(2, memory_ref_digests=[OTHER], utility_label="neutral")
    assert rp.modifiers(project(projection_input(moved, still))) == {MEMORY: rp.DEFAULT_LOWER}


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"lower": 0.0}, id="lower-zero"),
        pytest.param({"lower": 1.1}, id="lower-above-one"),
        pytest.param({"upper": 0.9}, id="upper-below-one"),
        pytest.param({"upper": math.inf}, id="upper-infinite"),
        pytest.param({"tier_weights": {"hunch": 1.0}}, id="unknown-basis"),
        pytest.param({"tier_weights": {"owner_correction": 2.0}}, id="weight-above-one"),
        pytest.param({"min_support": {"owner_correction": 0}}, id="support-zero"),
    ],
)
def test_a_config_out_of_its_range_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"must|is not"):
        rp.RankPriorConfig(**kwargs)


def test_rerank_reorders_only_the_relevant_and_records_its_factors() -> None:
    items = [
        ("a", "aaaaaaaaaaaaaaaa", 3.0),
        ("b", "bbbbbbbbbbbbbbbb", 3.0),
        ("c", "cccccccccccccccc", None),
        ("d", "dddddddddddddddd", 2.0),
    ]
    factors = {"aaaaaaaaaaaaaaaa": 0.5, "dddddddddddddddd": 1.25, "cccccccccccccccc": 1.25}
    ranked = rp.rerank(items, factors)
    assert [r.item for r in ranked] == ["b", "d", "a", "c"]
    assert ranked[-1].passed is False
    assert ranked[-1].modifier == rp.NEUTRAL
    assert rp.modifier_record(ranked) == [
        {"memory_ref_digest": "bbbbbbbbbbbbbbbb", "modifier": 1.0},
        {"memory_ref_digest": "dddddddddddddddd", "modifier": 1.25},
        {"memory_ref_digest": "aaaaaaaaaaaaaaaa", "modifier": 0.5},
    ]


def test_rerank_clamps_a_factor_given_out_of_bounds() -> None:
    ranked = rp.rerank([("a", "a" * 16, 2.0)], {"a" * 16: 40.0})
    assert ranked[0].modifier == rp.DEFAULT_UPPER
    assert ranked[0].score == pytest.approx(2.0 * rp.DEFAULT_UPPER)


def test_a_negative_relevance_still_ranks_a_larger_factor_higher() -> None:
    ranked = rp.rerank([("a", "a" * 16, -0.2), ("b", "b" * 16, -0.2)], {"b" * 16: 1.25})
    assert [r.item for r in ranked] == ["b", "a"]


_DIGESTS = [f"{n:016x}" for n in range(8)]
_relevance = st.one_of(st.none(), st.floats(min_value=0.0, max_value=50.0))
_items = st.lists(st.tuples(st.sampled_from(_DIGESTS), _relevance), max_size=8)
_factors = st.dictionaries(
    st.sampled_from(_DIGESTS),
    st.one_of(st.floats(min_value=-10, max_value=10), st.sampled_from([math.nan, math.inf])),
)
_configs = st.builds(
    rp.RankPriorConfig,
    lower=st.floats(min_value=0.05, max_value=1.0),
    upper=st.floats(min_value=1.0, max_value=4.0),
)


@given(_items, _factors, _configs)
def test_rerank_never_rescues_never_drops_and_stays_in_bounds(
    pairs: list[tuple[str, float | None]], factors: dict[str, float], config: rp.RankPriorConfig
) -> None:
    items = [(index, digest, relevance) for index, (digest, relevance) in enumerate(pairs)]
    ranked = rp.rerank(items, factors, config)
    # The same items, each once: nothing dropped, nothing added.
    assert sorted(r.item for r in ranked) == list(range(len(items)))
    passed = [r.passed for r in ranked]
    # Every item that passed the gate precedes every item that failed it.
    assert passed == sorted(passed, reverse=True)
    assert [r.item for r in ranked if not r.passed] == [
        i for i, _d, relevance in items if relevance is None
    ]
    for r in ranked:
        assert config.lower <= r.modifier <= config.upper
        if not r.passed:
            assert r.modifier == rp.NEUTRAL
    scores = [r.score for r in ranked if r.passed]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]  # passed: floats
    # Deterministic, and ties keep the order given.
    assert rp.rerank(items, factors, config) == ranked
    for first, second in itertools.pairwise(ranked):
        if first.passed and second.passed and first.score == second.score:
            assert first.item < second.item


@given(_items, _configs)
def test_neutral_factors_keep_the_relevance_order(
    pairs: list[tuple[str, float | None]], config: rp.RankPriorConfig
) -> None:
    items = [(index, digest, relevance) for index, (digest, relevance) in enumerate(pairs)]
    ranked = rp.rerank(items, {}, config)
    expected = sorted(
        (i for i, _d, r in items if r is not None), key=lambda i: (-(items[i][2] or 0.0), i)
    )
    assert [r.item for r in ranked if r.passed] == expected


@given(
    st.sampled_from(["helpful", "harmful", "neutral", "unknown"]),
    st.sampled_from(["owner_correction", "deterministic_effect", "evaluator_inference"]),
    st.floats(min_value=-1.0, max_value=1.0),
    st.integers(min_value=0, max_value=5),
    _configs,
)
def test_a_modifier_stays_in_bounds_and_only_directions_move(
    label: str, basis: str, estimate: float, support: int, config: rp.RankPriorConfig
) -> None:
    subject = {
        "attribution_level": "item",
        "memory_ref_digests": [MEMORY],
        "effective_utility_label": label,
        "effective_evidence_basis": basis,
        "utility_estimate": estimate,
        "evidence_label_summary": [
            {"evidence_basis": basis, "utility_label": label, "observation_count": support}
        ],
    }
    factor = rp.modifier(subject, config)
    assert config.lower <= factor <= config.upper
    if label in ("neutral", "unknown") or support < config.min_support[basis]:
        assert factor == rp.NEUTRAL
    if label == "helpful":
        assert factor >= rp.NEUTRAL
    if label == "harmful":
        assert factor <= rp.NEUTRAL
