"""Recall quality through the real pre-turn hook process: does the right memory come back?

The memories of ``recall_quality.json`` are ingested into a bound Goal's store through
the real ingest path (event, candidate, standing policy, write and exact readback);
then every prompt runs through ``turn-hooks host generic pre-turn``, one process per
prompt as a host runs it, and the memories in the rendered context are read back by
their summaries. Reported: recall@1 and recall@5 over the labelled prompts (overall
and per kind), the share of no-match prompts and of trivial prompts that receive no
memory, and the mean number of memories injected per prompt.

    python benchmarks/bench_recall_quality.py              # the embedded store
    python benchmarks/bench_recall_quality.py --openviking # also a real OpenViking server

The OpenViking half starts ``openviking-server`` on loopback with the deterministic
fake embedder of ``tests/ovserver`` (``TURN_HOOKS_OPENVIKING_VENV`` or the cache).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures import f1  # noqa: E402

from capabilities.providers.factory import build_provider  # noqa: E402
from capabilities.reward_memory.contract.config import normalise_config  # noqa: E402
from capabilities.reward_memory.memory.ingest import ingest_scoped_event  # noqa: E402

DATA = Path(__file__).with_name("recall_quality.json")
# Secret-shaped stand-ins, built here so the data file holds none.
PLACEHOLDERS = {
    "<gh-token>": "ghp_" + "Q7x" * 7,
    "<aws-key>": "AKIA" + "ZX9Q" * 4,
    "<bearer>": "Bearer " + "eyJhbGciOi" * 3,
    "<raw>": "k3y" * 6,
}
_ITEM = re.compile(r"^\[memory \d+\] .*\n  summary: (.*)$", re.MULTILINE)


def load() -> dict[str, Any]:
    """The benchmark data, with the secret placeholders filled in."""
    data: dict[str, Any] = json.loads(DATA.read_text())
    for prompt in data["prompts"]:
        for mark, value in PLACEHOLDERS.items():
            prompt["prompt"] = prompt["prompt"].replace(mark, value)
    return data


def event_for(memory: dict[str, str]) -> dict[str, Any]:
    """A scoped-feedback event carrying one memory, shaped like a validated reflection's."""
    document = f1.event()
    ref = f"bench-recall:{memory['id']}"
    document["feedback_ref"] = ref
    document["source"]["source_ref"] = ref
    document["revision_ref"] = memory["id"]
    document["content_summary"] = memory["summary"]
    experience = copy.deepcopy(document["experience"])
    experience["applicability"] = [memory["trigger"]]
    experience["observed_outcome"] = "Doing this first avoided rework later in the Turn."
    experience["attribution"] = "The step caught the problem before it spread."
    experience["future_behavior"] = {
        key: memory[key] for key in ("trigger", "action", "validation", "stop_condition")
    }
    experience["limitations"] = [memory["stop_condition"]]
    experience["evidence_refs"] = [f"evidence:bench-{memory['id']}"]
    document["experience"] = experience
    return document


def seed(config: dict[str, Any], repo: Path, memories: list[dict[str, str]]) -> None:
    """Ingest every memory through the real path: guard, activate, write, read back."""
    entry = normalise_config(config)["corpora"]["experience"]
    provider = build_provider(entry["provider_binding"], repo=repo)
    for memory in memories:
        receipt = ingest_scoped_event(
            event_for(memory),
            corpus=entry["corpus"],
            standing_policy=entry["standing_policy"],
            provider_binding=entry["provider_binding"],
            observed_at=f1.OBSERVED_AT,
            execute=True,
            provider=provider,
        )
        if receipt["status"] != "activated":
            raise SystemExit(f"seeding {memory['id']} failed: {receipt['status']}")


def injected(registry: Path, prompt: str, turn_id: str, env: dict[str, str]) -> list[str]:
    """The summaries of the memories one real pre-turn hook process injected, in order."""
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", "pre-turn"]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    event = json.dumps({"turn_id": turn_id, "prompt": prompt})
    result = subprocess.run(
        argv, input=event, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    text = json.loads(result.stdout or "{}").get("additional_context") or ""
    return _ITEM.findall(text)


def measure(registry: Path, data: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Run every prompt through the hook and score what came back."""
    by_summary = {memory["summary"]: memory["id"] for memory in data["memories"]}
    hits1: dict[str, list[bool]] = defaultdict(list)
    hits5: dict[str, list[bool]] = defaultdict(list)
    counts: list[int] = []
    misses: list[str] = []
    for index, case in enumerate(data["prompts"]):
        got = [by_summary.get(s, "?") for s in injected(registry, case["prompt"], f"p{index}", env)]
        counts.append(len(got))
        for kind in ("all", case["kind"]):
            hits1[kind].append(got[:1] == [case["expect"]])
            hits5[kind].append(case["expect"] in got[:5])
        if case["expect"] not in got[:5]:
            misses.append(f"{case['expect']} ({case['kind']}): {case['prompt'][:70]}")
    empty = {}
    for group in ("no_match", "trivial"):
        received = [
            len(injected(registry, prompt, f"{group}{index}", env))
            for index, prompt in enumerate(data[group])
        ]
        empty[group] = (sum(1 for n in received if n == 0), len(received))
        counts.extend(received)
    return {
        "recall_at_1": {k: (sum(v), len(v)) for k, v in hits1.items()},
        "recall_at_5": {k: (sum(v), len(v)) for k, v in hits5.items()},
        "empty": empty,
        "mean_injected": sum(counts) / len(counts),
        "misses": misses,
    }


def report(title: str, result: dict[str, Any], seconds: float, verbose: bool) -> None:
    def share(pair: tuple[int, int]) -> str:
        return f"{pair[0] / pair[1]:.2f} ({pair[0]}/{pair[1]})"

    print(f"\n## {title} ({seconds:.0f} s)\n")
    print("| prompts | recall@1 | recall@5 |")
    print("|---|---:|---:|")
    for kind in sorted(result["recall_at_5"], key=lambda k: (k != "all", k)):
        print(
            f"| {kind} | {share(result['recall_at_1'][kind])} "
            f"| {share(result['recall_at_5'][kind])} |"
        )
    print(f"\nno-match prompts with no memory: {share(result['empty']['no_match'])}")
    print(f"trivial prompts with no memory: {share(result['empty']['trivial'])}")
    print(f"memories injected per prompt (mean): {result['mean_injected']:.2f}")
    if verbose:
        print("\nmissed at 5:\n" + "\n".join(result["misses"]))


def run_embedded(data: dict[str, Any], env: dict[str, str], verbose: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        config = f1.config("embedded_sqlite")
        registry = f1.write_goal(root, config)
        seed(config, root / "repo", data["memories"])
        started = time.monotonic()
        result = measure(registry, data, env)
        report("embedded store", result, time.monotonic() - started, verbose)


def run_openviking(data: dict[str, Any], env: dict[str, str], verbose: bool) -> None:
    from ovserver.server import start_server, stop_server

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        server = start_server(root / "ov")
        try:
            settings = {
                "OPENVIKING_URL": server.url,
                "OPENVIKING_API_KEY": server.key,
                "OPENVIKING_ACCOUNT": "ci",
                "OPENVIKING_USER": "alice",
                "OPENVIKING_CLI_CONFIG_FILE": str(root / "no-ovcli.conf"),
            }
            os.environ.update(settings)
            config = f1.config("openviking")
            registry = f1.write_goal(root, config)
            seed(config, root / "repo", data["memories"])
            started = time.monotonic()
            result = measure(registry, data, {**env, **settings})
            report("OpenViking 0.5.2", result, time.monotonic() - started, verbose)
        finally:
            stop_server(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--openviking", action="store_true", help="also run on OpenViking")
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded store")
    parser.add_argument("--verbose", action="store_true", help="list the prompts missed at 5")
    args = parser.parse_args()
    data = load()
    print(
        f"{len(data['memories'])} memories, {len(data['prompts'])} labelled prompts, "
        f"{len(data['no_match'])} no-match prompts, {len(data['trivial'])} trivial prompts"
    )
    env = dict(os.environ, TURN_HOOKS_RESIDENT="0")
    env.pop("TURN_HOOKS_SQLITE_PATH", None)
    if not args.no_embedded:
        run_embedded(data, env, args.verbose)
    if args.openviking:
        run_openviking(data, env, args.verbose)


if __name__ == "__main__":
    main()
