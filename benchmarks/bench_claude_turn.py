"""What one ``claude -p`` Turn costs with our hooks, beside an empty hook (issue 40).

    python benchmarks/bench_claude_turn.py [--repeat N] [--hook-times] [--conditions a,b,...]

The real Claude Code (``TURN_HOOKS_CLAUDE_DIR``, ``make claude``), offline against the
fake Messages server on 127.0.0.1, as a user runs it after ``turn-hooks install
claude-code``: the hooks in ``$CLAUDE_CONFIG_DIR/settings.json``, the MCP server in
``$CLAUDE_CONFIG_DIR/.claude.json``, no ``--settings``. Each condition has its own
home and repository for the whole run (one untimed Turn first, so every timed Turn
finds what a user's second Turn finds: the store made, a resident server running);
each round runs one Turn of every condition, the order rotating round by round, and
every Turn answers with a reflection, so our Stop hook spools and settles each one;
the next Turn starts once that settlement has ended, as a user's next Turn, minutes
later, would.

Conditions (``settings.json`` has the same shape in each: the same events, matchers,
timeouts and permission rule as ``install`` writes; only the command differs):

- ``none``: no hooks, no MCP server;
- ``true``: an empty hook, ``true``, on our events: what Claude Code costs for
  running any hook;
- ``python``: an empty Python hook, ``python -S -c pass`` with our hooks' interpreter:
  what any Python hook costs;
- ``empty-mcp``: ``true`` on our events and an MCP server that only answers
  (``initialize``, ``tools/list`` with one tool) under our server's name and flags:
  what Claude Code costs for running any hook and any stdio MCP server;
- ``ours``: ``turn-hooks install claude-code`` as it writes it (hooks, MCP server);
- ``ours-no-mcp``: ours without the MCP server.

It prints the median wall time of a Turn per condition (the ``claude`` process, from
spawn to exit) and what each adds over ``none`` and over ``true``, both as a
difference of medians and as the median of the differences within a round (on a
shared machine the second is the steadier). With ``--hook-times`` every hook command
also logs its start and end (``date +%s%N`` in Claude Code's own shell,
``host_turns.timed``; about 1.5 ms of its own per hook), the fake notes when the
model request came, and a second table splits the Turn into its phases: Claude
Code's start until the UserPromptSubmit hook, that hook, until the model request,
until the Stop hook, that hook, and until the process exits.

The resident server the ``ours`` conditions start runs in a private directory and is
stopped at the end. The hooks run with ``PYTHONDONTWRITEBYTECODE`` unset, as a
user's installed package runs from compiled bytecode.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))

from fixtures import f1  # noqa: E402
from host_turns import stop_residents, timed  # noqa: E402
from test_claude_real import CLAUDE, offline_env  # noqa: E402
from test_codex_real import VALIDATOR  # noqa: E402
from turn_support import settled_spools  # noqa: E402

from conformance.fakes import FakeMessages  # noqa: E402

CONDITIONS = {
    "none": "no hooks, no MCP server",
    "true": "empty hook `true` on our events",
    "python": "empty Python hook `python -S -c pass` (our interpreter) on our events",
    "empty-mcp": "empty hook `true` and an empty MCP server (one tool, Python)",
    "ours": "ours, as `install claude-code` writes it (hooks + MCP server)",
    "ours-no-mcp": "ours without the MCP server",
}
# The same interpreter as our hooks' (not a ``python3`` on PATH, which may be a shim).
EMPTY = {"true": "true", "python": f"{sys.executable} -S -c pass"}
REFLECTED = (
    "Fixed.\n<reward_memory_reflection_json>"
    + json.dumps(f1.REFLECTION)
    + "</reward_memory_reflection_json>"
)
PROMPT = "fix the flaky parser test"
# An MCP server that does nothing but answer: initialize, tools/list (one tool that
# takes a string, as ours does) and nothing else; it ends with its stdin.
EMPTY_SERVER = """
import json, sys
tool = {"name": "noop", "description": "Does nothing.", "inputSchema": {"type": "object",
    "properties": {"value": {"type": "string"}}, "required": ["value"]}}
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method, result = request.get("method"), {}
    if method == "initialize":
        result = {"protocolVersion": request["params"]["protocolVersion"],
                  "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": {"name": "empty", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [tool]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""
HOOK_LOG = "hook-times.log"


def install(root: Path) -> Path:
    """``turn-hooks install claude-code`` into ``root/cfg``; the config directory."""
    registry = f1.write_goal(root, f1.config("embedded_sqlite"))
    config = root / "cfg"
    argv = [sys.executable, "-m", "hosts.cli", "install", "claude-code", "--home", str(config)]
    argv += ["--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    argv += ["--validation-command-json", json.dumps(VALIDATOR), "--skip-validator-run"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0 and json.loads(done.stdout)["ok"], done.stdout + done.stderr
    return config


def prepare(root: Path, condition: str, hook_times: bool) -> None:
    """One condition's home: ``root/cfg`` as Claude Code's config, ``root/repo/work``."""
    config = install(root)
    settings = json.loads((config / "settings.json").read_text())
    if condition == "none":
        settings.pop("hooks")
        settings.pop("permissions")
    elif condition in EMPTY or condition == "empty-mcp":
        for groups in settings["hooks"].values():
            for group in groups:
                for handler in group["hooks"]:
                    handler["command"] = EMPTY.get(condition, "true")
    servers = json.loads((config / ".claude.json").read_text())
    if condition == "empty-mcp":  # ours, its command replaced: the same name, rule, flags
        servers["mcpServers"]["turn_hooks"].update(
            command=sys.executable, args=["-S", "-c", EMPTY_SERVER]
        )
    elif condition != "ours":  # the others run no MCP server
        servers = {}
    (config / ".claude.json").write_text(json.dumps(servers))
    if hook_times and "hooks" in settings:
        settings = timed(settings, root / HOOK_LOG)
    (config / "settings.json").write_text(json.dumps(settings, indent=2))
    (root / "repo" / "work").mkdir(parents=True, exist_ok=True)


class Stamped(list):
    """The fake's request list, noting when each request came (``time.time_ns``)."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[int] = []

    def append(self, request: object) -> None:
        self.stamps.append(time.time_ns())
        super().append(request)


def turn(root: Path, fake: FakeMessages, env: dict[str, str]) -> tuple[float, int, int]:
    """One ``claude -p`` Turn in ``root``: its wall time in seconds, and when it
    started and ended (``time.time_ns``, the clock the hook log uses)."""
    fake.reply(REFLECTED)
    env = offline_env(root, fake, env)
    argv = [str(CLAUDE), "-p", PROMPT, "--model", "fake-model", "--output-format", "json"]
    # Output to files, not pipes: a process the Turn leaves behind (a detached
    # settler) holding a pipe would make us wait for it, which the user does not.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        begun = time.time_ns()
        started = time.perf_counter()
        done = subprocess.run(
            argv,
            cwd=root / "repo" / "work",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            timeout=120,
            check=False,
        )
        elapsed = time.perf_counter() - started
        ended = time.time_ns()
        out.seek(0)
        answer = out.read().decode()
        err.seek(0)
        assert done.returncode == 0, err.read().decode()[-2000:]
    assert json.loads(answer)["result"].startswith("Fixed."), answer[-500:]
    return elapsed, begun, ended


PHASES = (
    "start to UserPromptSubmit",
    "UserPromptSubmit hook",
    "hook to model request",
    "request to Stop",
    "Stop hook",
    "Stop to exit",
)


def phases(log: Path, begun: int, ended: int, requested: int) -> dict[str, float] | None:
    """Where one timed Turn's wall time went (seconds), from the hook log lines it
    wrote and when the fake got its model request; ``None`` without both hooks."""
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    hooks = {event: (int(start), int(end)) for event, start, end in map(str.split, lines)}
    if set(hooks) != {"UserPromptSubmit", "Stop"}:
        return None
    (ups, ups_end), (stop, stop_end) = hooks["UserPromptSubmit"], hooks["Stop"]
    marks = (begun, ups, ups_end, requested, stop, stop_end, ended)
    return {name: (marks[i + 1] - marks[i]) / 1e9 for i, name in enumerate(PHASES)}


def main(argv: list[str]) -> None:
    """Run the rounds and print the table (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=8, help="rounds (Turns per condition)")
    parser.add_argument("--hook-times", action="store_true", help="log each hook's wall time")
    parser.add_argument("--conditions", default=",".join(CONDITIONS), help="comma-separated")
    args = parser.parse_args(argv)
    conditions = args.conditions.split(",")
    assert CLAUDE.exists(), f"claude is not installed at {CLAUDE}: run `make claude`"
    os.environ.pop("TURN_HOOKS_LOAD_PLUGINS", None)
    scratch = Path(tempfile.mkdtemp(prefix="thct-", dir="/tmp"))
    resident = scratch / "resident"
    resident.mkdir(mode=0o700)
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "TURN_HOOKS_RESIDENT_DIR": str(resident),
        "TURN_HOOKS_RESIDENT_IDLE_SECONDS": "3600",
        # Other users of a shared machine (test runs, benches) keep resident servers
        # of their own; past the per-user cap ours would not start, and every call
        # of ours would run cold.
        "TURN_HOOKS_RESIDENT_MAX_SERVERS": "64",
    }
    times: dict[str, list[float]] = {c: [] for c in conditions}
    split: dict[str, list[dict[str, float]]] = {c: [] for c in conditions}
    try:
        with FakeMessages() as fake:
            fake.requests = Stamped()
            for condition in conditions:
                prepare(scratch / condition, condition, args.hook_times)
                turn(scratch / condition, fake, env)  # untimed: the store, the server
                (scratch / condition / HOOK_LOG).unlink(missing_ok=True)
            for index in range(args.repeat):
                shift = index % len(conditions)
                for condition in conditions[shift:] + conditions[:shift]:
                    elapsed, begun, ended = turn(scratch / condition, fake, env)
                    times[condition].append(elapsed)
                    log = scratch / condition / HOOK_LOG
                    phased = phases(log, begun, ended, fake.requests.stamps[-1])
                    if phased is not None:
                        split[condition].append(phased)
                    # A user's next Turn comes minutes later: the settlement this Turn
                    # left running (validator, ingest) ends before any next Turn starts.
                    if condition.startswith("ours"):
                        assert settled_spools(scratch / condition / "repo"), "spooled"
                    time.sleep(0.3)
                print(
                    f"round {index + 1}: "
                    + ", ".join(f"{c} {times[c][-1]:.3f}" for c in conditions),
                    file=sys.stderr,
                )
    finally:
        stop_residents(resident)
        shutil.rmtree(scratch, ignore_errors=True)
    report(conditions, times, split)


def paired(these: list[float], those: list[float]) -> float:
    """The median of the differences within a round: a round that a busy machine
    slowed slows both Turns, which the difference of two medians does not cancel."""
    return statistics.median(a - b for a, b in zip(these, those, strict=True))


def report(
    conditions: list[str], times: dict[str, list[float]], split: dict[str, list[dict]]
) -> None:
    """Markdown tables: the median Turn per condition, what it adds over ``none`` and
    over ``true`` (as a difference of medians and as the median of the differences
    within a round); with hook times, the median of each phase of a Turn."""
    medians = {c: statistics.median(times[c]) for c in conditions}
    rounds = len(times[conditions[0]])
    print(f"{rounds} interleaved rounds, Claude Code at {CLAUDE.parent.parent.parent.name}")
    print()
    print(
        "| condition | median Turn | least to most | added vs none | added vs empty hook "
        "| paired, vs none | paired, vs empty hook |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for c in conditions:
        row = (
            f"| {CONDITIONS[c]} | {medians[c]:.3f} s | {min(times[c]):.3f} to {max(times[c]):.3f} s"
        )
        for other in ("none", "true"):
            row += f" | {medians[c] - medians[other]:+.3f} s" if other in medians else " | -"
        for other in ("none", "true"):
            row += f" | {paired(times[c], times[other]):+.3f} s" if other in times else " | -"
        print(row + " |")
    timed_conditions = [c for c in conditions if split[c]]
    if not timed_conditions:
        return
    print()
    print("| phase of a Turn (median) | " + " | ".join(timed_conditions) + " |")
    print("|---|" + "---:|" * len(timed_conditions))
    for name in (*PHASES, "both hooks"):
        cells = []
        for c in timed_conditions:
            values = [
                p["UserPromptSubmit hook"] + p["Stop hook"] if name == "both hooks" else p[name]
                for p in split[c]
            ]
            cells.append(f"{statistics.median(values):.3f} s")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
