"""The dispatchers: how a host calls the hooks and what survives a failing plugin.

pluggy calls implementations last-registered-first and stops at the first
exception. Hosts need neither: the dispatchers here loop over the implementations
themselves, in plugin-name order, with one ``try`` per implementation, so a failing
plugin is isolated and the Turn always goes on (turn-lifecycle.md §1, §3, §7.1).

Each implementation is contained, not only caught (:func:`_call`): it runs in a
daemon thread that the dispatcher stops waiting for at :func:`hook_deadline`
(``hook_deadline_exceeded``); ``SystemExit`` and every other ``BaseException`` but
``KeyboardInterrupt`` become a typed failure (``hook_exited``, ``hook_raised``); and
while it runs, ``sys.stdout`` is the process's stderr, because a host's stdout carries
its protocol (hook JSON, JSON-RPC) and a plugin's ``print`` would corrupt it.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

from turn_hooks import _contribution as rules
from turn_hooks import models
from turn_hooks._names import ENV_HOOK_DEADLINE
from turn_hooks.canonical import compact_json
from turn_hooks.errors import PluginContractError, RegistrationError, TurnHooksError
from turn_hooks.models import (
    ContextRegistration,
    HookFailure,
    SettlementRegistration,
    TurnContext,
    WritebackRegistration,
)

if TYPE_CHECKING:
    from turn_hooks.models import (
        ContextItem,
        Contribution,
        HostProjection,
        PostSettlementReceipt,
        PreTurnOutcome,
        Settlement,
        WritebackEvent,
        WritebackOutcome,
    )

RETRYABLE_STATUSES = frozenset(
    {
        "provider_unavailable",
        "committed_pending",
        "readback_unverified",
        "runtime_unavailable",
        # The plugin's own state (its journal lock or directory) was unavailable, so
        # nothing durable holds the settlement yet: it must be delivered again.
        "runtime_state_unavailable",
    }
)
"""Post-settlement statuses that a later dispatch calls the plugin again for."""

OPEN_RECONCILIATION_STATES = frozenset({"pending", "state_write_failed"})
"""A result whose ``reconciliation_state`` is one of these was taken durably by its
plugin (a write-ahead journal) but is not settled yet. A later dispatch of the same
settlement calls the plugin again, so the receipt shows the journal's current state
instead of a stale one; the dispatcher status still counts only ``status``."""

HOOK_DEADLINE_SECONDS = 10.0
"""How long one hook implementation call may take: the whole work budget hosts.md
gives a hook (a provider-using plugin keeps to its own 8 s budget well inside it)."""

CONTRIBUTIONS_KEY = "turn_context_contributions"
FAILURES_KEY = "turn_context_hook_failures"


def _ordered_impls(caller: Any) -> list[pluggy.HookImpl]:
    return sorted(caller.get_hookimpls(), key=lambda impl: impl.plugin_name)


def _registration(impl: pluggy.HookImpl, hook: str, kind: type[Any]) -> Any:
    registrations = getattr(impl.plugin, "registrations", None)
    registration = registrations.get(hook) if isinstance(registrations, Mapping) else None
    if not isinstance(registration, kind):
        raise RegistrationError(
            f"plugin {impl.plugin_name!r} exposes no {kind.__name__} for {hook}",
            reason_code="registration_missing",
            plugin=impl.plugin_name,
        )
    return registration


def hook_deadline() -> float:
    """The deadline of one hook call: :data:`HOOK_DEADLINE_SECONDS`, or a shorter
    positive number of seconds from ``$TURN_HOOKS_HOOK_DEADLINE_SECONDS``."""
    try:
        value = float(os.environ.get(ENV_HOOK_DEADLINE) or HOOK_DEADLINE_SECONDS)
    except ValueError:
        return HOOK_DEADLINE_SECONDS
    return value if 0 < value < HOOK_DEADLINE_SECONDS else HOOK_DEADLINE_SECONDS


def _call(pm: pluggy.PluginManager, hook: str, impl: pluggy.HookImpl, **kwargs: Any) -> Any:
    # Calling through a one-plugin subset keeps pluggy's machinery in the loop: opt-in
    # arguments, and the hook-call monitoring that tracing and conformance probes use.
    others = [plugin for plugin in pm.get_plugins() if plugin is not impl.plugin]
    caller = pm.subset_hook_caller(hook, remove_plugins=others)
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, caller(**kwargs)))
        except BaseException as exc:  # handed to the dispatcher's thread, judged there
            outcome.append((False, exc))

    # A daemon thread: one that ignores its deadline is left behind and cannot hold
    # the process open. Context variables travel with the call.
    worker = threading.Thread(
        target=contextvars.copy_context().run, args=(run,), name=f"turn-hooks {hook}", daemon=True
    )
    with contextlib.redirect_stdout(sys.stderr):
        worker.start()
        worker.join(hook_deadline())
    if not outcome:
        raise PluginContractError(
            f"{hook} outlived its deadline",
            reason_code="hook_deadline_exceeded",
            plugin=impl.plugin_name,
        )
    returned, value = outcome[0]
    if returned:
        return value[0] if value else None
    if isinstance(value, Exception | KeyboardInterrupt):
        raise value
    raise PluginContractError(
        f"{hook} raised {type(value).__name__}",
        reason_code="hook_exited" if isinstance(value, SystemExit) else "hook_raised",
        plugin=impl.plugin_name,
    ) from value


def _reason_code(exc: Exception) -> str:
    return exc.reason_code if isinstance(exc, TurnHooksError) else "hook_raised"


def _hook_failure(hook_id: str, impl: pluggy.HookImpl, exc: Exception) -> HookFailure:
    return HookFailure(hook_id=hook_id, reason_code=_reason_code(exc), plugin=impl.plugin_name)


def call_pre_turn(pm: pluggy.PluginManager, turn: TurnContext) -> PreTurnOutcome:
    """Run every ``pre_turn`` implementation and merge what validates.

    Each plugin gets its own copy of the payload with earlier readbacks merged in.
    A duplicate hook id, a claimed slot, an invalid registration or result, or an
    exception is recorded as ``context_hook_failed``; nothing from that hook is kept.
    """
    payload = copy.deepcopy(turn.payload)
    seen_hook_ids: set[str] = set()
    claimed_slots: set[str] = set()
    contributions: list[Contribution] = []
    failures: list[HookFailure] = []
    for impl in _ordered_impls(pm.hook.pre_turn):
        hook_id = impl.plugin_name
        try:
            registration = _registration(impl, "pre_turn", ContextRegistration)
            hook_id = registration.hook_id
            if hook_id in seen_hook_ids or claimed_slots & set(registration.readback_slots):
                raise PluginContractError(
                    "hook id or readback slot already claimed", reason_code="registration_conflict"
                )
            seen_hook_ids.add(hook_id)
            claimed_slots.update(registration.readback_slots)
            rules.validate_registration(registration)
            if any(slot in payload for slot in registration.readback_slots):
                raise PluginContractError(
                    "a readback slot already exists in the payload", reason_code="slot_occupied"
                )
            plugin_turn = dataclasses.replace(turn, payload=copy.deepcopy(payload))
            result = _call(pm, "pre_turn", impl, turn=plugin_turn)
            if result is None:
                continue
            normal = rules.validate_result(result, registration)
            digest = rules.basis_digest(payload, registration, normal)
        except Exception as exc:  # isolation is the contract: any failure stays local
            failures.append(_hook_failure(hook_id, impl, exc))
            continue
        payload.update(normal["readback"])
        if any(normal[key] for key in _CONTRIBUTED):
            contributions.append(_contribution(registration, normal, digest))
    payload[CONTRIBUTIONS_KEY] = [item.to_json() for item in contributions]
    payload[FAILURES_KEY] = [failure.to_payload() for failure in failures]
    return models.PreTurnOutcome(
        payload=payload, contributions=tuple(contributions), failures=tuple(failures)
    )


_CONTRIBUTED = ("context_fields", "instructions", "result_fields", "context_items")
"""A result with any of these is kept as a contribution; readback alone is not."""


def _contribution(
    registration: ContextRegistration, normal: Mapping[str, Any], digest: str
) -> Contribution:
    return models.Contribution(
        hook_id=registration.hook_id,
        capability_id=registration.capability_id,
        readback_slots=list(registration.readback_slots),
        context_fields=normal["context_fields"],
        instructions=normal["instructions"],
        result_fields=normal["result_fields"],
        basis_digest=digest,
        context_items=normal["context_items"],
    )


def _reproject(stored: object, payload: Mapping[str, Any]) -> Contribution:
    if not isinstance(stored, Mapping):
        raise PluginContractError("a stored contribution is not an object")
    slots = stored.get("readback_slots")
    registration = rules.validate_registration(
        ContextRegistration(
            hook_id=stored.get("hook_id"),  # type: ignore[arg-type]  # validated on the next line
            capability_id=stored.get("capability_id"),  # type: ignore[arg-type]  # same
            readback_slots=tuple(slots) if isinstance(slots, list) else (),
        )
    )
    readback = {slot: payload.get(slot) for slot in registration.readback_slots}
    normal = rules.validate_result(
        {
            "readback": readback,
            "context_fields": stored.get("context_fields"),
            "instructions": stored.get("instructions"),
            "result_fields": stored.get("result_fields"),
            "context_items": stored.get("context_items", []),
        },
        registration,
    )
    digest = rules.basis_digest(payload, registration, normal)
    if digest != stored.get("basis_digest"):
        raise PluginContractError("basis digest changed", reason_code="basis_digest_mismatch")
    return _contribution(registration, normal, digest)


def project_contributions(payload: Mapping[str, Any]) -> HostProjection:
    """Re-validate stored contributions against the current payload and flatten them.

    A contribution whose recomputed ``basis_digest`` differs, or whose field names or
    item refs collide with an earlier one, is dropped with its items (never repaired
    from a cache).
    """
    stored = payload.get(CONTRIBUTIONS_KEY)
    context_fields: dict[str, Any] = {}
    instructions: list[str] = []
    result_fields: dict[str, dict[str, Any]] = {}
    items: list[ContextItem] = []
    dropped: list[str] = []
    for item in stored if isinstance(stored, list) else []:
        try:
            contribution = _reproject(item, payload)
        except TurnHooksError:
            hook_id = item.get("hook_id") if isinstance(item, Mapping) else None
            dropped.append(hook_id if isinstance(hook_id, str) else "")
            continue
        if (
            set(contribution.context_fields) & set(context_fields)
            or set(contribution.result_fields) & set(result_fields)
            or {item.ref for item in contribution.context_items} & {item.ref for item in items}
        ):
            dropped.append(contribution.hook_id)
            continue
        context_fields.update(contribution.context_fields)
        instructions.extend(contribution.instructions)
        result_fields.update(contribution.result_fields)
        items.extend(contribution.context_items)
    return models.HostProjection(
        context_fields=context_fields,
        capability_context_fields=list(context_fields),
        capability_instructions=instructions,
        capability_result_fields=result_fields,
        context_items=items,
        dropped_hook_ids=dropped,
    )


def _declarations(
    pm: pluggy.PluginManager,
) -> Iterator[tuple[pluggy.HookImpl, SettlementRegistration, dict[str, str]]]:
    """Each ``post_settlement`` implementation with a valid registration, in plugin-name
    order: the implementation, its registration and its declared fields with prefixes."""
    for impl in _ordered_impls(pm.hook.post_settlement):
        try:
            registration = _registration(impl, "post_settlement", SettlementRegistration)
            declared = rules.validate_settlement_registration(registration)
        except TurnHooksError:
            continue
        yield impl, registration, declared


def settlement_result_fields(pm: pluggy.PluginManager) -> dict[str, str]:
    """Every result field a loaded ``post_settlement`` hook reads, with the prefix of
    its block fault codes (``SettlementRegistration.result_fault_prefixes``).

    Plugin-name order, then declared order; a field two plugins declare keeps the
    first plugin's prefix. A plugin whose registration is missing or invalid declares
    nothing here: the dispatcher records its failure when it calls it.
    """
    fields: dict[str, str] = {}
    for _impl, _registered, declared in _declarations(pm):
        for name, prefix in declared.items():
            fields.setdefault(name, prefix)
    return fields


def settlement_result_tools(pm: pluggy.PluginManager) -> dict[str, dict[str, Any]]:
    """Every result tool a loaded ``post_settlement`` hook declares, by tool name: the
    tool (``SettlementRegistration.result_tools``) with the ``field`` it stages.

    The order and the rule for a name two plugins declare are those of
    :func:`settlement_result_fields`: the first keeps it.
    """
    tools: dict[str, dict[str, Any]] = {}
    for _impl, registration, _declared in _declarations(pm):
        for name, tool in registration.result_tools.items():
            tools.setdefault(tool["name"], {**tool, "field": name})
    return tools


MAX_READ_VALUE_CHARS = models.MAX_RESULT_BYTES
"""The longest canonical value a result reader may hand back."""
_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
_FIELD_PATH = re.compile(r"[A-Za-z0-9_.\[\]]{1,160}")
_RULE = re.compile(r"[ -~]{1,240}")
"""A refusal's parts reach the local hook log: short, printable ASCII, code-shaped."""


def _readers(pm: pluggy.PluginManager) -> dict[str, pluggy.HookImpl]:
    """The ``read_result`` implementation of each declared field: the first plugin (in
    plugin-name order) whose valid registration declares it, if it reads results."""
    readers: dict[str, pluggy.HookImpl] = {}
    claimed: set[str] = set()
    reading = {impl.plugin_name: impl for impl in pm.hook.read_result.get_hookimpls()}
    for impl, _, declared in _declarations(pm):
        for name in declared:
            if name not in claimed and impl.plugin_name in reading:
                readers[name] = reading[impl.plugin_name]
            claimed.add(name)
    return readers


def _refusal(answer: Mapping[str, Any]) -> dict[str, str]:
    refusal = answer["refusal"]
    if not isinstance(refusal, Mapping):
        raise PluginContractError(
            "a refusal must be an object", reason_code="result_reader_invalid"
        )
    patterns = {"reason_code": _CODE, "field": _FIELD_PATH, "rule": _RULE}
    parts: dict[str, str] = {}
    for key, pattern in patterns.items():
        part = refusal.get(key)
        if not isinstance(part, str) or not pattern.fullmatch(part):
            raise PluginContractError(
                "a refusal needs a reason code, a field path and a rule",
                reason_code="result_reader_invalid",
            )
        parts[key] = part
    return parts


def read_results(
    pm: pluggy.PluginManager, host_result: Mapping[str, str]
) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The host result as its plugins read it, and what they refused or failed at.

    Every non-empty value of a field a plugin reads (``read_result``) is replaced by
    the canonical value the plugin hands back; a refused value, or one whose reader
    failed, stays as given. Each refusal or failure is one note
    ``{field, hook_id, reason_code[, detail]}``, ``detail`` being ``"<path>: <rule>"``
    for a refusal. A failing reader is isolated: reading is presentation, and a failing
    reader costs nothing but its own normalisation.
    """
    values = dict(host_result)
    notes: list[dict[str, str]] = []
    for name, impl in _readers(pm).items():
        value = values.get(name)
        if not isinstance(value, str) or not value.strip():
            continue
        note = {"field": name, "hook_id": impl.plugin_name}
        try:
            answer = _call(pm, "read_result", impl, field=name, value=value)
            if answer is None:
                continue
            if not isinstance(answer, Mapping) or len(answer) != 1:
                raise PluginContractError("invalid answer", reason_code="result_reader_invalid")
            if "refusal" in answer:
                refusal = _refusal(answer)
                notes.append(
                    {
                        **note,
                        "reason_code": refusal["reason_code"],
                        "detail": f"{refusal['field']}: {refusal['rule']}",
                    }
                )
                continue
            read = answer.get("value")
            if not isinstance(read, str) or len(read) > MAX_READ_VALUE_CHARS:
                raise PluginContractError("invalid value", reason_code="result_reader_invalid")
            values[name] = read
        except Exception as exc:  # the value stays as the model gave it
            code = _reason_code(exc)
            notes.append(
                {
                    **note,
                    "reason_code": code
                    if code == "result_reader_invalid"
                    else "result_reader_failed",
                }
            )
    return values, notes


def _is_final(previous: Mapping[str, Any], hook_id: str, capability_id: str) -> bool:
    results = previous.get("results")
    capability_ids = previous.get("capability_ids")
    if not isinstance(results, Mapping) or not isinstance(capability_ids, Mapping):
        return False
    stored = results.get(hook_id)
    return (
        isinstance(stored, Mapping)
        and capability_ids.get(hook_id) == capability_id
        and _result_is_final(stored)
    )


def _result_is_final(result: Mapping[str, Any]) -> bool:
    status, state = result.get("status"), result.get("reconciliation_state")
    # Read back from a spool, either may hold any JSON value: one of another type is a
    # malformed result, never final (and a list cannot be looked up in a set).
    if not isinstance(status, str | None) or not isinstance(state, str | None):
        return False
    return status not in RETRYABLE_STATUSES and state not in OPEN_RECONCILIATION_STATES


def _is_open(result: Mapping[str, Any]) -> bool:
    state = result.get("reconciliation_state")
    return isinstance(state, str) and state in OPEN_RECONCILIATION_STATES


def replayed(result: Mapping[str, Any]) -> dict[str, Any]:
    """A final result of an earlier delivery, as this delivery reports it.

    No plugin was called, so nothing was written this time: the result says so
    (``deduplicated: true``, ``external_writes_performed: false``), and only the first
    of several deliveries of one Turn (concurrent Stop hooks, a replay) reports the
    write it made.
    """
    return {**result, "deduplicated": True, "external_writes_performed": False}


def settlement_is_taken(receipt: Mapping[str, Any] | None) -> bool:
    """True when every plugin durably took a stored ``post_settlement`` receipt.

    A result is taken when it is final, or when its ``reconciliation_state`` is open:
    the plugin journalled the settlement and retries it on its own. A host may then
    stop carrying the settlement; with no receipt, a retryable result that no journal
    holds (``runtime_state_unavailable``, an exception), or a malformed receipt, it
    must deliver it again.
    """
    if not isinstance(receipt, Mapping):
        return False
    results = receipt.get("results")
    return isinstance(results, Mapping) and all(
        isinstance(result, Mapping) and (_result_is_final(result) or _is_open(result))
        for result in results.values()
    )


def settlement_is_final(receipt: Mapping[str, Any] | None) -> bool:
    """True when a stored ``post_settlement`` receipt needs no further dispatch.

    ``None`` (never dispatched), a retryable dispatcher status, or any result that is
    retryable or still open in its plugin's journal all mean: dispatch again. Hosts
    use this to decide which spooled settlements a later Turn must carry on.
    """
    if not isinstance(receipt, Mapping) or receipt.get("status") != "observed":
        return False
    results = receipt.get("results")
    return isinstance(results, Mapping) and all(
        isinstance(result, Mapping) and _result_is_final(result) for result in results.values()
    )


def _dispatch_post_settlement(
    pm: pluggy.PluginManager, turn: TurnContext, settlement: Settlement
) -> PostSettlementReceipt:
    previous = settlement.evidence.previous_post_settlement or {}
    results: dict[str, dict[str, Any]] = {}
    capability_ids: dict[str, str] = {}
    skipped: list[str] = []
    for impl in _ordered_impls(pm.hook.post_settlement):
        hook_id = impl.plugin_name
        try:
            registration = _registration(impl, "post_settlement", SettlementRegistration)
            hook_id = registration.hook_id
            capability_ids[hook_id] = registration.capability_id
            if _is_final(previous, hook_id, registration.capability_id):
                results[hook_id] = replayed(previous["results"][hook_id])
                skipped.append(hook_id)
                continue
            rules.validate_settlement_registration(registration)
            receipt = _call(pm, "post_settlement", impl, turn=turn, settlement=settlement)
            if receipt is None:
                continue
            if not isinstance(receipt, Mapping) or not isinstance(receipt.get("status"), str):
                raise PluginContractError(
                    "post_settlement must return an object with a status",
                    reason_code="receipt_invalid",
                )
            compact_json(dict(receipt))  # must be JSON; raises TypeError/ValueError otherwise
            results[hook_id] = dict(receipt)
        except Exception as exc:  # an effect adapter failure is retryable, never fatal
            results[hook_id] = {
                "status": "runtime_unavailable",
                "reason_code": _reason_code(exc),
                "fail_open": True,
                "external_writes_performed": None,
            }
    writes = [receipt.get("external_writes_performed") for receipt in results.values()]
    return models.PostSettlementReceipt(
        status=(
            "runtime_unavailable"
            if any(
                isinstance(receipt.get("status"), str) and receipt["status"] in RETRYABLE_STATUSES
                for receipt in results.values()
            )
            else "observed"
        ),
        results=results,
        capability_ids=capability_ids,
        external_writes_performed=True if True in writes else None if None in writes else False,
        skipped_hook_ids=skipped,
    )


OBSERVER_FAILED: dict[str, Any] = {
    "ok": True,
    "schema_version": "turn_post_settlement_observer_v0",
    "status": "runtime_unavailable",
    "reason_code": "post_settlement_observer_failed",
    "fail_open": True,
    "external_writes_performed": None,
}
"""The receipt a host stores when the dispatcher itself failed."""


def call_post_settlement(
    pm: pluggy.PluginManager, turn: TurnContext, settlement: Settlement
) -> dict[str, Any]:
    """Dispatch ``post_settlement`` once for a settled Turn; never raises.

    A stored receipt that is already final (:func:`settlement_is_final`) is returned
    unchanged without calling any plugin. A failure of the dispatcher itself becomes the
    ``post_settlement_observer_failed`` receipt.
    """
    previous = settlement.evidence.previous_post_settlement
    if isinstance(previous, Mapping) and settlement_is_final(previous):
        results = previous["results"]
        return {
            **previous,
            "results": {hook_id: replayed(result) for hook_id, result in results.items()},
            "external_writes_performed": False,
            "skipped_hook_ids": list(results),
        }
    try:
        return _dispatch_post_settlement(pm, turn, settlement).to_json()
    except Exception:  # the Turn is already settled; a broken dispatcher must not undo it
        return dict(OBSERVER_FAILED)


def call_post_writeback(
    pm: pluggy.PluginManager, turn: TurnContext, writeback: WritebackEvent
) -> WritebackOutcome:
    """Give every observer registered for the event kind a look; collect observations."""
    observations: dict[str, dict[str, Any]] = {}
    failures: list[HookFailure] = []
    for impl in _ordered_impls(pm.hook.post_writeback):
        hook_id = impl.plugin_name
        try:
            registration = _registration(impl, "post_writeback", WritebackRegistration)
            hook_id = registration.hook_id
            if registration.requested_write_scope:
                raise RegistrationError("observers may not request a write scope")
            if writeback.event_kind not in registration.event_kinds:
                continue
            event_bytes = len(compact_json(writeback.to_json()).encode("utf-8"))
            if event_bytes > registration.max_input_bytes:
                raise PluginContractError(
                    "event over input budget", reason_code="input_over_budget"
                )
            observation = _call(pm, "post_writeback", impl, turn=turn, writeback=writeback)
            if observation is None:
                continue
            if not isinstance(observation, Mapping):
                raise PluginContractError("an observation must be an object")
            size = len(compact_json(dict(observation)).encode("utf-8"))
            if size > registration.max_result_bytes:
                raise PluginContractError(
                    "observation over budget", reason_code="result_over_budget"
                )
            observations[hook_id] = dict(observation)
        except Exception as exc:  # observers are advisory; isolate every failure
            failures.append(
                HookFailure(
                    hook_id=hook_id,
                    error_code="writeback_observer_failed",
                    reason_code=_reason_code(exc),
                    plugin=impl.plugin_name,
                )
            )
    return models.WritebackOutcome(observations=observations, failures=tuple(failures))
