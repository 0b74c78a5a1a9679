"""What our MCP tool server adds to a real ``codex exec`` Turn, two trees' servers paired.

    TURN_HOOKS_CODEX_VENV=... python benchmarks/bench_codex_mcp.py BEFORE_DIR [AFTER_DIR] [rounds]

Codex starts the server for every ``exec`` and waits for its handshake before the
Turn's first model request. One Codex home, installed by this tree (warm hooks, the
server, its trust), runs the same one-Turn prompt with the server table pointing at
each tree (``sys.path[0]`` of its loader) and once without the table, every round,
the order turning round by round. Everything else is the same run: the fake
Responses server, the home, the hooks and their resident server. The report gives
the median seconds per Turn and, per tree, the median over rounds of that round's
Turn less the same round's Turn without the server: the pairing takes out the
drift of a shared machine, which moves a whole ``bench_host_ab.py`` run by more
than the server costs. AFTER_DIR defaults to this tree, rounds to 20.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from host_turns import stop_residents  # noqa: E402
from test_codex_real import CODEX, CodexRun, install_codex  # noqa: E402

from conformance.fakes import FakeResponses  # noqa: E402
from hosts.setup._hook_line import ROOT  # noqa: E402
from hosts.setup.mcp_install import TABLE  # noqa: E402


def variants(text: str, trees: dict[str, Path]) -> dict[str, str]:
    """The config.toml ``install`` wrote, its server on each tree, and without it."""
    start = text.index(TABLE)
    end = text.find("\n[", start + 1)
    table = text[start:] if end < 0 else text[start : end + 1]
    # The loader as config.toml spells it: a TOML string inside the args array.
    ours = f'sys.path[0] = \\"{ROOT}\\"'
    assert ours in table, "install writes the loader of this tree"
    found = {
        name: text.replace(ours, f'sys.path[0] = \\"{tree}\\"') for name, tree in trees.items()
    }
    found["without"] = text.replace(table, "")
    return found


def main(before: Path, after: Path, rounds: int = 20) -> None:
    trees = {"before": before.resolve(), "after": after.resolve()}
    with (
        tempfile.TemporaryDirectory() as scratch,
        tempfile.TemporaryDirectory(prefix="thb-", dir="/tmp") as run_dir,
    ):
        os.environ.update(
            TURN_HOOKS_RESIDENT="1",
            TURN_HOOKS_RESIDENT_DIR=run_dir,
            TURN_HOOKS_RESIDENT_IDLE_SECONDS="600",
        )
        try:
            with FakeResponses() as fake:
                run = CodexRun(Path(scratch), fake)
                assert install_codex(run, CODEX)["ok"]
                config = run.home / "config.toml"
                texts = variants(config.read_text(), trees)
                fake.reply(*(["Ready."] * (len(texts) * (rounds + 1))))
                seconds: dict[str, list[float]] = {name: [] for name in texts}
                for index in range(-1, rounds):  # round -1 warms every variant up
                    order = list(texts) if index % 2 == 0 else list(reversed(texts))
                    for name in order:
                        config.write_text(texts[name])
                        started = time.perf_counter()
                        done = run.exec("a change touches one module: which tests first?")
                        elapsed = time.perf_counter() - started
                        assert done.returncode == 0, done.stderr[-500:]
                        if index >= 0:
                            seconds[name].append(elapsed)
                    print(f"round {index + 1} of {rounds} done", file=sys.stderr)
        finally:
            stop_residents(run_dir)
    base = seconds["without"]
    print(f"{rounds} rounds; `codex exec` with our warm hooks, without the MCP server:")
    print(f"{statistics.median(base):.3f} s per Turn\n")
    print("| MCP server of | s per Turn | added per Turn (paired median) |")
    print("|---|---:|---:|")
    for name, tree in trees.items():
        paired = [a - b for a, b in zip(seconds[name], base, strict=True)]
        print(
            f"| {name} ({tree.name}) | {statistics.median(seconds[name]):.3f} "
            f"| {statistics.median(paired) * 1000:.1f} ms |"
        )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for variable in ("TURN_HOOKS_LOAD_PLUGINS", "TURN_HOOKS_RESIDENT_DIR"):
        os.environ.pop(variable, None)
    main(
        Path(sys.argv[1]),
        Path(sys.argv[2]) if len(sys.argv) > 2 else HERE.parent,
        *(int(arg) for arg in sys.argv[3:4]),
    )
