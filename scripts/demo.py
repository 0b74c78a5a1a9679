"""`make demo`: two Turns of a generic CLI host on the embedded store, as receipts.

It builds a throw-away Goal repository with the example config in scripts/demo/,
enables the Agent with the real `turn-hooks` command, then plays a host:

- Turn 1: PreTurn recall is empty; the model's final message carries a reflection;
  settlement runs the independent validator (scripts/demo/validator.py), which
  attests it, and the reflection is activated after exact readback;
- Turn 2: PreTurn recall delivers it, inside the budget.

Everything runs offline through the installed console script; nothing is left behind.
"""

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
        # Text as itself (a person reads this table), anything else in JSON spelling.
        text = value if isinstance(value, str) else json.dumps(value)
        print(f"| {key} | {text.replace('|', chr(92) + '|')} |")
    print()


def reflection_message() -> str:
    reflection = json.loads((HERE / "event.json").read_text())["event"]
    body = {
        "schema_version": "turn_reward_memory_reflection_v1",
        "status": "eligible",
        "surface_id": reflection["surface_id"],
        "outcome_kind": "engineering",
        "content_summary": reflection["content_summary"],
        "reasoning_summary": reflection["reasoning"]["summary"],
        "confidence": reflection["reasoning"]["confidence"],
        "evidence_refs": reflection["experience"]["evidence_refs"],
        "experience": reflection["experience"],
    }
    return (
        "The flaky test is fixed; the focused module run caught it first.\n"
        f"<reward_memory_reflection_json>{json.dumps(body)}</reward_memory_reflection_json>"
    )


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
        validator = json.dumps([sys.executable, str(HERE / "validator.py")])

        print("# turn-hooks demo: two Turns of a generic CLI host, embedded store\n")
        enabled = turn_hooks(
            "reward-memory", "configure", *binding, "--config", CONFIG_PATH, "--execute"
        )
        show(
            "Enable the Agent (canary write + exact readback)",
            enabled,
            ["status", "binding_committed", "experiment.status"],
        )

        first = turn_hooks(
            "host",
            "generic",
            "pre-turn",
            *binding,
            stdin=json.dumps(
                {
                    "turn_id": "turn-1",
                    "session_id": "demo",
                    "cwd": str(repo),
                    "prompt": "Fix the flaky parser test",
                }
            ),
        )
        context = first.get("additional_context", "")
        show(
            "Turn 1, PreTurn: no memory yet, the reflection is requested",
            {
                "guidance_items": context.count("[memory "),
                "reflection_requested": "<reward_memory_reflection_json>" in context,
                "context_chars": len(context),
            },
            ["guidance_items", "reflection_requested", "context_chars"],
        )
        settled = turn_hooks(
            "host",
            "generic",
            "post-settlement",
            *binding,
            "--validation-command-json",
            validator,
            stdin=json.dumps(
                {
                    "turn_id": "turn-1",
                    "session_id": "demo",
                    "cwd": str(repo),
                    "last_assistant_message": reflection_message(),
                }
            ),
        )
        ingest = settled["results"]["reward-memory.outcome-ingest"]
        show(
            "Turn 1, PostSettlement: validated, written, read back",
            ingest,
            [
                "status",
                "exact_readback_verified",
                "reconciliation_state",
                "destination_recall.verified",
                "provider_sync_count",
                "source_event_id",
            ],
        )

        second = turn_hooks(
            "host",
            "generic",
            "pre-turn",
            *binding,
            stdin=json.dumps(
                {
                    "turn_id": "turn-2",
                    "session_id": "demo",
                    "cwd": str(repo),
                    "prompt": "A change touches one module: which tests first?",
                }
            ),
        )
        context = second.get("additional_context", "")
        show(
            "Turn 2, PreTurn: the memory is recalled inside the budget",
            {
                "guidance_items": context.count("[memory "),
                "context_chars": len(context),
                "context_limit": 8000,
                "delivered_as": "private, non-authoritative guidance",
            },
            ["guidance_items", "context_chars", "context_limit", "delivered_as"],
        )
        print("What Turn 2's host injects (private context for the model):\n")
        print("```")
        print(context[context.find("[memory") :])
        print("```")


if __name__ == "__main__":
    main()
