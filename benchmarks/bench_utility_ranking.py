"""Stage 4 of the utility RFC: does a bounded utility rank prior beat relevance alone?

A simulation of Turns over a memory corpus whose true utilities are hidden from
everything but the outcome draw and the evaluator's noise. Each of two scopes (two
Agents) holds the same fifty texts under its own URIs: per topic a helpful memory,
a harmful near-duplicate of it in wording, and neutral ones. What helps one Agent
misleads the other on half the topics, so a utility that leaked across scopes
would show. Each Turn:

1. a prompt about one topic is searched in the scope by the embedded store's real
   search (``EmbeddedSqliteProvider.search``: FTS5, the relevance gate, its scores);
2. the hits, plus every other record of the scope as failing the gate, are
   re-ranked by the condition's factors through the real
   :func:`~capabilities.reward_memory.utility.rank_prior.rerank`, and the first
   :data:`SHOWN` are what the Turn sees;
3. the agent applies what it is given: the first one shown;
4. the validator's verdict is drawn from the applied memory's true utility, with
   noise, and is inconclusive now and then (no outcome, no observation);
5. the real application receipt (:func:`recall.application_receipt`), the real
   observation path (:func:`evaluator.observe`, which builds and validates the
   observation from the evaluator's proposal) and the real reducer
   (:func:`reducer.project`, replaying the scope's observations) turn it into the
   projection the next Turn ranks with (:func:`rank_prior.modifiers`).

The evaluator is right with probability :data:`EVALUATOR_ACCURACY` and otherwise
names another label; the owner now and then rates the applied memory
(``owner_correction``), right with probability :data:`OWNER_ACCURACY`. Without an
evaluator a conclusive Turn gives only ``unknown``/``insufficient`` lineage at set
level, as the hooks do.

The four conditions of RFC §10, each run on the same prompts and the same random
draws (common random numbers):

- ``relevance``: the search's order alone;
- ``hotness``: relevance times a factor from access count and recency (as
  OpenViking's hotness), bounded as the utility lift is;
- ``utility``: relevance times the bounded utility modifier (evaluator + owner);
- ``utility_no_inference``: the same with no evaluator at all (owner corrections
  only), ranked with :meth:`RankPriorConfig.without_inference`.

Sequence seeds split the runs: ``dev`` seeds may be looked at while choosing the
defaults, ``held`` seeds are only reported. Nothing is timed.

    python benchmarks/bench_utility_ranking.py                 # dev and held
    python benchmarks/bench_utility_ranking.py --half held --json figures.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider  # noqa: E402
from capabilities.reward_memory.contract.identities import memory_ref_digest  # noqa: E402
from capabilities.reward_memory.memory.recall import (  # noqa: E402
    RecallSession,
    application_receipt,
)
from capabilities.reward_memory.utility import rank_prior  # noqa: E402
from capabilities.reward_memory.utility.evaluator import observe  # noqa: E402
from capabilities.reward_memory.utility.reducer import project  # noqa: E402

SCOPES = ("alpha", "beta")
TOPICS = (
    ("pytest", "flaky", "fixture", "teardown", "parallel", "xdist"),
    ("migration", "alembic", "schema", "rollback", "postgres", "downgrade"),
    ("docker", "layer", "dockerfile", "buildkit", "registry", "multistage"),
    ("rebase", "squash", "conflict", "upstream", "reflog", "cherry"),
    ("vault", "lease", "rotation", "approle", "unseal", "policy"),
    ("heap", "leak", "profiler", "allocation", "tracemalloc", "snapshot"),
    ("pagination", "cursor", "endpoint", "offset", "graphql", "batch"),
    ("webpack", "bundle", "sourcemap", "chunk", "treeshaking", "loader"),
    ("kubernetes", "pod", "probe", "readiness", "helm", "rollout"),
    ("terraform", "state", "drift", "module", "backend", "workspace"),
)
"""Per topic six rare words; a prompt names two or three of them."""
ROLES = {
    # role: (truth in alpha, indices of the topic words its text holds, its text)
    "helpful": ("helpful", (0, 1, 2, 3), "When {0} and {1} break, rebuild the {2} from {3} first."),
    "harmful": ("harmful", (0, 1, 2, 4), "When {0} and {1} break, drop the {2} and silence {3}."),
    "neutral": ("neutral", (0, 3, 5), "Notes on {0}: the {1} output and the {2} flags differ."),
    "aside": ("neutral", (1, 4, 5), "Someone asked whether {0} needs {1} with {2} enabled."),
    "echo": ("harmful", (0, 2, 5), "Old advice: retry {0} until {1} passes, ignore the {2}."),
}
"""Five memories per topic: the harmful one is a near-duplicate of the helpful one
(the same sentence, other advice), so relevance alone cannot tell them apart."""
SHOWN = 3
"""Memories a Turn is shown after the re-rank (the hook's default recall limit)."""
SEARCHED = 15
"""Hits asked of the search, to re-rank (the hook asks ``min(24, 3 x limit)``)."""
SUCCESS = {"helpful": 0.85, "neutral": 0.55, "harmful": 0.2}
"""Chance that the validator passes a Turn that applied a memory of that utility."""
SUCCESS_NOTHING = 0.55
INCONCLUSIVE = 0.1
EVALUATOR_ACCURACY = 0.8
EVALUATOR_CONFIDENCE = 0.6
OWNER_RATE = 0.04
OWNER_ACCURACY = 0.95
TURNS = 150
"""Turns per scope and sequence."""
SEEDS = {"dev": (1, 2, 3, 4), "held": (101, 102, 103, 104, 105, 106, 107, 108, 109, 110)}
CONDITIONS = ("relevance", "hotness", "utility", "utility_no_inference")
HOT_HALF_LIFE = 30
"""Turns after which an access counts half (recency)."""
HOT_SATURATION = 4.0
"""Accesses at which hotness reaches 1 - 1/e of its bound."""
PROJECT_ID = "project-sim"
CORPUS_ID = "experience"
SURFACE_ID = "agent_workflow.turn_admission"
RETRIEVAL_SNAPSHOT = "snapshot:sim"
POLICY_SNAPSHOT = "policy:sim"
CREATED = "2026-12-06T{:02d}:{:02d}:{:02d}Z"
LABELS = ("helpful", "harmful", "neutral")
CONFIG = rank_prior.DEFAULT_CONFIG
"""The rank prior's policy under test: the shipped default unless ``--lower``,
``--upper``, ``--inference-weight`` or ``--inference-support`` (dev exploration) say otherwise."""


@dataclass(frozen=True)
class Memory:
    """One record of the simulated corpus; ``truth`` is hidden from the ranking."""

    uri: str
    scope: str
    topic: int
    role: str
    text: str
    truth: str

    @property
    def digest(self) -> str:
        """The memory ref digest receipts and the projection name it by."""
        return memory_ref_digest(self.uri)


def truth_of(scope: str, topic: int, role: str) -> str:
    """A memory's true utility: on odd topics the second scope finds the helpful and
    the harmful near-duplicate the other way round (what helps one Agent misleads another)."""
    truth = ROLES[role][0]
    if scope == SCOPES[1] and topic % 2 == 1 and role in ("helpful", "harmful"):
        return "harmful" if truth == "helpful" else "helpful"
    return truth


def corpus() -> list[Memory]:
    """Every scope's memories; URIs are shuffled by a fixed seed so that ties in
    relevance are not broken by role."""
    memories = []
    for scope in SCOPES:
        order = random.Random(f"corpus:{scope}")
        numbers = list(range(len(TOPICS) * len(ROLES)))
        order.shuffle(numbers)
        slots = iter(numbers)
        for topic, words in enumerate(TOPICS):
            for role, (_truth, indices, template) in ROLES.items():
                text = template.format(*(words[i] for i in indices))
                memories.append(
                    Memory(
                        uri=f"viking://user/{scope}/memories/m{next(slots):03d}",
                        scope=scope,
                        topic=topic,
                        role=role,
                        text=text,
                        truth=truth_of(scope, topic, role),
                    )
                )
    return memories


def prompt(topic: int, rng: random.Random) -> str:
    """A prompt naming two or three of the topic's words, in a varying frame."""
    words = rng.sample(TOPICS[topic], rng.choice((2, 3)))
    frame = rng.choice(
        (
            "how should I deal with {} today",
            "the build fails around {} again",
            "please fix the {} problem",
            "what did we learn about {}",
        )
    )
    return frame.format(" and ".join(words))


def _draw(seed: int, scope: str, turn: int, what: str) -> random.Random:
    """The Turn's own random source for one kind of draw: every condition sees the
    same prompt, outcome and judgement draws (common random numbers)."""
    return random.Random(f"{seed}:{scope}:{turn}:{what}")


def _scope(scope: str) -> dict[str, str]:
    return {
        "agent_id": scope,
        "project_id": PROJECT_ID,
        "corpus_id": CORPUS_ID,
        "surface_id": SURFACE_ID,
    }


def _context(scope: str) -> dict[str, Any]:
    return {
        "scope": _scope(scope),
        "retrieval_snapshot_ref": RETRIEVAL_SNAPSHOT,
        "policy_snapshot_ref": POLICY_SNAPSHOT,
    }


def _created(turn: int, step: int) -> str:
    seconds = turn * 4 + step
    return CREATED.format(seconds // 3600, seconds // 60 % 60, seconds % 60)


def receipt(scope: str, turn: int, query: str, applied: Memory) -> dict[str, Any]:
    """The Turn's application receipt, made by the recall module's own function."""
    session = RecallSession(
        packet=cast(
            Any,
            {
                "corpus_id": CORPUS_ID,
                "surface_id": SURFACE_ID,
                "mode": "function_boundary",
                "query_kind": "business_recall",
                "query_evidence": [
                    {
                        "query_digest": hashlib.sha256(query.encode()).hexdigest()[:16],
                        "query_summary": "simulated turn",
                        "exact_query_exposed": False,
                    }
                ],
                "result_readback_verified": True,
                "provider_call_count": 1,
            },
        )
    )
    return application_receipt(
        session,
        application_id=f"sim-{scope}-{turn:04d}",
        artifact_ref=f"artifact:{scope}-{turn:04d}",
        outcome="applied",
        cited_uris=[applied.uri],
        reasoning_summary="the memory fitted the task",
        current_artifact_verified=True,
    )


def proposal(
    facts: dict[str, Any], label: str, basis: str, confidence: float, evidence: str | None
) -> dict[str, Any]:
    """An evaluator's (or owner's) proposal echoing the trusted facts."""
    application = facts["application_receipt"]
    outcome = facts["verified_outcome"]
    item = label != "unknown"
    return {
        **facts["attribution_context"],
        "application_id": application["application_id"],
        "artifact_ref": application["artifact_ref"],
        "outcome_ref": outcome["outcome_ref"],
        "outcome_status": outcome["outcome_status"],
        "memory_ref_digests": application["memory_ref_digests"],
        "utility_label": label,
        "attribution_level": "item" if item else "set",
        "evidence_basis": basis,
        "confidence": confidence,
        "reason_codes": ["simulated_judgement" if item else "attribution_not_established"],
        "evidence_refs": [evidence] if evidence else [],
        "evaluator_ref": "evaluator:owner" if basis == "owner_correction" else "evaluator:sim",
        "evaluation_version": "evaluation_v0",
    }


def _other(label: str, rng: random.Random) -> str:
    return rng.choice([other for other in LABELS if other != label])


@dataclass
class TurnLog:
    """What one Turn of one condition did, for the figures."""

    scope: str
    turn: int
    topic: int
    relevant: list[Memory]
    """The hits that passed the gate, in relevance order (the search's)."""
    order: list[Memory]
    """The same hits in the condition's order."""
    shown: list[Memory]
    modifiers: dict[str, float]
    """Per relevant digest, the factor applied."""
    rescued: int
    """Memories that failed the gate yet ranked ahead of one that passed it."""
    leaks: int
    success: bool | None = None
    judged: list[tuple[str, str]] = field(default_factory=list)
    """(basis, label) of each observation the Turn made."""
    applied_truth: str | None = None


@dataclass
class Arm:
    """One condition's state in one scope: its observations, projection and accesses."""

    condition: str
    scope: str
    observations: list[dict[str, Any]] = field(default_factory=list)
    factors: dict[str, float] = field(default_factory=dict)
    subjects: set[str] = field(default_factory=set)
    accesses: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    @property
    def config(self) -> rank_prior.RankPriorConfig:
        """The rank prior's policy for this condition."""
        if self.condition == "utility_no_inference":
            return CONFIG.without_inference()
        return CONFIG

    def turn_factors(self, turn: int) -> dict[str, float]:
        """The factors this condition ranks with before ``turn``."""
        if self.condition in ("utility", "utility_no_inference"):
            return self.factors
        if self.condition == "hotness":
            return {digest: self._hot(times, turn) for digest, times in self.accesses.items()}
        return {}

    def _hot(self, times: list[int], turn: int) -> float:
        # Access count saturating, times recency halving every HOT_HALF_LIFE Turns,
        # lifting at most as far as the utility prior's upper bound.
        count = 1.0 - math.exp(-len(times) / HOT_SATURATION)
        recency = 0.5 ** ((turn - times[-1]) / HOT_HALF_LIFE)
        return 1.0 + (CONFIG.upper - 1.0) * count * recency

    def learn(self, observation: dict[str, Any]) -> None:
        """Append an observation and re-project the scope from all of them."""
        self.observations.append(observation)
        projection = project({"observations": self.observations, **_context(self.scope)})
        if not projection["ok"]:
            raise AssertionError(f"projection rejected: {projection['rejections']}")
        self.factors = rank_prior.modifiers(projection, self.config)
        self.subjects = set(rank_prior.item_subjects(projection))


def run_turn(
    arm: Arm,
    provider: EmbeddedSqliteProvider,
    memories: dict[str, Memory],
    in_scope: list[Memory],
    seed: int,
    turn: int,
) -> TurnLog:
    """One Turn of one condition in one scope (the numbered steps of the module)."""
    scope = arm.scope
    rng = _draw(seed, scope, turn, "prompt")
    topic = rng.randrange(len(TOPICS))
    query = prompt(topic, rng)
    hits = provider.search(
        f"viking://user/{scope}/memories", query, limit=SEARCHED, actor_peer_id=None
    )
    relevant = [memories[hit.uri] for hit in hits]
    scored = {hit.uri: hit.score for hit in hits}
    # The rest of the scope fails the gate: passed to the re-rank all the same, so the
    # figures would show it if a factor ever lifted one of them into view.
    items = [(m, m.digest, scored.get(m.uri)) for m in relevant] + [
        (m, m.digest, None) for m in in_scope if m.uri not in scored
    ]
    factors = arm.turn_factors(turn)
    ranked = rank_prior.rerank(items, factors, arm.config)
    passed = sum(r.passed for r in ranked)
    # The Turn sees the first SHOWN of as many places as items passed the gate: a
    # failed item ranked into those places would be shown, and counted.
    shown = [r.item for r in ranked[: min(SHOWN, passed)]]
    log = TurnLog(
        scope=scope,
        turn=turn,
        topic=topic,
        relevant=relevant,
        order=[r.item for r in ranked if r.passed],
        shown=shown,
        modifiers={r.digest: r.modifier for r in ranked if r.passed},
        rescued=sum(1 for r in ranked[:passed] if not r.passed),
        # Another scope's memory shown, or a factor on a memory this scope's own
        # projection does not hold (hotness is per scope by construction).
        leaks=sum(m.scope != scope for m in shown)
        + sum(
            1
            for r in ranked
            if r.passed
            and r.modifier != rank_prior.NEUTRAL
            and arm.condition != "hotness"
            and r.digest not in arm.subjects
        ),
    )
    for memory in shown:
        arm.accesses[memory.digest].append(turn)
    outcome_rng = _draw(seed, scope, turn, "outcome")
    inconclusive = outcome_rng.random() < INCONCLUSIVE
    chance = outcome_rng.random()
    if not shown:
        log.success = None if inconclusive else chance < SUCCESS_NOTHING
        return log
    applied = shown[0]
    log.applied_truth = applied.truth
    if inconclusive:
        return log  # an inconclusive run is no outcome: nothing is observed
    log.success = chance < SUCCESS[applied.truth]
    facts = {
        "application_receipt": receipt(scope, turn, query, applied),
        "verified_outcome": {
            "verified": True,
            "outcome_ref": f"outcome:{scope}-{turn:04d}",
            "artifact_ref": f"artifact:{scope}-{turn:04d}",
            "outcome_status": "passed" if log.success else "failed",
        },
        "attribution_context": _context(scope),
        "created_at": _created(turn, 0),
    }
    judge = _draw(seed, scope, turn, "judge")
    if arm.condition == "utility_no_inference":
        offer = proposal(facts, "unknown", "insufficient", 0.0, None)
    else:
        label = (
            applied.truth if judge.random() < EVALUATOR_ACCURACY else _other(applied.truth, judge)
        )
        offer = proposal(
            facts, label, "evaluator_inference", EVALUATOR_CONFIDENCE, f"evidence:{scope}-{turn}"
        )
    _record(arm, log, facts, offer)
    owner = _draw(seed, scope, turn, "owner")
    if owner.random() < OWNER_RATE:
        label = applied.truth if owner.random() < OWNER_ACCURACY else _other(applied.truth, owner)
        rated = {**facts, "created_at": _created(turn, 1)}
        _record(arm, log, rated, proposal(rated, label, "owner_correction", 1.0, f"owner:{turn}"))
    return log


def _record(arm: Arm, log: TurnLog, facts: dict[str, Any], offer: dict[str, Any]) -> None:
    result = observe({**facts, "evaluator_proposal": offer}, evaluator_argv=None)
    if result["status"] != "observed":
        raise AssertionError(f"observation refused: {result['reason_code']}")
    observation = result["observation"]
    log.judged.append((observation["evidence_basis"], observation["utility_label"]))
    # Only the conditions that rank by utility need the projection; the others keep
    # their observations for the evaluator's figures.
    if arm.condition in ("utility", "utility_no_inference"):
        arm.learn(observation)
    else:
        arm.observations.append(observation)


def seed_store(directory: Path, memories: Sequence[Memory]) -> EmbeddedSqliteProvider:
    """A real embedded store holding the corpus (FTS5, stems, term counts)."""
    store = directory / ".local" / "turn-hooks" / "memory.sqlite3"
    provider = EmbeddedSqliteProvider(store, anchor=directory)
    provider.write_many([(m.uri, m.text) for m in memories], actor_peer_id=None)
    return provider


def run_sequence(
    provider: EmbeddedSqliteProvider, memories: Sequence[Memory], seed: int, turns: int = TURNS
) -> dict[str, list[TurnLog]]:
    """Every condition over ``turns`` Turns per scope of the sequence ``seed``."""
    by_uri = {m.uri: m for m in memories}
    logs: dict[str, list[TurnLog]] = {}
    for condition in CONDITIONS:
        logs[condition] = []
        for scope in SCOPES:
            arm = Arm(condition, scope)
            in_scope = [m for m in memories if m.scope == scope]
            for turn in range(turns):
                logs[condition].append(run_turn(arm, provider, by_uri, in_scope, seed, turn))
    return logs


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def metrics(logs: Sequence[TurnLog], *, warm: int = 0) -> dict[str, Any]:
    """The figures of one condition over ``logs`` (Turns before ``warm`` left out).

    - ``quality``: of the Turns where a helpful memory was relevant, the share whose
      first shown memory was helpful;
    - ``harmful_first``: of the Turns where a harmful one was relevant, the share
      whose first shown memory was harmful;
    - ``task_success``: the share of conclusive Turns the validator passed;
    - ``false_attenuation``: of the (Turn, helpful relevant memory) pairs, the share
      where the condition ranked the helpful memory below a memory that is not
      helpful which relevance alone ranked below it;
    - ``demoted_helpful``: helpful memories that were given a factor below 1;
    - ``rescued_irrelevant``: memories shown that failed the relevance gate (must be 0);
    - ``scope_leaks``: memories shown from another scope, plus factors applied to a
      memory the scope's own projection does not hold (must be 0);
    - ``evaluator_disagreement``: of the evaluator's directional judgements, the
      share that differ from the hidden truth.
    """
    kept = [log for log in logs if log.turn >= warm]
    with_helpful = [log for log in kept if any(m.truth == "helpful" for m in log.relevant)]
    with_harmful = [log for log in kept if any(m.truth == "harmful" for m in log.relevant)]
    conclusive = [log for log in kept if log.success is not None]
    pairs = attenuated = demoted = 0
    for log in kept:
        position = {m.uri: i for i, m in enumerate(log.order)}
        base = {m.uri: i for i, m in enumerate(log.relevant)}
        for helpful in (m for m in log.relevant if m.truth == "helpful"):
            pairs += 1
            demoted += log.modifiers.get(helpful.digest, 1.0) < 1.0
            attenuated += any(
                other.truth != "helpful"
                and base[other.uri] > base[helpful.uri]
                and position[other.uri] < position[helpful.uri]
                for other in log.relevant
            )
    inferred = [
        label != log.applied_truth
        for log in kept
        for basis, label in log.judged
        if basis == "evaluator_inference"
    ]
    return {
        "turns": len(kept),
        "quality": _share(sum(_first(log) == "helpful" for log in with_helpful), len(with_helpful)),
        "harmful_first": _share(
            sum(_first(log) == "harmful" for log in with_harmful), len(with_harmful)
        ),
        "task_success": _share(sum(bool(log.success) for log in conclusive), len(conclusive)),
        "false_attenuation": _share(attenuated, pairs),
        "demoted_helpful": demoted,
        "off_topic_shown": sum(m.topic != log.topic for log in kept for m in log.shown),
        "rescued_irrelevant": sum(log.rescued for log in kept),
        "scope_leaks": sum(log.leaks for log in kept),
        "evaluator_disagreement": _share(sum(inferred), len(inferred)),
        "observations": sum(len(log.judged) for log in kept),
    }


def _first(log: TurnLog) -> str | None:
    return log.shown[0].truth if log.shown else None


FIGURES = (
    "quality",
    "harmful_first",
    "task_success",
    "false_attenuation",
    "demoted_helpful",
    "off_topic_shown",
    "rescued_irrelevant",
    "scope_leaks",
    "evaluator_disagreement",
)
FALSE_ATTENUATION_BOUND = 0.02
"""The most false attenuation (share of helpful relevant memories ranked below one
that is not helpful, which relevance alone ranked below it) a default may cost."""


def evaluate(half: str, turns: int = TURNS, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """Every condition over the half's sequences: pooled figures, the figures after
    the first half of each sequence (once evidence exists), and per sequence the
    quality of each condition."""
    memories = corpus()
    pooled: dict[str, list[TurnLog]] = defaultdict(list)
    per_seed: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        provider = seed_store(Path(scratch), memories)
        for seed in seeds if seeds is not None else SEEDS[half]:
            logs = run_sequence(provider, memories, seed, turns)
            per_seed[seed] = {c: metrics(logs[c])["quality"] for c in CONDITIONS}
            for condition in CONDITIONS:
                pooled[condition] += logs[condition]
    return {
        "half": half,
        "turns_per_scope": turns,
        "seeds": sorted(per_seed),
        "all": {c: metrics(pooled[c]) for c in CONDITIONS},
        "late": {c: metrics(pooled[c], warm=turns // 2) for c in CONDITIONS},
        "quality_per_seed": per_seed,
    }


def decision(held: dict[str, Any]) -> dict[str, Any]:
    """Whether the held-out figures let utility ranking become the default: it must
    raise quality over relevance alone in every held sequence, keep false attenuation
    within :data:`FALSE_ATTENUATION_BOUND`, and rescue and leak nothing."""
    figures = held["all"]
    verdict = {}
    for condition in ("utility", "utility_no_inference"):
        gains = [
            seed[condition] - seed["relevance"]
            for seed in held["quality_per_seed"].values()
            if seed[condition] is not None and seed["relevance"] is not None
        ]
        mine = figures[condition]
        verdict[condition] = {
            "quality_gain": round(mine["quality"] - figures["relevance"]["quality"], 4),
            "sequences_gaining": sum(g > 0 for g in gains),
            "sequences": len(gains),
            "mean_gain_per_sequence": round(statistics.fmean(gains), 4) if gains else None,
            "false_attenuation_within_bound": mine["false_attenuation"] <= FALSE_ATTENUATION_BOUND,
            "safe": mine["rescued_irrelevant"] == 0 and mine["scope_leaks"] == 0,
            "default": bool(gains)
            and all(g > 0 for g in gains)
            and mine["false_attenuation"] <= FALSE_ATTENUATION_BOUND
            and mine["rescued_irrelevant"] == 0
            and mine["scope_leaks"] == 0,
        }
    return verdict


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown(result: dict[str, Any]) -> str:
    """The half's figures as Markdown tables."""
    lines = []
    for part, title in (("all", "all Turns"), ("late", "second half of each sequence")):
        lines += [
            f"{result['half']} seeds {result['seeds']}, {title}:",
            "",
            "| condition | " + " | ".join(FIGURES) + " |",
            "|---|" + "---:|" * len(FIGURES),
        ]
        for condition in CONDITIONS:
            row = result[part][condition]
            lines.append(f"| {condition} | " + " | ".join(_cell(row[f]) for f in FIGURES) + " |")
        lines.append("")
    lines += ["quality per sequence:", "", "| seed | " + " | ".join(CONDITIONS) + " |"]
    lines.append("|---:|" + "---:|" * len(CONDITIONS))
    for seed, row in result["quality_per_seed"].items():
        lines.append(f"| {seed} | " + " | ".join(_cell(row[c]) for c in CONDITIONS) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the halves asked for and print their figures (and the decision on held)."""
    global CONFIG, EVALUATOR_ACCURACY, OWNER_RATE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("dev", "held", "both"), default="both")
    parser.add_argument("--turns", type=int, default=TURNS, help="Turns per scope and sequence")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--lower", type=float, default=rank_prior.DEFAULT_LOWER)
    parser.add_argument("--upper", type=float, default=rank_prior.DEFAULT_UPPER)
    parser.add_argument(
        "--inference-weight",
        type=float,
        default=rank_prior.DEFAULT_TIER_WEIGHTS["evaluator_inference"],
    )
    parser.add_argument(
        "--inference-support",
        type=int,
        default=rank_prior.DEFAULT_MIN_SUPPORT["evaluator_inference"],
    )
    parser.add_argument(
        "--evaluator-accuracy",
        type=float,
        default=EVALUATOR_ACCURACY,
        help="the simulated evaluator's chance of naming the true label (sensitivity runs)",
    )
    parser.add_argument(
        "--owner-rate",
        type=float,
        default=OWNER_RATE,
        help="the chance that the owner rates a Turn's applied memory (sensitivity runs)",
    )
    args = parser.parse_args(argv)
    EVALUATOR_ACCURACY, OWNER_RATE = args.evaluator_accuracy, args.owner_rate
    CONFIG = rank_prior.RankPriorConfig(
        lower=args.lower,
        upper=args.upper,
        tier_weights={
            **rank_prior.DEFAULT_TIER_WEIGHTS,
            "evaluator_inference": args.inference_weight,
        },
        min_support={
            **rank_prior.DEFAULT_MIN_SUPPORT,
            "evaluator_inference": args.inference_support,
        },
    )
    halves = ("dev", "held") if args.half == "both" else (args.half,)
    results: dict[str, Any] = {}
    for half in halves:
        results[half] = evaluate(half, args.turns)
        print(markdown(results[half]))
    if "held" in results:
        results["decision"] = decision(results["held"])
        print(json.dumps(results["decision"], indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
