"""Every catalogue scenario as one test, run against the ``turn_hooks_host`` fixture.

Collected only when a maintainer asks for it (``--pyargs conformance`` with
``-p conformance.plugin``); see conformance/plugin.py.
"""

from __future__ import annotations

import json

import pytest

from conformance.scenarios import CATALOGUE, Failed, Harness, Scenario, Skipped


@pytest.mark.parametrize("scenario", CATALOGUE, ids=[s.id for s in CATALOGUE])
def test_scenario(scenario: Scenario, turn_hooks_harness: Harness) -> None:
    """The scenario holds on this host (skipped only where its mode cannot show it)."""
    try:
        evidence = scenario.execute(turn_hooks_harness)
    except Skipped as skipped:
        pytest.skip(skipped.reason)
    except Failed as failed:
        pytest.fail(f"{scenario.id}: {failed.reason} {json.dumps(failed.evidence)}")
    assert isinstance(evidence, dict)
