"""Divergences the differential fuzzer found, replayed without the oracle.

Each file in ``tests/oracle/regressions/`` holds a shrunk case and LoopX 2.1.1's
answer to it, recorded by ``make oracle`` (tests/oracle/test_differential.py). Our
answer today must match it after exactly the excuse rules the file names: the
difference was fixed, or it is a deliberate one with a README row.
"""

from __future__ import annotations

import json

import pytest
from oracle.differential import REGRESSIONS, divergences, run_ours, start_ours

CASES = sorted(REGRESSIONS.glob("*.json"))


@pytest.fixture(scope="module")
def ours():
    tool = start_ours()
    yield tool
    tool.close()


def test_there_are_recorded_regressions():
    assert len(CASES) >= 5


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_our_answer_matches_the_recorded_upstream_answer(path, tmp_path, ours):
    record = json.loads(path.read_text(encoding="utf-8"))
    answer = run_ours(record["case"], tmp_path, ours)
    case = record["case"]
    classes, used = divergences(case["family"], answer, record["upstream"], case)
    assert classes == [], record["note"]
    assert set(used) <= set(record["excuses"]), (used, record["excuses"])
