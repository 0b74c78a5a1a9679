"""The settlement pipeline every CLI-style host shares (hosts.md §1.4, turn-lifecycle §8).

On a successful Turn: record the settled Turn in a spool sidecar and read it back
(that readback is the writeback evidence), run the binding's independent validator,
keep its verdict in the spool, then dispatch ``post_settlement`` and store its
receipt there too. Hosts have no quota owner here, so quota evidence is ``None``:
absent, never fabricated.

Nothing queued is lost. The first durable write of a Stop hook is its queue marker,
the write-ahead record (:func:`write_ahead`): right after the hook parsed its stdin,
before it loads the plugins, it carries the Turn, its final message and the
validator's declaration, in one small fsynced file (the message is bounded by
:data:`MAX_SPOOL_BYTES`). So it precedes everything that can wait or fail: the
staging sidecar, the spool entry's lock and read, the validator. A value the model
staged through a result tool is taken from its sidecar after that; the marker is then
written again carrying the built spool entry, since the staged value is gone. The
marker is removed only once every plugin took the entry
(:func:`turn_hooks.settlement_is_taken`) on a verdict of its validator. A hook
killed halfway, an entry's lock held past its timeout (``settlement_spool_busy``), a
journal lock held too long, a journal directory that could not be written: each leaves
the marker, and :func:`replay_pending` (started detached by the next PreTurn, or run
as ``turn-hooks settle --pending``) carries the entry on, the oldest first, to a final
receipt or, after :data:`MAX_SETTLEMENT_ATTEMPTS`, to the typed terminal state
``settlement_attempts_exhausted``. The worker holds the entry's lock while it works,
so two workers never settle one entry at once. An entry that was never written, or
can no longer be read, is built from the marker (:func:`carried_entry`, exactly as the
hook builds it) and spooled under that lock (``settlement_rebuilt_from_queue``); the
plugins' journals, keyed by the Turn, keep a Turn delivered twice from being learned
twice.

Before the marker, the hook's stdin is already kept: the hook moves it into a
locked spill file in the user's state directory before it parses anything, and
removes the spill once :func:`write_ahead` returns (:mod:`hosts.settlement.spill`); the next
PreTurn queues the Turn of a spill whose hook died. What remains, bounded: a hook
killed before it has consumed its stdin leaves nothing (the host still holds the
event; no validator has run), and so does one killed in the few milliseconds from
the end of stdin to the marker's fsync when the state directory could not take a
spill (``settlement_spill_unavailable``, ``settlement_spill_full``). So is a kill in
the millisecond between taking a staged value and the marker that carries it (the
final message's own block, if any, is settled instead). A marker written before
markers carried Turns is dropped when its entry is missing.

What cannot be carried on is never retried for ever. A host result too large to spool
is refused and leaves no marker (``settlement_spool_too_large``). An entry that
can no longer be read (garbled, over the sidecar bound, not a regular file) is set
aside (``settlement_spool_unreadable``, renamed with :data:`SET_ASIDE_SUFFIX` for a
person) and replaced by the Turn the hook or the marker holds; with neither, its
marker is removed. A queue or spool that cannot be written costs the Turn its
durability, not its settlement: the reason goes to the hook log and the settlement is
still delivered inline.

State lives only below the sidecar root of the Goal the binding registry names: with
no usable registry or Goal a Stop hook writes nothing but its hook log line.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pluggy

from hosts.facts.render import extract_results
from hosts.settlement import after_reply, spill, staged
from hosts.settlement.hook_log import log_root, reasons_in, record, record_refusals
from sidecars import (
    SidecarStore,
    SidecarTransaction,
    dumps,
    goal_agent_parts,
    lock_path,
    path_token,
    require_goal_repository,
    sidecar_root,
)
from turn_hooks import (
    TAIL_BYTES,
    ExternalRun,
    InvalidInputError,
    SidecarCorrupt,
    SidecarError,
    SidecarLockTimeout,
    SidecarWriteError,
    TurnContext,
    call_post_settlement,
    call_post_writeback,
    loads_bounded,
    output_tail,
    read_results,
    run_external,
    settlement_is_taken,
    settlement_result_fields,
)

SPOOL_SCHEMA = "turn_hooks_settlement_v0"
QUEUE_SCHEMA = "turn_hooks_settlement_queue_v0"
REPLAY_SCHEMA = "turn_hooks_settlement_replay_v0"
SPOOL_DIR = "settlements"
QUEUE_DIR = "settlement-queue"
BUILT_IN_MARGIN = 30
"""What the built-in validator (``turn-hooks validate command``) is given beyond its
own ``--timeout-seconds``: its interpreter's start and its record, so the project's
check times out first and the validator says so."""
VALIDATION_TIMEOUT = 600 + BUILT_IN_MARGIN
"""The validator's deadline, in seconds, off the Turn's path (a detached child, after
the reply, a replay worker) when neither the hook nor the built-in validator's own
``--timeout-seconds`` names one: the built-in validator's default (ten minutes,
``capabilities.reward_memory.cli.validate.DEFAULT_TIMEOUT``) and the margin."""
MAX_VALIDATION_TIMEOUT = 3600 + BUILT_IN_MARGIN
"""The longest deadline a declaration may name: the built-in validator's longest (an
hour) and the margin."""
INLINE_VALIDATION_TIMEOUT = 20
"""The deadline of a validator run inside the hook (``TURN_HOOKS_SETTLE=inline``, or
a hook that could start no child to settle in): hosts give a hook 30 s, and dispatch
and readback follow the validator. It is the default there; a longer deadline
declared is cut to it and the hook log says so (``validation_timeout_clamped``). A
validator cut off is ``inconclusive``, and the next PreTurn's worker, off the Turn's
path, runs it again with its whole deadline."""
SETTLEMENT_WAIT = INLINE_VALIDATION_TIMEOUT + 4
"""How long a hook whose host reads its receipt (the generic CLI contract) waits for
the child that settles its Turn: the inline deadline and the dispatch after it. A
validator still running then is not cut off: the child carries it to its own
deadline and keeps its verdict, and the hook prints :data:`VALIDATION_PENDING`."""
VALIDATOR_DIR = "validator"
STALE_SLOT_GRACE = 60
"""Seconds past the longest deadline after which a held validator lock is no
validator's (:func:`validator_slot`)."""
VALIDATOR_WAIT = 1.0
"""How long a settlement waits for its Goal's validator (one runs at a time): a
settlement that finds it busy for longer leaves its queue marker, and a later
PreTurn's worker carries it on once the running validator has ended."""
VALIDATION_PENDING: dict[str, Any] = {
    "ok": True,
    "schema_version": "turn_post_settlement_observer_v0",
    "status": "runtime_unavailable",
    "reason_code": "validation_pending",
    "fail_open": True,
    "external_writes_performed": False,
}
"""What a settlement whose validator was cut off returns: nothing was dispatched, the
entry stays queued and a later worker runs the validator again (never stored)."""
ATTESTATION_KEY = "attestation"
"""Where ``task_validation`` keeps the validator's JSON output; the plugin checks it."""
VALIDATION_RUN_KEY = "validation_run"
"""Where the spool entry keeps the validator run's private account (``validator_run``)."""
REPLAY_PER_TURN = 3
"""Spooled settlements one PreTurn's worker carries on (hosts.md §1.4: oldest first)."""
MAX_SETTLEMENT_ATTEMPTS = 8
"""Deliveries of one spool entry before it ends as ``settlement_attempts_exhausted``."""
LEASE_TIMEOUT = 0.2
"""A replay waits this long for an entry's lock: a busy entry has a worker already."""
CONCLUSIVE = frozenset({"passed", "failed", "unavailable"})
"""Validator verdicts kept in the spool; ``inconclusive`` (timeout, crash) is re-run."""
IN_FLIGHT_WAIT = 1.0
"""A PreTurn waits at most this long for settlements a detached child still carries,
so the next Turn recalls what the last one learned."""
ENV_SETTLE = "TURN_HOOKS_SETTLE"
"""``inline`` settles inside the Stop hook even where the host detaches it."""
MAX_SPOOL_BYTES = 1024 * 1024
"""The host result and Turn one spool entry may hold (encoded). A quarter of the
sidecar bound, so the verdict and receipts added later keep the entry readable."""
PARK_DIR = "parked-settlements"
PARKED_SCHEMA = "turn_hooks_parked_settlement_v0"
MAX_PARKED = 32
"""Turns of one (Goal, Agent) that may wait in the user's state directory while the
Goal's sidecar root cannot be written (:func:`_park`); past it a Turn is not kept."""
SET_ASIDE_SUFFIX = ".unreadable"
"""An unreadable spool entry is renamed to this suffix: kept for a person, never listed."""


def run_validator(
    argv: list[str] | None,
    *,
    request: dict[str, Any],
    cwd: str | None,
    timeout: int,
    slot: int | None = None,
) -> dict[str, Any]:
    """``task_validation`` from the declared validator (§8 table); never raises.

    ``slot`` is the descriptor of the Goal's validator lock (:func:`validator_slot`):
    the validator inherits it, so the lock stays held for as long as the validator
    runs, even when the process that started it is killed (``kill -9``, the host's
    end): no second validator of the Goal starts beside an orphaned one.
    """
    return validator_run(argv, request=request, cwd=cwd, timeout=timeout, slot=slot)[0]


def validator_run(
    argv: list[str] | None,
    *,
    request: dict[str, Any],
    cwd: str | None,
    timeout: int,
    slot: int | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``task_validation`` and the run's private account, ``None`` without a validator.

    The account (``VALIDATION_RUN_KEY`` in the spool entry, which is private) says
    when the run ended, how long it took, its exit status and the tail of what it
    printed (stderr, then stdout: ``turn_hooks.output_tail``), so ``turn-hooks
    status`` can say why a validator failed without anyone running it again.
    ``task_validation`` stays as the plugins always had it. ``slot``: as for
    :func:`run_validator`.
    """
    if not argv:
        return {"ok": False, "status": "unavailable", "validator_kind": "none"}, None
    started = time.monotonic()
    run = run_external(
        argv,
        request,
        cwd=cwd or None,
        timeout=timeout,
        stderr="tail",
        tail=TAIL_BYTES,
        pass_fds=() if slot is None else (slot,),
    )
    validation = _verdict(run)
    account = {
        "observed_at": _now(),
        "duration_ms": round((time.monotonic() - started) * 1000),
        "timeout_seconds": timeout,
        "status": validation["status"],
        "reason_code": validation.get("reason_code"),
        "exit_code": run.exit_code,
        **_failure(run.stdout),
        "output_tail": output_tail(run.stderr + run.tail),
    }
    if validation["status"] == "passed":
        # A validator prints its check's status only when it fails; a pass means the
        # check (the project's command, or the validator itself) exited 0.
        account.setdefault("exit_status", 0)
    return validation, account


def _verdict(run: ExternalRun) -> dict[str, Any]:
    if run.reason == "external_failed":
        failed: dict[str, Any] = {"ok": False, "status": "failed", "exit_code": run.exit_code}
        code = _failure(run.stdout).get("reason_code")
        if code is not None:
            failed["reason_code"] = code
        return failed
    if run.reason is not None:  # never started, timed out, or killed for its output
        return {"ok": False, "status": "inconclusive", "reason_code": run.reason}
    try:
        stdout = run.stdout.decode("utf-8").strip()
    except UnicodeDecodeError:  # as ever: output that is not text gives no verdict
        return {"ok": False, "status": "inconclusive", "reason_code": "validator_output_not_text"}
    validation: dict[str, Any] = {"ok": True, "status": "passed", "validator_kind": "command"}
    if stdout and len(stdout.encode("utf-8")) <= 4096:
        try:
            attestation = loads_bounded(stdout)
        except InvalidInputError:
            attestation = None
        if isinstance(attestation, dict):
            # Opaque here: the plugin that asked for it checks what it attests.
            validation[ATTESTATION_KEY] = attestation
    return validation


_REASON_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _failure(stdout: bytes) -> dict[str, Any]:
    """What a failing validator printed of itself: ``validate command`` prints one JSON
    object with ``reason_code`` and the exit status of the project's command
    (``exit_status``). Only a short code-shaped string and an integer are kept, so the
    hook log never carries the validator's output."""
    if len(stdout) > 4096:
        return {}
    try:
        document = loads_bounded(stdout.decode("utf-8").strip())
    except (UnicodeDecodeError, InvalidInputError):
        return {}
    if not isinstance(document, dict):
        return {}
    found: dict[str, Any] = {}
    code, status = document.get("reason_code"), document.get("exit_status")
    if isinstance(code, str) and _REASON_CODE.fullmatch(code):
        found["reason_code"] = code
    if isinstance(status, int) and not isinstance(status, bool):
        found["exit_status"] = status
    return found


def validator_reasons(validation: dict[str, Any]) -> list[tuple[str, str]]:
    """What the hook log says of a validator that did not pass: its own reason code
    (``validated_command_failed``...), else ``validator_failed`` or the run's fault
    (``external_timeout``...). A binding with no validator (recall only) says nothing."""
    status = validation.get("status")
    if status not in ("failed", "inconclusive"):
        return []
    code = validation.get("reason_code")
    return [("validator", code if isinstance(code, str) else "validator_failed")]


def spool_path(store: SidecarStore, turn: TurnContext) -> Path:
    """``settlements/T(goal)/T(agent)/T(turn_key).json``."""
    return store.path(
        *goal_agent_parts(SPOOL_DIR, turn.goal_id, turn.agent_id),
        path_token(turn.turn_key, "turn") + ".json",
    )


def _queue_path(store: SidecarStore, goal_id: str | None, agent_id: str | None, name: str) -> Path:
    return store.path(*goal_agent_parts(QUEUE_DIR, goal_id, agent_id), name)


def settlement_store(registry: str | None, goal_id: str | None) -> SidecarStore:
    """The sidecar store of the Goal a registry names.

    There is no fallback to the event's working directory, which may be anywhere.

    :raises InvalidInputError: the registry's reason code
        (:func:`sidecars.require_goal_repository`), before anything is written.
    """
    return SidecarStore(sidecar_root(require_goal_repository(registry, goal_id)))


def binding_store(registry: str | None, goal_id: str | None) -> SidecarStore | None:
    """:func:`settlement_store`, or ``None`` for a binding with no usable Goal.

    For a PreTurn's own bookkeeping: it then keeps no host state at all, and the
    plugins say why the binding is unusable in their own results.
    """
    try:
        return settlement_store(registry, goal_id)
    except InvalidInputError:
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def declared_deadline(argv: list[str], given: int | None) -> int | None:
    """The validator's deadline as the user chose it: ``given`` (the hook's
    ``--validation-timeout-seconds``) when there is one, else the built-in validator's
    own ``--timeout-seconds`` and :data:`BUILT_IN_MARGIN`; ``None`` when neither is
    named (:func:`validation_timeout` then takes the default of where it runs).

    So ``install --validation-timeout-seconds N`` writes N once, into the built-in
    validator's command, and every host grants it.
    """
    if given is not None:
        return given
    for at in range(1, len(argv) - 1):
        if argv[at : at + 2] != ["validate", "command"]:
            continue
        options = argv[at + 2 :]
        options = options[: options.index("--")] if "--" in options else options
        for index, word in enumerate(options):
            value = options[index + 1] if index + 1 < len(options) else ""
            if word.startswith("--timeout-seconds="):
                value = word.partition("=")[2]
            elif word != "--timeout-seconds":
                continue
            if value.isdigit() and 0 < int(value) <= MAX_VALIDATION_TIMEOUT - BUILT_IN_MARGIN:
                return int(value) + BUILT_IN_MARGIN
        break
    return None


def _declaration(argv: list[str] | None, timeout: int | None) -> dict[str, Any] | None:
    if not argv:
        return None
    return {"argv": list(argv), "timeout_seconds": declared_deadline(argv, timeout)}


def settle(
    pm: pluggy.PluginManager,
    turn: TurnContext,
    *,
    final_message: str | None,
    validation_argv: list[str] | None,
    validation_timeout: int | None = None,
    detach: bool = False,
    wait: float | None = None,
    ahead: bool = False,
) -> dict[str, Any] | None:
    """Run the whole settlement of one successful Turn; returns the dispatcher receipt.

    The host result holds one value per result field the loaded plugins declare,
    each taken from its block of the final message, or from the value the model staged
    for this Turn through the field's tool (:mod:`hosts.settlement.staged`), which wins. Why
    anything was not taken (a repeated block, a plugin's reason code) goes to the local
    hook log.

    With ``detach`` the Turn is spooled and read back, and a forked child in its own
    session carries the rest (validator, dispatch, receipt) under the entry's lock;
    the hook returns ``None`` as soon as the child holds that lock. A child killed at
    any point leaves the queue marker, so the next PreTurn's worker carries it on.
    With ``wait`` as well, the hook waits up to that many seconds for the child and
    returns the receipt it kept (:data:`VALIDATION_PENDING` while it still runs): a
    host that reads the receipt gets it, and a long validator is never cut off and run
    again.

    ``ahead``: the hook wrote this Turn's marker already (:func:`write_ahead`), so it
    is written again only to carry a value taken from the staging sidecar.
    """
    store = settlement_store(turn.registry, turn.goal_id)
    if detach:
        store.sweep_temps = False  # the spool gains an entry a Turn: the child sweeps it
    fields = settlement_result_fields(pm)
    host_result, faults = extract_results(final_message, fields)
    reasons = [("adapter", fault) for fault in faults]
    # A value the model staged through a result tool (hosts.adapters.mcp) is this Turn's value:
    # it is what the model chose to hand over out of the user's sight.
    try:
        tooled = staged.take(
            store,
            goal_id=turn.goal_id,
            agent_id=turn.agent_id,
            session_id=turn.host_session_id,
            turn_id=turn.host_turn_id,
            fields=fields,
        )
    except (SidecarError, OSError):
        tooled = {}
        reasons.append(("adapter", "staged_result_unreadable"))
    host_result.update(tooled)
    entry = _entry(pm, turn, host_result, final_message, validation_argv, validation_timeout)
    path = spool_path(store, turn)
    queued_entry = True
    try:
        _check_spoolable(entry)
    except InvalidInputError:
        if ahead:
            _dequeue(store, path)  # its record is no settlement: nothing to carry on
        raise
    try:
        # The marker before the entry: a kill before the entry exists leaves a marker
        # that carries it. Written ahead already (:func:`write_ahead`) it holds the
        # final message, from which a worker builds this same entry; only a value
        # taken from the staging sidecar, gone now, needs the entry itself.
        if not ahead or tooled:
            _enqueue(store, turn.goal_id, turn.agent_id, path, entry)
    except SidecarLockTimeout:
        raise  # another Stop hook of this Turn holds it, and settles it
    except (SidecarError, OSError):
        reasons.append(("adapter", "settlement_queue_unwritable"))
        queued_entry = False  # nothing would carry a killed child's entry on: settle here
    with contextlib.ExitStack() as held:
        spool: SidecarTransaction | None = None
        try:
            try:
                spool, previous = _open_spool(held, store, path, reasons)
            except SidecarLockTimeout:
                if not queued_entry:
                    raise  # nothing holds the Turn but this process
                # The marker holds the Turn: whoever holds the entry, or a later
                # worker once it is free, settles it from there.
                record(
                    turn.host, "post_settlement", [*reasons, ("adapter", "settlement_spool_busy")]
                )
                return None
            entry["observed_at"] = previous.get("observed_at", turn.observed_at)
            # A detached child counts its own delivery, as a replay does.
            entry["settlement_attempt_count"] = _attempts(previous) + (0 if detach else 1)
            if "post_settlement" in previous:
                entry["post_settlement"] = previous["post_settlement"]
            # The fsyncs are the queue marker's (written ahead, or just now): until a
            # settlement's own durable write of this entry lets the marker go, a crash
            # that loses this write leaves the marker, from which a worker builds the
            # same entry. Two fsyncs (about 8 ms) fewer on the Turn's path.
            spool.write(entry, durable=not queued_entry)
            appended = spool.read() == entry
        except (SidecarError, OSError) as exc:
            # Not durable, but still delivered: the evidence says honestly that
            # nothing was appended, and each plugin decides what that is worth.
            unreadable = isinstance(exc, SidecarCorrupt)
            reason = "settlement_spool_unreadable" if unreadable else "settlement_spool_unwritable"
            reasons.append(("adapter", reason))
            if not unreadable:
                _dequeue(store, path)  # no entry to carry on; a later worker could not either
            spool, appended = None, False
        detached = (
            detach
            and spool is not None
            and appended
            and queued_entry
            and os.environ.get(ENV_SETTLE) != "inline"
        )
        if detached:
            assert spool is not None  # detached implies it
            if _hand_off(pm, store, spool, tuple(reasons), turn, defer=wait is None):
                if wait is None:
                    return None  # the child holds the entry's lock; this process lets go
                held.close()  # this process's hold on the entry: the child keeps its own
                return _child_receipt(store, path, wait)
            # No child could be started: settle here, under the same lock.
            _, receipt = _replay_entry(
                pm,
                store,
                spool,
                event="post_settlement",
                reasons=tuple(reasons),
                turn=turn,
                inline=True,
            )
            return receipt
        try:
            slot = held.enter_context(validator_slot(store, turn.goal_id, entry, reasons))
        except SidecarLockTimeout:
            if spool is not None and queued_entry:
                # Another Turn's validator runs: this one waits in the queue for it.
                record(turn.host, "post_settlement", [*reasons, ("adapter", "validator_busy")])
                return None
            slot = None  # nothing would carry it on: settle it now, as ever
        receipt = _deliver(
            pm, turn, store, spool, entry, appended=appended, notes=reasons, inline=True, slot=slot,
            queued=queued_entry,
        )  # fmt: skip
    record(turn.host, "post_settlement", [*reasons, *reasons_in(receipt.get("results") or {})])
    return receipt


def _open_spool(
    held: contextlib.ExitStack, store: SidecarStore, path: Path, reasons: list[tuple[str, str]]
) -> tuple[SidecarTransaction, dict[str, Any]]:
    """The entry's transaction, held in ``held``, and what the entry holds (``{}`` for
    none). An entry that cannot be read is set aside for a person and this Turn's
    replaces it (``settlement_spool_unreadable`` goes to ``reasons``): a Turn is not
    refused its spool for what an earlier one left there.
    """
    try:
        spool = held.enter_context(store.transaction(path))
    except SidecarCorrupt:  # not a regular file: refused before its lock is taken
        _set_aside(path)
        reasons.append(("adapter", "settlement_spool_unreadable"))
        spool = held.enter_context(store.transaction(path))
    try:
        return spool, spool.read() or {}
    except SidecarCorrupt:  # under the entry's lock, so no one else's entry is moved
        _set_aside(path)
        reasons.append(("adapter", "settlement_spool_unreadable"))
        return spool, {}


def _entry(
    pm: pluggy.PluginManager,
    turn: TurnContext,
    host_result: dict[str, str],
    final_message: str | None,
    validation_argv: list[str] | None,
    validation_timeout: int | None,
) -> dict[str, Any]:
    """The spool entry of a Turn: the same from the Stop hook and from a worker that
    builds it from the hook's write-ahead record (:func:`carried_entry`)."""
    # Read before anything is kept: the spool, the validator and the plugin all see the
    # canonical value, so the validator attests what is learned (read_result hook).
    host_result, notes = read_results(pm, host_result)
    record_refusals(turn.host, notes)
    entry: dict[str, Any] = {
        "schema_version": SPOOL_SCHEMA,
        "host": turn.host,
        "turn_key": turn.turn_key,
        "host_session_id": turn.host_session_id,
        "observed_at": turn.observed_at,
        "cwd": turn.cwd,
        "host_result": host_result,
        "last_message_sha256": hashlib.sha256(
            (final_message or "").encode("utf-8", "surrogatepass")
        ).hexdigest(),
        "turn": turn.to_json(),
        "validation_declaration": _declaration(validation_argv, validation_timeout),
        "settlement_attempt_count": 1,
    }
    refusals = [note for note in notes if "detail" in note]
    if refusals:  # private, for `turn-hooks status`: which field broke which rule
        entry["result_refusals"] = refusals
    return entry


def _close_inherited(keep: int) -> None:  # pragma: no cover - forked children only
    """Close every descriptor but the standard three and ``keep``.

    A descriptor the hook inherited or duplicated (the host's stdout pipe, kept aside
    while plugins run) would hold the host's read end open until settlement ends,
    and a host that reads a hook's output to its end would wait for it.
    """
    try:
        descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        descriptors = list(range(3, 1024))
    for descriptor in descriptors:
        if descriptor > 2 and descriptor != keep:
            with contextlib.suppress(OSError):
                os.close(descriptor)


def _check_spoolable(entry: dict[str, Any]) -> None:
    """Refuse an entry too large to spool, before anything (its marker too) is written.

    Spooled, it would have grown past the sidecar bound with its receipts, become
    unreadable and been retried on every Turn.
    """
    size = len(dumps(entry).encode("utf-8", "surrogatepass"))
    if size > MAX_SPOOL_BYTES:
        raise InvalidInputError(
            "the settlement is too large to spool", reason_code="settlement_spool_too_large"
        )


_settlers: list[int] = []
"""Settling children this process started and has not reaped yet (see :func:`_hand_off`)."""


def _hand_off(
    pm: pluggy.PluginManager,
    store: SidecarStore,
    spool: SidecarTransaction,
    reasons: tuple[tuple[str, str], ...],
    turn: TurnContext,
    *,
    defer: bool = True,
) -> bool:
    """Fork a child that settles the spooled entry of ``turn``, whose lock the caller
    holds; ``True`` once it is forked, or once this process has queued the settlement
    for after its reply (a resident server's child, :mod:`hosts.settlement.after_reply`: no fork
    of that large a process on the Turn's path; with ``defer=False`` it forks there
    too, for a caller that waits for the child).

    The child inherits the lock: ``flock(2)`` belongs to the open file, which the
    child shares, so the lock stays held when the hook closes its own descriptor and
    passes to the child with no gap in which a PreTurn could take the entry, and the
    hook waits for nothing. (It waited for the child to take the lock again, about
    3 ms, and before that for a second fork's exit, about 11 ms.) A child killed at
    any point leaves the queue marker, and the next PreTurn's worker carries the entry
    on. One fork, in a session of its own: a hook process ends right after this, and
    its child passes to init; a process that lives on (a test runner, a host
    in-process) reaps its ended settlers at its next hand-off. The child's standard
    streams are ``/dev/null``, so a host reading the hook's output to its end is not
    held up by it.
    """
    if defer and after_reply.accepting():  # settled once its host has the answer
        try:
            held = os.dup(spool.lock_fd)  # the lock stays held when the transaction ends
        except OSError:  # no descriptor left: settle here, as when no fork could be made
            return False
        after_reply.defer(
            functools.partial(_settle_after_reply, pm, store, spool.path, held, reasons, turn)
        )
        return True
    if not hasattr(os, "fork"):
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    _reap_settlers()
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # pragma: no cover - runs in the forked child; tests watch its effects
        _settle_in_child(pm, store, spool, reasons, turn)
    _settlers.append(pid)
    return True


def _reap_settlers() -> None:
    """Reap the settlers that have ended, without waiting for the others."""
    for pid in list(_settlers):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else (a SIGCHLD handler)
            done = pid
        if done:
            _settlers.remove(pid)


def _child_receipt(store: SidecarStore, path: Path, wait: float) -> dict[str, Any]:
    """The receipt the settling child kept in the entry at ``path``, once it lets the
    entry's lock go within ``wait`` seconds; :data:`VALIDATION_PENDING` when it still
    holds it (its validator runs on) or ended with no receipt (a validator cut off by
    its own deadline, another Turn's validator running, a kill: the queue marker
    stays, and a later worker carries the Turn on)."""
    try:
        with SidecarStore(store.root, lock_timeout=wait).transaction(path) as entry:
            kept = entry.read() or {}
    except (SidecarError, OSError):  # still held, or unreadable: the worker's to report
        return dict(VALIDATION_PENDING)
    receipt = kept.get("post_settlement")
    if not isinstance(receipt, dict) or "task_validation" not in kept:
        return dict(VALIDATION_PENDING)
    return receipt


def _settle_in_child(
    pm: pluggy.PluginManager,
    store: SidecarStore,
    spool: SidecarTransaction,
    reasons: tuple[tuple[str, str], ...],
    turn: TurnContext,
) -> None:  # pragma: no cover - runs in forked children only
    status = 0
    try:
        # A session of its own: the host's signal to the hook's process group (a
        # timeout, Ctrl-C) does not reach it. It opens no terminal, so it never gains
        # a controlling one, which is what a daemon's second fork guards against. A
        # signal that lands before this line leaves the queue marker for the next PreTurn.
        os.setsid()
        _settlers.clear()  # the parent's, not this process's children
        after_reply.leave()  # forked from a resident server's child: its log writes now
        devnull = os.open(os.devnull, os.O_RDWR | os.O_NOCTTY)
        for stream in (0, 1, 2):
            os.dup2(devnull, stream)
        _close_inherited(keep=spool.lock_fd)
        store.sweep_temps = True
        _replay_entry(pm, store, spool, event="post_settlement", reasons=reasons, turn=turn)
    except BaseException:  # the queue marker stays: the next PreTurn carries it on
        status = 1
    finally:
        os._exit(status)


def _settle_after_reply(
    pm: pluggy.PluginManager,
    store: SidecarStore,
    path: Path,
    lock_fd: int,
    reasons: tuple[tuple[str, str], ...],
    turn: TurnContext,
) -> None:
    """Settle the spooled entry at ``path`` in this process, after the host has its
    answer (:mod:`hosts.settlement.after_reply`).

    ``lock_fd`` is a duplicate of the Stop hook's own lock descriptor, taken before
    its transaction let go: ``flock(2)`` belongs to the open file, so the entry stayed
    locked from the spool's readback to here, with no gap in which a PreTurn could
    take it. A kill at any point leaves the queue marker, as for a forked child.
    """
    try:
        store.sweep_temps = True
        spool = SidecarTransaction(store, path, lock_fd)
        _replay_entry(pm, store, spool, event="post_settlement", reasons=reasons, turn=turn)
    finally:
        os.close(lock_fd)


def _attempts(entry: dict[str, Any]) -> int:
    count = entry.get("settlement_attempt_count")
    return count if isinstance(count, int) and count >= 0 else 0


def spooled_result(entry: dict[str, Any], fields: dict[str, str]) -> dict[str, str]:
    """The host result a spool entry holds.

    Entries written before result fields were generic kept each value at the top
    level under its field's name, so those are read by the declared field names.
    """
    stored = entry.get("host_result")
    if isinstance(stored, dict):
        return {key: value for key, value in stored.items() if isinstance(value, str)}
    return {name: value if isinstance(value := entry.get(name), str) else "" for name in fields}


def validation_timeout(declaration: Any, *, inline: bool, notes: list[tuple[str, str]]) -> int:
    """The deadline a validator gets: its declaration's, or where it names none usable
    the default of where it runs (:data:`VALIDATION_TIMEOUT` off the Turn's path,
    :data:`INLINE_VALIDATION_TIMEOUT` inside a hook). A declared deadline longer than
    a hook allows is cut to it, and ``validation_timeout_clamped`` is added to
    ``notes``: the user's choice is never overridden silently."""
    declared = declaration.get("timeout_seconds") if isinstance(declaration, dict) else None
    if not isinstance(declared, int) or isinstance(declared, bool):
        declared = 0
    if not 0 < declared <= MAX_VALIDATION_TIMEOUT:
        return INLINE_VALIDATION_TIMEOUT if inline else VALIDATION_TIMEOUT
    if inline and declared > INLINE_VALIDATION_TIMEOUT:
        notes.append(("adapter", "validation_timeout_clamped"))
        return INLINE_VALIDATION_TIMEOUT
    return declared


def _needs_validator(entry: dict[str, Any]) -> bool:
    """Whether delivering ``entry`` runs a validator: it declares one, the spool holds
    no verdict of it yet, and the Turn handed over something to attest."""
    declaration = entry.get("validation_declaration")
    return (
        not isinstance(entry.get("task_validation"), dict)
        and isinstance(declaration, dict)
        and bool(declaration.get("argv"))
        and _has_result(entry)
    )


def _has_result(entry: dict[str, Any]) -> bool:
    """Whether the Turn's host result holds a value for any result field (an entry
    from before the host result was kept whole is taken to: validated as ever)."""
    result = entry.get("host_result")
    return not isinstance(result, dict) or any(
        isinstance(value, str) and value.strip() for value in result.values()
    )


NOTHING_TO_VALIDATE: dict[str, Any] = {
    "ok": False,
    "status": "unavailable",
    "validator_kind": "not_run",
    "reason_code": "no_result_to_validate",
}
"""``task_validation`` of a Turn whose result fields are all empty (an answer to a
question): its validator attests a result, so with none it is not run. The project's
check costs minutes, would queue the next Turn's settlement behind it, and its pass
would say nothing (and hide the last real failure from ``status``)."""


@contextlib.contextmanager
def validator_slot(
    store: SidecarStore,
    goal_id: str | None,
    entry: dict[str, Any],
    notes: list[tuple[str, str]],
) -> Iterator[int | None]:
    """Hold the Goal's validator lock while ``entry``'s validator runs: one validator
    at a time per Goal, however many Turns settle. The block gets the lock's
    descriptor (for :func:`run_validator`), or ``None`` when no validator runs, or
    when the lock cannot be taken for a fault of its file (the validator then runs
    unguarded: a settlement is not refused for that).

    The validator and what it starts inherit the lock, so a process it left behind
    (a server its tests started and never stopped) could hold it for ever. No
    validator runs longer than :data:`MAX_VALIDATION_TIMEOUT`: a lock held past that
    (and :data:`STALE_SLOT_GRACE`) since the last validator took it is no validator's,
    and this one runs unguarded; ``validator_lock_stale`` goes to ``notes``.

    :raises SidecarLockTimeout: another settlement's validator runs still after
        :data:`VALIDATOR_WAIT`; the entry stays queued for a later worker.
    """
    if not _needs_validator(entry):
        yield None
        return
    slot = _slot_path(store, goal_id)
    with contextlib.ExitStack() as held:
        fd: int | None = None
        try:
            waiting = SidecarStore(store.root, lock_timeout=VALIDATOR_WAIT)
            fd = held.enter_context(waiting.lock(slot))
        except SidecarLockTimeout:
            if not _held_since(slot, MAX_VALIDATION_TIMEOUT + STALE_SLOT_GRACE):
                raise
            notes.append(("adapter", "validator_lock_stale"))
        except (SidecarError, OSError):
            pass
        if fd is not None:
            with contextlib.suppress(OSError):
                os.utime(fd)  # when this validator started: see await_in_flight
        yield fd


def _slot_path(store: SidecarStore, goal_id: str | None) -> Path:
    return store.path(VALIDATOR_DIR, path_token(goal_id, "goal") + ".json")


def _held_since(slot: Path, seconds: float) -> bool:
    """Whether the validator lock of ``slot`` was last taken more than ``seconds`` ago."""
    import time

    try:
        return time.time() - os.stat(lock_path(slot)).st_mtime > seconds
    except OSError:
        return False


def _validate(
    entry: dict[str, Any],
    turn: TurnContext,
    host_result: dict[str, str],
    *,
    inline: bool,
    notes: list[tuple[str, str]],
    slot: int | None,
) -> dict[str, Any]:
    declaration = entry.get("validation_declaration") or {}
    argv = declaration.get("argv") if isinstance(declaration, dict) else None
    valid_argv = isinstance(argv, list) and all(isinstance(arg, str) for arg in argv)
    if valid_argv and argv and not any(value.strip() for value in host_result.values()):
        return dict(NOTHING_TO_VALIDATE)
    validation, account = validator_run(
        argv if valid_argv else None,
        # The result fields, then the Turn: exactly the request validators always had.
        request={**host_result, "host": turn.host, "host_turn_id": turn.host_turn_id},
        cwd=turn.cwd,
        timeout=validation_timeout(declaration, inline=inline, notes=notes),
        slot=slot,
    )
    if account is not None:
        entry[VALIDATION_RUN_KEY] = account  # private, as the spool entry is
    return validation


def _deliver(
    pm: pluggy.PluginManager,
    turn: TurnContext,
    store: SidecarStore,
    spool: SidecarTransaction | None,
    entry: dict[str, Any],
    *,
    appended: bool,
    notes: list[tuple[str, str]],
    inline: bool,
    slot: int | None = None,
    queued: bool = True,
) -> dict[str, Any]:
    """Validate (unless the spool holds a verdict), dispatch, and keep the receipt
    (in the spool; with ``spool=None`` nothing is kept). Why the validator did not
    pass is added to ``notes``, the reasons the caller logs. ``inline``: this runs
    inside the hook, whose deadline bounds the validator's; ``slot``: the Goal's
    validator lock the caller holds (:func:`validator_slot`); ``queued``: the entry
    has its queue marker (a replay's always has), so when it is spooled a validator
    cut off by its deadline is run again later instead of delivered
    (:data:`VALIDATION_PENDING`)."""
    host_result = spooled_result(entry, settlement_result_fields(pm))
    validation = entry.get("task_validation")
    if not isinstance(validation, dict):
        validation = _validate(entry, turn, host_result, inline=inline, notes=notes, slot=slot)
        if validation.get("status") in CONCLUSIVE:
            entry["task_validation"] = validation
            if spool is not None:
                spool.write(entry)  # a kill from here on does not run the validator again
    notes.extend(validator_reasons(validation))
    if spool is not None and queued and validation.get("reason_code") == "external_timeout":
        # Cut off (inside a hook, or by its own deadline): no verdict yet. Delivered,
        # the plugins would take "not validated" as final, and running the validator
        # again could teach nothing; queued, a later worker runs it again in full.
        notes.append(("adapter", "validation_pending"))
        return dict(VALIDATION_PENDING)
    # Here, not at the top: every PreTurn imports this module, and none delivers.
    from turn_hooks import Settlement, SettlementEvidence, WritebackEvent

    settlement = Settlement(
        host_result=host_result,
        evidence=SettlementEvidence(
            task_validation=validation,
            writeback={"ok": appended, "appended": appended},
            quota_spend=None,
            previous_post_settlement=entry.get("post_settlement"),
        ),
    )
    receipt = call_post_settlement(pm, turn, settlement)
    entry["post_settlement"] = receipt
    if spool is not None:
        spool.write(entry)
        if _settled(entry):
            _dequeue(store, spool.path)
    call_post_writeback(
        pm, turn, WritebackEvent(turn_key=turn.turn_key, host=turn.host, spool=entry)
    )
    return receipt


def _settled(entry: dict[str, Any]) -> bool:
    """Nothing more for the host to do: every plugin took the settlement on a validator
    verdict (a plugin that journalled it retries it itself), or the entry is terminal."""
    if entry.get("settlement_state") == "terminal":
        return True
    validation = entry.get("task_validation")
    return isinstance(validation, dict) and settlement_is_taken(entry.get("post_settlement"))


def _enqueue(
    store: SidecarStore,
    goal_id: str | None,
    agent_id: str | None,
    spool: Path,
    entry: dict[str, Any],
) -> None:
    """The write-ahead record: the marker carries the entry as the Stop hook built it,
    so a worker can settle the Turn when its spool entry was never written, or can
    no longer be read (:func:`carried_entry`)."""
    marker = _queue_path(store, goal_id, agent_id, spool.name)
    store.write(marker, {"schema_version": QUEUE_SCHEMA, "spool": spool.name, "entry": entry})


def write_ahead(
    turn: TurnContext,
    *,
    final_message: str | None,
    validation_argv: list[str] | None,
    validation_timeout: int | None,
) -> bool:
    """The Stop hook's first durable write, as soon as it has its Turn: the queue
    marker, carrying the Turn, its final message and the validator's declaration.
    Before the plugins are loaded, the staging sidecar is read and the spool touched,
    so a kill, a lock or a fault in any of them leaves a record from which a worker
    builds and settles the Turn (:func:`carried_entry`). One small fsynced file.

    ``True`` once written; ``False`` when it could not be, or the message is too
    large to keep (:func:`settle` then writes its marker as it always did). A Goal
    whose sidecar root cannot be written (read-only, full) gets it parked in the
    user's state directory instead (:func:`_park`). Never raises: this hook's faults
    are :func:`settle`'s to report.

    The hook's stdin spill (:mod:`hosts.settlement.spill`) is removed on return, whatever it
    is: the Turn is kept from here on, or refused by name.
    """
    try:
        return _write_ahead(
            turn,
            final_message=final_message,
            validation_argv=validation_argv,
            validation_timeout=validation_timeout,
        )
    finally:
        spill.release()


def _write_ahead(
    turn: TurnContext,
    *,
    final_message: str | None,
    validation_argv: list[str] | None,
    validation_timeout: int | None,
) -> bool:
    if len((final_message or "").encode("utf-8", "surrogatepass")) > MAX_SPOOL_BYTES:
        return False
    event = {
        "turn": turn.to_json(),
        "final_message": final_message,
        "validation_declaration": _declaration(validation_argv, validation_timeout),
    }
    try:
        store = settlement_store(turn.registry, turn.goal_id)
    except InvalidInputError:
        return False  # no Goal of this binding: nothing is kept anywhere
    name = spool_path(store, turn).name
    marker = _queue_path(store, turn.goal_id, turn.agent_id, name)
    try:
        store.write(marker, {"schema_version": QUEUE_SCHEMA, "spool": name, "event": event})
    except SidecarLockTimeout:
        return False  # another Stop hook of this Turn writes it
    except (SidecarError, OSError):
        _park(turn, name, event)
        return False
    return True


def _parking() -> SidecarStore:
    return SidecarStore(log_root())  # the user's state directory, as the hook log's


def _park(turn: TurnContext, name: str, event: dict[str, Any]) -> None:
    """Keep a Turn whose Goal's sidecar root cannot be written (read-only, full) in the
    user's state directory, where the hook log lives: ``parked-settlements/T(goal)/
    T(agent)/NAME``, 0600, at most :data:`MAX_PARKED` per (Goal, Agent). The next
    PreTurn of the Goal that can write its root again moves it into the queue
    (:func:`_unpark`), and its worker settles it. Logged once, by name:
    ``settlement_parked``, or ``settlement_not_kept`` when there is no room either.
    """
    parts = goal_agent_parts(PARK_DIR, turn.goal_id, turn.agent_id)
    try:
        parking = _parking()
        if len(list(parking.iter_documents(*parts))) >= MAX_PARKED:
            raise SidecarWriteError("the parked settlements are at their bound")
        parking.write(
            parking.path(*parts, name),
            {"schema_version": PARKED_SCHEMA, "spool": name, "event": event},
        )
    except (SidecarError, OSError):
        record(turn.host, "post_settlement", [("adapter", "settlement_not_kept")])
        return
    record(turn.host, "post_settlement", [("adapter", "settlement_parked")])


def parked(goal_id: str | None, agent_id: str | None) -> int:
    """How many Turns of one (Goal, Agent) wait in the user's state directory."""
    try:
        return len(list(_parking().iter_documents(*goal_agent_parts(PARK_DIR, goal_id, agent_id))))
    except (SidecarError, OSError):
        return 0


def _unpark(store: SidecarStore, goal_id: str, agent_id: str) -> None:
    """Move the Turns parked for this (Goal, Agent) (:func:`_park`) into its queue,
    now that a PreTurn found the Goal usable; one that still cannot be written waits.
    A parked file that cannot be read is removed and logged
    (``settlement_parked_unreadable``): it would be retried on every Turn."""
    parking = _parking()
    parts = goal_agent_parts(PARK_DIR, goal_id, agent_id)
    if not _any_json(parking.root.joinpath(*parts)):
        return  # the common case: one failed directory listing
    for path in list(parking.iter_documents(*parts)):
        try:
            event = (parking.read(path) or {}).get("event")
        except SidecarCorrupt:
            event = None
        marker = _queue_path(store, goal_id, agent_id, path.name)
        if isinstance(event, dict) and not os.path.lexists(marker):
            store.write(
                marker, {"schema_version": QUEUE_SCHEMA, "spool": path.name, "event": event}
            )
        elif not isinstance(event, dict):
            record("unknown", "pre_turn", [("adapter", "settlement_parked_unreadable")])
        parking.delete(path, drop_lock=True)


def carried_entry(
    pm: pluggy.PluginManager, store: SidecarStore, marker: Path
) -> dict[str, Any] | None:
    """The spool entry a queue marker carries (the entry itself, or one built from the
    hook's write-ahead record as the hook builds it), ``None`` when it carries neither
    (a marker written before markers carried entries) or cannot be read. Never raises
    for the marker's content."""
    try:
        document = store.read(marker) or {}
    except (SidecarError, OSError):
        return None
    entry = document.get("entry")
    if isinstance(entry, dict) and entry.get("schema_version") == SPOOL_SCHEMA:
        return entry
    record = document.get("event")
    if not isinstance(record, dict):
        return None
    turn = _spooled_turn(record)
    message = record.get("final_message")
    declaration = record.get("validation_declaration")
    declaration = declaration if isinstance(declaration, dict) else {}
    argv, timeout = declaration.get("argv"), declaration.get("timeout_seconds")
    if turn is None or (message is not None and not isinstance(message, str)):
        return {"schema_version": SPOOL_SCHEMA}  # no Turn to settle: ends incomplete
    argv = argv if isinstance(argv, list) and all(isinstance(a, str) for a in argv) else None
    timeout = timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None
    try:
        host_result, _ = extract_results(message, settlement_result_fields(pm))
        entry = _entry(pm, turn, host_result, message, argv, timeout)
        _check_spoolable(entry)
    except InvalidInputError:
        return None  # the hook refuses it too (settlement_spool_too_large)
    except Exception:  # a plugin's reader failing on it: ends incomplete, never retried
        return {"schema_version": SPOOL_SCHEMA}
    return entry


def _dequeue(store: SidecarStore, spool: Path) -> None:
    # The spool is settlements/T(goal)/T(agent)/NAME; its marker has the same parts.
    marker = store.path(QUEUE_DIR, spool.parent.parent.name, spool.parent.name, spool.name)
    # A marker left behind costs one replay that finds its entry settled; a queue that
    # could not be written (so holds no marker) must not fail the settlement.
    with contextlib.suppress(SidecarError, OSError):
        store.delete(marker, drop_lock=True)  # one marker a Turn: no lock a Turn left
        store.drop_orphan_locks(*marker.relative_to(store.root).parent.parts)  # older ones


def queued(store: SidecarStore, goal_id: str | None, agent_id: str | None) -> list[Path]:
    """Queue markers of one (Goal, Agent), oldest first (by their last touch)."""
    markers = list(store.iter_documents(*goal_agent_parts(QUEUE_DIR, goal_id, agent_id)))
    return sorted(markers, key=lambda marker: (_mtime(marker), marker.name))


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _touch(path: Path) -> None:
    try:
        if os.path.isfile(path) and not os.path.islink(path):
            os.utime(path)
    except OSError:
        return  # the mark only orders the queue


def replay_pending(
    pm: pluggy.PluginManager,
    store: SidecarStore,
    *,
    goal_id: str,
    agent_id: str,
    limit: int | None = REPLAY_PER_TURN,
) -> dict[str, Any]:
    """Carry queued settlements of one (Goal, Agent) on; returns a public-safe receipt.

    At most ``limit`` entries (``None``: all), oldest attempt first. Each is
    validated (unless the spool holds a verdict) and dispatched again under its lock;
    an entry another worker holds is left to it (``busy``). Outcomes: ``settled``
    (final now), ``open`` (delivered, still retryable), ``terminal``, ``dropped`` (a
    marker that carries no entry, whose entry was never written: an older hook died
    before it spooled anything; a marker's copy is spooled and delivered instead),
    ``busy`` and ``failed`` (its sidecar is unusable; the reason codes say why).
    ``reason_codes`` also holds why a delivered entry taught nothing: its validator's
    code (``validated_command_failed``...) and each plugin's, once each.
    """
    markers = queued(store, goal_id, agent_id)
    summary: dict[str, Any] = {
        "ok": True,
        "schema_version": REPLAY_SCHEMA,
        "queued_count": len(markers),
        **{f"{outcome}_count": 0 for outcome in REPLAY_OUTCOMES},
        "reason_codes": [],
    }
    leased = SidecarStore(store.root, lock_timeout=LEASE_TIMEOUT)
    for marker in markers if limit is None else markers[:limit]:
        spool = leased.path(*goal_agent_parts(SPOOL_DIR, goal_id, agent_id), marker.name)
        try:
            outcome, codes = _replay_one(pm, leased, spool, marker)
            summary["reason_codes"].extend(c for c in codes if c not in summary["reason_codes"])
        except SidecarLockTimeout:
            outcome = "busy"
        except SidecarError as exc:
            outcome = "failed"
            summary["reason_codes"].append(exc.reason_code)
        _touch(marker)
        summary[f"{outcome}_count"] += 1
    return summary


REPLAY_OUTCOMES = ("settled", "open", "terminal", "dropped", "busy", "failed")


def _replay_one(
    pm: pluggy.PluginManager, store: SidecarStore, path: Path, marker: Path
) -> tuple[str, list[str]]:
    """Carry the entry at ``path`` on: its outcome, and the reason codes of its
    validator and plugins. Where it was never written or can no longer be read, the
    copy its ``marker`` carries (:func:`carried_entry`) replaces it."""
    carried = None
    try:
        # Lock-free: what can never be read must not be retried for ever.
        if store.read(path) is None:
            carried = carried_entry(pm, store, marker)
    except SidecarCorrupt:
        _set_aside(path)  # a file that is not regular is refused its lock: moved first
        record("unknown", "settlement_replay", [("adapter", "settlement_spool_unreadable")])
        carried = carried_entry(pm, store, marker)
        if carried is None:
            _dequeue(store, path)
            return "terminal", []
    with store.transaction(path) as spool:
        outcome, receipt = _replay_entry(
            pm, store, spool, event="settlement_replay", carried=carried
        )
        if receipt is None:
            return outcome, []
        validation = (spool.read() or {}).get("task_validation")
    codes = validator_reasons(validation) if isinstance(validation, dict) else []
    codes += reasons_in(receipt.get("results") or {})
    if isinstance(receipt.get("reason_code"), str):  # validation_pending
        codes.append(("adapter", receipt["reason_code"]))
    return outcome, [code for _, code in codes]


def _replay_entry(
    pm: pluggy.PluginManager,
    store: SidecarStore,
    spool: SidecarTransaction,
    *,
    event: str,
    reasons: tuple[tuple[str, str], ...] = (),
    turn: TurnContext | None = None,
    inline: bool = False,
    carried: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """Deliver one spooled entry whose lock the caller holds: (outcome, receipt).

    The Goal's validator lock is taken before the attempt is counted: an entry
    whose validator must wait for another's (``busy``) keeps its marker and its
    attempts, and a later worker carries it on. ``inline``: this runs inside a hook
    (:func:`validation_timeout`).

    ``turn`` is the Turn the caller spooled, when it holds it (the Stop hook and its
    detached child): it is used as it is when the entry still holds exactly that
    Turn. Parsing it back (:func:`_spooled_turn`) imports and builds pydantic's
    validator, about 130 ms of CPU in every settlement at the end of a Turn, while
    the host goes on; a replaying worker reads entries it did not write, and pays.
    """
    path = spool.path
    entry = _spooled_or_carried(spool, carried)
    if carried is not None and entry is carried:
        reasons = (*reasons, ("adapter", "settlement_rebuilt_from_queue"))
    if entry is None or _settled(entry):
        _dequeue(store, path)
        return ("dropped" if entry is None else "settled"), None
    if turn is None or entry.get("turn") != turn.to_json():
        turn = _spooled_turn(entry)
    if turn is None or _attempts(entry) >= MAX_SETTLEMENT_ATTEMPTS:
        reason = "settlement_attempts_exhausted" if turn else "settlement_spool_incomplete"
        entry.update(
            settlement_state="terminal",
            settlement_reason_code=reason,
            settlement_ended_at=_now(),
        )
        spool.write(entry)
        _dequeue(store, path)
        record(str(entry.get("host") or "unknown"), event, [*reasons, ("adapter", reason)])
        return "terminal", None
    noted = list(reasons)
    with contextlib.ExitStack() as held:
        try:
            slot = held.enter_context(validator_slot(store, turn.goal_id, entry, noted))
        except SidecarLockTimeout:
            if event == "post_settlement":  # a worker finding it busy is routine
                record(turn.host, event, [*reasons, ("adapter", "validator_busy")])
            return "busy", None
        entry["settlement_attempt_count"] = _attempts(entry) + 1
        spool.write(entry)
        options: dict[str, Any] = {"notes": noted, "inline": inline, "slot": slot}
        receipt = _deliver(pm, turn, store, spool, entry, appended=True, **options)
    record(turn.host, event, [*noted, *reasons_in(receipt.get("results") or {})])
    return ("settled" if _settled(entry) else "open"), receipt


def _spooled_or_carried(
    spool: SidecarTransaction, carried: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The entry under the caller's lock: the spooled one, else the marker's copy
    (``carried``), spooled now, when the Stop hook never wrote the entry (a kill, its
    lock held past the timeout) or it can no longer be read (set aside first, as
    :func:`_replay_one` sets aside an entry with no copy). The copy is spooled with
    no delivery counted: it was never delivered from the spool.

    :raises SidecarCorrupt: the entry is unreadable and there is no copy.
    """
    try:
        entry = spool.read()
    except SidecarCorrupt:
        if carried is None:
            raise
        _set_aside(spool.path)
        entry = None
    if entry is not None or carried is None:
        return entry
    carried["settlement_attempt_count"] = 0
    spool.write(carried)
    return carried


def _set_aside(path: Path) -> None:
    """Move an unreadable entry out of the listing, kept for a person to look at."""
    with contextlib.suppress(OSError):  # gone, or in the way: its marker goes anyway
        os.replace(path, path.with_name(path.name + SET_ASIDE_SUFFIX))


def _spooled_turn(entry: dict[str, Any]) -> TurnContext | None:
    """The Turn as the Stop hook saw it; ``None`` for entries written before it was kept."""
    document = entry.get("turn")
    if not isinstance(document, dict):
        return None
    from turn_hooks.schema import parse_model  # pydantic: only a replaying worker pays

    try:
        return parse_model(TurnContext, document)
    except Exception:  # a hand-edited or foreign entry is not ours to replay
        return None


def start_replay_worker(*, registry: str | None, goal_id: str, agent_id: str) -> bool:
    """Start a detached ``turn-hooks settle --pending`` when settlements are queued.

    Called by every PreTurn, so the common case (an empty queue) is one registry read
    and one directory listing; a binding with no usable Goal starts nothing. The worker
    runs in its own session with no standard streams, so neither the Turn nor the host
    waits for its validators; it ends when the queue is worked.
    """
    store = binding_store(registry, goal_id)
    if store is None or not registry:
        return False  # a worker could only refuse the binding, as settle --pending does
    try:
        _unpark(store, goal_id, agent_id)
    except (SidecarError, OSError):
        pass  # still unwritable: the parked Turns wait for a later PreTurn
    directory = store.root.joinpath(*goal_agent_parts(QUEUE_DIR, goal_id, agent_id))
    if not _any_json(directory):
        return False
    await_in_flight(store, goal_id=goal_id, agent_id=agent_id)
    if not _any_json(directory):
        return False
    import subprocess  # here: every PreTurn imports this module, few start a worker

    argv = [
        sys.executable,
        "-m",
        "hosts.cli",
        "settle",
        "--pending",
        "--goal-id",
        goal_id,
        "--agent-id",
        agent_id,
        "--limit",
        str(REPLAY_PER_TURN),
        "--registry",
        str(Path(registry).absolute()),
    ]
    subprocess.Popen(  # our own interpreter and module, no shell
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    return True


def await_in_flight(
    store: SidecarStore, *, goal_id: str, agent_id: str, budget: float = IN_FLIGHT_WAIT
) -> None:
    """Wait, within ``budget`` seconds in all, for queued entries someone is settling.

    A detached Stop child holds its entry's lock while it settles; waiting for that
    lock lets a quick next Turn recall what the last one learned. An entry nobody
    holds is free at once, so a queue left by a dead hook costs no wait. Nor does a
    validator that has run longer than the whole wait already (a real test suite,
    minutes long): what it learns is recalled a Turn later, and this Turn starts now.
    """
    import time

    if _validator_runs_since(store, goal_id, budget):
        return
    deadline = time.monotonic() + budget
    for marker in queued(store, goal_id, agent_id)[:REPLAY_PER_TURN]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        spool = store.path(*goal_agent_parts(SPOOL_DIR, goal_id, agent_id), marker.name)
        try:
            with SidecarStore(store.root, lock_timeout=remaining).lock(spool):
                pass
        except SidecarLockTimeout:
            return
        except SidecarError:
            continue  # an unusable entry is the worker's to report


def validator_running_for(store: SidecarStore, goal_id: str) -> float | None:
    """How many seconds the Goal's validator has been running, or ``None`` when none
    runs (``status``: a Turn queued behind a test suite says what it waits for).
    Nothing is created: without a lock file no validator ever ran here."""
    import time

    slot = _slot_path(store, goal_id)
    try:
        started = os.stat(lock_path(slot)).st_mtime
    except OSError:
        return None
    try:
        with SidecarStore(store.root, lock_timeout=0).lock(slot):
            return None
    except SidecarLockTimeout:
        return max(0.0, time.time() - started)
    except (SidecarError, OSError):
        return None


def _validator_runs_since(store: SidecarStore, goal_id: str, seconds: float) -> bool:
    """Whether the Goal's validator lock is held by a validator that started more
    than ``seconds`` ago (:func:`validator_slot` marks the start on its lock file)."""
    slot = _slot_path(store, goal_id)
    if not _held_since(slot, seconds):
        return False
    try:
        with SidecarStore(store.root, lock_timeout=0).lock(slot):
            return False
    except SidecarLockTimeout:
        return True
    except (SidecarError, OSError):
        return False


def _any_json(directory: Path) -> bool:
    try:
        with os.scandir(directory) as entries:
            return any(entry.name.endswith(".json") for entry in _files(entries))
    except (FileNotFoundError, NotADirectoryError):
        return False


def _files(entries: Iterator[os.DirEntry[str]]) -> Iterator[os.DirEntry[str]]:
    return (entry for entry in entries if entry.is_file(follow_symlinks=False))
