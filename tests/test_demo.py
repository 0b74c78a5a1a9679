"""`make demo` runs the two-Turn main job end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.public_safety import public_safety_violations

ROOT = Path(__file__).parent.parent


def test_demo_runs_the_two_turn_loop():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    turn1, turn2 = out.split("### Turn 2")
    assert "| guidance_items | 0 |" in turn1 and "| reflection_requested | true |" in turn1
    assert "| status | activated |" in turn1
    assert '| "' not in out, "text in a cell is not JSON-quoted"
    assert "| exact_readback_verified | true |" in turn1
    assert "| guidance_items | 1 |" in turn2
    assert "trigger: a change touches one module" in turn2
    assert not public_safety_violations(out)
    assert "turn-hooks-demo-" not in out, "no temporary path is printed"
