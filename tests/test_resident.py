"""The resident hook server: a warm call is the cold call, and every fault falls back.

Real processes throughout: the installed ``turn-hooks`` console script run as a host
runs it, the detached server it starts, a real validator, SIGKILL, a stale socket, a
changed install. Waits are bounded polls, never timing assertions.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import resident_support
from fixtures import f1
from resident_support import alive, children_of, servers, stop, wait_for
from turn_support import RAW, bound_goal

from hosts import _warm

ROOT = Path(__file__).parent.parent
EVIDENCE = ROOT / "scripts" / "demo" / "evidence.json"
SCRIPT = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
MESSAGE = f"Done.\n<reward_memory_reflection_json>{RAW}</reward_memory_reflection_json>"


@pytest.fixture
def run_dir():
    """A private 0700 socket directory; the servers started in it are stopped after."""
    directory = Path(tempfile.mkdtemp(dir=resident_support.BASE))
    yield directory
    stubborn = stop(servers(directory))
    assert stubborn == [], "a resident server ignored SIGTERM"


def environment(run_dir, *, inline=True, **extra):
    env = dict(os.environ)  # carries this test's TURN_HOOKS_STATE_DIR
    env.update(
        TURN_HOOKS_RESIDENT="1",
        TURN_HOOKS_RESIDENT_DIR=str(run_dir),
        TURN_HOOKS_RESIDENT_IDLE_SECONDS="120",
        # The validator probes which process served a call: settled inline, the call
        # runs it itself rather than in a settler it forks and waits for.
        TURN_HOOKS_SETTLE="inline",
    )
    if not inline:  # as installed: Stop hooks settle in a child
        del env["TURN_HOOKS_SETTLE"]
    env.update(extra)
    return env


def validator(directory, *, hold=False):
    """The demo validator, which first records who ran it: the hook process's pid, its
    parent's pid (the server on a warm call, the host on a cold one) and its own; with
    ``hold`` it then waits for a ``release`` file, keeping the call mid-request."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "validator.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, pathlib, sys, time
            from conformance.validator import main
            directory = pathlib.Path({str(directory)!r})
            hook = os.getppid()
            parent = pathlib.Path(f"/proc/{{hook}}/stat").read_text().rpartition(")")[2].split()[1]
            with (directory / "calls").open("a") as calls:
                calls.write(f"{{hook}} {{parent}} {{os.getpid()}}\\n")
            (directory / "running").touch()
            while {hold!r} and not (directory / "release").exists():
                time.sleep(0.02)
            sys.exit(main(pathlib.Path({str(EVIDENCE)!r})))
            """
        )
    )
    return [sys.executable, str(script)]


def calls(directory):
    """``(hook pid, its parent pid, validator pid)`` per validator run."""
    path = directory / "calls"
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(int(part) for part in line.split()) for line in lines]


def argv(registry, event, *extra):
    binding = ("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry))
    return [SCRIPT, "host", "generic", event, *binding, *extra]


def hook(registry, event, payload, env, *extra):
    return subprocess.run(
        argv(registry, event, *extra),
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=registry.parent,
        timeout=120,
    )


def cold_env():
    return dict(os.environ, TURN_HOOKS_RESIDENT="0", TURN_HOOKS_SETTLE="inline")


def log_reasons():
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    if not path.exists():
        return []
    return [entry["reason_code"] for entry in json.loads(path.read_text())["entries"]]


def socket_path(run_dir):
    # The hooks run under this process's interpreter, path and start-up variables.
    return Path(_warm.paths(str(run_dir), _warm.package_key())[0])


def listening(run_dir):
    """The pid of the server that listens in ``run_dir`` (it writes its pid file after
    it bound its socket), or ``None``."""
    pid_file = socket_path(run_dir).with_suffix(".pid")
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) and socket_path(run_dir).exists() else None


def popen(registry, event, payload, env, *extra):
    """A hook process left running; its stdin is a file holding the event."""
    source = registry.parent / f"{event}.json"
    source.write_text(json.dumps(payload))
    with source.open("rb") as stdin:
        return subprocess.Popen(
            argv(registry, event, *extra),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=registry.parent,
        )


def started_server(tmp_path, run_dir, env):
    """Start the server with one (cold) call of a throwaway Goal; its pid once it listens."""
    registry = bound_goal(tmp_path / "starter")
    first = hook(registry, "pre-turn", {"turn_id": "t0", "prompt": "module tests"}, env)
    assert first.returncode == 0
    wait_for(lambda: listening(run_dir), what="a server")
    pid = listening(run_dir)
    assert servers(run_dir) == [pid]
    return pid


def turns(marks):
    """A Goal's Turns: a validated reflection, recall of it, an empty Stop, bad arguments."""
    return [
        (
            "post-settlement",
            {"turn_id": "turn-1", "last_assistant_message": MESSAGE},
            ("--validation-command-json", json.dumps(validator(marks))),
        ),
        ("pre-turn", {"turn_id": "turn-2", "prompt": "module tests"}, ()),
        ("post-settlement", {"turn_id": "turn-2", "last_assistant_message": "done"}, ()),
        ("pre-turn", {"turn_id": "turn-3", "prompt": "module tests"}, ()),
        ("pre-turn", {"turn_id": "turn-4"}, ("--validation-timeout-seconds", "99999")),
    ]


def test_warm_calls_print_exactly_what_cold_calls_print(tmp_path, run_dir):
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    cold_registry, warm_registry = bound_goal(tmp_path / "cold"), bound_goal(tmp_path / "warm")
    cold_marks, warm_marks = tmp_path / "cold-marks", tmp_path / "warm-marks"
    printed = []
    for (event, payload, extra), (_, _, warm_extra) in zip(
        turns(cold_marks), turns(warm_marks), strict=True
    ):
        cold = hook(cold_registry, event, payload, cold_env(), *extra)
        warm = hook(warm_registry, event, payload, env, *warm_extra)
        assert (warm.returncode, warm.stdout, warm.stderr) == (
            cold.returncode,
            cold.stdout,
            cold.stderr,
        ), event
        printed.append(warm.stdout)
    assert json.loads(printed[0])["results"], "the Stop hook settled the reflection"
    assert "[memory 1]" in json.loads(printed[1])["additional_context"], "and recall found it"
    assert printed[-1] == "{}\n", "bad arguments print what a failing hook prints"
    assert [parent for _, parent, _ in calls(cold_marks)] == [os.getpid()]
    assert [parent for _, parent, _ in calls(warm_marks)] == [server], "served warm"
    assert servers(run_dir) == [server], "one server served every call"


def test_kill_9_of_the_server_mid_request_loses_nothing(tmp_path, run_dir):
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    payload = {"turn_id": "turn-1", "last_assistant_message": MESSAGE}
    extra = ("--validation-command-json", json.dumps(validator(marks, hold=True)))
    running = popen(registry, "post-settlement", payload, env, *extra)
    wait_for((marks / "running").exists, what="the validator to run")
    os.kill(server, signal.SIGKILL)
    wait_for(lambda: not alive(server), what="the server to die")
    (marks / "release").touch()
    stdout, stderr = running.communicate(timeout=120)

    cold_registry = bound_goal(tmp_path / "cold")
    cold = hook(cold_registry, "post-settlement", payload, cold_env(), *extra)
    assert (running.returncode, stdout, stderr) == (0, cold.stdout, cold.stderr)
    [ingest] = json.loads(stdout)["results"].values()
    assert ingest["status"] == "activated", "the reflection was validated and stored"
    [(_, parent, _), _] = calls(marks)
    assert parent == server, "the first call ran in the killed server's child"

    # The dead server's socket is stale: the next call runs cold and starts a new one.
    assert socket_path(run_dir).exists()
    again = {"turn_id": "turn-2", "prompt": "module tests"}
    retry = hook(registry, "pre-turn", again, env)
    assert (retry.returncode, retry.stdout) == (
        0,
        hook(cold_registry, "pre-turn", again, cold_env()).stdout,
    )
    wait_for(lambda: listening(run_dir) not in (None, server), what="a new server")


def test_kill_9_of_the_call_mid_request_ends_the_hook_with_0(tmp_path, run_dir):
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    extra = ("--validation-command-json", json.dumps(validator(marks, hold=True)))
    payload = {"turn_id": "turn-1", "last_assistant_message": MESSAGE}
    running = popen(registry, "post-settlement", payload, env, *extra)
    wait_for((marks / "running").exists, what="the validator to run")
    [(child, parent, checker)] = calls(marks)
    assert parent == server
    os.kill(child, signal.SIGKILL)
    running.communicate(timeout=120)
    os.kill(checker, signal.SIGKILL)
    assert running.returncode == 0, "the Turn goes on"
    assert "resident_child_lost" in log_reasons()
    assert servers(run_dir) == [server], "the server lives on"


def test_each_call_goes_to_a_child_forked_before_it_that_ends_with_its_server(tmp_path, run_dir):
    """A call does not wait for the fork of the server: a spare child waits for it.
    The spare serves one call, the server forks the next once no call runs, and an
    idle spare dies with its server, however the server ends."""
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    wait_for(lambda: len(children_of(server)) == 1, what="a spare child")
    [spare] = children_of(server)
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    extra = ("--validation-command-json", json.dumps(validator(marks)))
    payload = {"turn_id": "turn-1", "last_assistant_message": MESSAGE}
    done = hook(registry, "post-settlement", payload, env, *extra)
    assert done.returncode == 0
    [(child, parent, _)] = calls(marks)
    assert (child, parent) == (spare, server), "the waiting spare served the call"
    # The spare that served may still be exiting: the next one is a child of its own.
    wait_for(lambda: [spare] != children_of(server) != [], what="the next spare")
    [following] = children_of(server)
    assert following != spare and not alive(spare)
    os.kill(server, signal.SIGKILL)
    wait_for(lambda: not alive(following), what="the spare to end with its server")


def test_a_killed_spare_costs_the_next_call_nothing(tmp_path, run_dir):
    """A spare killed while it waits: the server forks the next call's child itself
    (or a new spare), and the call is served warm with the cold path's output."""
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    wait_for(lambda: len(children_of(server)) == 1, what="a spare child")
    [spare] = children_of(server)
    os.kill(spare, signal.SIGKILL)
    wait_for(lambda: spare not in children_of(server), what="the spare to be reaped")
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    extra = ("--validation-command-json", json.dumps(validator(marks)))
    payload = {"turn_id": "turn-1", "last_assistant_message": MESSAGE}
    warm = hook(registry, "post-settlement", payload, env, *extra)
    cold = hook(bound_goal(tmp_path / "cold"), "post-settlement", payload, cold_env(), *extra)
    assert (warm.returncode, warm.stdout) == (0, cold.stdout)
    [(_, parent, _), (_, cold_parent, _)] = calls(marks)
    assert parent == server != cold_parent, "the warm call ran in a child of the server"


def test_a_relative_socket_directory_is_the_one_below_the_hooks_directory(tmp_path, run_dir):
    """The server starts in ``/``; it must listen where the client looks."""
    registry = bound_goal(tmp_path / "goal")
    relative = os.path.relpath(run_dir, registry.parent)
    env = environment(run_dir, TURN_HOOKS_RESIDENT_DIR=relative)
    assert (
        hook(registry, "pre-turn", {"turn_id": "t0", "prompt": "module tests"}, env).returncode == 0
    )
    wait_for(lambda: listening(run_dir), what="a server in the directory the client named")


def test_a_stale_socket_is_replaced(tmp_path, run_dir):
    path = socket_path(run_dir)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, and no one listens on it
    env = environment(run_dir)
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "turn-1", "prompt": "module tests"}
    expected = hook(registry, "pre-turn", payload, cold_env())
    first = hook(registry, "pre-turn", payload, env)
    assert (first.returncode, first.stdout, first.stderr) == (0, expected.stdout, "")
    wait_for(lambda: listening(run_dir), what="a server in place of the stale socket")
    server = listening(run_dir)
    marks = tmp_path / "marks"
    extra = ("--validation-command-json", json.dumps(validator(marks)))
    settled = {"turn_id": "turn-1", "last_assistant_message": MESSAGE}
    assert hook(registry, "post-settlement", settled, env, *extra).returncode == 0
    assert [parent for _, parent, _ in calls(marks)] == [server]


def _record_file():
    for entry in sys.path:
        for record in Path(entry).glob("turn_hooks-*.dist-info/RECORD"):
            return record
    raise AssertionError("the package is installed (make setup)")


def test_an_upgraded_package_gets_a_new_server_and_the_old_one_exits(tmp_path, run_dir):
    env = environment(run_dir)
    old = started_server(tmp_path, run_dir, env)
    old_socket = socket_path(run_dir)

    # A client of another version is refused before anything runs.
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(old_socket))
    client.sendall(_warm.encode_request(b"another version", ["turn-hooks", "host"], 0o022))
    assert client.recv(1) == b"R"
    client.close()

    record = _record_file()
    before = record.stat()
    try:  # what an upgrade or reinstall does to the installed metadata's identity
        os.utime(record, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        assert socket_path(run_dir) != old_socket
        registry = bound_goal(tmp_path / "goal")
        payload = {"turn_id": "turn-1", "prompt": "module tests"}
        expected = hook(registry, "pre-turn", payload, cold_env())
        upgraded = hook(registry, "pre-turn", payload, env)
        assert (upgraded.returncode, upgraded.stdout) == (0, expected.stdout)
        wait_for(lambda: not alive(old), what="the old server to exit")
        assert not old_socket.exists(), "it removed its socket"
        wait_for(lambda: listening(run_dir), what="the new one")
    finally:
        os.utime(record, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_module_edited_in_place_ends_the_server(tmp_path, run_dir):
    """An editable install's module changes without a new key: the server, which
    checks what it loaded while idle, exits, and the next call starts a new one."""
    import hosts.facts.render

    env = environment(run_dir)
    old = started_server(tmp_path, run_dir, env)
    module = Path(hosts.facts.render.__file__)
    before = module.stat()
    try:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        wait_for(lambda: not alive(old), what="the server to see the edit and exit")
        assert not socket_path(run_dir).exists(), "it removed its socket"
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))


def _unsafe(kind, directory):
    if kind == "mode":
        directory.mkdir(mode=0o755)
        directory.chmod(0o755)
    elif kind == "symlink":
        target = directory.with_name(directory.name + "-target")
        target.mkdir(mode=0o700)
        directory.symlink_to(target)
    else:
        directory.mkdir(mode=0o700)
        os.chown(directory, 65534, 65534)


@pytest.mark.parametrize(
    "kind",
    [
        "mode",
        "symlink",
        pytest.param(
            "owner",
            marks=pytest.mark.skipif(os.getuid() != 0, reason="only root can give a dir away"),
        ),
    ],
)
def test_an_unsafe_socket_directory_is_refused(tmp_path, run_dir, kind):
    directory = run_dir / "unsafe"
    _unsafe(kind, directory)
    env = environment(run_dir, TURN_HOOKS_RESIDENT_DIR=str(directory))
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "turn-1", "prompt": "module tests"}
    expected = hook(registry, "pre-turn", payload, cold_env())
    result = hook(registry, "pre-turn", payload, env)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, "")
    assert list(directory.iterdir()) == [], "no socket, lock or pid file there"
    assert servers(run_dir) == []
    assert "resident_dir_unsafe" in log_reasons()


def test_a_server_that_never_answers_costs_the_call_nothing(tmp_path, run_dir):
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(socket_path(run_dir)))
    silent.listen(8)  # connections wait in the backlog, never accepted or answered
    try:
        env = environment(run_dir)
        registry = bound_goal(tmp_path / "goal")
        payload = {"turn_id": "turn-1", "prompt": "module tests"}
        expected = hook(registry, "pre-turn", payload, cold_env())
        result = hook(registry, "pre-turn", payload, env)
        assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, "")
        assert servers(run_dir) == [], "a listening socket is not replaced"
    finally:
        silent.close()


def test_a_call_past_the_deadline_is_killed_and_the_hook_exits_0(tmp_path, run_dir):
    # Long enough for the call to reach its validator on a loaded machine.
    env = environment(run_dir, TURN_HOOKS_RESIDENT_DEADLINE_SECONDS="6")
    server = started_server(tmp_path, run_dir, env)
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    extra = ("--validation-command-json", json.dumps(validator(marks, hold=True)))
    payload = {"turn_id": "turn-1", "last_assistant_message": MESSAGE}
    try:
        running = popen(registry, "post-settlement", payload, env, *extra)
        wait_for((marks / "running").exists, what="the validator to run")
        [(child, parent, _)] = calls(marks)
        assert parent == server
        running.communicate(timeout=120)  # never released: only the deadline ends it
        assert running.returncode == 0, "the Turn goes on"
        assert "resident_timeout" in log_reasons()
        wait_for(lambda: not alive(child), what="the call to be killed")
    finally:
        (marks / "release").touch()
    assert servers(run_dir) == [server]


def test_the_server_exits_when_idle_and_removes_its_files(tmp_path, run_dir):
    env = environment(run_dir, TURN_HOOKS_RESIDENT_IDLE_SECONDS="1")
    server = started_server(tmp_path, run_dir, env)
    wait_for(lambda: not alive(server), what="the idle exit")
    assert sorted(path.suffix for path in run_dir.iterdir()) == [".lock"]


def test_sigterm_stops_the_server_cleanly(tmp_path, run_dir):
    server = started_server(tmp_path, run_dir, environment(run_dir))
    assert stop([server]) == []
    assert sorted(path.suffix for path in run_dir.iterdir()) == [".lock"]


def test_concurrent_first_calls_start_one_server(tmp_path, run_dir):
    env = environment(run_dir)
    registry = bound_goal(tmp_path / "goal")
    payload = json.dumps({"turn_id": "turn-1", "prompt": "module tests"})
    started = [
        subprocess.Popen(
            argv(registry, "pre-turn"),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
            cwd=registry.parent,
            text=True,
        )
        for _ in range(4)
    ]
    for process in started:
        process.communicate(payload, timeout=120)
        assert process.returncode == 0
    wait_for(lambda: listening(run_dir), what="a server")
    wait_for(lambda: len(servers(run_dir)) == 1, what="the others to give up")


@pytest.mark.parametrize(
    ("switch", "command"),
    [("0", ["host", "generic", "pre-turn"]), ("1", ["plugins"]), ("1", ["schema", "--check"])],
    ids=["switched-off", "plugins", "schema"],
)
def test_no_server_unless_a_hook_may_use_one(tmp_path, run_dir, switch, command):
    env = environment(run_dir, TURN_HOOKS_RESIDENT=switch)
    registry = bound_goal(tmp_path / "goal")
    if command[0] == "host":
        command = [
            *command,
            "--goal-id",
            f1.GOAL,
            "--agent-id",
            f1.AGENT,
            "--registry",
            str(registry),
        ]
    result = subprocess.run(
        [SCRIPT, *command], input="{}", capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stdout
    assert list(run_dir.iterdir()) == [] and servers(run_dir) == []


def test_installed_hooks_enter_through_the_resident_front_door():
    from hosts.setup import codex_install, dsh_install, settings_install, status
    from hosts.setup._hook_line import entry_argv, loader

    assert entry_argv() == [sys.executable, "-S", "-c", loader()]
    command = codex_install.hook_command(
        "UserPromptSubmit", registry="/r.json", goal_id="g", agent_id="a", validation_argv=None
    )
    start = shlex.join(entry_argv())
    assert command.startswith(f"{start} host codex-cli pre-turn ")
    [entry] = dsh_install.patch_layer(
        registry="/r.json", goal_id="g", agent_id="a", validation_argv=None
    )[0]["insert"]
    assert entry["config"]["command"] == entry_argv()
    # Handlers written by earlier versions (``-m hosts._entry``, ``-m hosts.cli``) and
    # by another install of the package are still ours to replace, and still read by
    # status; another adapter's, or another program's, are not.
    elsewhere = start.replace(json.dumps(package_root()), '"/x y"')
    assert elsewhere != start
    for form in (
        f"{sys.executable} -m hosts._entry",
        f"{sys.executable} -m hosts.cli",
        elsewhere,
    ):
        older = {"command": command.replace(start, form)}
        assert codex_install._ours(older, "g", "a"), form
        assert status.our_handler(older["command"])["hook_event"] == "pre-turn", form
    for foreign in (
        command.replace("host codex-cli", "host generic"),
        command.replace(start, f"{sys.executable} -S -c 'import evil' "),
        command.replace(start, f"{sys.executable} -m other"),
        "echo host codex-cli pre-turn",
    ):
        assert not codex_install._ours({"command": foreign}, "g", "a"), foreign
    claude = settings_install.HOSTS["claude-code"]
    written = settings_install.hook_command(
        claude,
        "UserPromptSubmit",
        registry="/r.json",
        goal_id="g",
        agent_id="a",
        validation_argv=None,
    )
    assert settings_install.is_ours(claude, {"command": written})
    assert settings_install.is_ours(
        claude, {"command": written.replace(start, f"{sys.executable} -m hosts._entry")}
    )


def package_root():
    from hosts.setup import _hook_line

    return _hook_line.ROOT


def test_a_removed_package_never_blocks_the_prompt(tmp_path):
    """Hooks left installed after the package went: the command fails with exit 1,
    never 2, which Codex, Claude Code and Gemini read as "block this prompt"."""
    from hosts.setup._hook_line import entry_argv

    gone = shlex.join(entry_argv()).replace(
        json.dumps(package_root()), json.dumps(str(tmp_path / "gone"))
    )
    assert gone != shlex.join(entry_argv())
    result = subprocess.run(
        f"{gone} host codex-cli pre-turn", shell=True, input="{}", capture_output=True, text=True
    )
    assert result.returncode == 1, result.stderr
    from hosts.setup import status

    assert status.our_handler(f"{gone} host codex-cli pre-turn")["command_resolves"] is False
    ours = status.our_handler(f"{shlex.join(entry_argv())} host codex-cli pre-turn")
    assert ours["command_resolves"] is True


@pytest.mark.parametrize("form", ["loader", "module"])
def test_the_installed_command_form_is_served_warm(tmp_path, run_dir, form):
    from hosts.setup._hook_line import entry_argv

    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    extra = ("--validation-command-json", json.dumps(validator(marks)))
    payload = json.dumps({"turn_id": "turn-1", "last_assistant_message": MESSAGE})
    start = entry_argv() if form == "loader" else [sys.executable, "-m", "hosts._entry"]
    command = [*start, *argv(registry, "post-settlement", *extra)[1:]]
    result = subprocess.run(
        command, input=payload, capture_output=True, text=True, env=env, cwd=registry.parent
    )
    assert result.returncode == 0 and json.loads(result.stdout)["results"]
    assert [parent for _, parent, _ in calls(marks)] == [server]
    assert servers(run_dir) == [server], "the -S client computed its server's key"


def test_the_installed_form_runs_cold_exactly_as_the_module_form(tmp_path, run_dir):
    """``python -S -c <loader>`` imports ``site`` before a cold run: the same
    outputs as ``-m``, with site-packages (pydantic, the capability plugins) found."""
    from hosts.setup._hook_line import entry_argv

    printed = []
    for start in (entry_argv(), [sys.executable, "-m", "hosts._entry"]):
        registry = bound_goal(tmp_path / str(len(start)))
        checked = ("--validation-command-json", json.dumps(validator(registry.parent / "marks")))
        runs = []
        for event, payload, extra in (
            ("post-settlement", {"turn_id": "turn-1", "last_assistant_message": MESSAGE}, checked),
            ("pre-turn", {"turn_id": "turn-2", "prompt": "module tests"}, ()),
        ):
            result = subprocess.run(
                [*start, *argv(registry, event, *extra)[1:]],
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                env=cold_env(),
                cwd=registry.parent,
            )
            runs.append((result.returncode, result.stdout, result.stderr))
        printed.append(runs)
    assert printed[0] == printed[1]
    assert "[memory 1]" in json.loads(printed[0][1][1])["additional_context"]
    assert list(run_dir.iterdir()) == []
    version = subprocess.run(
        [*entry_argv(), "--version"], capture_output=True, text=True, env=cold_env(), check=True
    )
    assert version.stdout.startswith("turn-hooks ")


def test_a_recent_start_that_brought_no_server_up_is_not_repeated(tmp_path, run_dir):
    lock = socket_path(run_dir).with_suffix(".lock")
    lock.touch(mode=0o600)  # a start a moment ago, and no pid file from a server since
    env = environment(run_dir)
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "turn-1", "prompt": "module tests"}
    expected = hook(registry, "pre-turn", payload, cold_env())
    result = hook(registry, "pre-turn", payload, env)
    assert (result.returncode, result.stdout) == (0, expected.stdout)
    assert servers(run_dir) == [] and not socket_path(run_dir).exists()
    os.utime(lock, (0, 0))  # what a server's clean exit leaves: start again at once
    assert hook(registry, "pre-turn", payload, env).returncode == 0
    wait_for(lambda: listening(run_dir), what="a server")


def test_a_socket_path_too_long_for_a_socket_starts_no_server(tmp_path, run_dir):
    directory = run_dir / ("d" * 60) / ("e" * 40)
    directory.mkdir(mode=0o700, parents=True)
    env = environment(run_dir, TURN_HOOKS_RESIDENT_DIR=str(directory))
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "turn-1", "prompt": "module tests"}
    expected = hook(registry, "pre-turn", payload, cold_env())
    result = hook(registry, "pre-turn", payload, env)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, "")
    assert list(directory.iterdir()) == [] and servers(run_dir) == []


@pytest.mark.skipif(os.getuid() != 0, reason="only root can connect as another user")
def test_a_client_of_another_user_is_not_served(tmp_path, run_dir):
    server = started_server(tmp_path, run_dir, environment(run_dir))
    path = socket_path(run_dir)
    request = _warm.encode_request(_warm.package_key(), ["turn-hooks", "host"], 0o022)
    own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    own.connect(str(path))
    own.sendall(request)
    assert own.recv(1) == b"A", "this user's client is served"
    own.close()  # before "G": the child runs nothing
    # Open the way to the socket for everyone: the uid check is the second lock.
    opened = [resident_support.BASE, run_dir, path]
    modes = [target.stat().st_mode & 0o777 for target in opened]
    try:
        for target in opened:
            target.chmod(0o777)
        # A system interpreter: this one may live below a home no other user enters.
        system = shutil.which("python3", path="/usr/bin:/bin")
        assert system, "a system python3 for the other user's client"
        probe = textwrap.dedent(
            f"""
            import socket, sys
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(10)
            client.connect({str(path)!r})
            try:
                client.sendall(bytes.fromhex(sys.stdin.read()))
                print(repr(client.recv(5)) == repr(b"") and "closed")
            except (BrokenPipeError, ConnectionResetError):
                print("closed")
            """
        )
        result = subprocess.run(
            [system, "-c", probe],
            input=request.hex(),
            capture_output=True,
            text=True,
            user=65534,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
        )
    finally:
        for target, mode in zip(opened, modes, strict=True):
            target.chmod(mode)
    assert result.stdout.strip() == "closed", result.stderr
    assert servers(run_dir) == [server]


def test_a_stopped_server_is_replaced_and_costs_the_call_nothing(tmp_path, run_dir):
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    os.kill(server, signal.SIGSTOP)  # wedged: it accepts nothing any more
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "turn-1", "prompt": "module tests"}
    expected = hook(registry, "pre-turn", payload, cold_env())
    result = hook(registry, "pre-turn", payload, env)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, "")
    wait_for(lambda: not alive(server), what="the wedged server to be killed")
    assert hook(registry, "pre-turn", payload, env).returncode == 0
    wait_for(lambda: listening(run_dir) not in (None, server), what="a fresh server")


def test_an_interpreter_with_options_that_change_it_runs_cold(tmp_path, run_dir):
    env = environment(run_dir)
    registry = bound_goal(tmp_path / "goal")
    payload = json.dumps({"turn_id": "turn-1", "prompt": "module tests"})
    command = argv(registry, "pre-turn")[1:]
    plain = subprocess.run(
        [sys.executable, "-m", "hosts._entry", *command],
        input=payload,
        capture_output=True,
        text=True,
        env=cold_env(),
        cwd=registry.parent,
    )
    for option in ("-O", "-b", "-s"):
        result = subprocess.run(
            [sys.executable, option, "-m", "hosts._entry", *command],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            cwd=registry.parent,
        )
        assert (result.returncode, result.stdout) == (0, plain.stdout), option
    assert list(run_dir.iterdir()) == [] and servers(run_dir) == []


def test_a_warm_codex_stop_replies_first_then_settles_in_its_own_child(tmp_path, run_dir):
    """The resident child answers the host, then settles the spooled Turn itself: the
    hook's pipes are closed when the call returns (``capture_output`` reads them to
    the end) although the validator is still held, the validator's parent is the
    server's child (no settler forked from it, which would have passed to init), the
    server does not kill it when its client exits, and the settlement completes."""
    from test_settlement_faults import journal_states, queue

    env = environment(run_dir, inline=False)
    server = started_server(tmp_path, run_dir, env)
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    binding = ("--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry))
    validation = ("--validation-command-json", json.dumps(validator(marks, hold=True)))
    stop_hook = subprocess.run(
        [SCRIPT, "host", "codex-cli", "post-settlement", *binding, *validation],
        input=json.dumps({"turn_id": "t1", "last_assistant_message": MESSAGE}),
        capture_output=True,
        text=True,
        env=env,
        cwd=registry.parent,
        timeout=120,
    )
    try:
        assert (stop_hook.returncode, stop_hook.stdout, stop_hook.stderr) == (0, "{}\n", "")
        wait_for((marks / "running").exists, what="the validator")
        [(settler, parent, _)] = calls(marks)
        assert parent == server, "the call's own child settles, after its reply"
        assert journal_states(registry) == [] and len(queue(registry)) == 1
        time.sleep(0.2)  # the client has exited: a server that killed the child would have
        assert alive(settler), "the server let the replied call finish its work"
    finally:
        (marks / "release").touch()  # a held validator never outlives the test
    wait_for(lambda: queue(registry) == [], what="the settlement")
    assert journal_states(registry) == ["completed"]
    wait_for(lambda: not alive(settler), what="the child to end with its work")
    assert servers(run_dir) == [server], "served warm"


def test_a_warm_generic_stop_waits_for_the_settler_it_forks_and_its_log_is_kept(tmp_path, run_dir):
    """The generic host prints the receipt, so its warm call forks a settler and waits
    for it. The settler replies to no one: what it logs (a failing validator) is
    written, not queued for a reply it never gives."""
    env = environment(run_dir, inline=False)
    server = started_server(tmp_path, run_dir, env)
    registry = bound_goal(tmp_path / "goal")
    failing = ("--validation-command-json", json.dumps(["sh", "-c", "exit 1"]))
    event = {"turn_id": "t1", "last_assistant_message": MESSAGE}
    result = hook(registry, "post-settlement", event, env, *failing)
    receipt = json.loads(result.stdout)
    assert receipt["results"] and receipt.get("reason_code") != "validation_pending", receipt
    assert "validator_failed" in log_reasons(), "the settler's own log entries are written"
    assert servers(run_dir) == [server], "served warm"


def test_a_warm_stop_takes_its_stdin_through_a_spill_it_removes(tmp_path, run_dir):
    """The resident child spills the stdin the client handed it (issue 37), and a
    finished call leaves no spill behind: a pipe and a regular file alike."""
    from test_settlement_faults import queue

    from hosts.settlement import spill

    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "t1", "last_assistant_message": "done"}
    piped = hook(registry, "post-settlement", payload, env)
    assert (piped.returncode, piped.stderr) == (0, "")
    assert json.loads(piped.stdout)["status"] == "observed"
    filed = popen(registry, "post-settlement", {**payload, "turn_id": "t2"}, env)
    assert json.loads(filed.communicate(timeout=120)[0])["status"] == "observed"
    assert filed.returncode == 0
    assert servers(run_dir) == [server], "served warm"
    incoming = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / spill.INCOMING_DIR
    assert incoming.is_dir(), "the calls spilled their stdin"
    assert list(incoming.iterdir()) == []
    wait_for(lambda: queue(registry) == [], what="the settlements")


def test_a_warm_pre_turn_writes_its_hook_log_after_its_reply(tmp_path, run_dir):
    """A warm PreTurn's hook log entries are written by the call's child once the host
    has the answer: the same entries a cold call writes, in its own process."""
    env = environment(run_dir)
    started_server(tmp_path, run_dir, env)
    payload = {"turn_id": "t1", "prompt": "module tests"}  # a Goal with nothing stored yet
    before = len(log_reasons())
    warm = hook(bound_goal(tmp_path / "warm"), "pre-turn", payload, env)
    wait_for(lambda: len(log_reasons()) > before, what="the warm call's entries")
    warm_logged = log_reasons()[before:]
    cold = hook(bound_goal(tmp_path / "cold"), "pre-turn", payload, cold_env())
    assert (warm.returncode, warm.stdout, warm.stderr) == (0, cold.stdout, cold.stderr)
    assert warm_logged == log_reasons()[before + len(warm_logged) :]
    assert warm_logged == ["provider_returned_no_items"]


def test_a_warm_call_says_why_its_hook_log_is_not_written_as_a_cold_one_does(tmp_path, run_dir):
    """A log the write would refuse (here a directory where its file belongs) is
    written, and refused, before the reply: the line saying why reaches the host's
    stderr from a warm call as from a cold one."""
    env = environment(run_dir)
    started_server(tmp_path, run_dir, env)
    log = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    log.unlink(missing_ok=True)
    log.mkdir(mode=0o700)
    payload = {"turn_id": "t1", "prompt": "module tests"}
    warm = hook(bound_goal(tmp_path / "warm"), "pre-turn", payload, env)
    cold = hook(bound_goal(tmp_path / "cold"), "pre-turn", payload, cold_env())
    assert "hook log not written (reason_code=sidecar_not_regular)" in cold.stderr
    assert (warm.returncode, warm.stdout, warm.stderr) == (0, cold.stdout, cold.stderr)


@pytest.mark.parametrize("root", ["/opt/with space", "/it's", '/say "hi"', "/naïve/路径", "/a\\b"])
def test_the_loader_names_any_package_root_exactly(monkeypatch, root):
    """The loader's root is a Python string literal inside a shell word: whatever the
    directory's name, the command parses back to that directory and is ours."""
    import ast

    from hosts.setup import _hook_line

    monkeypatch.setattr(_hook_line, "ROOT", root)
    words = shlex.split(shlex.join(_hook_line.entry_argv()))
    assert words == _hook_line.entry_argv() and _hook_line.is_entry(words)
    program = ast.parse(words[3])
    assert ast.literal_eval(program.body[1].value) == root  # sys.path[0] = <root>


def test_the_hook_client_imports_nothing_but_itself_and_the_socket_module(tmp_path, run_dir):
    """Under ``-S`` a bare interpreter has not imported ``os``; the client must not
    either (about 4 ms per hook), nor any other module but ``_socket``, on a warm call."""
    env = environment(run_dir)
    started_server(tmp_path, run_dir, env)
    registry = bound_goal(tmp_path / "goal")
    program = (
        "import sys; bare = set(sys.modules); sys.path[0] = sys.argv.pop(1); "
        "from hosts import _warm; "
        "sys.argv[0] = 'turn-hooks'; status = _warm.call(list(sys.argv)); "
        "sys.stderr.write(repr((status, sorted(set(sys.modules) - bare))))"
    )
    payload = json.dumps({"turn_id": "t1", "prompt": "module tests"})
    done = subprocess.run(
        [sys.executable, "-S", "-c", program, str(ROOT), *argv(registry, "pre-turn")[1:]],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        cwd=registry.parent,
        timeout=120,
    )
    status, imported = ast.literal_eval(done.stderr.strip().splitlines()[-1])
    assert status == 0, "the server ran the call"
    assert imported == ["_socket", "hosts", "hosts._warm"]


@pytest.mark.parametrize(
    "path", ["/a/b/c.py", "/a/b/", "/", "rel/x", "./x/../y", "/a//b/./c/../d", "/é/\udcff"]
)
def test_the_clients_path_rules_are_the_os_modules(path, monkeypatch):
    assert _warm._dirname(path) == os.path.dirname(path)
    assert _warm._abspath(path) == os.path.abspath(path)
    assert _warm._join(path, "x", "y") == os.path.join(path, "x", "y")
    assert _warm._join(path, "/abs") == os.path.join(path, "/abs")
    assert _warm._fsencode(path) == os.fsencode(path)
    monkeypatch.setenv("HOME", path)
    assert _warm._home() == os.path.expanduser("~")
    assert _warm._getenv("HOME") == os.environ["HOME"]
    monkeypatch.delenv("HOME")
    assert _warm._home() == os.path.expanduser("~")
    assert _warm._getenv("HOME") == ""


# --- the MCP server a host keeps for its session -----------------------------------

MCP_LINES = [
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
]


def mcp_serve(registry, env):
    """``turn-hooks mcp serve`` in the installed form, left running with a stdin pipe."""
    from hosts.setup._hook_line import entry_argv

    return subprocess.Popen(
        [*entry_argv(), "mcp", "serve", "--registry", str(registry)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=registry.parent / "repo",
    )


def test_a_warm_mcp_session_answers_exactly_as_a_cold_one_past_any_deadline(tmp_path, run_dir):
    """The server serves ``mcp serve`` too (a host starts it per session, Codex per
    ``exec``, and waits for it). A session has no deadline: it lasts until the host
    closes its stdin, here well past the calls' deadline."""
    env = environment(run_dir, TURN_HOOKS_RESIDENT_DEADLINE_SECONDS="1")
    server = started_server(tmp_path, run_dir, env)
    registry = bound_goal(tmp_path / "goal")
    cold = mcp_serve(registry, cold_env())
    expected = cold.communicate("\n".join(MCP_LINES) + "\n", timeout=60)
    warm = mcp_serve(registry, env)
    warm.stdin.write(MCP_LINES[0] + "\n")
    warm.stdin.flush()
    first = warm.stdout.readline()
    # Past the server's kill of a call (its deadline and 2 s) and the child's own
    # alarm (the deadline and 5 s): a session is not killed.
    time.sleep(6.5)
    rest = warm.communicate("\n".join(MCP_LINES[1:]) + "\n", timeout=60)
    assert (warm.returncode, first + rest[0], rest[1]) == (cold.returncode, *expected)
    assert "record_reflection" in rest[0]
    assert servers(run_dir) == [server], "served warm, by the server started before"


def test_a_killed_mcp_client_ends_its_session(tmp_path, run_dir):
    """Killed, the client can no longer forward the host's signals: its session ends
    with it, though the host still holds the session's stdin open."""
    from hosts.setup._hook_line import entry_argv

    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    registry = bound_goal(tmp_path / "goal")
    read_end, write_end = os.pipe()
    try:
        warm = subprocess.Popen(
            [*entry_argv(), "mcp", "serve", "--registry", str(registry)],
            stdin=read_end,
            stdout=subprocess.PIPE,
            env=env,
            cwd=registry.parent / "repo",
        )
        os.close(read_end)
        os.write(write_end, MCP_LINES[0].encode() + b"\n")
        assert json.loads(warm.stdout.readline())["id"] == 1
        # The session runs in a process that is neither the client nor the server:
        # found by its stdin, the pipe the host (this test) still holds open.
        pipe = os.readlink(f"/proc/{warm.pid}/fd/0")
        sessions = [
            pid
            for pid in resident_support.processes()
            if pid not in (warm.pid, server) and _reads(pid, pipe)
        ]
        assert len(sessions) == 1, "one session process, reading the host's pipe"
        warm.kill()
        warm.communicate(timeout=60)
        wait_for(lambda: not alive(sessions[0]), what="the session to end with its client")
        assert servers(run_dir) == [server], "the server lives on"
    finally:
        os.close(write_end)


@pytest.mark.parametrize("busy", [False, True], ids=["spare", "forked-while-a-call-runs"])
def test_a_session_runs_in_the_child_that_took_it_and_holds_no_call_back(tmp_path, run_dir, busy):
    """A session is served by the child that took it (the waiting spare, or the one
    the server forks when a call holds the spare), with no second fork before its
    first answer. It tells the server it is no call, so the server forks the next
    spare while it runs."""
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    wait_for(lambda: len(children_of(server)) == 1, what="a spare child")
    [spare] = children_of(server)
    registry, marks = bound_goal(tmp_path / "goal"), tmp_path / "marks"
    call = None
    if busy:
        extra = ("--validation-command-json", json.dumps(validator(marks, hold=True)))
        payload = {"turn_id": "turn-1", "last_assistant_message": MESSAGE}
        call = popen(registry, "post-settlement", payload, env, *extra)
        wait_for(lambda: (marks / "running").exists(), what="the call to hold the spare")
    warm = mcp_serve(registry, env)
    try:
        warm.stdin.write(MCP_LINES[0] + "\n")
        warm.stdin.flush()
        assert json.loads(warm.stdout.readline())["id"] == 1
        pipe = os.readlink(f"/proc/{warm.pid}/fd/0")
        [session] = [pid for pid in children_of(server) if _reads(pid, pipe)]
        assert (session == spare) is not busy, "the spare, unless a call held it"
        if call is not None:
            (marks / "release").touch()
            call.communicate(timeout=60)
            assert call.returncode == 0
        wait_for(
            lambda: [pid for pid in children_of(server) if pid not in (spare, session)],
            what="the next spare, forked while the session runs",
        )
        rest = warm.communicate("\n".join(MCP_LINES[1:]) + "\n", timeout=60)
        assert warm.returncode == 0 and "record_reflection" in rest[0]
    finally:
        if warm.poll() is None:
            warm.kill()
            warm.communicate(timeout=60)
        if call is not None and call.poll() is None:  # a failure must not leave it holding
            (marks / "release").touch()
            call.communicate(timeout=60)
    wait_for(lambda: not alive(session), what="the session to end with its stdin")


def _reads(pid, pipe):
    try:
        return os.readlink(f"/proc/{pid}/fd/0") == pipe
    except OSError:
        return False


def resident_command(env, *words):
    """``turn-hooks resident ...`` as a person runs it: its exit code and JSON receipt."""
    result = subprocess.run(
        [SCRIPT, "resident", *words], capture_output=True, text=True, env=env, timeout=60
    )
    return result.returncode, json.loads(result.stdout)


def resident_markdown(env):
    """``turn-hooks resident status --format markdown``: the completed process."""
    return subprocess.run(
        [SCRIPT, "resident", "status", "--format", "markdown"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_resident_status_lists_the_server_and_stop_ends_it(tmp_path, run_dir):
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    code, shown = resident_command(env, "status")
    assert code == 0 and shown["socket_directory"] == "private"
    [entry] = shown["servers"]
    assert (entry["pid"], entry["running"], entry["this_install"]) == (server, True, True)
    assert entry["name"] == socket_path(run_dir).stem
    assert str(run_dir) not in json.dumps(shown), "a receipt names no path"
    # The memory held: each server's resident set, summed here and over every
    # server of this user (of other HOMEs too, which the bound counts).
    assert entry["rss_bytes"] > 0 and shown["memory_bytes"] == entry["rss_bytes"]
    assert shown["user_running_count"] >= 1
    assert shown["user_memory_bytes"] >= shown["memory_bytes"]
    assert (shown["max_servers"], shown["short_idle_seconds"]) == (1000, 120.0)  # conftest
    said = resident_markdown(env).stdout
    assert "| memory_bytes |" in said and "MiB in all (at most 1000 run at once)" in said
    code, stopped = resident_command(env, "stop")
    assert code == 0 and stopped["stopped"] == [
        {"name": entry["name"], "pid": server, "killed": False}
    ]
    assert not alive(server) and stopped["servers"] == []
    assert sorted(path.suffix for path in run_dir.iterdir()) == [".lock"]
    # The next hook runs (cold, with the same output) and starts a server again.
    registry = bound_goal(tmp_path / "after")
    after = hook(registry, "pre-turn", {"turn_id": "t1", "prompt": "module tests"}, env)
    assert after.returncode == 0
    wait_for(lambda: listening(run_dir), what="a new server")
    assert listening(run_dir) != server


def test_resident_status_and_stop_leave_an_unsafe_or_absent_directory_alone(tmp_path, run_dir):
    env = environment(run_dir)
    server = started_server(tmp_path, run_dir, env)
    # What no server wrote is passed over: a FIFO (never waited on), a link, garbage,
    # and a pid that is not a resident server (never signalled).
    os.mkfifo(run_dir / "th-fifo.pid")
    (run_dir / "th-link.pid").symlink_to(socket_path(run_dir).with_suffix(".pid"))
    (run_dir / "th-garbage.pid").write_bytes(b"\xff" * 64)
    (run_dir / "th-other.pid").write_text(str(os.getpid()))
    code, shown = resident_command(env, "stop")
    assert code == 0 and [s["pid"] for s in shown["stopped"]] == [server]
    assert [(s["name"], s["running"]) for s in shown["servers"]] == [("th-other", False)]
    server = started_server(tmp_path, run_dir, env)
    run_dir.chmod(0o755)  # open to others: hooks refuse it, so do these commands
    try:
        code, shown = resident_command(env, "stop")
        assert (code, shown["socket_directory"], shown["stopped"]) == (0, "unsafe", [])
        assert alive(server), "a server named only by an unsafe directory is not touched"
        said = resident_markdown(env)
        assert "hooks run cold until it is a directory of yours with mode 0700" in said.stdout
    finally:
        run_dir.chmod(0o700)
    absent = environment(tmp_path / "no-such-directory")
    code, shown = resident_command(absent, "status")
    assert (code, shown["socket_directory"], shown["servers"]) == (0, "absent", [])
    assert not (tmp_path / "no-such-directory").exists(), "status creates nothing"
    off = resident_markdown(dict(absent, TURN_HOOKS_RESIDENT="0"))
    assert off.returncode == 0 and "switched off (TURN_HOOKS_RESIDENT=0)" in off.stdout


def _pid_file(directory):
    return Path(_warm.paths(str(directory), _warm.package_key())[2])


def test_hooks_under_many_homes_leave_no_more_servers_than_the_bound(tmp_path):
    """Each HOME has its own socket directory, so each would start its own server: a
    server that would make more than the bound of this user exits before it loads
    anything, says so in the hook log, and those calls run cold with the same output."""
    homes = Path(tempfile.mkdtemp(dir=resident_support.BASE))
    base = {
        name: value
        for name, value in os.environ.items()
        if name not in ("XDG_RUNTIME_DIR", _warm.DIR_VARIABLE)
    }
    base.update(TURN_HOOKS_RESIDENT="1", TURN_HOOKS_RESIDENT_IDLE_SECONDS="120")
    del base[_warm.MAX_SERVERS_VARIABLE]  # the default bound, 4
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "t1", "prompt": "module tests"}
    expected = hook(registry, "pre-turn", payload, cold_env())

    def refused():
        return log_reasons().count("resident_servers_bound")

    try:
        for index in range(12):
            home = homes / f"h{index:02d}"
            home.mkdir()
            before = refused()
            result = hook(registry, "pre-turn", payload, dict(base, HOME=str(home)))
            assert (result.returncode, result.stdout) == (0, expected.stdout)
            # Its server came up, or said why not (one at a time: no two start at once).
            run = home / ".cache" / "turn-hooks" / "run"
            wait_for(
                lambda: _pid_file(run).exists() or refused() > before,  # noqa: B023
                seconds=120,
                what="the server to come up or be refused",
            )
        wait_for(lambda: len(servers(homes)) + refused() == 12, seconds=120, what="all settled")
        assert 1 <= refused() and len(servers(homes)) <= _warm.MAX_SERVERS
        # A HOME that has a server is served warm; one refused runs cold, as before.
        assert len(_warm.user_servers()) >= len(servers(homes))
    finally:
        assert stop(servers(homes)) == []


def test_a_server_of_one_call_leaves_after_the_short_idle_and_one_in_use_stays(tmp_path, run_dir):
    """A server that has served one call at most waits the short idle (set short
    here), one that keeps being used waits the whole idle time."""
    busy_dir = Path(tempfile.mkdtemp(dir=resident_support.BASE))
    short = {"TURN_HOOKS_RESIDENT_SHORT_IDLE_SECONDS": "1"}
    try:
        busy_env = environment(busy_dir, **short)
        busy = started_server(tmp_path / "busy", busy_dir, busy_env)
        registry = bound_goal(tmp_path / "busy-goal")
        for turn in range(3):
            payload = {"turn_id": f"t{turn}", "prompt": "module tests"}
            assert hook(registry, "pre-turn", payload, busy_env).returncode == 0
        lone = started_server(tmp_path, run_dir, environment(run_dir, **short))
        wait_for(lambda: not alive(lone), seconds=120, what="the short idle exit")
        assert sorted(path.suffix for path in run_dir.iterdir()) == [".lock"]
        assert alive(busy), "a server in use keeps the whole idle time"
    finally:
        assert stop(servers(busy_dir)) == []


def _maps_model(pid, model):
    """Whether process ``pid`` has the model's weights mapped (it loaded the encoder)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    return str((model / "model.safetensors").resolve()) in maps


def test_turning_semantic_on_gets_a_server_that_holds_the_model(tmp_path, run_dir, monkeypatch):
    from test_semantic import make_tiny_bert

    model = make_tiny_bert(tmp_path / "model")
    monkeypatch.delenv("TURN_HOOKS_SEMANTIC", raising=False)
    env = environment(run_dir)
    env.pop("TURN_HOOKS_SEMANTIC", None)
    lexical = started_server(tmp_path, run_dir, env)
    assert not _maps_model(lexical, model)
    # The user turns recall by meaning on, the lexical server still running.
    monkeypatch.setenv("TURN_HOOKS_SEMANTIC", str(model))
    registry = bound_goal(tmp_path / "goal")
    payload = {"turn_id": "turn-1", "prompt": "module tests"}
    semantic_env = dict(env, TURN_HOOKS_SEMANTIC=str(model))
    expected = hook(registry, "pre-turn", payload, dict(semantic_env, TURN_HOOKS_RESIDENT="0"))
    result = hook(registry, "pre-turn", payload, semantic_env)
    assert (result.returncode, result.stdout) == (0, expected.stdout)
    # A server of its own, which loaded the model before it forked: no call loads it.
    wait_for(lambda: listening(run_dir) not in (None, lexical), what="a semantic server")
    semantic = listening(run_dir)
    wait_for(lambda: _maps_model(semantic, model), what="the model loaded")
    assert sorted(servers(run_dir)) == sorted([lexical, semantic])
    assert not _maps_model(lexical, model), "the old one serves the lexical setting still"
    # Back off: the lexical server answers again, the semantic one is left alone.
    monkeypatch.delenv("TURN_HOOKS_SEMANTIC")
    assert listening(run_dir) == lexical
