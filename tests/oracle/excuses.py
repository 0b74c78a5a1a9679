"""The named excuse rules: differences from LoopX 2.1.1 that turn-hooks chose.

Each rule rewrites both answers so that one deliberate difference no longer shows,
and nothing else. A rule is excused only where it changed something, and the fuzzer
reports which rules each case needed. Every rule has a row in docs/compatibility.md
"Differences from the reference implementation" table or is shared/spec/oracle.md §4's
normalisation; a difference no rule names is a divergence to fix.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

ERROR_SCHEMA = "reward_memory_error_v0"
# Repair plans name their own tool's commands: `turn-hooks reward-memory configure`
# where upstream says `loopx ... configure-goal` (docs/compatibility.md).
REPAIR_COMMAND_KEYS = ("instruction", "preview_command", "apply_command", "verify_command")


def _walk(value: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    if isinstance(value, dict):
        visit(value)
        for item in value.values():
            _walk(item, visit)
    elif isinstance(value, list):
        for item in value:
            _walk(item, visit)


def error_prose(ours: Any, theirs: Any) -> None:
    """Error text is written in our own words (oracle.md §4): ``error`` is not compared."""
    for document in (ours, theirs):
        if isinstance(document, dict) and document.get("schema_version") == ERROR_SCHEMA:
            document.pop("error", None)


def error_reason_code_and_field(ours: Any, theirs: Any) -> None:
    """Our errors add a typed ``reason_code`` and the offending ``field``."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        if ours.get("schema_version") == theirs.get("schema_version") == ERROR_SCHEMA:
            for key in ("reason_code", "field"):
                if key not in theirs:
                    ours.pop(key, None)


def repair_commands(ours: Any, theirs: Any) -> None:
    """Repair plans name ``turn-hooks`` commands, upstream its own tool's."""

    def visit(node: dict[str, Any]) -> None:
        repair = node.get("repair")
        if isinstance(repair, dict):
            for key in REPAIR_COMMAND_KEYS:
                repair.pop(key, None)

    _walk(ours, visit)
    _walk(theirs, visit)


def latency(ours: Any, theirs: Any) -> None:
    """Every ``latency_ms`` is wall-clock time (oracle.md §4)."""

    def visit(node: dict[str, Any]) -> None:
        if "latency_ms" in node:
            node["latency_ms"] = "masked"

    _walk(ours, visit)
    _walk(theirs, visit)


# Upstream writes through the `ov` CLI and, with none installed, says
# provider_cli_unavailable; our HTTP provider names its own missing endpoint
# (oracle.md §4, docs/compatibility.md "Provider transport"). Status and other fields still compare.
TRANSPORT_CODES = {"provider_endpoint_unconfigured", "provider_unreachable"}


def provider_transport_reason(ours: Any, theirs: Any) -> None:
    """Our unavailable-provider reason code where upstream names its missing CLI."""

    def rewrite(node: Any, other: Any) -> Any:
        if isinstance(node, dict) and isinstance(other, dict):
            return {k: rewrite(v, other.get(k)) for k, v in node.items()}
        if isinstance(node, list) and isinstance(other, list) and len(node) == len(other):
            return [rewrite(a, b) for a, b in zip(node, other, strict=True)]
        if (
            isinstance(node, str)
            and node in TRANSPORT_CODES
            and other == "provider_cli_unavailable"
        ):
            return other
        return node

    rewritten = rewrite(ours, theirs)
    if isinstance(ours, dict):
        ours.clear()
        ours.update(rewritten)


def _item_with_several_digests(case: dict[str, Any] | None) -> bool:
    document = (case or {}).get("files", {}).get("input.json")
    observations = document.get("observations") if isinstance(document, dict) else None
    return isinstance(observations, list) and any(
        isinstance(o, dict)
        and o.get("attribution_level") == "item"
        and isinstance(o.get("memory_ref_digests"), list)
        and len(o["memory_ref_digests"]) > 1
        for o in observations
    )


def item_with_several_digests(ours: Any, theirs: Any, case: dict[str, Any] | None) -> None:
    """An item observation with several digests: upstream accepts it and then fails its
    own projection check (invalid_request); we reject the observation in a rejected
    projection (docs/compatibility.md). Both exit 2, compared apart."""
    if not _item_with_several_digests(case):
        return
    if (
        isinstance(ours, dict)
        and isinstance(theirs, dict)
        and ours.get("status") == "rejected"
        and theirs.get("schema_version") == ERROR_SCHEMA
    ):
        for document in (ours, theirs):
            document.clear()
            document["excused"] = "item_with_several_digests"


ISSUE_FIX_ADAPTER = "issue_fix_maintainer_feedback"


def issue_fix_adapter(ours: Any, theirs: Any, case: dict[str, Any] | None) -> None:
    """Issue Fix's compatibility adapter: upstream maps its own module's event; we
    implement only the generic ``scoped_feedback`` adapter and refuse it as
    ``adapter_unsupported`` (docs/compatibility.md)."""
    if ISSUE_FIX_ADAPTER not in json.dumps((case or {}).get("files", {})):
        return
    if isinstance(ours, dict) and ours.get("reason_code") == "adapter_unsupported":
        for document in (ours, theirs):
            if isinstance(document, dict):
                document.clear()
                document["excused"] = "issue_fix_adapter"


OWN_ERROR_SCHEMA = "turn_hooks_error_v0"


def usage_error(ours: Any, theirs: Any) -> None:
    """A command line argparse refuses (an unknown choice, a count that is no integer):
    upstream prints its usage on stderr and nothing on stdout; we print the one typed
    ``turn_hooks_error_v0`` with ``usage_invalid`` that every usage error of ours is
    (docs/compatibility.md). Both exit 2."""
    if (
        isinstance(ours, dict)
        and ours.get("schema_version") == OWN_ERROR_SCHEMA
        and ours.get("reason_code") == "usage_invalid"
        and theirs == {"unparsed_stdout": ""}
    ):
        for document in (ours, theirs):
            document.clear()
            document["excused"] = "usage_error"


def registry_role_redacted(ours: Any, theirs: Any) -> None:
    """A declared registry role holding a local path or a secret-shaped word: upstream
    prints it as declared; we print it without them, as every public receipt (README
    differences table). Every other role is compared."""
    from capabilities.reward_memory.contract.values import is_public_safe, redact

    routes = [
        document.get("config_runtime_route") if isinstance(document, dict) else None
        for document in (ours, theirs)
    ]
    if not all(isinstance(route, dict) for route in routes):
        return
    mine, upstream = routes[0].get("registry_role"), routes[1].get("registry_role")
    if isinstance(upstream, str) and not is_public_safe(upstream) and mine == redact(upstream):
        routes[0]["registry_role"] = upstream


UPSTREAM_CRASH = 101  # oracle.worker's exit code for an exception out of main()


STATUS_SCHEMA = "reward_memory_experiment_status_v1"


def upstream_crash(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Upstream raised out of its CLI (no JSON) where we gave a typed input error, or
    where experiment-status, which reports rather than raises, gave its status: ours
    is the answer the contract asks for."""
    output = ours["output"] if isinstance(ours["output"], dict) else {}
    return theirs["exit_code"] == UPSTREAM_CRASH and (
        (ours["exit_code"] == 2 and output.get("schema_version") == ERROR_SCHEMA)
        or (ours["exit_code"] == 0 and output.get("schema_version") == STATUS_SCHEMA)
    )


CASE_RULES: dict[str, Callable[[Any, Any, dict[str, Any] | None], None]] = {
    "item_with_several_digests": item_with_several_digests,
    "issue_fix_adapter": issue_fix_adapter,
}

RULES: dict[str, Callable[[Any, Any], None]] = {
    "error_prose": error_prose,
    "error_reason_code_and_field": error_reason_code_and_field,
    "repair_commands": repair_commands,
    "latency": latency,
    "provider_transport_reason": provider_transport_reason,
    "usage_error": usage_error,
    "registry_role_redacted": registry_role_redacted,
}


def apply_excuses(
    family: str,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    case: dict[str, Any] | None = None,
) -> tuple[Any, Any, list[str]]:
    """Both outputs with every rule applied, and the names of the rules that mattered."""
    del family  # every rule so far applies to every family
    if upstream_crash(ours, theirs):
        return {"excused": "upstream_crash"}, {"excused": "upstream_crash"}, ["upstream_crash"]
    ours_out = copy.deepcopy(ours["output"])
    theirs_out = copy.deepcopy(theirs["output"])
    used = []
    rules: dict[str, Callable[[Any, Any], None]] = {
        **RULES,
        **{
            name: (lambda a, b, rule=rule: rule(a, b, case))  # type: ignore[misc]
            for name, rule in CASE_RULES.items()
        },
    }
    for name, rule in rules.items():
        before = copy.deepcopy((ours_out, theirs_out))
        rule(ours_out, theirs_out)
        if (ours_out, theirs_out) != before:
            used.append(name)
    return ours_out, theirs_out, used
