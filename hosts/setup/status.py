"""What the hosts have installed, and what the hook log says: read-only views.

``turn-hooks status`` shows, per host, whether our hooks are in the host's own
configuration (the files ``install`` writes), for which Goal and Agent, which
repository each hook acts in (hooks are machine-wide, but a hook acts only in its
Goal's repository), and whether the interpreter each hook runs still exists.
``turn-hooks log`` shows the hook log.
One small function per host reads that host's files and never writes; a file that
cannot be read is a reason code in the view, never an error.

The views are public: goal and agent ids, event names, counts and reason codes; a
repository is named by its directory's name alone. Commands, paths and file
contents stay out of them. A refused result adds its ``detail``, the field and the
rule it broke in the plugin's words (never the value): local views, not receipts.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from hosts.setup import mcp_install
from hosts.setup._hook_line import handler_words, package_present
from sidecars import SidecarStore, goal_repository, read_bounded, serves_directory
from turn_hooks import InvalidInputError, SidecarError, loads_bounded

STATUS_SCHEMA = "turn_hooks_host_status_v0"
LOG_VIEW_SCHEMA = "turn_hooks_hook_log_view_v0"


def _read_json(path: Path, name: str) -> tuple[Any, str | None]:
    """A host's JSON file, or ``None`` with why not (absent, unreadable, not JSON)."""
    if not os.path.lexists(path):
        return None, f"{name}_absent"
    if path.is_symlink():  # install refuses a link (the Files rule): so does this view
        return None, f"{name}_symlink"
    try:
        raw = read_bounded(path, reason_prefix=name, name=name)
    except InvalidInputError as exc:
        return None, exc.reason_code
    try:
        return loads_bounded(raw), None
    except InvalidInputError:
        return None, f"{name}_not_json"


def _option(parts: list[str], flag: str) -> str | None:
    return parts[parts.index(flag) + 1] if flag in parts[:-1] else None


def _resolves(program: str) -> bool:
    """The hook's interpreter (or console script) still exists and is executable."""
    if os.path.isabs(program):
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program) is not None


def _channel(servers: object, *, disabled: bool = False) -> str:
    """``absent``, ``disabled``, ``unresolvable`` or ``runs``: whether a host's MCP
    servers hold ours, switched on, and whether its command still runs (the program
    exists and is executable, and the package its loader names is there, as for a hook
    command). Codex switches a server off with ``enabled = false`` in its table."""
    server = servers.get(mcp_install.SERVER) if isinstance(servers, dict) else None
    if not isinstance(server, dict):
        return "absent"
    if disabled or server.get("enabled") is False:
        return "disabled"
    program, args = server.get("command"), server.get("args", [])
    if not isinstance(program, str) or not isinstance(args, list):
        return "unresolvable"
    runs = _resolves(program) and package_present([program, *map(str, args)])
    return "runs" if runs else "unresolvable"


def tool_server(host: str, home: Path) -> str:
    """Our MCP server in the host home (``codex`` or ``claude-code``): :func:`_channel`."""
    if host == "codex":
        config = _codex_config(home / "config.toml")
        servers = config.get("mcp_servers") if config is not None else None
        return _channel(servers, disabled=_codex_project_disabled(Path.cwd()))
    document = _read_json(mcp_install.claude_json_path(home), "claude_json")[0]
    document = document if isinstance(document, dict) else {}
    found = _channel(document.get("mcpServers"), disabled=_claude_disabled(document))
    if found == "absent":  # not installed by us: the plugin's server, where it is on
        from hosts.setup import plugin_route

        if plugin_route.plugin_enabled(home, plugin_route.project_directory()):
            disabled = _claude_disabled(document, plugin_route.SERVER)
            return plugin_route.server_state(home, disabled)
    return found


def _codex_project_disabled(directory: Path) -> bool:
    """Whether a project's ``.codex/config.toml``, in ``directory`` or one above it up
    to the repository's top, switches our server off (``enabled = false``), as Codex
    lets a trusted project do. Only an off counts: see :func:`_claude_disabled`."""
    for place in (directory, *directory.parents):
        config = _codex_config(place / ".codex" / "config.toml")
        servers = config.get("mcp_servers") if config is not None else None
        server = servers.get(mcp_install.SERVER) if isinstance(servers, dict) else None
        if isinstance(server, dict) and server.get("enabled") is False:
            return True
        if os.path.lexists(place / ".git"):
            return False
    return False


def _claude_disabled(document: dict[str, Any], server: str = mcp_install.SERVER) -> bool:
    """Whether Claude Code's ``/mcp`` switched our server off for this project: its
    entry in ``.claude.json``'s ``projects``, keyed by the project directory Claude
    Code gives its hooks (``CLAUDE_PROJECT_DIR``), else the working directory. Some
    releases still start a server listed there; counting it off only moves the
    reflection into the answer's block, which settlement takes too, where counting
    it on would ask for a tool the model may not have."""
    projects = document.get("projects")
    project = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    entry = projects.get(project) if isinstance(projects, dict) else None
    disabled = entry.get("disabledMcpServers") if isinstance(entry, dict) else None
    return isinstance(disabled, list) and server in disabled


def our_handler(command: object) -> dict[str, Any] | None:
    """What one hook command of ours runs (adapter, event, binding); ``None`` if not ours."""
    words = handler_words(command)
    if words is None or len(words[0]) < words[1] + 3:
        return None
    parts, at = words
    program = parts[0]
    goal_id = _option(parts, "--goal-id")
    return {
        "adapter": parts[at + 1],
        "hook_event": parts[at + 2],
        "goal_id": goal_id,
        "agent_id": _option(parts, "--agent-id"),
        **served(_option(parts, "--registry"), goal_id),
        "validator_configured": "--validation-command-json" in parts,
        "validator_shell": _through_shell(_option(parts, "--validation-command-json")),
        "command_resolves": _resolves(program) and package_present(parts[:at]),
    }


def _through_shell(declared: str | None) -> bool:
    """Whether the declared validator runs a shell command line (``sh -c '...'``), as
    ``install --validate-with`` declares a line that needs a shell."""
    from hosts.setup.doctor import is_shell, project_command

    try:
        argv = loads_bounded(declared) if declared else None
    except InvalidInputError:
        return False
    if not isinstance(argv, list) or not all(isinstance(word, str) for word in argv):
        return False
    start = project_command(argv)
    return is_shell(argv[start:] if start is not None else argv)


def served(registry: str | None, goal_id: str | None) -> dict[str, Any]:
    """Where a hook acts: ``repository``, the name (never the path) of the directory its
    Goal registers, ``None`` when the registry names none (the hook then acts
    everywhere, as before ``repo`` was recorded); and ``serves_here``, whether a Turn
    in the current directory would be served (:func:`sidecars.serves_directory`)."""
    registry = registry or os.environ.get("TURN_HOOKS_REGISTRY")
    repo = goal_repository(registry, goal_id)
    return {
        "repository": repo.name if repo is not None else None,
        "serves_here": serves_directory(registry, goal_id, os.getcwd()),
    }


def _handlers(document: Any) -> list[dict[str, Any]]:
    """Our handlers in a ``{"hooks": {event: [{"hooks": [handler]}]}}`` document
    (Codex hooks.json, Claude Code and Gemini settings share the shape)."""
    hooks = document.get("hooks") if isinstance(document, dict) else None
    found = []
    for event, groups in (hooks if isinstance(hooks, dict) else {}).items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                command = handler.get("command") if isinstance(handler, dict) else None
                ours = our_handler(command)
                if ours is not None:
                    found.append({"event": str(event), **ours})
    return found


def _view(host: str, handlers: list[dict[str, Any]], reason: str | None) -> dict[str, Any]:
    return {
        "host": host,
        "installed": bool(handlers),
        "handler_count": len(handlers),
        # Nothing installed resolves nothing: no answer, rather than a vacuous true.
        "all_commands_resolve": all(h["command_resolves"] for h in handlers) if handlers else None,
        "reason_code": reason,
        # A validator declared as a shell command line (`sh -c '...'`), said so.
        "validator_through_shell": any(h.get("validator_shell") for h in handlers),
        "handlers": handlers,
    }


def codex_hooks(codex_home: Path) -> dict[str, Any]:
    """Codex: our handlers in ``hooks.json`` and the trust entries in ``config.toml``."""
    document, reason = _read_json(codex_home / "hooks.json", "hooks_json")
    view = _view("codex_cli", _handlers(document), reason)
    config = _codex_config(codex_home / "config.toml")
    view["trust_entry_count"] = _trust_entries(config)
    view["untrusted_count"] = _untrusted(codex_home) if view["installed"] else 0
    if view["untrusted_count"] and reason is None:
        view["reason_code"] = "hook_untrusted"
    view["tool_channel"] = tool_server("codex", codex_home) == "runs"
    return view


def _untrusted(codex_home: Path) -> int | None:
    """How many handlers of ours Codex does not trust (``None``: cannot tell).

    Codex keys trust by position and checks the hash: the codex on ``PATH`` says
    what it computes (app-server ``hooks/list``); without one, a handler with no
    entry at its position counts.
    """
    from hosts.setup import codex_install, codex_trust

    try:
        document = codex_install.read_hooks(codex_home / "hooks.json")
        keys = codex_trust.keys_of(codex_home, document, codex_install.our_handlers(document))
        statuses = codex_trust.trust_statuses(codex_home, shutil.which("codex"), Path.cwd())
    except (ValueError, RuntimeError, OSError):
        return None
    return sum(statuses.get(key) != "trusted" for key in keys)


def _codex_config(path: Path) -> dict[str, Any] | None:
    """Codex's config.toml, or ``None`` when there is no readable file."""
    import tomllib

    if not os.path.lexists(path):  # False for a name the system refuses, too
        return None
    try:
        return tomllib.loads(read_bounded(path, reason_prefix="config_toml").decode("utf-8"))
    except (InvalidInputError, OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _trust_entries(config: dict[str, Any] | None) -> int | None:
    """How many ``[hooks.state]`` trust entries Codex recorded (``None``: no readable file).

    Codex checks each entry's hash itself when it runs; here they are only counted.
    """
    if config is None:
        return None
    state = config.get("hooks", {}).get("state") if isinstance(config.get("hooks"), dict) else None
    return len(state) if isinstance(state, dict) else 0


def settings_hooks(host: str, settings: Path) -> dict[str, Any]:
    """Claude Code or Gemini: our handlers in the user's ``settings.json``."""
    document, reason = _read_json(settings, "settings_json")
    view = _view(host, _handlers(document), reason)
    if host == "claude_code":  # the result tools' MCP server, in its .claude.json
        view["tool_channel"] = tool_server("claude-code", settings.parent) == "runs"
        from hosts.setup import plugin_route

        # Which route serves Claude Code: the plugin, `install`, both (the installed
        # hooks serve their Goals, the plugin's stand aside) or none.
        view["route"] = plugin_route.route(settings.parent, plugin_route.project_directory(), None)
        # The plugin's hooks are installed too, by Claude Code's own plugin manager:
        # they bind from the repository, so no handler here names a Goal.
        view["installed"] = view["installed"] or view["route"] == "plugin"
    return view


def dsh_patch(patch_file: Path | None) -> dict[str, Any]:
    """DSH: the patch layer ``install dsh`` wrote, when its path is given."""
    if patch_file is None:
        return {**_view("dsh", [], "dsh_patch_file_not_given"), "handler_count": None}
    document, reason = _read_json(patch_file, "patch_file")
    handlers = []
    try:
        entry = document[0]["insert"][0]
        if entry["id"] == "turn-hooks":
            config = entry["config"]
            command = config["command"]
            handlers.append(
                {
                    "event": "agent/pre-step, session/event turn/end",
                    "adapter": "dsh",
                    "hook_event": "pre-turn, post-settlement",
                    "goal_id": config.get("goalId"),
                    "agent_id": config.get("agentId"),
                    **served(config.get("registry"), config.get("goalId")),
                    "validator_configured": bool(config.get("validationCommand")),
                    "command_resolves": bool(command)
                    and _resolves(str(command[0]))
                    and package_present([str(word) for word in command]),
                }
            )
    except (TypeError, LookupError):
        reason = reason or "patch_file_not_ours"
    return _view("dsh", handlers, reason)


def installed_hooks(
    *, home: Path, codex_home: Path | None = None, dsh_patch_file: Path | None = None
) -> list[dict[str, Any]]:
    """One view per host, from the files each host reads."""
    from hosts.setup.settings_install import HOSTS

    codex = codex_home or Path(os.environ.get("CODEX_HOME") or home / ".codex")

    def settings_home(name: str) -> Path:
        # Where the runtime itself looks: its own variable (CLAUDE_CONFIG_DIR), else
        # its directory under the home.
        spec = HOSTS[name]
        named = os.environ.get(spec.home_env) if spec.home_env else None
        return Path(named) if named else home / spec.home_dir

    return [
        codex_hooks(codex),
        settings_hooks("claude_code", settings_home("claude-code") / "settings.json"),
        settings_hooks("gemini", settings_home("gemini") / "settings.json"),
        dsh_patch(dsh_patch_file),
    ]


def hook_log(limit: int) -> dict[str, Any]:
    """The hook log, newest first: at most ``limit`` entries, and every reason counted."""
    from hosts.settlement.hook_log import LOG_FILE, SPILL_DIR, log_root, pages

    reason = None
    entries: list[Any] = []
    root = log_root()
    if root.is_dir():
        store = SidecarStore(root)
        try:
            for path in [*pages(store), store.path(LOG_FILE)]:  # oldest first
                entries += list((store.read(path) or {}).get("entries") or [])
            for path in store.iter_documents(SPILL_DIR):  # not folded in yet: still shown
                entries += list((store.read(path) or {}).get("entries") or [])
        except SidecarError as exc:
            reason = exc.reason_code
    # The log appends in order (pages, the current page, then the spilled entries, the
    # newest): newest first is reversed.
    fields = ("observed_at", "host", "event", "source", "reason_code")
    entries = [
        {k: e.get(k) for k in fields} | _detail(e) for e in reversed(entries) if isinstance(e, dict)
    ]
    counts = Counter(str(e.get("reason_code")) for e in entries)
    return {
        "ok": True,
        "schema_version": LOG_VIEW_SCHEMA,
        "entry_count": len(entries),
        "shown_count": min(limit, len(entries)),
        "reason_code": reason,
        "reason_counts": dict(counts.most_common()),
        "entries": entries[:limit],
    }


def _detail(entry: dict[str, Any]) -> dict[str, str]:
    """A refused result's field and rule (``hook_log.record_refusals``), when the entry has one."""
    detail = entry.get("detail")
    return {"detail": detail} if isinstance(detail, str) else {}


def settlements(
    registry: str | None, goal_id: str, agent_id: str, *, output: bool = False
) -> dict[str, Any]:
    """The host's side of one binding's settlements: how many wait in the queue (a
    killed Stop hook leaves one there), how many in the user's state directory
    (``parked_settlement_count``: Turns settled while the Goal's sidecar root could
    not be written, carried on by the next PreTurn that can), how many in stdin
    spills of Stop hooks that died before their marker (``spilled_settlement_count``,
    queued by the next PreTurn: :mod:`hosts.settlement.spill`), and how the newest
    spooled Turn ended,
    whatever its outcome: the validator's verdict and each plugin's status.

    Why the validator did not pass is public (its reason code, its exit status and
    the project command's, when it ended, how long it ran); what it printed is not.
    ``last_validation`` is the newest Turn whose validator ran (a Turn with nothing to
    attest runs none), so a failure stays in view after a Turn that only answered a
    question. ``output`` adds the tail the spool keeps of what it printed
    (``validator_output_tail``), for a person who asked for it (``turn-hooks status
    --validation-output``).
    """
    from hosts.settlement import spill
    from hosts.settlement.settlement import (
        SPOOL_DIR,
        VALIDATION_RUN_KEY,
        binding_store,
        parked,
        queued,
        validator_running_for,
    )
    from sidecars import goal_agent_parts

    view: dict[str, Any] = {"queued_settlement_count": 0, "last_turn_settlement": None}
    # Turns a read-only sidecar root made wait in the user's state directory.
    view["parked_settlement_count"] = parked(goal_id, agent_id)
    # Turns of Stop hooks killed before their marker, kept in their stdin spills.
    view["spilled_settlement_count"] = spill.waiting(goal_id, agent_id)
    store = binding_store(registry, goal_id)
    if store is None:
        return view
    try:
        markers = queued(store, goal_id, agent_id)
        view["queued_settlement_count"] = len(markers)
        # A queued Turn usually waits for a test suite: say that one runs, and since when.
        running = validator_running_for(store, goal_id)
        view["validator_running_seconds"] = None if running is None else round(running, 1)
        spooled = list(store.iter_documents(*goal_agent_parts(SPOOL_DIR, goal_id, agent_id)))
        # The newest by its last write: only that one is read, however long the spool.
        newest = max(spooled, key=_written_at, default=None)
        entry = store.read(newest) if newest is not None else None
    except SidecarError as exc:
        return view | {"reason_code": exc.reason_code}
    if not entry:
        return view
    validation = entry.get("task_validation")
    validation = validation if isinstance(validation, dict) else {}
    run = entry.get(VALIDATION_RUN_KEY)
    run = run if isinstance(run, dict) else {}
    receipt = entry.get("post_settlement")
    results = receipt.get("results") if isinstance(receipt, dict) else None
    view["last_turn_settlement"] = {
        "observed_at": entry.get("observed_at"),
        "host": entry.get("host"),
        "turn_key": entry.get("turn_key"),
        "validator_status": validation.get("status") or run.get("status"),
        "validator_reason_code": validation.get("reason_code") or run.get("reason_code"),
        **_validator_run(run),
        # Why the model's result was refused, field and rule (private: a local view).
        "result_refusals": [
            {"reason_code": note.get("reason_code"), "detail": note.get("detail")}
            for note in entry.get("result_refusals") or []
            if isinstance(note, dict)
        ],
        "results": {
            str(name): result.get("status")
            for name, result in (results or {}).items()
            if isinstance(result, dict)
        },
        # queued: still to be carried on (by `settle --pending` or the next PreTurn);
        # terminal: given up; settled: nothing more to do.
        "settlement_state": entry.get("settlement_state")
        or (
            "queued"
            if newest is not None and newest.name in {m.name for m in markers}
            else "settled"
        ),
    }
    ran = entry if run else _last_validated(store, spooled, newest)
    view["last_validation"] = _last_validation(ran, VALIDATION_RUN_KEY, output=output)
    return view


VALIDATION_LOOKBACK = 32
"""Spool entries, newest first, searched for the last Turn whose validator ran."""


def _last_validated(store: Any, spooled: list[Path], newest: Path | None) -> dict[str, Any] | None:
    """The newest spool entry but ``newest`` whose validator ran (a Turn with nothing to
    attest runs none), within :data:`VALIDATION_LOOKBACK` entries; ``None`` if none.

    So a failure stays visible after a later Turn that only answered a question."""
    from hosts.settlement.settlement import VALIDATION_RUN_KEY

    older = sorted((p for p in spooled if p != newest), key=_written_at, reverse=True)
    for path in older[:VALIDATION_LOOKBACK]:
        try:
            entry = store.read(path)
        except SidecarError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get(VALIDATION_RUN_KEY), dict):
            return entry
    return None


def _last_validation(
    entry: dict[str, Any] | None, key: str, *, output: bool
) -> dict[str, Any] | None:
    """The public facts of the last validator run (and, with ``output``, its private
    tail), or ``None`` when no spooled Turn ran one."""
    if entry is None:
        return None
    run = entry[key]
    view = {
        "turn_key": entry.get("turn_key"),
        "host": entry.get("host"),
        "validator_status": run.get("status"),
        "validator_reason_code": run.get("reason_code"),
        **_validator_run(run),
    }
    if output:
        tail = run.get("output_tail")
        view["validator_output_tail"] = tail if isinstance(tail, str) else None
    return view


def _validator_run(run: dict[str, Any]) -> dict[str, Any]:
    """The public facts of the validator's last run: when, how long, exit statuses."""

    def number(key: str) -> int | None:
        value = run.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    observed = run.get("observed_at")
    return {
        "validated_at": observed if isinstance(observed, str) else None,
        "validator_duration_ms": number("duration_ms"),
        "validator_exit_code": number("exit_code"),
        # The project's own command inside the built-in validator (`make test`'s).
        "check_exit_status": number("exit_status"),
    }


def _written_at(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # gone since it was listed: never the newest
        return -1
