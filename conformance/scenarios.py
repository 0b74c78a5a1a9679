"""The scenario catalogue: stable ids, what each proves, and how it is run.

A scenario drives real Turns through a :class:`~conformance.drivers.HostDriver` and
returns compact evidence (counts, statuses, sizes; never content), or raises
:class:`Failed` or :class:`Skipped` with a reason. Each one names the lifecycle edges
it vouches for; the report grants an edge only when all of its scenarios held.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.drivers import (
    HOOK_COMMAND,
    INGEST_RESULT,
    REAL,
    HookSetup,
    HostDriver,
    PayloadDriver,
    TurnRun,
    wait_for,
)
from conformance.probe import MARKER, SPEC
from conformance.public_safety import public_safety_violations
from conformance.workspace import (
    AGENT,
    GOAL,
    REFLECTION,
    STORE_FILE,
    Workspace,
    final_message,
    reflection,
)

RECALL = "automatic_recall"
INGEST = "automatic_ingest"
DELIVERY = "delivery"
"""A scenario that sees its edge deliver: memory reached the Turn, a record was written."""
GUARD = "guard"
"""A scenario that sees nothing bad happen. It can take an edge away, never grant one:
with the hook missing, "nothing was written" holds trivially."""
CATALOGUE_VERSION = "turn_hooks_conformance_catalogue_v2"
"""Bumped whenever a scenario is added, removed, or changes what it proves or its kind."""
RENDER_LIMIT = 8000
MEMORY_BYTES = 400
"""The most UTF-8 bytes one recalled memory renders in (issue 38), however long its fields."""
REQUEST_END = "When there is none, leave it out entirely."
"""How every result request ends, by the field's tool or by its block (hosts.facts.render
``NONE_WANTED``): the mark of the reflection request in a model request, whichever
channel the host's install wired."""
# The first words of the reward-memory instructions, where our rendered text begins
# inside whatever the host wraps around it (tests/test_conformance.py pins them).
TEXT_START = "reward_memory_recall may hold guidance"
OMITTED = "context items omitted to fit the context limit"
RECALL_PROMPT = "a change touches one module: which tests should run first?"
INGEST_STATUS = INGEST_RESULT
UNRECORDED = "evidence:never-recorded"


class Failed(Exception):
    """The host did not hold the property; ``evidence`` says what was seen."""

    def __init__(self, reason: str, **evidence: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.evidence = evidence


class Skipped(Exception):
    """The scenario cannot run here (verification mode or provider), with the reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check(condition: bool, reason: str, **evidence: Any) -> None:
    """Raise :class:`Failed` unless ``condition`` holds."""
    if not condition:
        raise Failed(reason, **evidence)


class Harness:
    """Scratch workspaces and the driver for one scenario of one host."""

    def __init__(
        self, driver: HostDriver, root: Path, provider: str, without_events: frozenset[str]
    ) -> None:
        self.driver = driver
        self.root = root
        self.provider = provider
        self.without_events = without_events
        self.started: list[Workspace] = []
        # A synchronous settlement is over when the Turn is; a detached one gets time.
        self.settle_timeout = 30.0 if driver.settles_detached else 0.0

    def start(
        self, setup: HookSetup | None = None, automation: dict[str, bool] | None = None
    ) -> Workspace:
        """A fresh Goal with the hooks installed as ``setup`` says."""
        self.close()
        workspace = Workspace(self.root / f"w{len(self.started)}", self.provider, automation)
        setup = setup or HookSetup()
        setup.without_events = setup.without_events | self.without_events
        setup.env = {**setup.env, "TURN_HOOKS_STATE_DIR": str(workspace.root / "state")}
        # Nothing to wait for when this run removed the settlement hook.
        detached = self.driver.settles_detached
        self.settle_timeout = (
            30.0 if detached and self.driver.ingest_event not in setup.without_events else 0.0
        )
        self.driver.prepare(workspace, setup)
        self.started.append(workspace)
        return workspace

    def turn(self, prompt: str, reply: str | int) -> TurnRun:
        """One Turn of the host."""
        return self.driver.turn(prompt, reply)

    def seed(self, workspace: Workspace, *documents: dict[str, Any]) -> None:
        """Learn memories through our own generic hook, not the host under test."""
        for index, document in enumerate(documents):
            event = {"turn_id": f"seed-{index}", "last_assistant_message": final_message(document)}
            argv = [*HOOK_COMMAND, "host", "generic", "post-settlement"]
            argv += ["--goal-id", GOAL, "--agent-id", AGENT]
            argv += ["--registry", str(workspace.registry)]
            argv += ["--validation-command-json", json.dumps(workspace.validator)]
            subprocess.run(
                argv, input=json.dumps(event), capture_output=True, text=True, check=True
            )
        stored = workspace.stored_records()
        check(stored in (None, len(documents)), "seeding the store failed", stored=stored)

    def warm_store(self, workspace: Workspace) -> None:
        """Let our own generic hook open the store once (a recall), outside the host."""
        argv = [*HOOK_COMMAND, "host", "generic", "pre-turn", "--goal-id", GOAL]
        argv += ["--agent-id", AGENT, "--registry", str(workspace.registry)]
        event = {"turn_id": "warm-up", "prompt": "warm up"}
        subprocess.run(argv, input=json.dumps(event), capture_output=True, text=True, check=True)

    def close(self) -> None:
        """Stop what the previous ``start`` started."""
        if self.started:
            self.driver.close()


def completed_turn(harness: Harness, prompt: str, reply: str | int) -> TurnRun:
    """One Turn that must complete; :class:`Failed` otherwise."""
    run = harness.turn(prompt, reply)
    check(run.completed, "the Turn did not complete")
    return run


def strings(document: Any) -> Iterator[str]:
    """Every string inside a JSON document."""
    if isinstance(document, str):
        yield document
    elif isinstance(document, dict):
        for value in document.values():
            yield from strings(value)
    elif isinstance(document, list):
        for value in document:
            yield from strings(value)


def our_text(text: str) -> str:
    """Our rendered text inside a host string: from our first words to the request's end."""
    start = text.find(TEXT_START)
    end = text.find(REQUEST_END, max(start, 0))
    return text[max(start, 0) : end + len(REQUEST_END) if end >= 0 else len(text)]


def carrying(run: TurnRun, marker: str) -> list[str]:
    """The strings of the Turn's requests (or hook output) that contain ``marker``."""
    return [text for request in run.requests for text in strings(request) if marker in text]


def settled_spools(harness: Harness, workspace: Workspace, count: int) -> list[Any]:
    """The Turns the host settled, each with its receipt (the driver knows where a host
    records them), waiting if settlement is detached."""

    def done() -> list[Any]:
        found = harness.driver.settlements(workspace)
        return found if len(found) >= count else []

    return wait_for(done, harness.settle_timeout) or []


def ingest_status(spool: dict[str, Any]) -> str | None:
    """The reward-memory ingest status inside a spool entry's receipt."""
    results = spool["post_settlement"].get("results") or {}
    status = (results.get(INGEST_STATUS) or {}).get("status")
    return status if isinstance(status, str) else None


@dataclass(frozen=True)
class Scenario:
    """One catalogue entry."""

    id: str
    proves: str
    edges: tuple[str, ...]
    run: Callable[[Harness], dict[str, Any]]
    real_host_only: bool = False
    kind: str = DELIVERY
    embedded_only: bool = False
    """It needs a store outage on demand, which only the embedded store allows here."""

    def inapplicable(self, driver: HostDriver, provider: str) -> str | None:
        """Why this scenario cannot run with this driver and provider (``None``: it can).

        An inapplicable delivery scenario is not required for its edge; any other one is.
        """
        if self.real_host_only and driver.verification != REAL:
            return "needs a real host run; payload contracts cannot show it"
        if self.embedded_only and provider != "embedded":
            return "needs a store outage on demand; only the embedded store allows one here"
        return None

    def execute(self, harness: Harness) -> dict[str, Any]:
        """Run it; :class:`Skipped` where it cannot run or could only pass vacuously."""
        reason = self.inapplicable(harness.driver, harness.provider)
        if reason:
            raise Skipped(reason)
        events = {RECALL: harness.driver.recall_event, INGEST: harness.driver.ingest_event}
        removed = sorted(events[e] for e in self.edges if events[e] in harness.without_events)
        if self.kind == GUARD and len(removed) == len(self.edges):
            # "Nothing happened" proves nothing when the hook that could act is gone.
            raise Skipped(f"vacuous: this run left out {', '.join(removed)}")
        return self.run(harness)

    def describe(self) -> dict[str, Any]:
        """The catalogue entry as ``conformance list`` shows it."""
        return {
            "scenario": self.id,
            "edges": list(self.edges),
            "kind": self.kind,
            "real_host_only": self.real_host_only,
            "proves": self.proves,
        }


CATALOGUE: list[Scenario] = []


def scenario(
    scenario_id: str,
    proves: str,
    *edges: str,
    real_host_only: bool = False,
    kind: str = DELIVERY,
    embedded_only: bool = False,
) -> Callable[[Callable[[Harness], dict[str, Any]]], Callable[[Harness], dict[str, Any]]]:
    """Register a scenario function in :data:`CATALOGUE`.

    The function returns its evidence with an ``observed`` sentence: what this run saw.
    """

    def register(
        function: Callable[[Harness], dict[str, Any]],
    ) -> Callable[[Harness], dict[str, Any]]:
        CATALOGUE.append(
            Scenario(scenario_id, proves, edges, function, real_host_only, kind, embedded_only)
        )
        return function

    return register


@scenario(
    "recall.delivered_in_budget",
    "a learned memory reaches the Turn exactly once, inside the 8,000-character render",
    RECALL,
)
def _delivered_in_budget(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    harness.seed(workspace, reflection())
    run = completed_turn(harness, RECALL_PROMPT, "Module tests first.")
    texts = carrying(run, "[memory 1]")
    check(bool(texts), "the memory never reached the Turn")
    per_text = max(text.count("[memory 1]") for text in texts)
    check(len(texts) == 1 and per_text == 1, "the memory arrived more than once", seen=len(texts))
    size = len(our_text(texts[0]))
    check(size <= RENDER_LIMIT, "the context exceeds the bound", chars=size)
    check(REQUEST_END in texts[0], "the context was cut short", chars=size)
    return {
        "observed": f"the seeded memory arrived once, in {size} characters of context",
        "memory_occurrences": 1,
        "context_chars": size,
    }


def _long_reflection(index: int) -> dict[str, Any]:
    filler = f"variant {index}: when a change touches one module run its tests first; " * 4
    document = reflection(f"Focused test run variant {index}: " + "module tests first. " * 6)
    document["experience"] = {
        **document["experience"],
        "future_behavior": {
            key: f"{key} {index}: {filler}"[:400]
            for key in ("trigger", "action", "validation", "stop_condition")
        },
    }
    return document


@scenario(
    "recall.overflow_degrades",
    "long memories are cut to fit, over the render bound whole ones are dropped, and the "
    "reflection request is kept",
    RECALL,
)
def _overflow_degrades(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    harness.seed(workspace, *(_long_reflection(i) for i in range(6)))
    run = completed_turn(harness, RECALL_PROMPT, "ok")
    texts = carrying(run, "[memory 1]")
    check(len(texts) == 1, "the context did not arrive once", seen=len(texts))
    text = our_text(texts[0])
    check(REQUEST_END in text, "the reflection request was lost", chars=len(text))
    check(len(text) <= RENDER_LIMIT, "over the bound", chars=len(text))
    memories = [part for part in text.split("\n\n") if part.startswith("[memory ")]
    largest = max(len(part.encode("utf-8")) for part in memories)
    check(largest <= MEMORY_BYTES, "a memory was not cut to fit", memory_bytes=largest)
    # Since issue 38 the memories recall returns, cut to fit, stay under the spec's
    # bound; a host with a lower one drops whole memories and says so.
    omitted = OMITTED in text
    return {
        "observed": f"of 6 long memories {len(memories)} arrived in {len(text)} characters, "
        f"each in at most {largest} bytes, the reflection request kept",
        "context_chars": len(text),
        "memories_shown": len(memories),
        "omission_noted": omitted,
    }


@scenario(
    "recall.governing_fields_locked",
    "a contribution that names a governing field is dropped; the others still arrive",
    RECALL,
)
def _governing_fields_locked(harness: Harness) -> dict[str, Any]:
    harness.start(HookSetup(env={"TURN_HOOKS_PLUGINS": SPEC}))
    run = completed_turn(harness, "hello", "ok")
    check(not carrying(run, MARKER), "a governing field override reached the Turn")
    check(bool(carrying(run, REQUEST_END)), "the other contribution was lost too")
    return {
        "observed": "the probe's governing-field override was dropped; the reflection request "
        "still arrived",
        "override_delivered": False,
        "other_contributions_delivered": True,
    }


@scenario(
    "recall.reaches_model_request",
    "the contribution is in the request the host sends to the model",
    RECALL,
    real_host_only=True,
)
def _reaches_model_request(harness: Harness) -> dict[str, Any]:
    harness.start()
    run = completed_turn(harness, "hello", "ok")
    check(bool(run.requests), "the model was never asked")
    check(bool(carrying(run, REQUEST_END)), "the contribution is not in the model request")
    return {
        "observed": f"the reflection request was in the body of the model request "
        f"({len(run.requests)} request(s) received)",
        "model_requests": len(run.requests),
    }


@scenario(
    "ingest.validated_activated",
    "a validated reflection is written and activated only after exact readback",
    INGEST,
)
def _validated_activated(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    completed_turn(harness, "fix the flaky parser test", final_message(reflection()))
    spools = settled_spools(harness, workspace, 1)
    check(bool(spools), "the Turn was never settled")
    journals = workspace.settled()
    receipts = [j["public_receipt"] for j in journals]
    check(
        [r.get("status") for r in receipts] == ["activated"],
        "not activated",
        statuses=[r.get("status") for r in receipts],
    )
    check(receipts[0].get("exact_readback_verified") is True, "no exact readback")
    stored = workspace.stored_records()
    check(stored in (None, 1), "the store does not hold exactly one record", stored=stored)
    held = "unknown records" if stored is None else f"{stored} record"
    return {
        "observed": f"one journal ended activated after exact readback; the store holds {held}",
        "status": "activated",
        "exact_readback_verified": True,
        "stored_records": stored,
    }


def _nothing_written(harness: Harness, workspace: Workspace) -> dict[str, Any]:
    spools = settled_spools(harness, workspace, 1)
    check(bool(spools), "the Turn was never settled")
    status = ingest_status(spools[0])
    check(status != "activated", "a memory was activated", status=status)
    check(not workspace.journals(), "an outcome journal was written", status=status)
    stored = workspace.stored_records()
    check(stored in (None, 0), "the store holds a record", stored=stored)
    return {
        "observed": f"the Turn was settled (ingest {status or 'no status'}); no journal, "
        f"{stored or 0} stored records",
        "ingest_status": status,
        "journals": 0,
        "stored_records": stored,
    }


@scenario(
    "ingest.no_evidence_no_write",
    "with no validator declared there is no evidence, so nothing is written",
    INGEST,
    kind=GUARD,
)
def _no_evidence(harness: Harness) -> dict[str, Any]:
    workspace = harness.start(HookSetup(validation=False))
    completed_turn(harness, "fix the flaky parser test", final_message(reflection()))
    return _nothing_written(harness, workspace)


@scenario(
    "ingest.unvalidated_zero_calls",
    "a reflection the validator does not attest makes zero provider calls",
    INGEST,
    kind=GUARD,
)
def _unvalidated(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    harness.warm_store(workspace)
    before = workspace.store_fingerprint()
    document = reflection(evidence_refs=[UNRECORDED])
    document["experience"] = {**document["experience"], "evidence_refs": [UNRECORDED]}
    completed_turn(harness, "fix the flaky parser test", final_message(document))
    evidence = _nothing_written(harness, workspace)
    if before is not None:
        after = workspace.store_fingerprint()
        check(after == before, "the store was written", before=before, after=after)
        evidence["store_unchanged"] = True
        evidence["observed"] += "; the store file is unchanged"
    return evidence


@scenario(
    "ingest.replay_deduplicated",
    "a settlement delivered twice is settled once: the replay makes no provider call",
    INGEST,
)
def _replay(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    message = final_message(reflection())
    completed_turn(harness, "fix the flaky parser test", message)
    spools = settled_spools(harness, workspace, 1)
    check(bool(spools), "the Turn was never settled")
    before = workspace.store_fingerprint()
    first = [j["public_receipt"] for j in workspace.settled()]
    harness.driver.replay_settlement(spools[0], message)
    after = [j["public_receipt"] for j in workspace.settled()]
    check(len(after) == 1 and after == first, "the replay changed the outcome", journals=len(after))
    if before is not None:
        check(workspace.store_fingerprint() == before, "the replay wrote to the store")
    stored = workspace.stored_records()
    check(stored in (None, 1), "the store holds duplicates", stored=stored)
    return {
        "observed": "the end event delivered twice left one journal and the same receipt"
        + ("; the store is unchanged" if before is not None else ""),
        "journals": 1,
        "store_unchanged": before is not None,
        "stored_records": stored,
    }


@scenario(
    "ingest.disabled_zero_calls",
    "an explicit disable makes zero provider calls and reconciles nothing",
    INGEST,
    kind=GUARD,
)
def _disabled(harness: Harness) -> dict[str, Any]:
    workspace = harness.start(automation={"automatic_recall": False, "automatic_ingest": False})
    run = completed_turn(harness, "fix the flaky parser test", final_message(reflection()))
    check(not carrying(run, REQUEST_END), "recall ran although it is disabled")
    evidence = _nothing_written(harness, workspace)
    if workspace.provider_id == "embedded_sqlite":
        check(not (workspace.sidecars / STORE_FILE).exists(), "the provider was called")
        evidence["provider_calls"] = 0
        evidence["observed"] += "; the store was never opened"
    return evidence


@scenario(
    "ingest.pending_reconciled",
    "a write the store could not take stays pending and the next Turn reconciles it",
    INGEST,
    embedded_only=True,
)
def _pending_reconciled(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    workspace.sidecars.mkdir(mode=0o700, parents=True, exist_ok=True)
    store = workspace.sidecars / STORE_FILE
    os.close(os.open(store, os.O_CREAT | os.O_WRONLY, 0o600))
    # An exclusive transaction held by another process: the store is busy, as during
    # a long maintenance job, and every call times out.
    holder = sqlite3.connect(store, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        run = harness.turn("fix the flaky parser test", final_message(reflection()))
        check(run.completed, "the Turn did not complete while the store was busy")
        pending = wait_for(
            lambda: [j for j in workspace.journals() if j.get("status") == "pending"],
            harness.settle_timeout,
        )
        check(bool(pending), "no pending journal was kept for the failed write")
    finally:
        holder.close()
    run = harness.turn("next task", "ok")
    check(run.completed, "the next Turn did not complete")
    done = wait_for(
        lambda: [
            j
            for j in workspace.settled()
            if j.get("status") == "completed" and j["public_receipt"].get("status") == "activated"
        ],
        harness.settle_timeout,
    )
    check(bool(done), "the pending write was not reconciled", journals=len(workspace.journals()))
    return {
        "observed": "the write stayed pending while the store was locked; the next Turn "
        "reconciled it to activated",
        "pending_then": "activated",
        "stored_records": workspace.stored_records(),
    }


@scenario(
    "ingest.failed_turn_nothing",
    "a failed Turn (model HTTP 400) settles nothing",
    INGEST,
    real_host_only=True,
    kind=GUARD,
)
def _failed_turn(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    run = harness.turn("fix the flaky parser test", 400)
    check(not run.completed, "the host reported a failed Turn as completed")
    if harness.settle_timeout:  # a detached settlement, had one started, writes by now
        time.sleep(2)
    check(not workspace.journals(), "a failed Turn was settled")
    spooled = workspace.sidecars / harness.driver.spool_dir
    check(not spooled.exists(), "a failed Turn was spooled")
    return {
        "observed": "the host reported the Turn failed; no journal and no spool entry",
        "journals": 0,
        "spooled": 0,
    }


@scenario(
    "sidecars.private_locked",
    "every sidecar is 0600 in 0700 directories, has its lock beside it, and parses",
    INGEST,
    kind=GUARD,
)
def _sidecars(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    harness.turn("fix the flaky parser test", final_message(reflection()))
    check(bool(settled_spools(harness, workspace, 1)), "the Turn was never settled")
    files = workspace.sidecar_files()
    check(bool(files), "no sidecar was written")
    checked = 0
    for path in files:
        name = path.relative_to(workspace.sidecars).parts[0]
        try:
            mode = path.lstat().st_mode
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            # Removed since it was listed: the settlement, still finishing after its
            # record was read back, lets its queue marker go. Gone is no sidecar.
            continue
        check(mode & 0o777 == 0o600, "a sidecar is not 0600", area=name)
        check(not stat.S_ISLNK(mode), "a sidecar is a symlink", area=name)
        has_lock = path.with_name(path.name + ".lock").exists()
        check(has_lock or not path.exists(), "a sidecar has no lock", area=name)
        json.loads(text)
        checked += 1
        directory = path.parent
        while directory != workspace.sidecars.parent:
            mode = directory.stat().st_mode & 0o777
            check(mode == 0o700, "a sidecar directory is not 0700", area=name)
            directory = directory.parent
    return {
        "observed": f"{checked} sidecar file(s): 0600, locked, parse; directories 0700",
        "sidecars_checked": checked,
    }


@scenario(
    "hook.fail_open",
    "a crashing or hanging hook never blocks the Turn",
    RECALL,
    INGEST,
    kind=GUARD,
)
def _fail_open(harness: Harness) -> dict[str, Any]:
    python = [sys.executable, "-c"]
    if isinstance(harness.driver, PayloadDriver):
        # No host process to observe: our own command must exit 0 on broken input.
        harness.start()
        out = harness.driver.broken_input_probe()
        check(out[0] == 0 and out[1] in ("", "{}"), "the hook did not fail open", exit=out[0])
        return {"observed": "our hook exited 0 with no output on broken stdin", "exit_code": 0}
    for command, timeout in (
        ([*python, "import sys; sys.exit(3)"], 30),
        ([*python, "import time; time.sleep(120)"], 2),
    ):
        harness.start(HookSetup(command=command, timeout_seconds=timeout))
        run = harness.turn("hello", "Still answered.")
        check(run.completed, "the Turn was blocked by a failing hook")
        check("Still answered." in run.answer, "the Turn lost its answer")
    return {
        "observed": "with a hook exiting 3 and one hanging past its 2 s timeout, both Turns "
        "completed with their answer",
        "crash_turn_completed": True,
        "hang_turn_completed": True,
    }


@scenario(
    "receipts.public_safe",
    "public receipts and the hook log hold no raw text, paths, scope refs or secrets",
    INGEST,
    kind=GUARD,
)
def _public_safe(harness: Harness) -> dict[str, Any]:
    workspace = harness.start()
    prompt = "fix the flaky parser test"
    harness.turn(prompt, final_message(reflection()))
    check(bool(settled_spools(harness, workspace, 1)), "the Turn was never settled")
    raw = (REFLECTION["content_summary"], REFLECTION["reasoning_summary"], prompt)
    documents: list[Any] = [j.get("public_receipt") for j in workspace.journals()]
    log = workspace.root / "state" / "hook-log.json"
    if log.exists():
        documents.append(json.loads(log.read_text(encoding="utf-8")))
    problems = sorted({p for d in documents for p in public_safety_violations(d, raw_texts=raw)})
    check(not problems, "a public document is not public-safe", problems=problems)
    return {
        "observed": f"{len(documents)} public document(s) scanned: no raw text, path, scope "
        "ref or secret",
        "documents_scanned": len(documents),
    }
