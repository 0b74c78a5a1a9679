"""``turn-hooks install HOST`` and ``turn-hooks doctor``: one flow for every host.

``install`` names the binding by the common rule (``sidecars.name_binding``), runs
the doctor's checks (:mod:`hosts.setup.doctor`) and writes nothing if one fails, then hands
over to the host's installer: ``codex_install`` (hooks.json, trusted through the
app-server), ``settings_install`` (Claude Code's and Gemini's settings.json) or
``dsh_install`` (a patch layer). ``--uninstall`` needs only the host's home and
removes the hooks of the Goal named (``--all``: every Goal's).
``doctor`` checks the hooks installed in the hosts' homes by the commands written
there.

Before it writes anything, ``install`` runs the declared validator once, in the Goal's
repository and within its deadline (``doctor --run-validator`` does the same): a
validator that fails or cannot run here is refused with what to do, where it would
otherwise fail every Turn in silence. ``--skip-validator-run`` opts out, for a suite
too slow to wait for.

``--validate-with`` takes a command as shell words. One that needs a shell (``&&``,
a pipe, a redirection, ``$VAR``, a glob) runs through ``sh -c`` with the whole line,
knowingly: the declared argv says ``sh -c '...'``, and so do doctor and the install
receipt, rather than handing ``&&`` to the first program as an argument.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any


def validation_argv(args: argparse.Namespace) -> list[str] | None:
    """The declared validator argv, or ``None``; ``validation_declaration_invalid``.

    ``--validate-with "make test"`` is the built-in validator (``turn-hooks validate
    command``) around the project's own check, in shell words: no JSON to write.
    """
    from sidecars import command_words
    from turn_hooks import argv_from_json
    from turn_hooks.errors import InvalidInputError

    check = getattr(args, "validate_with", None)
    deadline = getattr(args, "validator_deadline", None)
    if deadline is not None and check is None:
        raise InvalidInputError(
            "--validation-timeout-seconds goes with --validate-with (the built-in "
            "validator); a validator of your own gets the hook's deadline",
            reason_code="usage_invalid",
            field="validation_timeout_seconds",
        )
    if check is not None:
        if args.validation_command_json:
            raise InvalidInputError(
                "give --validate-with or --validation-command-json, not both",
                reason_code="validation_declaration_invalid",
                field="validate_with",
            )
        words = command_words(check)
        if shell_syntax(check) is not None:
            # What the person typed is a shell command line: run it as one, in the
            # open, rather than pass `&&` to the first program as an argument.
            words = ["sh", "-c", check]
        # The same stable interpreter the hooks call, so the validator resolves
        # wherever the host runs it; the project's program is resolved with it
        # (``doctor.resolve_validator``), as hooks run with the host's PATH.
        own = [] if deadline is None else ["--timeout-seconds", str(deadline)]
        return [sys.executable, "-m", "hosts._entry", "validate", "command", *own, "--", *words]
    if not args.validation_command_json:
        return None
    return argv_from_json(
        args.validation_command_json,
        reason_code="validation_declaration_invalid",
        field="validation_command_json",
    )


_OPERATORS = frozenset("|&;<>()`")
_EXPANDED = frozenset("*?[")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def shell_syntax(line: str) -> str | None:
    """The first shell construct in ``line`` outside quotes (``&&``, ``|``, ``;``,
    ``>``, ``$(``, a backtick, ``$VAR``, a glob, ``~``, ``#``, ``VAR=value cmd``), or
    ``None`` when its words mean the same to a shell and to an argv."""
    quote = ""
    escaped = False
    at_word = True
    for index, char in enumerate(line):
        if escaped:
            escaped, at_word = False, False
            continue
        if quote == "'":
            quote = "" if char == "'" else quote
            continue
        if char == "\\":
            escaped = True
            continue
        if quote == '"':
            if char in "$`":
                return _operator(line, index)
            quote = "" if char == '"' else quote
            continue
        if char in "'\"":
            quote, at_word = char, False
            continue
        if char in _OPERATORS or char == "$" or char in _EXPANDED:
            return _operator(line, index)
        if at_word and char in "~#":
            return char
        if index == 0 and _ASSIGNMENT.match(line):  # `VAR=value cmd`: the environment
            return line.split("=", 1)[0] + "="
        at_word = char.isspace()
    return None


def _operator(line: str, index: int) -> str:
    pair = line[index : index + 2]
    return pair if pair in ("&&", "||", ">>", "<<", "$(", "${", "<(", ">(") else line[index]


INSTALL_HOSTS = ("codex", "claude-code", "gemini", "dsh")
TITLES = {"codex": "Codex hooks", "claude-code": "Claude Code hooks", "gemini": "Gemini hooks"}


def host_home(host: str, args: argparse.Namespace) -> Path:
    from hosts.setup import settings_install

    if args.home:
        return Path(args.home).absolute()
    if host == "codex":
        named = args.codex_home or os.environ.get("CODEX_HOME")
        return Path(named).absolute() if named else Path.home() / ".codex"
    return settings_install.default_home(host)


def codex_binary(args: argparse.Namespace) -> str:
    import shutil

    from turn_hooks.errors import InvalidInputError

    # Checked before anything is written: a binary that is missing or not executable
    # would leave our hooks installed by a command that exits 2.
    codex = shutil.which(args.codex_bin or "codex")
    if not codex:
        raise InvalidInputError(
            "no executable codex binary; pass --codex-bin", reason_code="codex_not_found"
        )
    return codex


def claude_version() -> dict[str, Any] | None:
    """The ``claude_code_version`` section for the ``claude`` on PATH, the one a user's
    Turns run; ``None`` when there is none (settings can be written before Claude
    Code is installed).

    :raises InvalidInputError: ``claude_code_version_unsupported`` below the range.
    """
    import shutil

    from hosts.facts import codex_versions

    claude = shutil.which("claude")
    return None if claude is None else codex_versions.check(claude, codex_versions.CLAUDE_CODE)


def adopt_recorded_validator(args: argparse.Namespace, named: Any) -> bool:
    """No validator option given: take the one the repository records (``init
    --validate-with``), as the plugin's hooks do, so ``install`` after ``init`` needs
    no second ``--validate-with``. ``False`` when an option was given or none is
    recorded; a record that cannot be read is left for the checks to report."""
    import json

    from sidecars import goal_repository, read_validator
    from turn_hooks.errors import TurnHooksError

    given = getattr(args, "validate_with", None) is not None or args.validation_command_json
    if given or args.recall_only:
        return False
    repo = goal_repository(named.registry, named.goal_id)
    try:
        declared = read_validator(repo) if repo is not None else None
    except TurnHooksError:
        return False
    if not declared:
        return False
    if declared.get("recall_only"):
        args.recall_only = True
    elif declared.get("validate_with") is not None:
        args.validate_with = declared["validate_with"]
        args.validator_deadline = declared.get("validation_timeout_seconds")
    elif declared.get("validation_command"):
        args.validation_command_json = json.dumps(declared["validation_command"])
    else:
        return False
    return True


def install_checks(
    host: str, args: argparse.Namespace, named: Any = None
) -> tuple[list[Any], dict[str, Any]]:
    """What ``install`` checks first (``hosts.setup.doctor``), and the binding it installs."""
    from hosts.setup import doctor
    from sidecars import name_binding

    named = named or name_binding(args.registry, args.goal_id, args.agent_id)
    argv = validation_argv(args)
    argv = doctor.resolve_validator(argv) if argv else None
    registry = str(Path(named.registry).absolute())
    checks = [
        doctor.binding_check(host, registry, named.goal_id, named.agent_id),
        doctor.validator_check(host, argv, recall_only=args.recall_only),
        *doctor.hook_checks(host, sys.executable),
    ]
    binding = {
        "registry": registry,
        "goal_id": named.goal_id,
        "agent_id": named.agent_id,
        "validation_argv": argv,
        "prompt_in_recall": not args.no_prompt_in_recall,
    }
    return checks, binding


def validator_deadline(declared: object) -> float:
    """The deadline a hook gives the validator: the one declared (the command line's
    or the installed hook's ``--validation-timeout-seconds``, where there is one),
    else the hook's default. The run before install uses it, so a check that passes
    there fits a Turn, whatever that deadline is."""
    from hosts.settlement.settlement import VALIDATION_TIMEOUT

    if isinstance(declared, str) and declared.isdigit():
        declared = int(declared)
    if isinstance(declared, int | float) and not isinstance(declared, bool) and declared > 0:
        return float(declared)
    return float(VALIDATION_TIMEOUT)


def run_validator_once(
    host: str, args: argparse.Namespace, binding: dict[str, Any], deadline: object = None
) -> list[dict[str, Any]]:
    """The ``validator_run`` row of one run of the binding's validator in its Goal's
    repository; none when there is nothing to run (recall only) or no repository to
    run in (the binding check says why). The tail of its output goes to ``args`` for
    the person's Markdown, never into the row: rows are public."""
    from hosts.setup import doctor
    from sidecars import goal_repository

    argv = binding["validation_argv"]
    repo = goal_repository(binding["registry"], binding["goal_id"])
    if not argv or repo is None or not repo.is_dir():
        return []
    if deadline is None:
        # install's --validation-timeout-seconds (dest ``validator_deadline``): the
        # built-in validator's own deadline, the one that ends this run too.
        deadline = getattr(args, "validator_deadline", None)
    if deadline is None:
        deadline = getattr(args, "validation_timeout_seconds", None)
    checked, tail = doctor.validator_run_check(
        host,
        argv,
        cwd=repo,
        deadline=validator_deadline(deadline),
        host=host,
        # doctor --run-validator runs it too, where install's flags mean nothing.
        during_install=not getattr(args, "run_validator", False),
    )
    if tail:
        _, earlier = getattr(args, "markdown_tail", None) or ("", "")
        args.markdown_tail = ("Validator output (its last lines)", earlier + tail)
    return [checked]


def cmd_install(args: argparse.Namespace) -> tuple[Any, str]:
    from hosts.setup import doctor, dsh_install, settings_install
    from sidecars import name_binding
    from turn_hooks.errors import InvalidInputError

    host = args.host
    if host == "dsh" and not args.patch_file:
        raise InvalidInputError(
            "install dsh needs --patch-file", reason_code="dsh_patch_file_missing"
        )
    validation_argv(args)  # a malformed declaration is refused first, as it always was
    if args.all and not args.uninstall:
        raise InvalidInputError("--all goes with --uninstall", reason_code="usage_invalid")
    # The binding first, as doctor checks it: outside a bound repository that is
    # what is wrong, whatever else is missing.
    named = None if args.uninstall else name_binding(args.registry, args.goal_id, args.agent_id)
    home = None if host == "dsh" else host_home(host, args)
    try:
        # The host's own file first: a FIFO, a device or a foreign file is refused
        # with its own reason before the checks start any process.
        installed_commands(host, args)
    except InvalidInputError:
        raise
    except ValueError as exc:
        raise InvalidInputError(str(exc), reason_code=f"{host}_install_failed") from exc
    if args.uninstall:
        return _uninstall(host, args, home), TITLES.get(host, "DSH plugin")
    adopted = adopt_recorded_validator(args, named)
    checks, binding = install_checks(host, args, named)
    if all(check["ok"] for check in checks) and not args.skip_validator_run:
        # Last of the checks (it may take minutes) and before anything is written.
        checks += run_validator_once(host, args, binding)
    if not all(check["ok"] for check in checks):
        refused = doctor.report(checks, host=host, action="install", changed=False)
        return refused, "Install refused"
    claude = claude_version() if host == "claude-code" else None  # older: refused here
    codex = codex_binary(args) if host == "codex" else None
    version = None
    if codex is not None:
        from hosts.facts import codex_versions

        version = codex_versions.check(codex)  # an older Codex: refused, nothing written
    if host in ("claude-code", "codex"):
        routed = plugin_route_install(args, binding, checks, codex)
        if routed is not None:
            for key, section in (("claude_code_version", claude), ("codex_version", version)):
                if section is not None:
                    routed[key] = section
            if adopted:
                routed["validator_source"] = "repository"
            return routed, "Install refused" if not routed["ok"] else TITLES[host]
    try:
        if host == "dsh":
            patch = Path(args.patch_file).absolute()
            report = dsh_install.install(patch_file=patch, **binding)
        elif host == "codex":
            from hosts.setup.codex_install import install

            assert codex is not None and home is not None
            report = install(codex=codex, codex_home=home, **binding)
        else:
            assert home is not None
            report = settings_install.install(host, home=home, **binding)
    except InvalidInputError:
        raise  # already typed: a hooks.json or patch file that is no regular file, say
    except (ValueError, RuntimeError, OSError) as exc:
        raise InvalidInputError(str(exc), reason_code=f"{host}_install_failed") from exc
    if version is not None:
        report["codex_version"] = version
    if claude is not None:
        report["claude_code_version"] = claude
    if adopted:
        report["validator_source"] = "repository"  # init --validate-with recorded it
    if checks:
        report["checks"] = checks
    return report, TITLES.get(host, "DSH plugin")


def repository_declaration(args: argparse.Namespace) -> dict[str, Any] | None:
    """What the validator options declare, as the repository records it
    (:mod:`sidecars.validator`): what the person typed, not the resolved argv."""
    from sidecars import validator_document
    from turn_hooks import argv_from_json

    if getattr(args, "validate_with", None) is not None:
        return validator_document(
            validate_with=args.validate_with, timeout_seconds=args.validator_deadline
        )
    if args.validation_command_json:
        command = argv_from_json(
            args.validation_command_json,
            reason_code="validation_declaration_invalid",
            field="validation_command_json",
        )
        return validator_document(validation_command=command)
    return validator_document(recall_only=True) if args.recall_only else None


def plugin_route_install(
    args: argparse.Namespace,
    binding: dict[str, Any],
    checks: list[Any],
    codex: str | None = None,
) -> dict[str, Any] | None:
    """``install claude-code`` (``install codex`` with its binary), checks passed: the
    validator recorded in the Goal's repository, where the plugin's hooks read it;
    and where the turn-hooks plugin is enabled, nothing else (its hooks serve the
    Turn, so installing ours would run each hook twice): the receipt says so.
    ``None``: go on and install."""
    from hosts.setup import doctor, plugin_route
    from sidecars import goal_repository, record_validator

    host = "codex" if codex else "claude-code"
    home = host_home(host, args)
    repo = goal_repository(binding["registry"], binding["goal_id"])
    if codex:
        enabled = plugin_route.codex_plugin_enabled(home)
    else:
        enabled = plugin_route.plugin_enabled(home, repo)
    command = plugin_route.command_check(host)
    if enabled and not command["ok"]:
        refused = doctor.report([*checks, command], host=host, action="install")
        return {**refused, "changed": False, "route": "plugin"}
    declared = repository_declaration(args)
    # changed: written now; the receipt says recorded whenever one is declared there.
    recorded = bool(repo and declared and record_validator(repo, declared))
    if not enabled:
        return None
    report = {
        "ok": True,
        "schema_version": "turn_hooks_install_v0",
        "host": "codex_cli" if codex else "claude_code",
        "action": "install",
        "route": "plugin",
        "changed": recorded,
        "events": [],
        "validator_recorded": bool(repo and declared),
        "validator_changed": recorded,
        "checks": [*checks, command],
    }
    if codex:
        trusted = codex_plugin_trust(codex, home, repo, binding)
        return {**report, **trusted, "changed": recorded or trusted["changed"]}
    from hosts.setup.settings_install import allow_rule

    allowed = allow_rule(home, plugin_route.RULE)
    return {
        **report,
        "changed": recorded or allowed,
        "permission_rule": plugin_route.RULE,
        "message": "the turn-hooks plugin is enabled in Claude Code: its hooks and server "
        "serve this repository, with the validator recorded in .local/turn-hooks; "
        "settings.json got only the rule that lets it call the plugin's tool",
    }


def codex_plugin_trust(
    codex: str, home: Path, repo: Path | None, binding: dict[str, Any]
) -> dict[str, Any]:
    """Where Codex has the plugin enabled: its hooks trusted as a person's ``/hooks``
    approval would (Codex runs no untrusted hook), and none of ours written."""
    from hosts.setup import plugin_route
    from hosts.setup.codex_install import trust_our_hooks
    from hosts.setup.codex_trust import read_state

    before, _ = read_state(home)
    statuses = trust_our_hooks(
        codex,
        home,
        repo or Path.cwd(),
        binding["goal_id"],
        binding["agent_id"],
        select=plugin_route.is_plugin_hook,
    )
    ok = bool(statuses) and all(status == "trusted" for status in statuses)
    said = (
        "the turn-hooks plugin is enabled in Codex: its hooks serve this repository, "
        "with the validator recorded in .local/turn-hooks; hooks.json got none of ours, "
        "config.toml the plugin's hooks' trust"
    )
    if not ok:
        said = (
            "the turn-hooks plugin is enabled in Codex but its hooks could not all be "
            "trusted: approve them in Codex's `/hooks`, or remove the plugin "
            "(`codex plugin remove turn-hooks@turn-hooks`) and run `install codex` again"
        )
    return {
        "ok": ok,
        "changed": read_state(home)[0] != before,
        "trust_statuses": statuses,
        "message": said,
    }


def uninstall_goal(args: argparse.Namespace) -> str | None:
    """The Goal whose hooks ``--uninstall`` removes; ``None`` (every Goal's) with ``--all``.

    Named by the common rule, as every command names its binding; nothing named is
    a typed refusal, never every Goal's hooks by default.
    """
    from sidecars import GOAL_ENV, name_binding
    from turn_hooks.errors import InvalidInputError

    if args.all:
        if args.goal_id:
            raise InvalidInputError(
                "give --goal-id or --all, not both", reason_code="usage_invalid", field="all"
            )
        return None
    if args.goal_id or os.environ.get(GOAL_ENV):
        return str(args.goal_id or os.environ[GOAL_ENV])
    try:
        # Only the Goal is needed: an Agent given stops name_binding discovering one.
        return name_binding(args.registry, None, args.agent_id or "-").goal_id
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"{exc.message}; to uninstall, pass --goal-id G (that Goal's hooks) "
            "or --all (every Goal's)",
            reason_code=exc.reason_code,
            field="goal_id",
        ) from exc


def _uninstall(host: str, args: argparse.Namespace, home: Path | None) -> dict[str, Any]:
    """Remove our hooks of the Goal named (every Goal's with ``--all``): nothing but
    the host's home (or the patch file) is needed, no binary and no registry."""
    from hosts.setup import codex_install, dsh_install, settings_install
    from turn_hooks.errors import InvalidInputError

    goal = uninstall_goal(args)
    try:
        if host == "dsh":
            patch = Path(args.patch_file).absolute()
            return dsh_install.install(patch_file=patch, uninstall=True, goal_id=goal)
        assert home is not None
        if host == "codex":
            return codex_install.uninstall(codex_home=home, goal_id=goal)
        report = settings_install.uninstall(host, home=home, goal_id=goal)
        if host == "claude-code":
            # The plugin's tool rule goes too: install added it (plugin_route_install).
            from hosts.setup.plugin_route import RULE

            dropped = settings_install.allow_rule(home, RULE, installing=False)
            report["mcp_removed"]["plugin_permission_rule"] = dropped
            report["changed"] = report["changed"] or dropped
        return report
    except InvalidInputError:
        raise
    except (ValueError, OSError) as exc:
        raise InvalidInputError(str(exc), reason_code=f"{host}_install_failed") from exc


def installed_commands(host: str, args: argparse.Namespace) -> list[str]:
    """The commands of our hooks installed in one host (none when its file is absent)."""
    import shlex

    from hosts.setup import codex_install, dsh_install, settings_install

    if host == "dsh":
        config = dsh_install.installed_config(Path(args.patch_file))
        if config is None:
            return []
        parts = [*config["command"], "host", "dsh", "post-settlement"]
        parts += ["--goal-id", config.get("goalId", ""), "--agent-id", config.get("agentId", "")]
        parts += ["--registry", config.get("registry", "")]
        if config.get("validationCommand"):
            parts += ["--validation-command-json", json.dumps(config["validationCommand"])]
        return [shlex.join(parts)]
    home = host_home(host, args)
    if host == "codex":
        return codex_install.our_commands(codex_install.read_hooks(home / "hooks.json"))
    spec = settings_install.HOSTS[host]
    return settings_install.our_commands(
        spec, settings_install.read_settings(home / "settings.json")
    )


def codex_trust_check(args: argparse.Namespace) -> dict[str, Any]:
    """Whether Codex trusts every handler of ours, as Codex computes it (app-server
    ``hooks/list``) when a codex binary is found; else whether each has its entry."""
    import shutil

    from hosts.setup import codex_install, codex_trust, doctor

    home = host_home("codex", args)
    codex = shutil.which(args.codex_bin or "codex")
    try:
        document = codex_install.read_hooks(home / "hooks.json")
        keys = codex_trust.keys_of(home, document, codex_install.our_handlers(document))
        statuses = codex_trust.trust_statuses(home, codex, Path.cwd())
    except (ValueError, RuntimeError, OSError) as exc:
        reason = getattr(exc, "reason_code", None) or "codex_trust_unreadable"
        return doctor.row("trust", "codex", reason, "Codex's trust entries cannot be read")
    bad = sorted({statuses.get(key, "untrusted") for key in keys} - {"trusted"})
    if bad:
        return doctor.row(
            "trust",
            "codex",
            "hook_untrusted",
            f"Codex does not trust every handler of ours ({', '.join(bad)}): run "
            "`turn-hooks install codex` again in each Goal's repository",
        )
    how = "" if codex else " (an entry each; no codex binary to check their hashes)"
    return doctor.row("trust", "codex", None, f"Codex trusts our {len(keys)} handlers{how}")


def tool_channel_check(host: str, args: argparse.Namespace) -> dict[str, Any]:
    """Whether the host runs our MCP server (the ``record_reflection`` tool) with a
    command that still runs. Without one the model hands its reflection over in the
    answer's block, where the user sees it: a warning, not a failure."""
    from hosts.setup import doctor, status

    state = status.tool_server(host, host_home(host, args))
    if state == "runs":
        return doctor.row("tool_channel", host, None, "the record_reflection tool server runs")
    if state == "absent":
        return doctor.row(
            "tool_channel",
            host,
            "tool_channel_absent",
            "no record_reflection tool server: reflections come in the answer; run "
            f"`turn-hooks install {host}` again",
            warning=True,
        )
    if state == "unallowed":
        from hosts.setup.plugin_route import RULE

        return doctor.row(
            "tool_channel",
            host,
            "tool_channel_unallowed",
            "the plugin's record_reflection tool is not allowed, and `claude -p` refuses "
            "it: reflections come in the answer; run `turn-hooks install claude-code` "
            f"(with the plugin enabled it adds only the rule {RULE}) or allow it in "
            "/permissions",
            warning=True,
        )
    if state == "disabled":
        return doctor.row(
            "tool_channel",
            host,
            "tool_channel_disabled",
            "the record_reflection tool server is switched off for this project: "
            "reflections come in the answer; switch it on in the host (`/mcp`, or "
            "remove `enabled = false` from Codex's [mcp_servers.turn_hooks])",
            warning=True,
        )
    return doctor.row(
        "tool_channel",
        host,
        "tool_channel_unresolvable",
        f"the tool server's interpreter or package is gone: run `turn-hooks install {host}` again",
    )


def cmd_doctor(args: argparse.Namespace) -> tuple[Any, str]:
    from hosts.setup import doctor
    from turn_hooks.errors import InvalidInputError

    if args.host == "dsh" and not args.patch_file:
        # DSH keeps our hooks in the patch layer it was started with, not in a home.
        raise InvalidInputError(
            "doctor dsh needs --patch-file (the layer `install dsh` wrote)",
            reason_code="dsh_patch_file_missing",
        )
    hosts = [args.host] if args.host else ["codex", "claude-code", "gemini"]
    if args.patch_file and "dsh" not in hosts:
        hosts.append("dsh")
    installed: dict[str, int] = {}
    checks: list[Any] = []
    for host in hosts:
        try:
            commands = installed_commands(host, args)
        except ValueError as exc:
            # A host file doctor cannot read (not JSON, a FIFO, a link) hides what
            # is installed: that is a failed check, not "nothing installed".
            reason = getattr(exc, "reason_code", None) or f"{host}_hooks_unreadable"
            checks.append(doctor.row("hooks", host, reason, str(exc)))
            continue
        if commands:
            installed[host] = len(commands)
            checks += doctor.installed_checks(host, commands)
            if args.run_validator:
                checks += installed_validator_runs(host, args, commands)
            if host == "codex":
                checks.append(codex_trust_check(args))
            if host in ("codex", "claude-code"):
                checks.append(tool_channel_check(host, args))
    if "claude-code" in hosts:
        plugin = plugin_checks(args)
        if plugin:
            installed["claude-code-plugin"] = 1
            checks += plugin
    if not installed:  # nothing installed (yet, or any more): what install would check
        from sidecars import name_binding

        subject = args.host or "turn-hooks"
        named = name_binding(args.registry, args.goal_id, args.agent_id)
        # The check `init --validate-with` recorded is what install would take, and
        # what a generic host's hooks run: doctor checks it as they would run it.
        unreadable = _unreadable_record(subject, named)
        adopt_recorded_validator(args, named)
        planned, binding = install_checks(subject, args, named)
        rows = [check for check in planned if check["reason_code"] != "validator_missing"]
        checks += [*rows, *unreadable, _nothing_installed(subject)]
        if args.run_validator and all(check["ok"] for check in planned):
            checks += run_validator_once(subject, args, binding)
    elif args.registry or args.goal_id or args.agent_id:
        # A binding named on the command line is checked as named: an unusable
        # --registry is its typed error (exit 2), never silently passed over.
        checks.insert(0, install_checks(args.host or "turn-hooks", args)[0][0])
    extra = {} if installed else {"status": "nothing_installed"}
    return doctor.report(checks, installed=installed, **extra), "turn-hooks doctor"


def plugin_checks(args: argparse.Namespace) -> list[dict[str, Any]]:
    """What ``doctor`` checks where the turn-hooks plugin is enabled in Claude Code
    (none where it is not): the route in force, ``turn-hooks`` on PATH, the binding
    the repository names, the validator it declares, and the tool channel."""
    from hosts.setup import doctor, plugin_route
    from sidecars import goal_repository, name_binding, read_validator
    from turn_hooks.errors import InvalidInputError, TurnHooksError

    home = host_home("claude-code", args)
    project = plugin_route.project_directory()
    if not plugin_route.plugin_enabled(home, project):
        return []
    subject = "claude-code-plugin"
    try:
        named = name_binding(args.registry, args.goal_id, args.agent_id, cwd=project)
    except InvalidInputError as exc:
        return [
            plugin_route.route_check(home, project, None),
            plugin_route.command_check(subject),
            doctor.row(
                "binding",
                subject,
                exc.reason_code,
                f"{exc.message}: the plugin's hooks act only in a repository "
                "`turn-hooks init` bound",
            ),
        ]
    rows = [
        plugin_route.route_check(home, project, named.goal_id),
        plugin_route.command_check(subject),
        doctor.binding_check(subject, named.registry, named.goal_id, named.agent_id),
    ]
    repo = goal_repository(named.registry, named.goal_id)
    try:
        declared = read_validator(repo) if repo is not None else None
        argv = plugin_route.repository_validation(named.registry, named.goal_id)
    except TurnHooksError as exc:
        rows.append(doctor.row("validator", subject, exc.reason_code, str(exc)))
        declared, argv = None, None
    else:
        if declared is None:
            rows.append(
                doctor.row(
                    "validator",
                    subject,
                    "validator_not_declared",
                    "the repository declares no validator: recall only, nothing is "
                    "learned; run `turn-hooks init --validate-with 'make test'`",
                    warning=True,
                )
            )
        else:
            resolved = doctor.resolve_validator(argv) if argv else None
            rows.append(doctor.validator_check(subject, resolved, recall_only=True))
            if args.run_validator and argv:
                binding = {**named.__dict__, "validation_argv": resolved}
                rows += run_validator_once(subject, args, binding)
    rows.append(tool_channel_check("claude-code", args))
    return rows


def _unreadable_record(subject: str, named: Any) -> list[dict[str, Any]]:
    """A failed ``validator`` row when the repository's recorded check cannot be read
    (a FIFO, a link or a damaged file where ``init`` keeps it), or none: a hook that
    takes it would learn nothing, and only its code would reach the hook log."""
    from hosts.setup import doctor
    from sidecars import VALIDATOR_FILE, goal_repository, read_validator
    from turn_hooks.errors import TurnHooksError

    repo = goal_repository(named.registry, named.goal_id)
    try:
        if repo is not None:
            read_validator(repo)
    except TurnHooksError as exc:
        return [
            doctor.row(
                "validator",
                subject,
                exc.reason_code,
                f"the check `init` recorded (.local/turn-hooks/{VALIDATOR_FILE}) cannot be "
                "read: remove that file, then run `turn-hooks init --validate-with 'CHECK'`",
            )
        ]
    return []


def _nothing_installed(subject: str) -> dict[str, Any]:
    """The validator row when no hook is installed and none was named: no hook can
    fail to learn, so a missing validator is install's refusal, not doctor's failure
    (after ``install --uninstall``, doctor says so and exits 0)."""
    from hosts.setup import doctor

    host = subject if subject in INSTALL_HOSTS else "HOST"
    return doctor.row(
        "installed",
        subject,
        None,
        f"nothing installed; `turn-hooks install {host} --validate-with 'make test'` "
        "installs the hooks (`doctor --validate-with ...` checks that validator first); "
        "a generic host needs none: it runs `turn-hooks host generic ...` itself",
    )


def installed_validator_runs(
    host: str, args: argparse.Namespace, commands: list[str]
) -> list[dict[str, Any]]:
    """``doctor --run-validator``: each validator the installed hooks declare, run once
    in its Goal's repository (one run per validator and repository)."""
    import shlex

    from hosts.setup import doctor

    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for command in commands:
        try:
            hook = doctor.hook_binding(shlex.split(command))
        except (ValueError, IndexError):
            continue  # installed_checks already says it is unparsable
        key = json.dumps([hook["validation_argv"], hook["registry"], hook["goal_id"]])
        if hook["event"] != "post-settlement" or key in seen:
            continue
        seen.add(key)
        rows += run_validator_once(host, args, hook, hook["validation_timeout"])
    return rows
