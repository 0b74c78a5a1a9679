"""`make demo`: one Turn through the real `turn-hooks` command, shown as receipts.

It runs the installed console script in subprocesses, as a host would: PreTurn
dispatch for a Turn whose envelope enables the built-in example plugin, then a
PostSettlement dispatch, then a sidecar round trip checked by `sidecar check`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TURN = {
    "host": "generic_cli",
    "host_turn_id": "demo-turn-0001",
    "host_session_id": "demo-session",
    "goal_id": "demo-goal",
    "agent_id": "explorer",
    "observed_at": "2026-08-15T00:00:00+00:00",
    "turn_envelope": {
        "goal_id": "demo-goal",
        "agent_id": "explorer",
        "boundary": {"capabilities": {"example_echo": True}},
    },
    "payload": {"turn_envelope": {"goal_id": "demo-goal", "agent_id": "explorer"}},
}


def run(*args: str, stdin: str | None = None) -> str:
    command = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
    assert command, "turn-hooks is not installed in this interpreter's environment"
    result = subprocess.run(
        [command, *args], input=stdin, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        sys.exit(f"turn-hooks {' '.join(args)} failed: {result.stdout}{result.stderr}")
    return result.stdout


def main() -> None:
    print("# turn-hooks kernel demo\n")
    print(run("plugins", "--format", "markdown"))
    print(run("dispatch", "pre-turn", "--format", "markdown", stdin=json.dumps(TURN)))
    settlement = {
        "host_result": {},
        "evidence": {"task_validation": {"ok": True}, "writeback": {"ok": True, "appended": True}},
    }
    print(
        run(
            "dispatch",
            "post-settlement",
            "--format",
            "markdown",
            stdin=json.dumps({"turn": TURN, "settlement": settlement}),
        )
    )
    from sidecars import SidecarStore

    with tempfile.TemporaryDirectory() as scratch:
        store = SidecarStore(Path(scratch) / ".local" / "turn-hooks")
        path = store.path("demo", "counter.json")
        for _ in range(3):
            store.update(
                path, lambda doc: {"schema_version": "demo_v0", "n": (doc or {"n": 0})["n"] + 1}
            )
        print(run("sidecar", "check", "--root", str(store.root), "--format", "markdown"))


if __name__ == "__main__":
    main()
