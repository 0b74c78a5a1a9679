"""What closing the loop (issue 39) costs a Turn: PreTurn and the Stop, loop on and off.

    python benchmarks/bench_loop_cost.py [samples] [records]

Two Goals side by side, each with its own registry, embedded store (``records``
seeded records, plus F1's lesson learned by a validated Turn) and sidecars:

- *loop off*: the default binding, ranking by relevance; the model answers nothing
  about the memories it was given, so a Stop records no observation and there is
  no ledger;
- *loop on*: ranking by utility (the settings sidecar, as ``init --ranking utility``
  writes it); a few earlier Turns reported the recalled memory applied and passed
  their validator, so an application receipt, a ledger of observations and its
  projection exist; each timed Stop answers ``applied`` again, so it writes an
  application receipt, an observation and the projection.

Each sample is one Turn per Goal: the PreTurn hook process, then the Stop
(``host generic post-settlement``, settled inline, with the demo validator and
F1's reflection on both sides, so both run the validator and ingest). Both run as
``install`` writes them (``python -S -c "<loader>"``), cold (``TURN_HOOKS_RESIDENT=0``)
and warm (one resident server, in a private socket directory). Runs alternate off,
on, with a bare ``python -c pass`` before each pair, so all see the same machine
noise; the table gives the medians as ratios to the bare start and the on/off
ratio, the number to read on a shared machine.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench_hook import VALIDATOR, start_server, timed, timed_env, warm_environment
from corpus import seed
from fixtures import f1
from host_turns import stop_residents
from turn_support import resolution

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.turn.settings import set_ranking
from capabilities.reward_memory.utility.ledger import ledgers_of
from hosts.setup._hook_line import entry_argv

PROMPT = "a change touches one module"
"""F1's trigger: the lesson every Turn recalls."""
WARM_UP_TURNS = 4
"""Earlier Turns of each Goal before the samples (the first learns F1's lesson)."""
CONDITIONS = ("off", "on")
EVENTS = ("PreTurn", "Stop")


def message(applied: bool) -> str:
    """The model's final message: F1's reflection, and the application answer when on."""
    text = (
        "done\n<reward_memory_reflection_json>"
        + json.dumps(f1.REFLECTION)
        + "</reward_memory_reflection_json>"
    )
    if applied:
        answer = {
            "outcome": "applied",
            "memory_refs": ["[memory 1]"],
            "reasoning_summary": "ran the module's tests first",
        }
        field = "reward_memory_application_json"
        text += f"\n<{field}>{json.dumps(answer)}</{field}>"
    return text


def goal(root: Path, records: int) -> list[str]:
    """A bound Goal under ``root`` with ``records`` seeded records; its binding words."""
    registry = f1.write_goal(root, f1.config("embedded_sqlite"))
    seed(
        EmbeddedSqliteProvider(root / "repo" / ".local" / "turn-hooks" / "memory.sqlite3"), records
    )
    return ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]


def turn(binding: list[str], turn_id: str, applied: bool, env: dict[str, str]) -> list[float]:
    """One Turn's two hook processes, timed: PreTurn, then the Stop."""
    cwd = str(Path(binding[-1]).parent / "repo")
    pre = json.dumps({"turn_id": turn_id, "prompt": PROMPT, "cwd": cwd})
    stop = json.dumps({"turn_id": turn_id, "last_assistant_message": message(applied), "cwd": cwd})
    validator = ["--validation-command-json", json.dumps(VALIDATOR)]
    return [
        timed_env([*entry_argv(), "host", "generic", "pre-turn", *binding], pre, env),
        timed_env(
            [*entry_argv(), "host", "generic", "post-settlement", *binding, *validator], stop, env
        ),
    ]


def ledger_size(binding: list[str]) -> int:
    """The observations the Goal's utility ledgers hold (the loop closed when > 0)."""
    store = resolution(Path(binding[-1])).sidecars
    total = 0
    for projection in ledgers_of(store, f1.GOAL, f1.AGENT):
        ledger = projection.with_name(projection.name.replace(".projection.", ".observations."))
        total += len((store.read(ledger) or {}).get("observations", []))
    return total


def main(samples: int = 10, records: int = 2000) -> None:
    with (
        tempfile.TemporaryDirectory() as scratch,
        tempfile.TemporaryDirectory(prefix="thl-", dir="/tmp") as run_dir,
    ):
        bindings = {name: goal(Path(scratch) / name, records) for name in CONDITIONS}
        registry = Path(bindings["on"][-1])
        set_ranking(resolution(registry).sidecars, f1.GOAL, f1.AGENT, "utility")
        cold = dict(os.environ, TURN_HOOKS_RESIDENT="0")
        warm = warm_environment(run_dir)
        for name, binding in bindings.items():
            for n in range(WARM_UP_TURNS):
                turn(binding, f"warm-up-{n}", name == "on", cold)
        observations = {name: ledger_size(binding) for name, binding in bindings.items()}
        assert observations["off"] == 0 < observations["on"], observations
        pre = json.dumps({"turn_id": "start", "prompt": PROMPT})
        start_server(
            "",
            warm,
            Path(run_dir),
            pre,
            [*entry_argv(), "host", "generic", "pre-turn", *bindings["off"]],
        )
        bare: list[float] = []
        results: dict[tuple[str, str, str], list[float]] = {}
        try:
            for i in range(samples):
                for mode, env in (("cold", cold), ("warm", warm)):
                    bare.append(timed([sys.executable, "-c", "pass"]))
                    for name in CONDITIONS:
                        times = turn(bindings[name], f"{mode}-{i}", name == "on", env)
                        for event, seconds in zip(EVENTS, times, strict=True):
                            results.setdefault((event, mode, name), []).append(seconds)
        finally:
            stop_residents(run_dir)  # and any server started again since
        base = statistics.median(bare)
        after = {name: ledger_size(binding) for name, binding in bindings.items()}
        print(f"bare `python -c pass`: median {base * 1000:.1f} ms ({len(bare)} runs)")
        print(
            f"observations in the ledger: off {after['off']}, "
            f"on {observations['on']} before the samples, {after['on']} after\n"
        )
        print("| hook process | mode | loop off (x bare) | loop on (x bare) | on / off |")
        print("|---|---|---:|---:|---:|")
        for event in EVENTS:
            for mode in ("cold", "warm"):
                off, on = (statistics.median(results[(event, mode, n)]) for n in CONDITIONS)
                print(f"| {event} | {mode} | {off / base:.1f} | {on / base:.1f} | {on / off:.2f} |")


if __name__ == "__main__":
    for variable in ("TURN_HOOKS_LOAD_PLUGINS", "TURN_HOOKS_RESIDENT", "TURN_HOOKS_RESIDENT_DIR"):
        os.environ.pop(variable, None)
    # An installed package has its bytecode compiled; see bench_hook.py.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main(*(int(arg) for arg in sys.argv[1:]))
