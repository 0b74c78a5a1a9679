"""Two source trees side by side: the hook processes and the core, before and after.

    python benchmarks/bench_ab.py BEFORE_DIR AFTER_DIR [pairs]

Each directory is a checkout of turn-hooks (``git worktree add DIR COMMIT``). Both
run on this interpreter and its installed dependencies, with ``PYTHONPATH`` pointing
at the checkout, so the only difference is the code. Runs alternate A B A B after a
warm-up, so both sides see the same machine noise; the table gives medians and the
after/before ratio, which is the number to read on a shared machine. After each
sample the side's settlements are waited for, so a Stop's detached settler never
runs during the next sample (the other side's, which it would slow down).

Measured per pair:

- the PreTurn hook process (``host generic pre-turn``) on an embedded store with
  10,000 records (each side its own Goal and store, seeded alike);
- the Stop hook process without a reflection (``host generic post-settlement``);
- both again as ``install`` writes them (``python -S -c "<loader>"``, the Codex CLI
  adapter), warm: each side has its own resident server, and its own hook log,
  full (200 entries) as a user's is after a few dozen Turns;
- the MCP tool server as ``install`` writes it, warm: a whole session of the
  handshake a host makes before its first model request (``initialize``,
  ``notifications/initialized``, ``tools/list``), then the end of its stdin;
- recall and ingest + readback inside one process (``bench_core`` on 10,000 records),
  run once per side in the same alternation.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import seed
from fixtures import f1
from host_turns import stop_residents
from turn_support import settled_spools

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider

LOADER = 'import sys; sys.path[0] = "{root}"; from hosts._entry import run; run()'
"""``hosts.setup._hook_line.loader`` for another tree (each side's own, not this one's)."""
MCP_HANDSHAKE = "".join(
    json.dumps(message) + "\n"
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)
"""What Codex and Claude Code send an MCP server before a Turn's first model request."""

CORE = """
import json, sys
sys.path.insert(0, sys.argv[1] + "/benchmarks")
sys.path.insert(0, sys.argv[1] + "/tests")
import bench_core
print(json.dumps(bench_core.measure(int(sys.argv[2]), recalls=60, ingests=20)))
"""


def environment(tree: Path) -> dict[str, str]:
    """This process's environment with ``tree`` first on the import path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURN_HOOKS_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users run from compiled bytecode
    env["PYTHONPATH"] = str(tree)
    # Each side has a resident server of its own: servers elsewhere on the machine
    # (other checkouts, a test run) must not make the per-user bound refuse one.
    env["TURN_HOOKS_RESIDENT_MAX_SERVERS"] = "1000"
    return env


def timed(argv: list[str], env: dict[str, str], stdin: str = "") -> float:
    started = time.perf_counter()
    # In the side's own tree: ``-m`` and ``-c`` put the working directory first on the
    # path, ahead of PYTHONPATH, so from another checkout both sides would run its code.
    cwd = env["PYTHONPATH"]
    subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    return time.perf_counter() - started


def full_log(state: Path) -> None:
    """A hook log of 200 entries, the most it keeps: every hook that logs rewrites it."""
    state.mkdir(mode=0o700)
    entry = {
        "observed_at": "2026-12-01T00:00:00+00:00",
        "host": "codex-cli",
        "event": "pre_turn",
        "source": "reward_memory_recall",
        "reason_code": "provider_returned_no_items",
    }
    log = {"schema_version": "turn_hooks_hook_log_v0", "entries": [entry] * 200}
    path = state / "hook-log.json"
    path.write_text(json.dumps(log, indent=2, sort_keys=True) + "\n")
    path.chmod(0o600)


def wait_listening(run_dir: Path) -> None:
    limit = time.monotonic() + 60
    while not any(path.with_suffix(".sock").exists() for path in run_dir.glob("th-*.pid")):
        if time.monotonic() > limit:
            raise SystemExit("a resident server did not start")
        time.sleep(0.05)


def main(before: Path, after: Path, pairs: int = 15) -> None:
    trees = {"before": before.resolve(), "after": after.resolve()}
    envs = {side: environment(tree) for side, tree in trees.items()}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        warm_envs = {}
        for side in trees:
            run_dir = Path(tempfile.mkdtemp(prefix="thab-", dir="/tmp"))
            full_log(root / f"state-{side}")
            warm_envs[side] = {
                **envs[side],
                "TURN_HOOKS_RESIDENT_DIR": str(run_dir),
                "TURN_HOOKS_STATE_DIR": str(root / f"state-{side}"),
            }
        # Each side its own Goal: one side's sidecars (its lock files, its flags) must
        # not be the other's work, as they would be on a shared repository.
        binding = {}
        for side in trees:
            registry = f1.write_goal(root / side, f1.config("embedded_sqlite"))
            sidecars = root / side / "repo" / ".local" / "turn-hooks"
            seed(EmbeddedSqliteProvider(sidecars / "memory.sqlite3"), 10_000)
            binding[side] = [
                *("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry))
            ]
        hook = [sys.executable, "-m", "hosts.cli", "host", "generic"]
        cases = {
            "PreTurn hook process": lambda side, i: (
                [*hook, "pre-turn", *binding[side]],
                json.dumps({"turn_id": f"t{i}", "prompt": "module tests"}),
            ),
            "Stop hook process, no reflection": lambda side, i: (
                [*hook, "post-settlement", *binding[side]],
                json.dumps({"turn_id": f"n{i}", "last_assistant_message": "done"}),
            ),
            "PreTurn as installed, warm": lambda side, i: (
                [*installed[side], "host", "codex-cli", "pre-turn", *binding[side]],
                json.dumps({"turn_id": f"w{i}", "prompt": "module tests"}),
            ),
            "Stop as installed, warm, no reflection": lambda side, i: (
                [*installed[side], "host", "codex-cli", "post-settlement", *binding[side]],
                json.dumps({"turn_id": f"s{i}", "last_assistant_message": "done"}),
            ),
            "MCP session as installed, warm (handshake, then end)": lambda side, i: (
                [*installed[side], "mcp", "serve", *binding[side]],
                MCP_HANDSHAKE,
            ),
        }
        installed = {
            side: [sys.executable, "-S", "-c", LOADER.format(root=tree)]
            for side, tree in trees.items()
        }
        samples: dict[str, dict[str, list[float]]] = {
            name: {side: [] for side in trees} for name in cases
        }
        core: dict[str, list[dict[str, float]]] = {side: [] for side in trees}
        for i in range(-1, pairs):  # pair -1 is the warm-up, not recorded
            for name, make in cases.items():
                for side in trees:
                    argv, stdin = make(side, f"{side}{i}")
                    env = warm_envs[side] if "warm" in name else envs[side]
                    seconds = timed(argv, env, stdin)
                    if i >= 0:
                        samples[name][side].append(seconds)
                    # A Stop's detached settler runs on after the hook returns: let it
                    # end, or it would run during the other side's next sample.
                    settled_spools(root / side / "repo")
            if i == -1:  # the warm-up started each side's server: let both listen
                for env in warm_envs.values():
                    wait_listening(Path(env["TURN_HOOKS_RESIDENT_DIR"]))
            if i % 5 == 0:
                for side, tree in trees.items():
                    done = subprocess.run(
                        [sys.executable, "-c", CORE, str(tree), "10000"],
                        env=envs[side],
                        cwd=tree,
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    core[side].append(json.loads(done.stdout.splitlines()[-1]))
            print(f"pair {i + 1}/{pairs}", file=sys.stderr)
        for env in warm_envs.values():
            stop_residents(env["TURN_HOOKS_RESIDENT_DIR"])
        for side in trees:  # the last Stops' detached children, before cleanup
            settled_spools(root / side / "repo")
        for env in warm_envs.values():
            shutil.rmtree(env["TURN_HOOKS_RESIDENT_DIR"], ignore_errors=True)
    print("| measure (median) | before ms | after ms | after / before |")
    print("|---|---:|---:|---:|")
    for name, sides in samples.items():
        b, a = (statistics.median(sides[side]) * 1000 for side in trees)
        print(f"| {name} | {b:.1f} | {a:.1f} | {a / b:.2f} |")
    for key, label in (
        ("recall_p50", "recall p50, 10k records"),
        ("ingest_p50", "ingest + readback p50"),
    ):
        b, a = (statistics.median(run[key] for run in core[side]) for side in trees)
        print(f"| {label} | {b:.2f} | {a:.2f} | {a / b:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]), *(int(arg) for arg in sys.argv[3:]))
