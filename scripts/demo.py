"""`make demo`: the reward-memory main job on the embedded store, shown as receipts.

It builds a throw-away Goal repository with the example config in scripts/demo/,
then drives the installed `turn-hooks` command exactly as an operator would:
status → configure (preview, then canary write + exact readback) → ingest an event
twice (activated, then deduplicated) → recall it → the PreTurn dispatch of the
example plugin. Everything runs offline; nothing is left behind.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "demo"
GOAL, AGENT = "demo-goal", "explorer"
CONFIG_PATH = ".turn-hooks/reward-memory/experiment.json"


def turn_hooks(*args: str, stdin: str | None = None) -> dict:
    command = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
    assert command, "turn-hooks is not installed beside this interpreter"
    result = subprocess.run(
        [command, *args], input=stdin, capture_output=True, text=True, check=False
    )
    document = json.loads(result.stdout)
    if result.returncode != 0:
        sys.exit(f"turn-hooks {args[0]} {args[1] if len(args) > 1 else ''} failed: {document}")
    return document


def show(title: str, document: dict, keys: list[str]) -> None:
    print(f"### {title}\n")
    print("| field | value |\n|---|---|")
    for key in keys:
        value = document
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        print(f"| {key} | {json.dumps(value)} |")
    print()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="turn-hooks-demo-") as scratch:
        root = Path(scratch)
        repo = root / "repo"
        (repo / CONFIG_PATH).parent.mkdir(parents=True)
        shutil.copy(HERE / "experiment.json", repo / CONFIG_PATH)
        registry = root / "registry.json"
        registry.write_text(
            json.dumps(
                {
                    "goals": [
                        {
                            "id": GOAL,
                            "repo": str(repo),
                            "coordination": {"registered_agents": [AGENT]},
                            "control_plane": {"reward_memory": {"enabled": False}},
                        }
                    ]
                }
            )
        )
        binding = ["--registry", str(registry), "--goal-id", GOAL, "--agent-id", AGENT]

        print("# turn-hooks demo: reward memory on the embedded store\n")
        status = turn_hooks("reward-memory", "experiment-status", *binding)
        show("1. Status before enabling", status, ["status", "available"])
        preview = turn_hooks("reward-memory", "configure", *binding, "--config", CONFIG_PATH)
        show(
            "2. Configure (preview: provider preflight, no write)",
            preview,
            ["status", "provider_id", "isolation_mode", "binding_committed"],
        )
        enabled = turn_hooks(
            "reward-memory", "configure", *binding, "--config", CONFIG_PATH, "--execute"
        )
        show(
            "3. Configure --execute (canary write + exact readback)",
            enabled,
            [
                "status",
                "binding_committed",
                "experiment.status",
                "experiment.automatic_recall",
                "experiment.automatic_ingest",
            ],
        )
        for label in ("4. Ingest a validated event", "5. Ingest it again (replay)"):
            receipt = turn_hooks(
                "reward-memory",
                "ingest-event",
                *binding,
                "--input",
                str(HERE / "event.json"),
                "--execute",
            )
            show(
                label,
                receipt,
                [
                    "status",
                    "candidate_ref",
                    "activation_ref",
                    "exact_readback_verified",
                    "deduplicated",
                    "external_writes_performed",
                    "destination_recall.verified",
                ],
            )
        recalled = turn_hooks(
            "reward-memory",
            "recall",
            *binding,
            "--query",
            "a change touches one module: which tests first?",
        )
        show(
            "6. Recall at the Turn-admission surface",
            recalled,
            [
                "status",
                "output.guidance",
                "telemetry.provider_call_count",
                "application.receipt.memory_ref_digests",
            ],
        )
        print(
            "Public receipts above carry refs and digests only; "
            "`recall --show-guidance` prints the private text.\n"
        )
        turn = {
            "host": "generic_cli",
            "host_turn_id": "demo-turn-1",
            "goal_id": GOAL,
            "agent_id": AGENT,
            "observed_at": "2026-08-16T00:00:00+00:00",
            "turn_envelope": {
                "goal_id": GOAL,
                "agent_id": AGENT,
                "boundary": {"capabilities": {"example_echo": True}},
            },
            "payload": {"turn_envelope": {"goal_id": GOAL, "agent_id": AGENT}},
        }
        dispatched = turn_hooks("dispatch", "pre-turn", stdin=json.dumps(turn))
        show(
            "7. Kernel PreTurn dispatch (built-in example plugin)",
            dispatched,
            ["projection.capability_context_fields", "projection.capability_instructions"],
        )


if __name__ == "__main__":
    main()
