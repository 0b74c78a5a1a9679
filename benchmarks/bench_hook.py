"""The per-Turn hook as a host runs it: a new process per event, 10k records in the store.

Each sample starts a process, feeds the event JSON on stdin and waits for the output,
exactly as Codex or Claude Code run a hook command. Bare `python -c pass` runs are
interleaved with the hook runs so both see the same machine noise; the result is the
ratio of medians, with bytecode caching on, as in an installed package. Every hook
runs twice per sample: cold (``TURN_HOOKS_RESIDENT=0``,
the whole command line imported in the hook process) and warm (a resident server,
started before the samples in a private socket directory and stopped after them).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import seed
from fixtures import f1

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from hosts.setup._hook_line import entry_argv

ROOT = Path(__file__).resolve().parent.parent
VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]


def timed(argv: list[str], stdin: str = "") -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True)
    return time.perf_counter() - started


def timed_env(argv: list[str], stdin: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - started


def start_server(script: str, env: dict[str, str], run_dir: Path, stdin: str, argv) -> int:
    """The first warm-mode call starts the server (and runs cold); wait until it listens."""
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True, env=env)
    limit = time.monotonic() + 60
    while time.monotonic() < limit:
        for pid_file in run_dir.glob("th-*.pid"):
            if pid_file.with_suffix(".sock").exists():
                return int(pid_file.read_text())
        time.sleep(0.05)
    raise SystemExit("the resident server did not start")


def warm_environment(run_dir: str) -> dict[str, str]:
    """This process's environment with hooks served by a resident server in ``run_dir``."""
    return dict(
        os.environ,
        TURN_HOOKS_RESIDENT="1",
        TURN_HOOKS_RESIDENT_DIR=run_dir,
        TURN_HOOKS_RESIDENT_IDLE_SECONDS="600",
        # Servers elsewhere on the machine (other checkouts, a test run) must not make
        # the per-user bound refuse this one (as in bench_ab.py).
        TURN_HOOKS_RESIDENT_MAX_SERVERS="1000",
    )


def main(samples: int = 25, records: int = 10_000) -> None:
    script = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
    assert script, "install the package first (make setup)"
    with (
        tempfile.TemporaryDirectory() as scratch,
        tempfile.TemporaryDirectory(prefix="thb-", dir="/tmp") as run_dir,
    ):
        root = Path(scratch)
        registry = f1.write_goal(root, f1.config("embedded_sqlite"))
        store = EmbeddedSqliteProvider(root / "repo" / ".local" / "turn-hooks" / "memory.sqlite3")
        seed(store, records)
        binding = ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
        message = (
            "done\n<reward_memory_reflection_json>"
            + json.dumps(f1.REFLECTION)
            + "</reward_memory_reflection_json>"
        )
        cases = {
            "pre-turn": lambda i: (
                [script, "host", "generic", "pre-turn", *binding],
                json.dumps({"turn_id": f"t{i}", "prompt": "module tests"}),
            ),
            "post-settlement (no reflection)": lambda i: (
                [script, "host", "generic", "post-settlement", *binding],
                json.dumps({"turn_id": f"n{i}", "last_assistant_message": "done"}),
            ),
            "Codex CLI Stop, validated reflection (settles detached)": lambda i: (
                [
                    script,
                    "host",
                    "codex-cli",
                    "post-settlement",
                    *binding,
                    "--validation-command-json",
                    json.dumps(VALIDATOR),
                ],
                json.dumps({"turn_id": f"c{i}", "last_assistant_message": message}),
            ),
            "post-settlement (validated ingest)": lambda i: (
                [
                    script,
                    "host",
                    "generic",
                    "post-settlement",
                    *binding,
                    "--validation-command-json",
                    json.dumps(VALIDATOR),
                ],
                json.dumps({"turn_id": f"v{i}", "last_assistant_message": message}),
            ),
        }
        cases["pre-turn as installed (python -S -c <loader>)"] = lambda i: (
            [*entry_argv(), "host", "generic", "pre-turn", *binding],
            json.dumps({"turn_id": f"m{i}", "prompt": "module tests"}),
        )
        cold_env = dict(os.environ, TURN_HOOKS_RESIDENT="0")
        warm_env = warm_environment(run_dir)
        argv, stdin = cases["pre-turn"](-1)
        server = start_server(script, warm_env, Path(run_dir), stdin, argv)
        bare: list[float] = []
        results: dict[tuple[str, str], list[float]] = {}
        try:
            for i in range(samples):
                for name, make in cases.items():
                    for mode, env in (("cold", cold_env), ("warm", warm_env)):
                        bare.append(timed([sys.executable, "-c", "pass"]))
                        argv, stdin = make(f"{mode}{i}")
                        results.setdefault((name, mode), []).append(timed_env(argv, stdin, env))
        finally:
            os.kill(server, signal.SIGTERM)
        base = statistics.median(bare)
        print(f"bare `python -c pass`: median {base * 1000:.1f} ms ({len(bare)} runs)\n")
        print("| hook process | cold ms | cold ratio | warm ms | warm ratio |")
        print("|---|---:|---:|---:|---:|")
        for name in cases:
            cold = statistics.median(results[(name, "cold")])
            warm = statistics.median(results[(name, "warm")])
            print(
                f"| {name} | {cold * 1000:.1f} | {cold / base:.1f}x "
                f"| {warm * 1000:.1f} | {warm / base:.1f}x |"
            )


if __name__ == "__main__":
    for variable in ("TURN_HOOKS_LOAD_PLUGINS", "TURN_HOOKS_RESIDENT", "TURN_HOOKS_RESIDENT_DIR"):
        os.environ.pop(variable, None)
    # An installed package has its bytecode compiled (pip does it at install time); a
    # shell that forbids writing it would time the compiler on every cold start.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main(*(int(arg) for arg in sys.argv[1:]))
