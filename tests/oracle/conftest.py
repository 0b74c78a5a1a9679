"""The oracle job: LoopX 2.1.1 in a throw-away venv outside the clone (opt-in).

Run with ``make oracle``. The default test run deselects these tests (marker
``oracle``), as shared/spec/oracle.md asks: CLI calls to the oracle take seconds.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from oracle.driver import ORACLE_PYTHON, ORACLE_VENV


@pytest.fixture(scope="session", autouse=True)
def oracle_installed():
    """Create the oracle venv once per machine; fail loudly if it cannot be built."""
    if not ORACLE_PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(ORACLE_VENV)], check=True)
        subprocess.run(
            [str(ORACLE_PYTHON), "-m", "pip", "install", "--quiet", "loopx==2.1.1"], check=True
        )
    version = subprocess.run(
        [str(ORACLE_VENV / "bin" / "loopx"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "2.1.1" in version, version
