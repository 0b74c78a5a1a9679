"""Added wall time per Turn of our hooks inside the real Claude Code (offline).

Run: ``TURN_HOOKS_CLAUDE_DIR=~/.cache/turn-hooks/claude-code-2.1.332
$VENV/bin/python benchmarks/bench_claude.py [rounds]`` (default 5 rounds; `make claude`
installs Claude Code 2.1.332 into the cache).

The same two-Turn run (learn, then recall) of ``claude -p`` without our hooks, with
them in its ``settings.json`` (UserPromptSubmit and Stop) as ``python -m hosts.cli``
(cold), and with them as ``turn-hooks install claude-code`` writes them, ``python -S -c
"<loader>"`` (warm, through a resident server in a private directory,
stopped at the end), alternated in one loop against the fake Messages server the
tests use. Each run starts with one untimed Turn, so the timed ones find the Goal's
store and sidecars made, as every Turn after a user's first does.
The Stop hook settles detached, so the next Turn's PreTurn may wait for it (at most
1 s); the time of that wait is part of what the hooks add.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_codex import installed  # noqa: E402
from fixtures import f1  # noqa: E402
from host_turns import HOOK_TIMES, alternate, mark_timed, timed  # noqa: E402
from test_claude_real import CLAUDE, ask, settings  # noqa: E402
from turn_support import settled_spools  # noqa: E402

from conformance.fakes import FakeMessages  # noqa: E402

REFLECTED = (
    "Fixed.\n<reward_memory_reflection_json>"
    + json.dumps(f1.REFLECTION)
    + "</reward_memory_reflection_json>"
)


def two_turns(root: Path, variant: str, env: dict[str, str]) -> float:
    registry = f1.write_goal(root, f1.config("embedded_sqlite"))
    document: dict = {"hooks": {}}
    if variant != "without":
        document = settings(registry)
        if variant in ("warm", "timed"):  # timed: warm, each hook logging its time
            document = installed(document)
        if variant == "timed":
            document = timed(document, root / HOOK_TIMES)
    (root / "settings.json").write_text(json.dumps(document))
    saved = dict(os.environ)
    os.environ.update(env)  # ask() hands the host, and so its hooks, os.environ
    try:
        with FakeMessages() as fake:
            fake.reply("Ready.", REFLECTED, "Module tests first.")
            assert ask(CLAUDE, root, fake, "look around first").returncode == 0  # untimed
            if variant == "timed":
                mark_timed(root / HOOK_TIMES)
            started = time.perf_counter()
            for prompt in ("fix the flaky parser test", "a change touches one module"):
                result = ask(CLAUDE, root, fake, prompt)
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
    assert CLAUDE.exists(), f"claude is not installed at {CLAUDE}: run `make claude`"
    alternate(two_turns, rounds)


if __name__ == "__main__":
    os.environ.pop("TURN_HOOKS_LOAD_PLUGINS", None)
    main(*(int(arg) for arg in sys.argv[1:]))
