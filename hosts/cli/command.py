"""The ``turn-hooks`` command.

Hosts start this process on every Turn, so the module imports only the standard
library at the top; each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_INTERNAL = 1

Handler = Callable[[argparse.Namespace], tuple[Any, str]]
"""A command: returns (document, title) for rendering, or raises a TurnHooksError."""

_protocol: list[int] = []
"""The descriptor of the real stdout while a host hook runs (see :func:`_host_stdout`)."""


class UsageError(Exception):
    """Bad command-line usage, reported as a JSON error object."""


class _VersionRequested(Exception):
    """``--version`` was given: the version is printed instead of running a command."""


class _VersionAction(argparse.Action):
    # argparse's own "version" action needs the text when the parser is built; ours
    # reads the installed version only when asked (importlib.metadata is slow).
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _VersionRequested


class _Parser(argparse.ArgumentParser):
    # argparse prints usage and exits on bad arguments; we want one JSON error object.
    def error(self, message: str) -> NoReturn:
        # The words at fault are in argparse's message; where to read what is right is
        # the parser's own --help (of the subcommand at fault, not the top level).
        raise UsageError(f"{message}; see `{self.prog} --help`")


def _format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("json", "markdown"),
        default="json",
        help="json: one compact document for machines; markdown: tables for people",
    )


def _read_json_input(source: str) -> Any:
    """The ``--input`` document: a file, or ``-`` for stdin, through the bounded reader.

    At most one byte over the bound is read, so ``--input /dev/zero`` is refused as
    too large instead of filling memory, and a FIFO is refused instead of waited on.
    """
    from sidecars import read_source
    from turn_hooks import loads_bounded

    return loads_bounded(read_source(source))


def _cmd_plugins(args: argparse.Namespace) -> tuple[Any, str]:
    from turn_hooks import make_plugin_manager, plugin_info

    pm = make_plugin_manager()
    return {
        "ok": True,
        "schema_version": "turn_hooks_plugins_v0",
        "plugins": plugin_info(pm),
        "load_failures": pm.load_failures,
    }, "Loaded turn-hooks plugins"


def _cmd_schema(args: argparse.Namespace) -> tuple[Any, str]:
    from turn_hooks.errors import InvalidInputError

    try:
        return _schema_result(args)
    except OSError as exc:  # a name the system refuses (too long), a file where a directory is
        raise InvalidInputError(
            f"the schema directory cannot be used ({exc.strerror}); name a directory you can write",
            reason_code="schema_output_unusable",
        ) from None


def _schema_result(args: argparse.Namespace) -> tuple[Any, str]:
    from turn_hooks.schema import REGENERATE_COMMAND, SCHEMA_DIR, render_schemas, write_schemas

    if args.check:
        directory = Path(args.output) if args.output else SCHEMA_DIR
        stale = [
            name
            for name, text in render_schemas().items()
            if not (directory / name).is_file()
            or (directory / name).read_text(encoding="utf-8", errors="replace") != text
        ]
        document = {
            "ok": not stale,
            "schema_version": "turn_hooks_schema_check_v0",
            "stale": stale,
            "regenerate": REGENERATE_COMMAND,
        }
        return document, "Schema freshness"
    if args.output is None:
        return {"ok": True, "schemas": {n: json.loads(t) for n, t in render_schemas().items()}}, (
            "JSON Schemas"
        )
    written = write_schemas(Path(args.output))
    return {"ok": True, "schema_version": "turn_hooks_schema_write_v0", "written": written}, (
        "Schemas written"
    )


def _store(args: argparse.Namespace) -> Any:
    from sidecars import SidecarStore, sidecar_root
    from turn_hooks.errors import InvalidInputError

    root = Path(args.root) if args.root else sidecar_root(Path.cwd())
    try:
        root.is_dir()  # a name the system refuses (too long, say) is the caller's to fix
    except OSError as exc:
        raise InvalidInputError(
            f"the sidecar root cannot be used ({exc.strerror}); name an existing directory",
            reason_code="sidecar_root_invalid",
        ) from None
    return SidecarStore(root)


def _cmd_sidecar_check(args: argparse.Namespace) -> tuple[Any, str]:
    import dataclasses

    store = _store(args)
    if args.paths:
        paths = [Path(p).absolute() for p in args.paths]
    else:
        paths = sorted(store.root.rglob("*.json")) if store.root.is_dir() else []
    checks = [store.check(path, repair=args.repair) for path in paths]
    rows = [dataclasses.asdict(c) for c in checks]
    ok = all(c.status in {"ok", "repaired"} for c in checks)
    return {
        "ok": ok,
        "schema_version": "turn_hooks_sidecar_check_v0",
        "checked_count": len(checks),
        "failed_count": sum(c.status not in {"ok", "repaired"} for c in checks),
        "sidecars": rows,
    }, "Sidecar check"


def _cmd_sidecar_show(args: argparse.Namespace) -> tuple[Any, str]:
    import hashlib

    from sidecars import dumps
    from turn_hooks.errors import InvalidInputError

    store = _store(args)
    path = Path(args.path).absolute()
    document = store.read(path)
    if document is None:
        raise InvalidInputError("no sidecar at that path", reason_code="sidecar_missing")
    name = "/".join(path.relative_to(store.root).parts)
    if args.raw:
        # The raw view is a private operator view: it can contain reflection text.
        return document, f"Sidecar {name} (private)"
    version = document.get("schema_version")
    return {
        "ok": True,
        "schema_version": "turn_hooks_sidecar_summary_v0",
        "name": name,
        "sidecar_schema_version": version if isinstance(version, str) else None,
        "status": document.get("status") if isinstance(document.get("status"), str) else None,
        "keys": sorted(document),
        "content_sha256": hashlib.sha256(dumps(document).encode("utf-8")).hexdigest(),
    }, f"Sidecar {name}"


def _cmd_dispatch_pre_turn(args: argparse.Namespace) -> tuple[Any, str]:
    from turn_hooks import TurnContext, call_pre_turn, make_plugin_manager, project_contributions
    from turn_hooks.schema import parse_model

    turn = parse_model(TurnContext, _read_json_input(args.input))
    outcome = call_pre_turn(make_plugin_manager(), turn)
    projection = project_contributions(outcome.payload)
    return {
        "ok": True,
        "schema_version": "turn_hooks_pre_turn_v0",
        "turn_key": turn.turn_key,
        "contributions": [c.to_json() for c in outcome.contributions],
        "failures": [f.to_json() for f in outcome.failures],
        "projection": projection.to_json(),
    }, "PreTurn dispatch"


def _cmd_dispatch_post_settlement(args: argparse.Namespace) -> tuple[Any, str]:
    from turn_hooks import Settlement, TurnContext, call_post_settlement, make_plugin_manager
    from turn_hooks.errors import InvalidInputError
    from turn_hooks.schema import parse_model

    document = _read_json_input(args.input)
    if not isinstance(document, dict) or set(document) != {"turn", "settlement"}:
        raise InvalidInputError(
            'the input must be {"turn": ..., "settlement": ...}', reason_code="input_shape_invalid"
        )
    turn = parse_model(TurnContext, document["turn"])
    settlement = parse_model(Settlement, document["settlement"])
    receipt = call_post_settlement(make_plugin_manager(), turn, settlement)
    return receipt, "PostSettlement receipt"


CORE_COMMANDS = frozenset(
    {
        "plugins",
        "schema",
        "sidecar",
        "dispatch",
        "host",
        "install",
        "doctor",
        "settle",
        "log",
        "mcp",
        "resident",
    }
)
HOST_NAMES = ("generic", "codex-cli", "dsh")
HOOK_EVENTS = ("pre-turn", "post-settlement")


def _hook_output(host_name: str, event: str, dialect: str) -> tuple[bool, str]:
    """(quiet, log host): Codex's and Claude Code's pre-turn, and Claude Code's
    settlement, print nothing when they have nothing; JSON-only runtimes get {}."""
    quiet = (host_name in ("codex-cli", "dsh") and event == "pre-turn") or dialect == "claude-code"
    return quiet, dialect if dialect != "plain" else host_name


def _cmd_host(args: argparse.Namespace) -> tuple[Any, str]:
    # A hook must never block or break the Turn: any failure prints {} and exits 0
    # (nothing at all for a Codex UserPromptSubmit, where {} would add nothing).
    from hosts.adapters import generic
    from hosts.settlement import spill
    from turn_hooks.errors import InvalidInputError

    adapter: Any = generic
    if args.host_name != "generic":  # imported only for its hooks: each import is per Turn
        from hosts.adapters import codex_cli

        # DSH's plugin sends Codex-shaped events, so it shares the Codex adapter.
        adapter = codex_cli
    dialect = getattr(args, "dialect", "plain")
    if args.host_name == "generic":
        extra: dict[str, Any] = {"dialect": dialect}
    else:
        extra = {"host": "dsh" if args.host_name == "dsh" else adapter.HOST}
    quiet, host = _hook_output(args.host_name, args.event, dialect)
    try:
        # The declaration is checked before stdin is read: a hook that could never
        # run its validator settles nothing, so the host's retry, once fixed, still can.
        argv = None
        if args.event == "post-settlement":
            from hosts.setup.install import validation_argv

            argv = validation_argv(args)
        binding = {
            "goal_id": args.goal_id,
            "agent_id": args.agent_id,
            "registry": args.registry or os.environ.get("TURN_HOOKS_REGISTRY"),
            "prompt_in_recall": not args.no_prompt_in_recall,
        }
        if args.goal_id and not args.agent_id:
            # An installed hook names both; a Goal alone is a broken command line.
            raise InvalidInputError(
                "--goal-id goes with --agent-id", reason_code="hook_arguments_invalid"
            )
        if not args.goal_id:
            # A host plugin's hook (hosts.setup.plugin_route): no binding on its command
            # line, so the repository it runs in names it, and its validator.
            from hosts.setup import plugin_route

            found = plugin_route.discovered_binding(dialect, args.agent_id, binding["registry"])
            serves = found is not None and plugin_route.serve_here(
                args.host_name, dialect, found["goal_id"]
            )
            if found is None or not serves:
                return (None if quiet else {}), "Nothing added"
            binding.update(found)
            args.goal_id = found["goal_id"]
            if args.event == "post-settlement" and argv is None:
                argv = plugin_route.repository_validation(found["registry"], found["goal_id"])
        if args.event == "post-settlement":
            event = generic.parse_event(_spilled_stdin(args, binding, argv))
        else:
            event = generic.parse_event(generic.read_hook_stdin())
            spill.recover()  # a dead Stop hook's Turn, before this Turn (Gemini's id)
        # Hooks are installed machine-wide: another repository's Turn is not this
        # Goal's, so it gets no recall, no staging, no validator and no settlement.
        from sidecars import serves_directory

        if not serves_directory(binding["registry"], args.goal_id, event.get("cwd")):
            # Routine, not a fault: with N repositories installed every Turn skips N-1
            # Goals, and logging each skip would fill the hook log with nothing.
            return (None if quiet else {}), "Nothing added"
        if args.event == "pre-turn":
            document = adapter.pre_turn(event, **binding, **extra)
            return (None if quiet and not document else document or {}), "PreTurn context"
        receipt = adapter.post_settlement(
            event,
            validation_argv=argv,
            validation_timeout=args.validation_timeout_seconds,
            **binding,
            **extra,
        )
        return (None if quiet and not receipt else receipt), "Settlement receipt"
    except Exception as exc:  # fail open, by contract; the reason goes to the hook log
        if os.environ.get("TURN_HOOKS_DEBUG") == "1":
            raise
        from hosts.settlement.hook_log import record
        from turn_hooks.errors import TurnHooksError

        reason = exc.reason_code if isinstance(exc, TurnHooksError) else "internal_error"
        record(host, args.event.replace("-", "_"), [("adapter", reason)])
        return (None if quiet else {}), "Nothing added"
    finally:
        spill.release()  # a hook that ends leaves no spill: one left means its writer died


def _spilled_stdin(
    args: argparse.Namespace, binding: dict[str, Any], validation: list[str] | None
) -> bytes:
    """A Stop hook's stdin, moved into a spill first (:mod:`hosts.settlement.spill`): with the
    header a later PreTurn needs to build the Turn if this hook is killed."""
    from hosts.adapters.generic import MAX_EVENT_CHARS
    from hosts.settlement import spill

    try:
        cwd: str | None = os.getcwd()
    except OSError:  # removed under the hook: a relative registry is then unresolved
        cwd = None
    header = {
        "host_name": args.host_name,
        "event": args.event,
        "dialect": getattr(args, "dialect", "plain"),
        **binding,
        "validation_argv": validation,
        "validation_timeout_seconds": args.validation_timeout_seconds,
        "cwd": cwd,
    }
    return spill.take_stdin(header, limit=MAX_EVENT_CHARS, reason_prefix="hook_input")


def _guess_hook(arguments: list[str]) -> tuple[bool, str, str]:
    """(quiet, log host, log event) of a host hook from the words of its command line,
    for when its arguments could not be parsed: for the log and the output's shape."""
    host_name = next((arg for arg in arguments if arg in HOST_NAMES), "unknown")
    event = next((arg for arg in arguments if arg in HOOK_EVENTS), "unknown")
    dialect = "plain"
    for index, arg in enumerate(arguments):
        if arg == "--dialect" and index + 1 < len(arguments):
            dialect = arguments[index + 1]
        elif arg.startswith("--dialect="):
            dialect = arg.partition("=")[2]
    if dialect not in ("claude-code", "gemini"):
        dialect = "plain"
    quiet, host = _hook_output(host_name, event, dialect)
    return quiet, host, event.replace("-", "_")


def _hook_arguments_invalid(arguments: list[str]) -> int:
    """A host hook whose own arguments are bad still exits 0: exit 2 from a prompt hook
    means "block this prompt" to Codex, Claude Code and Gemini. It prints what a failing
    hook prints and logs ``hook_arguments_invalid``; the host and event are guessed
    from the words present (:func:`_guess_hook`)."""
    from hosts.settlement.hook_log import record

    quiet, host, event = _guess_hook(arguments)
    record(host, event, [("adapter", "hook_arguments_invalid")])
    if not quiet:
        _emit("{}\n")
    return EXIT_OK


SETTLE_LIMIT_MAX = 1000
"""The most entries one ``settle`` run carries on: far above any real queue, and a
bound, so a mistyped number is an error rather than a run without end."""


def _cmd_settle(args: argparse.Namespace) -> tuple[Any, str]:
    from hosts.settlement.settlement import replay_pending, settlement_store
    from sidecars import name_binding
    from turn_hooks import make_plugin_manager
    from turn_hooks.errors import InvalidInputError

    if args.limit is not None and not 1 <= args.limit <= SETTLE_LIMIT_MAX:
        raise InvalidInputError(
            f"--limit must be between 1 and {SETTLE_LIMIT_MAX}", reason_code="settle_limit_invalid"
        )
    # A command: an unusable binding is one typed error and exit 2, nothing written.
    named = name_binding(args.registry, args.goal_id, args.agent_id)
    store = settlement_store(named.registry, named.goal_id)
    summary = replay_pending(
        make_plugin_manager(),
        store,
        goal_id=named.goal_id,
        agent_id=named.agent_id,
        limit=args.limit,
    )
    return summary, "Spooled settlements carried on"


def _cmd_log(args: argparse.Namespace) -> tuple[Any, str]:
    from hosts.settlement.hook_log import KEEP_ENTRIES
    from hosts.setup.status import hook_log
    from turn_hooks.errors import InvalidInputError

    if not 1 <= args.limit <= KEEP_ENTRIES:
        raise InvalidInputError(
            f"--limit must be between 1 and {KEEP_ENTRIES}", reason_code="log_limit_invalid"
        )
    view = hook_log(args.limit)
    if not view["entries"]:
        args.markdown_note = "The hook log is empty: no hook has had a reason to log yet."
    elif codes := {e.get("reason_code") for e in view["entries"] if e.get("source") == "validator"}:
        # The log holds codes only: the validator's own words are in the spool.
        view["last_validation"] = _last_validation()
        view["next_step"] = VALIDATOR_HINT
        # A check cut off by its deadline gave no verdict: it did not fail.
        what = "ran past its deadline" if codes == {"external_timeout"} else "did not pass"
        args.markdown_note = f"A validator {what}: {VALIDATOR_HINT}."
    return view, "Hook log"


def _last_validation() -> dict[str, Any] | None:
    """When and how the last validation of the binding this directory names ended
    (public facts: codes, exit statuses, times), or ``None`` outside a bound
    repository: the log itself is machine-wide."""
    from hosts.setup.status import settlements
    from sidecars import name_binding
    from turn_hooks import TurnHooksError

    try:
        named = name_binding(None, None, None)
    except TurnHooksError:
        return None
    last = settlements(str(named.registry), named.goal_id, named.agent_id)
    settled = last.get("last_validation")
    if not isinstance(settled, dict):
        return None
    keys = (
        *("validated_at", "validator_status", "validator_reason_code"),
        *("validator_exit_code", "check_exit_status", "validator_duration_ms"),
    )
    return {"goal_id": named.goal_id, **{key: settled.get(key) for key in keys}}


VALIDATOR_HINT = (
    "`turn-hooks status --validation-output` (in the Goal's repository) shows when and why "
    "the last validation failed, and the end of what the validator printed"
)


def _add_plugins(commands: Any) -> None:
    plugins = commands.add_parser("plugins", help="list loaded plugins and their hooks")
    _format_option(plugins)
    plugins.set_defaults(handler=_cmd_plugins)


def _add_schema(commands: Any) -> None:
    schema = commands.add_parser("schema", help="print, write or check the JSON Schemas")
    schema.add_argument("--output", help="directory to write the schema files into")
    schema.add_argument(
        "--check", action="store_true", help="compare the files with the models; exit 2 if stale"
    )
    _format_option(schema)
    schema.set_defaults(handler=_cmd_schema)


def _add_sidecar(commands: Any) -> None:
    sidecar = commands.add_parser("sidecar", help="inspect and verify sidecar files")
    sidecar_commands = sidecar.add_subparsers(dest="sidecar_command", required=True)
    check = sidecar_commands.add_parser(
        "check", help="verify mode 0600, ownership, JSON and lock of each sidecar"
    )
    check.add_argument("paths", nargs="*", help="sidecar files (default: every one below --root)")
    check.add_argument("--repair", action="store_true", help="narrow a widened mode to 0600")
    show = sidecar_commands.add_parser(
        "show", help="summarise one sidecar (keys, status, digest; no content)"
    )
    show.add_argument("path", help="the sidecar file")
    show.add_argument(
        "--raw", action="store_true", help="print the content itself (private: may hold text)"
    )
    for sub, handler in ((check, _cmd_sidecar_check), (show, _cmd_sidecar_show)):
        sub.add_argument("--root", help="sidecar root (default: ./.local/turn-hooks)")
        _format_option(sub)
        sub.set_defaults(handler=handler)


def _add_dispatch(commands: Any) -> None:
    dispatch = commands.add_parser(
        "dispatch", help="run the hooks for a Turn given as JSON (host-neutral)"
    )
    dispatch_commands = dispatch.add_subparsers(dest="dispatch_command", required=True)
    pre = dispatch_commands.add_parser("pre-turn", help="input: a TurnContext JSON object")
    post = dispatch_commands.add_parser(
        "post-settlement", help='input: {"turn": TurnContext, "settlement": Settlement}'
    )
    for sub, handler in ((pre, _cmd_dispatch_pre_turn), (post, _cmd_dispatch_post_settlement)):
        sub.add_argument("--input", default="-", help="JSON file, or - for stdin (default)")
        _format_option(sub)
        sub.set_defaults(handler=handler)


def seconds_between(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: whole seconds from ``low`` to ``high`` (an error names
    the bounds, where ``choices`` would list every number between them)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high} seconds")
        return value

    return parse


def _add_host(commands: Any) -> None:
    # Loaded by every hook already (the adapters settle through it).
    from hosts.settlement.settlement import (
        BUILT_IN_MARGIN,
        INLINE_VALIDATION_TIMEOUT,
        MAX_VALIDATION_TIMEOUT,
        SETTLEMENT_WAIT,
        VALIDATION_TIMEOUT,
    )

    host = commands.add_parser("host", help="hook commands that host runtimes call each Turn")
    host_commands = host.add_subparsers(dest="host_name", required=True)
    for name, summary in (
        ("generic", "the generic JSON contract (stdin event, stdout JSON; always exit 0)"),
        ("codex-cli", "Codex CLI UserPromptSubmit / Stop hooks (always exit 0)"),
        ("dsh", "DSH, called by the bundled Cordis plugin with Codex-shaped events"),
    ):
        adapter = host_commands.add_parser(name, help=summary)
        adapter.add_argument("event", choices=("pre-turn", "post-settlement"))
        adapter.add_argument(
            "--goal-id",
            help="the Goal (default: the one whose registered repository holds the working "
            "directory, with the validator that repository declares: a host plugin's hook)",
        )
        adapter.add_argument("--agent-id", help="the Agent (default: the one init registered)")
        adapter.add_argument("--registry", help="binding registry file (or $TURN_HOOKS_REGISTRY)")
        adapter.add_argument(
            "--validation-command-json", help='the independent validator argv, e.g. ["cmd", "arg"]'
        )
        adapter.add_argument(
            "--validation-timeout-seconds",
            type=seconds_between(1, MAX_VALIDATION_TIMEOUT),
            metavar=f"1..{MAX_VALIDATION_TIMEOUT}",
            help="the validator's deadline; by default the built-in validator's own "
            f"--timeout-seconds and {BUILT_IN_MARGIN} s for its start. Where neither is "
            f"named: {VALIDATION_TIMEOUT} s, granted in full: the hook settles in a child "
            "(generic hosts and Gemini wait for it up to "
            f"{SETTLEMENT_WAIT} s, then print validation_pending while it runs on). "
            f"With TURN_HOOKS_SETTLE=inline it runs inside the hook, cut to "
            f"{INLINE_VALIDATION_TIMEOUT} s (logged validation_timeout_clamped), and the "
            "next Turn's worker runs it again in full",
        )
        adapter.add_argument(
            "--no-prompt-in-recall",
            action="store_true",
            help="keep the user's prompt out of the recall query (goal and project only)",
        )
        if name == "generic":
            adapter.add_argument(
                "--dialect",
                choices=("plain", "claude-code", "gemini"),
                default="plain",
                help="how the runtime names fields and what it expects on stdout",
            )
        _format_option(adapter)
        adapter.set_defaults(handler=_cmd_host)


def _add_settle(commands: Any) -> None:
    settle = commands.add_parser(
        "settle",
        help="carry spooled settlements on (validator, post_settlement) after a failed hook",
        description=(
            "Every settled Turn is spooled before its validator runs. A Stop hook that was "
            "killed, timed out or met a locked journal leaves its entry queued; the next "
            "PreTurn starts this command detached, and an operator can run it by hand. "
            "Entries end settled, or after 8 deliveries as settlement_attempts_exhausted."
        ),
    )
    settle.add_argument(
        "--pending", action="store_true", required=True, help="work the queue of one Goal/Agent"
    )
    settle.add_argument("--goal-id", help="(or $TURN_HOOKS_GOAL or found from the repository)")
    settle.add_argument("--agent-id", help="(or $TURN_HOOKS_AGENT or found from the repository)")
    settle.add_argument("--registry", help="binding registry file (or $TURN_HOOKS_REGISTRY)")
    settle.add_argument(
        "--limit",
        type=int,
        default=None,
        help=f"at most this many entries, 1..{SETTLE_LIMIT_MAX} (default: all)",
    )
    _format_option(settle)
    settle.set_defaults(handler=_cmd_settle)


def _add_install(commands: Any) -> None:
    """Add ``install`` and ``doctor`` to the command line: they share their checks."""
    from hosts.facts.codex_versions import NEWEST, OLDEST
    from hosts.settlement.settlement import (
        BUILT_IN_MARGIN,
        MAX_VALIDATION_TIMEOUT,
        SETTLEMENT_WAIT,
        VALIDATION_TIMEOUT,
    )
    from hosts.setup import install

    # The built-in validator's own deadline: the hook grants it and the margin.
    longest = MAX_VALIDATION_TIMEOUT - BUILT_IN_MARGIN
    default = VALIDATION_TIMEOUT - BUILT_IN_MARGIN

    installer = commands.add_parser(
        "install",
        help="install the per-Turn hooks into a host",
        description=(
            "Checks first (as `turn-hooks doctor`): the binding, the validator, the hook "
            "command; then runs the validator once in the Goal's repository, within its "
            "deadline, and shows whether it passed (with --format markdown, the end of its "
            "output too). Nothing is "
            "written unless every check passes. The hooks call the absolute interpreter "
            "running this command: run it from a stable installation, not a clone's "
            "editable one. Where the turn-hooks Claude Code plugin is enabled, `install "
            "claude-code` installs no hooks of its own: it records the validator in the "
            "repository (.local/turn-hooks/validator.json), where the plugin's hooks read "
            "it, and adds only the rule that lets `claude -p` call the plugin's tool."
        ),
    )
    installer.add_argument(
        "host",
        choices=install.INSTALL_HOSTS,
        help="codex: hooks.json trusted through the app-server; claude-code, gemini: "
        "settings.json; dsh: a patch layer file",
    )
    doctor_parser = commands.add_parser(
        "doctor",
        help="check the binding, the validator and every installed hook command",
        description="Checks what is installed (or, with nothing installed, what install "
        "would check). --run-validator also runs each validator once, as a Turn would.",
    )
    doctor_parser.add_argument(
        "host", nargs="?", choices=install.INSTALL_HOSTS, help="one host (default: every one found)"
    )
    for sub in (installer, doctor_parser):
        sub.add_argument("--registry", help="binding registry file (or $TURN_HOOKS_REGISTRY)")
        sub.add_argument("--goal-id", help="(or $TURN_HOOKS_GOAL or found from the repository)")
        sub.add_argument("--agent-id", help="(or $TURN_HOOKS_AGENT or found from the repository)")
        # One of the three: a validator declared two ways, or one with recall-only,
        # would leave one of them silently ignored.
        declared = sub.add_mutually_exclusive_group()
        declared.add_argument(
            "--validate-with",
            metavar="COMMAND",
            help="the project's check, such as 'make test': a reflection is learned only "
            "when it exits 0 (the built-in `turn-hooks validate command`). A command line "
            "that needs a shell ('pytest -q && ruff check .', a pipe, a redirection) runs "
            "through sh -c, and doctor shows it so",
        )
        declared.add_argument(
            "--validation-command-json", help="any other independent validator, as a JSON argv"
        )
        sub.add_argument(
            "--validation-timeout-seconds",
            dest="validator_deadline",
            type=seconds_between(1, longest),
            metavar=f"1..{longest}",
            help=f"with --validate-with: the check's deadline (default {default}, ten minutes: "
            "room for a real test suite), granted in full: every host validates in a "
            "child of its hook, off the Turn's path (Gemini's hook waits for it up to "
            f"{SETTLEMENT_WAIT} s, then lets it run on)",
        )
        declared.add_argument(
            "--recall-only",
            action="store_true",
            help="install without a validator: memories are recalled, nothing is learned",
        )
        sub.add_argument("--home", help="the host's config directory (default: its own)")
        sub.add_argument("--codex-home", help="Codex's home (default $CODEX_HOME or ~/.codex)")
        sub.add_argument(
            "--codex-bin",
            help=f"the codex binary (default: the one on PATH); Codex {OLDEST} to {NEWEST} "
            "is tested; install refuses an older one",
        )
        sub.add_argument(
            "--patch-file", help="dsh: the patch layer to write; run `dsh --patch FILE ...`"
        )
        sub.add_argument(
            "--no-prompt-in-recall",
            action="store_true",
            help="keep the user's prompt out of the recall query (goal and project only)",
        )
        _format_option(sub)
    installer.add_argument(
        "--skip-validator-run",
        action="store_true",
        help="do not run the validator once before installing (for a suite too slow to "
        "wait for); `turn-hooks doctor --run-validator` runs it later",
    )
    doctor_parser.add_argument(
        "--run-validator",
        action="store_true",
        help="also run each validator once, now, in its Goal's repository and within its "
        "deadline, and show whether it passes and the end of its output",
    )
    installer.add_argument(
        "--uninstall",
        action="store_true",
        help="remove exactly our hooks of the Goal named (needs only the home)",
    )
    installer.add_argument(
        "--all", action="store_true", help="with --uninstall: every Goal's hooks of ours"
    )
    installer.set_defaults(handler=install.cmd_install)
    doctor_parser.set_defaults(handler=install.cmd_doctor)


def _cmd_mcp(args: argparse.Namespace) -> tuple[Any, str]:
    from hosts.adapters import mcp
    from sidecars import name_binding
    from turn_hooks.errors import InvalidInputError

    try:
        named = name_binding(args.registry, args.goal_id, args.agent_id)
    except InvalidInputError as exc:
        if args.goal_id:
            raise  # a Goal named on the command line that is not there: exit 2
        # Started outside every Goal's repository: the host still gets a working
        # server, with no tool to offer (the hooks do nothing here either).
        from hosts.settlement.hook_log import record

        record("mcp", "serve", [("adapter", exc.reason_code)])
        mcp.serve_nothing()
        return None, "MCP server"
    mcp.serve(registry=named.registry, goal_id=named.goal_id, agent_id=named.agent_id)
    return None, "MCP server"


def _add_mcp(commands: Any) -> None:
    mcp = commands.add_parser("mcp", help="the stdio MCP server hosts start for result tools")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True)
    serve = mcp_commands.add_parser(
        "serve",
        help="serve the loaded plugins' result tools on stdin/stdout",
        description=(
            "A stdio MCP server (JSON-RPC 2.0, one message per line) that `install codex` "
            "and `install claude-code` wire. It offers each tool a loaded plugin declares "
            "for a result field; a call stages its arguments for the Turn's Stop hook, "
            "which settles them as it settles the field's block of the final message."
        ),
    )
    serve.add_argument("--goal-id", help="(or $TURN_HOOKS_GOAL or found from the repository)")
    serve.add_argument("--agent-id", help="(or $TURN_HOOKS_AGENT or found from the repository)")
    serve.add_argument("--registry", help="binding registry file (or $TURN_HOOKS_REGISTRY)")
    serve.set_defaults(handler=_cmd_mcp, format="json")


def _add_log(commands: Any) -> None:
    log = commands.add_parser("log", help="the hook log: why a hook added or settled nothing")
    log.add_argument("--limit", type=int, default=20, help="newest entries shown (default 20)")
    _format_option(log)
    log.set_defaults(handler=_cmd_log)


def _cmd_resident(args: argparse.Namespace) -> tuple[Any, str]:
    from hosts.setup import resident_control

    if args.resident_command == "stop":
        document = resident_control.stop()
        if not document["stopped"]:
            args.markdown_note = "No resident server was running: nothing to stop."
        return document, "Resident hook servers stopped"
    document = resident_control.status()
    if not document["enabled"]:
        args.markdown_note = (
            "The resident server is switched off (TURN_HOOKS_RESIDENT=0): hooks run cold."
        )
    elif document["socket_directory"] == "unsafe":
        args.markdown_note = (
            "The socket directory is open to others, not yours or unusable: hooks run cold "
            "until it is a directory of yours with mode 0700 (chmod 700)."
        )
    elif not document["servers"]:
        args.markdown_note = (
            "No resident server runs for this socket directory: the next host hook starts one."
        )
    held = (
        f"{document['user_running_count']} resident server(s) of yours run, over every "
        f"HOME and interpreter, holding {document['user_memory_bytes'] / 2**20:.0f} MiB "
        f"in all (at most {document['max_servers']} run at once)."
    )
    note = getattr(args, "markdown_note", None)
    args.markdown_note = f"{note} {held}" if note else held
    return document, "Resident hook servers"


def _add_resident(commands: Any) -> None:
    resident = commands.add_parser(
        "resident",
        help="see or stop the resident hook servers that keep hooks warm",
        description=(
            "A resident hook server answers host hooks warm and exits after an hour "
            "without a call (TURN_HOOKS_RESIDENT_IDLE_SECONDS), after two minutes while "
            "it has served one call at most (TURN_HOOKS_RESIDENT_SHORT_IDLE_SECONDS). "
            "At most 4 run per user (TURN_HOOKS_RESIDENT_MAX_SERVERS); past that, hooks "
            "run cold. `status` lists this user's servers and the memory they hold; "
            "`stop` stops them (the next hook starts one again)."
        ),
    )
    resident_commands = resident.add_subparsers(
        dest="resident_command", required=True, parser_class=_Parser
    )
    for name, summary in (
        ("status", "list this user's resident servers: pid, start time, memory, install"),
        ("stop", "stop every resident server of this user: SIGTERM, then SIGKILL after 5 s"),
    ):
        sub = resident_commands.add_parser(name, help=summary)
        _format_option(sub)
        sub.set_defaults(handler=_cmd_resident)


_CORE_BUILDERS: tuple[tuple[tuple[str, ...], Callable[[Any], None]], ...] = (
    (("plugins",), _add_plugins),
    (("schema",), _add_schema),
    (("sidecar",), _add_sidecar),
    (("dispatch",), _add_dispatch),
    (("host",), _add_host),
    (("settle",), _add_settle),
    (("install", "doctor"), _add_install),
    (("log",), _add_log),
    (("mcp",), _add_mcp),
    (("resident",), _add_resident),
)
"""The core commands in the order ``--help`` lists them (together, CORE_COMMANDS), each
with the builder that adds its branch."""


def build_parser(*, with_plugins: bool = True, only: str | None = None) -> argparse.ArgumentParser:
    """The whole command tree; ``--help`` on any level explains it.

    Plugin commands come from the ``register_commands`` hook; building the tree for a
    core command skips plugin loading, which keeps those commands fast. ``only`` (a
    core command) builds that command's branch alone, the branch exactly as in the
    whole tree: enough to parse a command line that starts with that command word.
    """
    parser = _Parser(
        prog="turn-hooks",
        description="Per-Turn hooks that give agent hosts a reward memory they can trust.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print turn-hooks' version and exit"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for names, add in _CORE_BUILDERS:
        if only is None or only in names:
            add(commands)
    if with_plugins:
        from conformance.commands import plugin as conformance_commands
        from turn_hooks import make_plugin_manager

        pm = make_plugin_manager()
        # The maintainers' suite is part of the command line, not of any Turn: it is
        # registered here, for building the parser only, never as an entry point.
        pm.register(conformance_commands, name="conformance_commands")
        pm.hook.register_commands(commands=commands)
        from hosts.adapters import codex_app
        from hosts.setup import conformance_reports, status

        # The composition root hands plugin commands the hosts they settle through,
        # and the hosts' read-only views (`status`), so a capability's command
        # reaches a host without importing it; the conformance commands get the
        # store of the latest report per host the same way.
        parser.set_defaults(
            settlement_hosts={codex_app.HOST: codex_app},
            host_status=status.installed_hooks,
            hook_log=status.hook_log,
            conformance_reports=conformance_reports,
            settlement_view=status.settlements,
        )
    return parser


_prebuilt: dict[str, argparse.ArgumentParser] = {}
"""Parsers built ahead of a call (:func:`prebuild`), each taken by one call only."""


_PREBUILT_CALLS = {
    "host": ["host", "generic", "pre-turn", "--goal-id", "g", "--agent-id", "a"],
    "mcp": ["mcp", "serve", "--goal-id", "g", "--agent-id", "a"],
}
"""The branches the resident server serves (hooks, and the MCP server a host waits
for before its first model request), each with a command line it parses once."""


def prebuild() -> None:
    """Build the ``host`` and ``mcp`` branches ahead of the calls that parse with them.

    The resident server calls this before it forks: each forked child takes the
    parser once (a parser is built from this module's handlers, so one made ahead is
    the one the call would have made). A process that never called this builds its
    parser per call, as before.
    """
    for command, arguments in _PREBUILT_CALLS.items():
        parser = build_parser(with_plugins=False, only=command)
        # A parse compiles (and caches) the patterns argparse matches arguments with;
        # a parse leaves the parser as it was.
        parser.parse_args(arguments)
        _prebuilt[command] = parser


def _parser_for(arguments: list[str], first: str | None) -> argparse.ArgumentParser:
    """The tree that parses ``arguments``: one core command's branch when the command
    line starts with that command's word, else the whole tree (with plugin commands
    unless the first word is a core command)."""
    if first not in CORE_COMMANDS:
        return build_parser()
    if arguments[:1] != [first]:  # an option before the command word: top-level help, say
        return build_parser(with_plugins=False)
    assert first is not None  # a member of CORE_COMMANDS
    prebuilt = _prebuilt.pop(first, None)
    return prebuilt if prebuilt is not None else build_parser(with_plugins=False, only=first)


def _error(reason_code: str, message: str, error: str) -> dict[str, Any]:
    return {
        "ok": False,
        "schema_version": "turn_hooks_error_v0",
        "error": error,
        "reason_code": reason_code,
        "message": message,
    }


class OutputUnwritable(Exception):
    """Stdout refused the output (``/dev/full``, a closed descriptor): the caller
    decides what that means; a host hook still exits 0."""


@contextlib.contextmanager
def _host_stdout() -> Iterator[None]:
    """Keep the host's stdout for the host JSON alone while a hook runs.

    A host reads a hook's stdout as its protocol. File descriptor 1 is pointed at
    stderr for the hook's duration, so whatever else writes there (a plugin's
    ``os.write(1, ...)``, a child it starts, a plugin thread left behind at its
    deadline) lands on stderr, which hosts ignore from a hook that exits 0; only
    :func:`_emit` writes to the real stdout. Without a real descriptor 1 (an
    in-process caller's captured stream) there is nothing to guard.
    """
    try:
        guarded = sys.stdout is not None and sys.stdout.fileno() == 1
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        guarded = False
    if not guarded:
        yield
        return
    sys.stdout.flush()
    real = os.dup(1)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr to lend: the hook runs unguarded
        os.close(real)
        yield
        return
    _protocol.append(real)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()  # what a plugin left buffered goes where fd 1 points: stderr
        os.dup2(real, 1)
        os.close(real)
        _protocol.clear()


def _emit(text: str) -> None:
    """Write ``text`` to stdout as UTF-8 whatever the locale, so stdout is always valid
    UTF-8: a lone surrogate (a file name that is not UTF-8, say) becomes U+FFFD.

    :raises OutputUnwritable: stdout failed other than by a reader gone away; stdout
        then points at ``/dev/null``, so the flush at interpreter exit cannot fail.
    """
    from hosts.cli._render import encode_output

    data = encode_output(text)
    if _protocol:
        try:
            _write_all(_protocol[0], data)
        except OSError as exc:  # ENOSPC from /dev/full, EBADF, EIO...
            raise OutputUnwritable(str(exc)) from exc
        return
    stream = sys.stdout
    if stream is None:  # started without a stdout at all
        return
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is None:  # a text-only stream, such as a test's StringIO
            stream.write(data.decode("utf-8"))
            return
        stream.flush()
        buffer.write(data)
        buffer.flush()
    except BrokenPipeError:
        # The reader is gone (a host that stopped waiting): what it cannot read is not
        # lost, and the flush at interpreter exit must not fail and change the exit code.
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except OSError as exc:  # ENOSPC from /dev/full, EBADF, EIO...
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        raise OutputUnwritable(str(exc)) from exc


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to a raw descriptor; a reader that is gone takes nothing."""
    with contextlib.suppress(BrokenPipeError):
        while data:
            data = data[os.write(fd, data) :]


def _argument_fault(arguments: list[str]) -> tuple[str, str] | None:
    # argv arrives as bytes; Python keeps bytes that are not UTF-8 as lone surrogates,
    # which no receipt, path or digest can carry. A real process cannot pass a NUL.
    for arg in arguments:
        if "\0" in arg:
            return "argument_contains_nul", "a command-line argument holds a NUL character"
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return "argument_not_utf8", "a command-line argument is not valid UTF-8"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; print its receipt or one JSON error object; return the exit code.

    Bad usage exits 2 with one JSON error, except under ``turn-hooks host``: a host
    hook exits 0 on every error of its own, its argument errors included. When stdout
    cannot be written a host hook logs ``hook_output_unwritable`` and exits 0; any
    other command says ``output_unwritable`` in one line on stderr and exits 1.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    first = next((arg for arg in arguments if not arg.startswith("-")), None)
    try:
        return _run(arguments, first)
    except OutputUnwritable:
        if first == "host":
            from hosts.settlement.hook_log import record

            _, host, event = _guess_hook(arguments)
            record(host, event, [("adapter", "hook_output_unwritable")])
            return EXIT_OK
        if sys.stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("turn-hooks: reason_code=output_unwritable: stdout refused\n")
        return EXIT_INTERNAL


def _run(arguments: list[str], first: str | None) -> int:
    from hosts.cli._render import render

    fault = _argument_fault(arguments)
    try:
        if fault is not None:
            raise UsageError(fault[1])
        stray = [
            a for a in arguments if a.startswith("-") and a not in ("-h", "--help", "--version")
        ]
        if first is None and stray:
            # argparse would only say a command is required: name the word at fault.
            raise UsageError(f"unknown option {stray[0]} and no command; see `turn-hooks --help`")
        args = _parser_for(arguments, first).parse_args(arguments)
    except _VersionRequested:
        import turn_hooks

        _emit(f"turn-hooks {turn_hooks.__version__}\n")
        return EXIT_OK
    except UsageError as exc:
        if first == "host":
            return _hook_arguments_invalid(arguments)
        reason = fault[0] if fault is not None else "usage_invalid"
        error = _error(reason, str(exc), "UsageError")
        _emit(render(error, fmt=_asked_format(arguments), title="Error"))
        return EXIT_INVALID
    # A command that reports how it was invoked (a conformance report) reads it here.
    args.command_line = arguments
    # A host hook's stdout is its host's protocol: JSON whatever the arguments say.
    fmt = "json" if first == "host" else getattr(args, "format", "json")
    with _host_stdout() if first == "host" else contextlib.nullcontext():
        try:
            from turn_hooks.errors import TurnHooksError

            document, title = args.handler(args)
        except TurnHooksError as exc:
            _emit(render(exc.to_public(), fmt=fmt, title="Error"))
            return EXIT_INVALID
        except Exception as exc:  # the last line of defence: no traceback for a user
            if os.environ.get("TURN_HOOKS_DEBUG") == "1":
                raise
            error = _error("internal_error", type(exc).__name__, "InternalError")
            _emit(render(error, fmt=fmt, title="Error"))
            return EXIT_INTERNAL
        if document is None:  # a hook with nothing to say prints nothing
            return EXIT_OK
        # A command may render its own Markdown (one pasteable section) and name the
        # exit code of a completed run that found failures (conformance: 3).
        custom = getattr(args, "markdown", None)
        if args.format == "markdown" and custom is not None:
            _emit(custom(document))
        else:
            note = getattr(args, "markdown_note", None)
            notes = getattr(args, "markdown_notes", None)
            text = render(document, fmt=args.format, title=title, note=note, notes=notes)
            tail = getattr(args, "markdown_tail", None)
            if args.format == "markdown" and tail is not None:
                # A command's private text for the person (a validator's output):
                # a section of its own, verbatim, never a table cell.
                from hosts.cli._render import fenced

                text += fenced(*tail)
            if getattr(args, "receipt_to_stderr", False):
                # The command's stdout was its output (an export's lines): the
                # receipt goes beside it, so a pipe reads only that output.
                sys.stderr.write(text)
                sys.stderr.flush()
            else:
                _emit(text)
        if document.get("ok", True) is not False:
            return EXIT_OK
        return int(getattr(args, "failure_exit", EXIT_INVALID))


def _asked_format(arguments: list[str]) -> str:
    """The ``--format`` asked for, read from raw arguments that failed to parse, so a
    usage error honours ``--format markdown`` too; JSON otherwise."""
    for index, arg in enumerate(arguments):
        if arg == "--format=markdown" or (
            arg == "--format" and arguments[index + 1 : index + 2] == ["markdown"]
        ):
            return "markdown"
    return "json"


if __name__ == "__main__":
    sys.exit(main())
