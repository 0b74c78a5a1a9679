"""turn-hooks: the contract between agent host runtimes and Turn plugins.

Plugin authors need :data:`hookimpl`, the models and the errors. Hosts need
:func:`make_plugin_manager` and the ``call_*`` dispatchers. Nothing here does I/O,
except :func:`run_external`, the one way hosts and plugins run a validator (in the
user's environment, :func:`user_environment`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turn_hooks import models
from turn_hooks._calling import (
    RETRYABLE_STATUSES,
    call_post_settlement,
    call_post_writeback,
    call_pre_turn,
    project_contributions,
    read_results,
    settlement_is_final,
    settlement_is_taken,
    settlement_result_fields,
    settlement_result_tools,
)
from turn_hooks._contribution import (
    RESERVED_NAMES,
    basis_digest,
    measure_context_items,
    measure_result_bytes,
)
from turn_hooks._external import (
    TAIL_BYTES,
    ExternalRun,
    output_tail,
    run_external,
    user_environment,
)
from turn_hooks._json_input import (
    MAX_JSON_DEPTH,
    MAX_JSON_SIZE,
    MAX_NUMBER_CHARS,
    argv_from_json,
    loads_bounded,
)
from turn_hooks._manager import make_plugin_manager, plugin_info, prebuild_plugin_manager
from turn_hooks._names import NAME
from turn_hooks.errors import (
    ContributionError,
    InvalidInputError,
    PluginContractError,
    ProviderError,
    ProviderRejected,
    ProviderUnavailable,
    RegistrationError,
    SidecarCorrupt,
    SidecarError,
    SidecarLockTimeout,
    SidecarPathError,
    SidecarPermissionError,
    SidecarWriteError,
    TurnHooksError,
)
from turn_hooks.hookspecs import hookimpl, hookspec
from turn_hooks.models import (
    HOSTS,
    MAX_RESULT_BYTES,
    ContextRegistration,
    HookFailure,
    SettlementRegistration,
    TurnContext,
    WritebackRegistration,
)

if TYPE_CHECKING:  # served by __getattr__ below, built on first use (turn_hooks.models)
    from turn_hooks.models import (
        ContextItem,
        ContextResult,
        Contribution,
        HostProjection,
        PostSettlementReceipt,
        PreTurnOutcome,
        Settlement,
        SettlementEvidence,
        WritebackEvent,
        WritebackOutcome,
    )

__all__ = [
    "HOSTS",
    "MAX_JSON_DEPTH",
    "MAX_JSON_SIZE",
    "MAX_NUMBER_CHARS",
    "MAX_RESULT_BYTES",
    "NAME",
    "RESERVED_NAMES",
    "RETRYABLE_STATUSES",
    "TAIL_BYTES",
    "ContextItem",
    "ContextRegistration",
    "ContextResult",
    "Contribution",
    "ContributionError",
    "ExternalRun",
    "HookFailure",
    "HostProjection",
    "InvalidInputError",
    "PluginContractError",
    "PostSettlementReceipt",
    "PreTurnOutcome",
    "ProviderError",
    "ProviderRejected",
    "ProviderUnavailable",
    "RegistrationError",
    "Settlement",
    "SettlementEvidence",
    "SettlementRegistration",
    "SidecarCorrupt",
    "SidecarError",
    "SidecarLockTimeout",
    "SidecarPathError",
    "SidecarPermissionError",
    "SidecarWriteError",
    "TurnContext",
    "TurnHooksError",
    "WritebackEvent",
    "WritebackOutcome",
    "WritebackRegistration",
    "argv_from_json",
    "basis_digest",
    "call_post_settlement",
    "call_post_writeback",
    "call_pre_turn",
    "hookimpl",
    "hookspec",
    "loads_bounded",
    "make_plugin_manager",
    "measure_context_items",
    "measure_result_bytes",
    "output_tail",
    "plugin_info",
    "prebuild_plugin_manager",
    "project_contributions",
    "read_results",
    "run_external",
    "settlement_is_final",
    "settlement_is_taken",
    "settlement_result_fields",
    "settlement_result_tools",
    "user_environment",
]


def __getattr__(name: str) -> Any:
    # A model of one boundary is built on its first use (see turn_hooks.models).
    if name in models._LAZY:
        model = globals()[name] = getattr(models, name)
        return model
    # Served lazily: importlib.metadata is slow to import and the hook path rarely needs it.
    if name == "__version__":
        from importlib.metadata import version

        return version("turn-hooks")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
