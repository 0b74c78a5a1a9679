"""``experiment-status`` and ``configure``: read and commit a Goal/Agent binding.

The commands of :mod:`capabilities.reward_memory.binding`, kept beside it in the
command tree's terms; handlers import the binding layer only when they run.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from capabilities.reward_memory.cli._common import (
    Result,
    add_binding_arguments,
    registry_path,
    resolve_binding,
)


def experiment_status(args: argparse.Namespace) -> Result:
    """``experiment-status``: resolve one binding, read-only, no provider call.

    The fixed upstream ``host_coverage`` stays as upstream prints it. When a
    conformance run has been saved on this machine, ``host_conformance`` follows it:
    the latest run per host, which is what a host was seen to connect. With none
    saved the document is upstream's, byte for byte.
    """
    status: dict[str, Any] = dict(resolve_binding(args).status)
    reports: Any = getattr(args, "conformance_reports", None)
    latest = reports.summaries() if reports is not None else []
    if not latest:
        args.markdown_notes = {"host_coverage": HOST_COVERAGE_NOTE}
        return status, TITLE
    shown: dict[str, Any] = {}
    for key, value in status.items():  # right after the declaration it qualifies
        shown[key] = value
        if key == "host_coverage":
            shown["host_conformance"] = {
                "host_coverage_basis": "declared_source_wiring",
                "show_command": reports.SHOW_COMMAND,
                "latest": latest,
            }
    args.markdown_notes = {
        "host_coverage": (HOST_COVERAGE_NOTE[0], HOST_COVERAGE_DECLARED + HOST_COVERAGE_SAVED),
        "host_conformance": HOST_CONFORMANCE_NOTE,
    }
    return shown, TITLE


TITLE = "Reward memory experiment status"
HOST_COVERAGE_DECLARED = (
    "Upstream LoopX's fixed table of which host edges its source wires, kept "
    "byte-identical in the JSON for interchangeability. It says nothing about this "
    "installation: it shows the same rows with no hooks installed. What a host really "
    "connects is earned by `turn-hooks conformance run --host HOST` (docs/conformance.md)."
)
HOST_COVERAGE_SAVED = " The latest saved run per host follows, under host_conformance."
HOST_COVERAGE_NOTE = (
    "declared source wiring, not verified coverage",
    HOST_COVERAGE_DECLARED + " No conformance run is saved on this machine yet.",
)
"""How the Markdown status labels ``host_coverage`` (contracts.md §17)."""
HOST_CONFORMANCE_NOTE = (
    "latest saved conformance run per host",
    "What each host was seen to connect in the last `turn-hooks conformance run` saved "
    "for it, full or partial (a partial run proves only its own scenarios), with its "
    "date and identity. `turn-hooks conformance report --host HOST` shows the report.",
)
"""How the Markdown status labels ``host_conformance``."""


def configure(args: argparse.Namespace) -> Result:
    """``configure``: preview or commit a verified binding (canary write + readback)."""
    from capabilities.reward_memory.binding.enablement import configure_binding

    document = configure_binding(
        registry_path=Path(registry_path(args)),
        goal_id=args.goal_id,
        agent_id=args.agent_id,
        config_path=args.config,
        execute=args.execute,
        clear=args.clear,
    )
    return document, "Reward memory configuration"


def add_experiment_status(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory experiment-status``."""
    status = sub.add_parser("experiment-status", help="resolve one binding (no provider call)")
    add_binding_arguments(status)
    status.set_defaults(handler=experiment_status)


def add_configure(sub: argparse._SubParsersAction[Any]) -> None:
    """``reward-memory configure``."""
    conf = sub.add_parser(
        "configure", help="enable reward memory for one Agent (preview unless --execute)"
    )
    add_binding_arguments(conf)
    conf.add_argument("--config", help="repo-relative path of the v1 experiment config")
    conf.add_argument(
        "--execute", action="store_true", help="canary write, exact readback, commit the binding"
    )
    conf.add_argument("--clear", action="store_true", help="disable the binding")
    conf.set_defaults(handler=configure)
