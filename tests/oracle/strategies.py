"""Hypothesis strategies: one case (argv and files, see :mod:`oracle.differential`) per draw.

Each family starts from a valid document our own tests wrote (F1, U1 and the dogfood
batch) and applies a short list of edits: a value replaced by one of the boundary
values below, a key dropped or added. Hypothesis shrinks a diverging case by
shortening that list and simplifying each value, so a kept regression names one or
two edits. Utility inputs are generated as observation streams instead, with every
observation id recomputed, so the reducer's own rules are what is exercised.
The route check reads flags, not a file: its seed is a valid flag set, edited the
same way.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import utility_cases
from fixtures import f1
from hypothesis import strategies as st

from capabilities.reward_memory.contract.candidate import build_candidate, normalise_event
from capabilities.reward_memory.contract.config import normalise_config
from capabilities.reward_memory.contract.identities import short_digest
from capabilities.reward_memory.curation.review import review_candidate
from capabilities.reward_memory.utility.proposal import APPLICATION_OUTCOMES

# Values at the edges of what the contracts accept: types JSON tells apart, signed
# zero, integral floats, non-ASCII and over-long text, path-like and `..` text.
SCALARS = st.one_of(
    st.sampled_from(
        [None, True, False, 0, 1, -1, 0.0, -0.0, 1.0, 0.5, 2, 121, 1e9, "", " ", "x", ".."]
    ),
    st.sampled_from(
        [
            "a/../b.json",
            "viking://agent/x/memories/y",
            "viking://user/alice/peers/p/memories/x.json",
            "sha256:" + "0" * 64,
            "0" * 16,
            "2026-08-15T00:00:00+02:00",
            "2026-08-15T00:00:00Z",
            "é" * 300,
            "word " * 80,
            "先运行聚焦测试" * 40,
            "/home/u/x",
        ]
    ),
    st.integers(-3, 300),
    st.text(max_size=12),
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.just({}))


def paths_of(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in ``document`` (dict keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(document, dict):
        for key, value in document.items():
            found.extend(paths_of(value, (*prefix, key)))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found.extend(paths_of(value, (*prefix, index)))
    return found


def _apply(document: Any, path: tuple[Any, ...], edit: str, value: Any) -> None:
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if edit == "drop" and isinstance(parent, dict):
        parent.pop(last, None)
    elif edit == "add" and isinstance(parent, dict):
        parent["extra_key"] = value
    else:
        parent[last] = value


@st.composite
def edited(draw: st.DrawFn, seed: Any, max_edits: int = 3) -> Any:
    """``seed`` with up to ``max_edits`` edits at drawn paths."""
    document = copy.deepcopy(seed)
    for _ in range(draw(st.integers(0, max_edits))):
        paths = paths_of(document)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        edit = draw(st.sampled_from(["set", "set", "drop", "add"]))
        _apply(document, path, edit, draw(VALUES))
    return document


def _case(family: str, argv: list[str], **files: Any) -> dict[str, Any]:
    return {"family": family, "argv": argv, "files": dict(files)}


# --- utility-project -------------------------------------------------------------
DIGESTS = ["34e0a8c2c217e248", "1111111111111111", "ffffffffffffffff", "0123456789abcdef"]
OBSERVATION_FIELDS: dict[str, Any] = {
    "utility_label": st.sampled_from(["helpful", "harmful", "neutral", "unknown"]),
    "attribution_level": st.sampled_from(["item", "set", "none"]),
    "evidence_basis": st.sampled_from(
        [
            "owner_correction",
            "deterministic_effect",
            "controlled_replay",
            "evaluator_inference",
            "insufficient",
        ]
    ),
    "confidence": st.sampled_from([0, 1, 0.0, -0.0, 0.3, 0.5, 0.8, 1.0]),
    "evaluator_ref": st.sampled_from(["evaluator:owner", "ev:a", "ev:b"]),
    "created_at": st.sampled_from(
        [
            "2026-08-16T00:00:00Z",
            "2026-08-16T02:00:00+02:00",
            "2026-08-16T00:00:00+00:00",
            "2026-08-17T00:00:00Z",
        ]
    ),
    "memory_ref_digests": st.one_of(
        st.lists(st.sampled_from(DIGESTS), min_size=0, max_size=4),
        st.integers(15, 18).map(lambda n: [f"{i:016x}" for i in range(n)]),
    ),
    "evidence_refs": st.sampled_from([[], ["evidence:review-9"]]),
    "reason_codes": st.sampled_from([[], ["owner_confirmed"], ["b", "a"]]),
    # Foreign to the context, alone or together: every cause a rejection lists.
    "scope": st.sampled_from(
        [utility_cases.SCOPE, {**utility_cases.SCOPE, "agent_id": "other"}, {"agent_id": "x"}]
    ),
    "retrieval_snapshot_ref": st.sampled_from(["snapshot:r1", "snapshot:r2"]),
    "policy_snapshot_ref": st.sampled_from(["policy:p1", "policy:p2"]),
}


@st.composite
def observation(draw: st.DrawFn) -> dict[str, Any]:
    """One U1 observation with a few fields drawn, its id recomputed."""
    keys = draw(st.lists(st.sampled_from(sorted(OBSERVATION_FIELDS)), max_size=4, unique=True))
    return utility_cases.obs(**{key: draw(OBSERVATION_FIELDS[key]) for key in keys})


@st.composite
def previous_projection(draw: st.DrawFn) -> Any:
    """A projection our reducer wrote for a drawn stream (in this context or another),
    then perhaps altered by one edit: intact, foreign and tampered ones."""
    from capabilities.reward_memory.utility.reducer import project

    document = utility_cases.projection_input(*draw(st.lists(observation(), max_size=3)))
    if draw(st.booleans()):
        document["retrieval_snapshot_ref"] = "snapshot:r2"
    return draw(edited(project(document), max_edits=draw(st.integers(0, 1))))


@st.composite
def utility_project(draw: st.DrawFn) -> dict[str, Any]:
    """A utility projection input: a stream, sometimes very long, and a context edit."""
    stream = draw(st.lists(observation(), max_size=5))
    if draw(st.integers(0, 9)) == 0:  # the history and subject caps
        count = draw(st.sampled_from([128, 129, 256, 257]))
        stream = [
            utility_cases.obs(evaluator_ref=f"ev:{i}", memory_ref_digests=[f"{i % 130:016x}"])
            for i in range(count)
        ]
    document = utility_cases.projection_input(*stream)
    if draw(st.integers(0, 3)) == 0:
        document["previous_projection"] = draw(previous_projection())
    elif draw(st.booleans()):
        extra = draw(
            st.sampled_from(
                [
                    {"reducer_version": ""},
                    {"reducer_version": "x"},
                    {"previous_projection": []},
                    {"previous_projection": None},
                    {"previous_projection": "p"},
                ]
            )
        )
        document.update(extra)
    document = draw(edited(document, max_edits=draw(st.integers(0, 1))))
    return _case(
        "utility-project",
        ["reward-memory", "utility-project", "--input", "{root}/input.json"],
        **{"input.json": document},
    )


# --- ingest-event (full fixture) ---------------------------------------------------
def ingest_fixture() -> dict[str, Any]:
    """F1's full ingest fixture: the event, its corpus, policy and provider binding."""
    entry = normalise_config(f1.config())["corpora"]["experience"]
    return {
        "adapter": "scoped_feedback",
        "event": f1.event(),
        "corpus": entry["corpus"],
        "standing_policy": entry["standing_policy"],
        "provider_binding": entry["provider_binding"],
        "observed_at": f1.OBSERVED_AT,
    }


INGEST_SEED = ingest_fixture()

# The shapes a fixture takes besides F1's: each memory class (hard policy with one or
# two action scopes, from the role that may derive it), each visibility with the
# scope kinds it may bind (a peer, a user or the shared account resources), a scope
# ref that names a JSON file or runs long, a provider no tool knows (with its own
# scheme or a viking:// scope), and summaries that are long, non-ASCII or both.
MEMORY_CLASSES = ("procedural_experience", "soft_preference", "hard_policy")
OWNER_ROLE = "verified_project_owner_or_operator"
SCOPE_KINDS = ("peer", "user", "resources")
SCOPE_SUFFIXES = ("", "", "", "/lesson.json", "/" + "/".join(["segment"] * 12))
FIXTURE_PROVIDERS = ("openviking", "openviking", "mem0", "lark")
EVENT_SUMMARIES = (
    None,  # F1's own
    "Prefer the focused tests.",
    "先运行聚焦测试" * 70,
    "é" * 499,
    "word " * 99 + "end",
    "a" * 500,
)


def _scope_ref(kind: str, provider: str, suffix: str) -> str:
    if provider == "lark":
        return "lark://space/reward-memory" + suffix
    if kind == "peer":
        return f1.SCOPE_REF + suffix
    if kind == "user":
        return "viking://user/alice/memories/reward-memory/goals/demo-goal" + suffix
    return "viking://resources/reward-memory/goals/demo-goal" + suffix


@st.composite
def ingest_shape(draw: st.DrawFn) -> dict[str, Any]:
    """F1's fixture recast as one memory class, visibility, scope and provider."""
    document = copy.deepcopy(INGEST_SEED)
    event, corpus = document["event"], document["corpus"]
    policy, binding = document["standing_policy"], document["provider_binding"]
    target_class = draw(st.sampled_from(MEMORY_CLASSES))
    event["target_class"] = corpus["class_id"] = target_class
    policy["allowed_target_classes"] = [target_class]
    if target_class != "procedural_experience":
        event.pop("experience")
    if target_class == "hard_policy":
        scopes = draw(st.sampled_from([["repo.test"], ["repo.test", "repo.write"]]))
        event["requested_action_scopes"] = policy["allowed_action_scopes"] = scopes
        event["source"]["actor_role"] = OWNER_ROLE
        policy["allowed_actor_roles"] = [OWNER_ROLE]
    summary = draw(st.sampled_from(EVENT_SUMMARIES))
    if summary is not None:
        event["content_summary"] = summary
    provider = draw(st.sampled_from(FIXTURE_PROVIDERS))
    corpus["provider_id"] = binding["provider_id"] = provider
    visibility = draw(st.sampled_from(["private", "workspace", "public_safe"]))
    corpus["privacy"]["visibility"] = visibility
    kind = "peer" if visibility == "private" else draw(st.sampled_from(SCOPE_KINDS))
    scope_ref = _scope_ref(kind, provider, draw(st.sampled_from(SCOPE_SUFFIXES)))
    binding["scope_ref"] = scope_ref
    if draw(st.booleans()):
        corpus["provider_scope_ref_digest"] = short_digest(scope_ref)
    else:
        corpus.pop("provider_scope_ref_digest")
    return document


@st.composite
def ingest_event(draw: st.DrawFn) -> dict[str, Any]:
    """A full-fixture ingest (no write): F1's with a few edits, or a drawn shape with at
    most one (most edits make a fixture invalid, and a shape is there to be accepted)."""
    if draw(st.booleans()):
        document = draw(edited(INGEST_SEED))
    else:
        document = draw(edited(draw(ingest_shape()), max_edits=1))
    return _case(
        "ingest-event",
        ["reward-memory", "ingest-event", "--input", "{root}/input.json"],
        **{"input.json": document},
    )


# --- experiment-status -------------------------------------------------------------
def _goal_files() -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="diff-goal-"))
    f1.write_goal(root)
    files = {}
    for path in sorted(root.rglob("*.json")):
        text = path.read_text(encoding="utf-8").replace(str(root), "{root}")
        # The config stays as its bytes, so its digest matches the receipt's.
        name = str(path.relative_to(root))
        files[name] = text if "config" in name else json.loads(text)
    return files


GOAL_FILES = _goal_files()
REGISTRY_NAME = next(name for name in GOAL_FILES if "config" not in name)
CONFIG_NAME = next(name for name in GOAL_FILES if "config" in name)


def rebind_digest(files: dict[str, Any]) -> None:
    """Point the registry and F1's receipt at the config's current bytes, so an edited
    config is validated instead of being reported as digest drift."""
    digest = "sha256:" + hashlib.sha256(files[CONFIG_NAME].encode("utf-8")).hexdigest()
    reward_memory = files[REGISTRY_NAME]["goals"][0]["control_plane"]["reward_memory"]
    reward_memory["config_digest"] = digest
    reward_memory["enablement_receipts"][f1.AGENT]["config_digest"] = digest


REGISTRY_ROLES = st.one_of(
    st.sampled_from(
        [
            "global-local",
            " global-local ",
            "global",
            "project-local",
            "Global-Local",
            "global_local",
            "",
            "  ",
            None,
            0,
            False,
            True,
            1.5,
            [],
            ["global-local"],
            {"role": "global"},
            "全局",
        ]
    ),
    SCALARS,
)


@st.composite
def experiment_status(draw: st.DrawFn) -> dict[str, Any]:
    """A registry and config, either edited; the status of F1's Goal and Agent.

    An edited config is rebound to the registry half the time: otherwise every config
    edit would only ever be digest drift.
    """
    files = copy.deepcopy(GOAL_FILES)
    target = draw(st.sampled_from([REGISTRY_NAME, CONFIG_NAME]))
    if target == CONFIG_NAME:
        files[target] = json.dumps(draw(edited(json.loads(files[target]), max_edits=2)))
        if draw(st.booleans()):
            rebind_digest(files)
    else:
        files[target] = draw(edited(files[target], max_edits=2))
    if draw(st.booleans()) and isinstance(files[REGISTRY_NAME], dict):
        # The role a registry declares: the global one and its neighbours.
        files[REGISTRY_NAME]["registry_role"] = draw(REGISTRY_ROLES)
    argv = ["reward-memory", "experiment-status", "--registry", f"{{root}}/{REGISTRY_NAME}"]
    return _case(
        "experiment-status", [*argv, "--goal-id", f1.GOAL, "--agent-id", f1.AGENT], **files
    )


# --- dogfood-evaluate --------------------------------------------------------------
RECEIPT_OUTCOMES = APPLICATION_OUTCOMES


@st.composite
def dogfood_evaluate(draw: st.DrawFn) -> dict[str, Any]:
    """A dogfood batch from our cases, with a few edits."""
    seeds = utility_cases.dogfood_cases()
    seed = seeds[draw(st.sampled_from(sorted(seeds)))]
    if draw(st.booleans()):
        document = draw(edited(seed, max_edits=2))
    else:
        # A utility attribution edited where it lives (its context, its proposal, its
        # date): every way a utility is rejected, beside a batch that stays valid.
        document = copy.deepcopy(seeds["utility_rejected" if draw(st.booleans()) else "ready"])
        target = document["observations"][0]
        target["utility_attribution"] = draw(
            edited(target["utility_attribution"], max_edits=draw(st.integers(1, 3)))
        )
        if draw(st.booleans()):
            # What the receipt applied and cited: a utility on a receipt that cites
            # nothing is rejected, and the batch is still evaluated.
            receipt = document["observations"][
                draw(st.integers(0, 1)) % len(document["observations"])
            ]["application_receipt"]
            receipt["outcome"] = draw(st.sampled_from(RECEIPT_OUTCOMES))
            receipt["memory_ref_digests"] = draw(
                st.sampled_from([[], ["34e0a8c2c217e248"], ["1111111111111111"]])
            )
    return _case(
        "dogfood-evaluate",
        ["reward-memory", "dogfood-evaluate", "--input", "{root}/input.json"],
        **{"input.json": document},
    )


# --- operator-control --------------------------------------------------------------
def operator_input(action: str) -> dict[str, Any]:
    """F1's accepted record, its corpus and a verified checkpoint for ``action``."""
    from rm_support import operator_checkpoint

    packet = build_candidate(normalise_event(f1.event()))
    review = {"reviewer_ref": "reviewer:demo", "review_ref": "review:1", "reasoning_summary": "ok"}
    return {
        "reviewed_record": review_candidate(packet, {"decision": "accept", **review}),
        "corpus": f1.corpus("openviking"),
        "operator_checkpoint": operator_checkpoint(action=action),
    }


# Non-ASCII text of every width (two, three and four UTF-8 bytes, a combining mark)
# at the lengths around each cut (220, 360, 500 characters).
SUMMARY_UNITS = ("a", "é", "先运行聚焦测试", "😀", "e\u0301", "word ", "中 文 ")
SUMMARY_LENGTHS = (219, 220, 221, 359, 360, 361, 362, 499, 500, 501, 700)
SUMMARIES = st.one_of(
    st.sampled_from(["stale memory", "  x  "]),
    st.builds(
        lambda unit, length: (unit * length)[:length],
        st.sampled_from(SUMMARY_UNITS),
        st.sampled_from(SUMMARY_LENGTHS),
    ),
)


@st.composite
def operator_control(draw: st.DrawFn) -> dict[str, Any]:
    """An edit or retire control with edited input and drawn summaries."""
    action = draw(st.sampled_from(["retire", "edit"]))
    argv = ["reward-memory", "operator-control", "--input", "{root}/input.json"]
    argv += ["--action", action, "--control-ref", "control:1"]
    argv += ["--reasoning-summary", draw(SUMMARIES)]
    if action == "edit":
        argv += ["--edited-content-summary", draw(SUMMARIES)]
    return _case(
        "operator-control",
        argv,
        **{"input.json": draw(edited(operator_input(action), max_edits=2))},
    )


# --- candidate-review ----------------------------------------------------------------
# Upstream's CLI reviews only its built-in case; its review function answers ours
# through oracle/upstream_shims.py. The seed is F1's candidate (an accepted record for
# a retirement, which needs an active record) and a review for the drawn decision.
DECISIONS = ("accept", "edit", "reject", "retire", "no_write")


def review_input(decision: str) -> dict[str, Any]:
    """F1's candidate (or accepted record) and a valid review for ``decision``."""
    packet = build_candidate(normalise_event(f1.event()))
    review: dict[str, Any] = {
        "reviewer_ref": "reviewer:demo",
        "review_ref": "review:1",
        "reasoning_summary": "the evidence and scope were reviewed",
    }
    if decision == "retire":
        packet = review_candidate(packet, {"decision": "accept", **review})
        review["review_ref"] = "review:2"
    if decision == "edit":
        review["edited_content_summary"] = "run the focused tests before the full suite"
    return {"candidate": packet, "review": review}


REVIEW_SEEDS = {decision: review_input(decision) for decision in DECISIONS}


@st.composite
def candidate_review(draw: st.DrawFn) -> dict[str, Any]:
    """One decision on F1's candidate, the candidate or the review edited."""
    decision = draw(st.sampled_from(DECISIONS))
    document = copy.deepcopy(REVIEW_SEEDS[decision])
    part = draw(st.sampled_from(["candidate", "review"]))
    document[part] = draw(edited(document[part], max_edits=2))
    argv = ["reward-memory", "candidate-review", "--input", "{root}/input.json"]
    return _case("candidate-review", [*argv, "--decision", decision], **{"input.json": document})


# --- route-check -------------------------------------------------------------------
# Upstream's route check reads flags, not a file: the seed is one valid flag set (a
# bounded confirmed bug with its evidence, a pilot fix) and each edit sets one option
# to a drawn value, False or None leaving it out. Values outside an option's choices,
# and counts argparse cannot read, are usage errors on both sides.
ROUTE_SWITCHES = (
    "--semantic-contract-change",
    "--generic-boundary-for-specific-policy",
    "--user-visible-behavior-change",
    "--hot-path-or-storage-change",
    "--retrieval-or-memory-quality-claim",
    "--named-reproduction",
    "--named-validation",
    "--effect-evidence",
    "--ux-evidence",
    "--benchmark-evidence",
    "--performance-evidence",
)
ROUTE_SEED: dict[str, Any] = {
    "--case": None,
    "--behavior-status": "bug_confirmed",
    "--surface-count": 1,
    "--edge-case-complexity": "low",
    **{switch: False for switch in ROUTE_SWITCHES},
    "--named-reproduction": True,
    "--named-validation": True,
    "--effect-evidence": True,
}
ROUTE_VALUES: dict[str, Any] = {
    "--case": st.sampled_from([None, None, "pr-3237", "pr-3238"]),
    "--behavior-status": st.sampled_from(
        [None, "bug_confirmed", "by_design", "uncertain", "confirmed_bug", ""]
    ),
    "--surface-count": st.one_of(
        st.integers(-2, 22),
        st.sampled_from([None, 10**6, "+3", " 4", "-0", "1e1", "x", "\u0663", "1.0"]),
    ),
    "--edge-case-complexity": st.sampled_from([None, "low", "medium", "high", "HIGH"]),
    **{switch: st.booleans() for switch in ROUTE_SWITCHES},
}


def route_argv(options: dict[str, Any]) -> list[str]:
    """The command line for ``options`` (a switch when True, left out when False/None)."""
    argv = ["reward-memory", "route-check"]
    for option, value in options.items():
        if value is True:
            argv.append(option)
        elif value is not None and value is not False:
            argv += [option, str(value)]
    return argv


@st.composite
def route_check(draw: st.DrawFn) -> dict[str, Any]:
    """The pilot seed's flags with up to six options set to drawn values."""
    options = dict(ROUTE_SEED)
    for _ in range(draw(st.integers(0, 6))):
        option = draw(st.sampled_from(sorted(ROUTE_VALUES)))
        options[option] = draw(ROUTE_VALUES[option])
    return _case("route-check", route_argv(options))


# No family for corpus-registry or health-check: upstream's CLI takes no input for
# either (corpus-registry builds its reference registry from no arguments and does not
# read --registry; health-check answers one of ten built-in --case fixtures). Its
# stateless functions, build_reward_memory_corpus_registry_packet(corpora) and
# build_reward_memory_corpus_health_packet(corpus, observation), need no network or
# state, but they read LoopX corpus declarations and health observations, while ours
# read a bound Goal's config and probe its live provider: the same schema names over
# different documents, so no input can be given to both (the route check's situation
# before it was redesigned).
FAMILIES = {
    "utility-project": utility_project(),
    "ingest-event": ingest_event(),
    "experiment-status": experiment_status(),
    "dogfood-evaluate": dogfood_evaluate(),
    "operator-control": operator_control(),
    "route-check": route_check(),
    "candidate-review": candidate_review(),
}
