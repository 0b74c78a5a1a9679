"""Drive LoopX 2.1.1 in its own interpreter: JSON in on stdin, JSON out on stdout.

The oracle is never imported here; each call starts the oracle venv's python with a
small program that reads one JSON document and prints one.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CACHE = Path(os.environ.get("TURN_HOOKS_ORACLE_CACHE", Path.home() / ".cache" / "turn-hooks"))
ORACLE_VENV = CACHE / "oracle-venv"
ORACLE_PYTHON = ORACLE_VENV / "bin" / "python"
ORACLE_CLI = ORACLE_VENV / "bin" / "loopx"

PRELUDE = "import json, sys\nfrom pathlib import Path\nrequest = json.load(sys.stdin)\n"


def oracle_env() -> dict[str, str]:
    """The oracle's environment: no usage ping, and a throw-away HOME."""
    home = tempfile.mkdtemp(prefix="loopx-home-")
    return {**os.environ, "LOOPX_USAGE_PING": "0", "DO_NOT_TRACK": "1", "HOME": home}


def run_python(body: str, request: Any) -> Any:
    """Run ``body`` in the oracle interpreter; it must print one JSON document."""
    result = subprocess.run(
        [str(ORACLE_PYTHON), "-c", PRELUDE + body],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=oracle_env(),
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"oracle failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def run_cli(*args: str) -> tuple[int, Any]:
    """Run the oracle CLI; return its exit code and parsed JSON output."""
    result = subprocess.run(
        [str(ORACLE_CLI), *args],
        capture_output=True,
        text=True,
        env=oracle_env(),
        check=False,
        timeout=120,
    )
    return result.returncode, json.loads(result.stdout)
