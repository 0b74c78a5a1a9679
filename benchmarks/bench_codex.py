"""Added wall time per Turn of our hooks inside the real Codex CLI (offline).

Run: ``TURN_HOOKS_CODEX_VENV=~/.cache/turn-hooks/codex-0.147.0
$VENV/bin/python benchmarks/bench_codex.py [rounds]`` (default 5; `make codex`
installs the binary).

The same two-Turn run (learn, then recall) without our hooks, with them as
``python -m hosts.cli host codex-cli ...`` (cold), and with them as ``turn-hooks
install codex`` writes them, ``python -S -c "<loader>" host codex-cli ...``
(warm, through a resident server in a private directory, stopped at the end),
and as ``turn-hooks install codex`` leaves a home (the same hooks, trusted, and the
``turn-hooks mcp serve`` tool server, which Codex starts for every ``exec``),
alternated in one loop against a fake Responses server on loopback. Each run starts
with one untimed Turn, as every Turn after a user's first does: the Goal's store,
sidecars and the host's own state exist.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from host_turns import HOOK_TIMES, VARIANTS, alternate, mark_timed, timed  # noqa: E402
from test_codex_real import CODEX, REFLECTED, CodexRun, install_codex  # noqa: E402
from turn_support import settled_spools  # noqa: E402

from conformance.fakes import FakeResponses  # noqa: E402
from hosts.setup._hook_line import entry_argv  # noqa: E402

INSTALLED = f" {shlex.join(entry_argv()[1:])} "
"""What ``install`` writes after the interpreter, in place of ``-m hosts.cli``."""


def installed(document: object) -> object:
    """A hooks document with every ``-m hosts.cli`` command in the installed form."""
    if isinstance(document, dict):
        return {key: installed(value) for key, value in document.items()}
    if isinstance(document, list):
        return [installed(value) for value in document]
    if isinstance(document, str):
        return document.replace(" -m hosts.cli ", INSTALLED)
    return document


INSTALLED_LABEL = "as `turn-hooks install codex` leaves it: warm hooks and the MCP tool server"


def two_turns(root: Path, variant: str, env: dict[str, str]) -> float:
    saved = dict(os.environ)
    os.environ.update(env)  # CodexRun.exec hands the host, and so its hooks, os.environ
    try:
        with FakeResponses() as fake:
            run = CodexRun(root, fake, {"hooks": {}} if variant == "without" else None)
            if variant in ("warm", "timed"):  # timed: warm, each hook logging its time
                hooks = installed(run.our_hooks())
                if variant == "timed":
                    hooks = timed(hooks, root / HOOK_TIMES)
                (run.home / "hooks.json").write_text(json.dumps(hooks))
            if variant == "installed":  # `turn-hooks install codex`: hooks, trust, MCP server
                assert install_codex(run, CODEX)["ok"]
            fake.reply("Ready.", REFLECTED, "Module tests first.")
            assert run.exec("look around first").returncode == 0  # untimed: the store exists
            if variant == "timed":
                mark_timed(root / HOOK_TIMES)
            started = time.perf_counter()
            for prompt in ("fix the flaky parser test", "a change touches one module"):
                result = run.exec(prompt)
                assert result.returncode == 0, result.stderr[-500:]
            elapsed = (time.perf_counter() - started) / 2
            if variant != "without":
                assert "[memory 1]" in json.dumps(fake.requests[-1]), "learned, then recalled"
                # The last Stop's detached child may still be settling; let it
                # finish (untimed, as the Turn does) before the directory goes.
                settled_spools(root / "repo")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return elapsed


def main(rounds: int = 5) -> None:
    alternate(two_turns, rounds, {**VARIANTS, "installed": INSTALLED_LABEL})


if __name__ == "__main__":
    os.environ.pop("TURN_HOOKS_LOAD_PLUGINS", None)
    main(*(int(arg) for arg in sys.argv[1:]))
