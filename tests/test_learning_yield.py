"""The learning-yield corpus through the real Stop hook (issue 36, "Done when").

Every presentation variant a capable model writes in good faith is learned; every
must-refuse case is refused. The share is reported by
``benchmarks/bench_learning_yield.py`` (and recorded in ``benchmarks/RESULTS.md``);
here each case is pinned on its own. Not timed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_learning_yield import run_case
from learning_yield_corpus import cases

CASES = cases()


def test_the_corpus_is_large_and_varied_enough():
    assert len([case for case in CASES if case["expect"] == "learned"]) >= 40
    assert {case["expect"] for case in CASES} == {"learned", "refused"}
    assert len({case["name"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_each_reply_is_learned_or_refused_as_expected(case, tmp_path):
    result = run_case(case, tmp_path)
    assert result["exit_code"] == 0, "a Stop hook always exits 0"
    assert result["outcome"] == case["expect"], result
    if case["expect"] == "refused" and result["status"] == "reflection_rejected":
        # A refused reflection says which field broke which rule, in the local log only.
        assert any(": " in line for line in result["logged"]), result["logged"]
