"""`make demo` runs the main job end to end and prints only public receipts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from public_safety import public_safety_violations

ROOT = Path(__file__).parent.parent


def test_demo_runs_the_reward_memory_loop():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert '| status | "verified" |' in out
    assert out.count('| status | "activated" |') == 2
    assert "| deduplicated | true |" in out
    assert '| status | "applied" |' in out
    assert not public_safety_violations(out)
    assert "turn-hooks-demo-" not in out, "no temporary path is printed"
