"""The opt-in pytest plugin: point the conformance scenarios at your own host adapter.

Run it with ``pytest -p conformance.plugin -p <your fixture module> --pyargs
conformance``. Your module provides one fixture, ``turn_hooks_host``, returning a
:class:`conformance.drivers.HostDriver` for your host (one of ours, or your own
subclass that installs your hooks and runs one Turn). Each catalogue scenario becomes
one test; ``--turn-hooks-provider`` picks the store the scratch Goal uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.scenarios import Harness


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--turn-hooks-provider`` and ``--turn-hooks-without-event``."""
    group = parser.getgroup("turn-hooks", "turn-hooks host conformance")
    group.addoption(
        "--turn-hooks-provider",
        choices=("embedded", "openviking"),
        default="embedded",
        help="the store of the scratch Goal (openviking reads OPENVIKING_* settings)",
    )
    group.addoption(
        "--turn-hooks-without-event",
        action="append",
        default=[],
        metavar="EVENT",
        help="leave this host event out of the install",
    )


@pytest.fixture
def turn_hooks_harness(
    turn_hooks_host: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Harness]:
    """Scratch Goals and your driver for one scenario."""
    harness = Harness(
        turn_hooks_host,
        tmp_path,
        request.config.getoption("--turn-hooks-provider"),
        frozenset(request.config.getoption("--turn-hooks-without-event")),
    )
    try:
        yield harness
    finally:
        harness.close()
