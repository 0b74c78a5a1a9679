"""The one runner of an external command: a validator or an evaluator.

Hosts run a binding's validator after a Turn, and capabilities run a Todo's
validator or a utility evaluator; all of them are programs someone else wrote. So
they are run one way: an argv (never a shell) with a JSON document on stdin, a
deadline, and stdout read for at most one byte over a bound, after which the
process is killed; stderr is discarded. Nothing of it is trusted: the caller gets
an :class:`ExternalRun` with a typed reason and decides what the run means.

They run in the user's environment, not ours (:func:`user_environment`): the
``python3`` a project's ``make test`` names is the project's, never the one of the
virtual environment turn-hooks is installed in.

``subprocess`` and ``selectors`` are imported when a command runs, so importing the
kernel costs the hook path nothing.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal

from turn_hooks._json_input import MAX_JSON_SIZE, loads_bounded

if TYPE_CHECKING:
    from subprocess import Popen

_CHUNK = 1 << 16
TAIL_BYTES = 4096
"""How much of a run's output a caller keeps for a person to read (a few kilobytes:
a failing test's assertion and the summary line, not the whole log)."""


@dataclass(frozen=True, slots=True)
class ExternalRun:
    """How one external command ended.

    ``reason`` is ``None`` when it exited 0 within its deadline and bound; otherwise
    ``external_unavailable`` (it could not be started, or the request was not
    JSON), ``external_timeout``, ``external_output_too_large`` (both killed) or
    ``external_failed`` (a non-zero exit, in ``exit_code``; what it printed is still
    in ``stdout``, so a caller can read why).

    ``tail`` and ``stderr`` are filled only when asked for (``run_external(tail=N)``):
    the last N bytes read from stdout (stderr merged in, with ``stderr="merge"``) and
    from stderr (``stderr="tail"``), whatever the outcome.
    """

    reason: str | None
    exit_code: int | None = None
    stdout: bytes = b""
    tail: bytes = b""
    stderr: bytes = b""

    def json(self) -> Any:
        """Stdout as one JSON document, through :func:`~turn_hooks.loads_bounded`.

        :raises InvalidInputError: ``external_output_not_json`` and the other
            ``external_output_*`` reasons of the bounded reader.
        """
        return loads_bounded(self.stdout, reason_prefix="external_output")


def _own_bin_directories() -> set[str]:
    """The ``bin`` directories of the virtual environment this interpreter runs from
    (none for a system interpreter), as they may be written in ``PATH``.

    ``sys.prefix`` names the environment once ``site`` ran; a hook started with
    ``-S`` has not run it yet, so a ``pyvenv.cfg`` beside the interpreter's directory
    or one level up marks it too, as ``site`` decides. The interpreter's own path is
    not resolved: a virtual environment's ``python`` is a link to the base one.
    """
    found: set[str] = set()
    if sys.prefix != sys.base_prefix:
        found.add(os.path.join(sys.prefix, "bin"))
    if sys.executable:
        bin_dir = os.path.dirname(os.path.abspath(sys.executable))
        parent = os.path.dirname(bin_dir)
        if any(os.path.isfile(os.path.join(d, "pyvenv.cfg")) for d in (bin_dir, parent)):
            found.add(bin_dir)
    return found | {os.path.realpath(directory) for directory in found}


def user_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment an external command gets: ``environ`` (this process's by
    default) less what turn-hooks' own installation put in front of the user's.

    When this interpreter runs from a virtual environment (``pipx``, ``uv tool`` or
    a venv of its own), that environment's ``bin`` directory is taken out of
    ``PATH`` wherever it stands, and ``VIRTUAL_ENV`` is dropped when it names that
    environment (a shell that ran its ``activate``). Every other entry keeps its
    place, so the command finds the ``python3``, ``pytest`` and ``make`` the user
    has. ``PYTHONPATH`` and ``PYTHONHOME`` stay as the user set them: turn-hooks
    sets neither (its hooks name their package root in ``-c``, the resident server
    in its arguments). A system interpreter changes nothing.
    """
    source = os.environ if environ is None else environ
    environment = dict(source)
    ours = _own_bin_directories()
    if not ours:
        return environment
    path = environment.get("PATH")
    if path is not None:
        kept = [
            entry
            for entry in path.split(os.pathsep)
            if not entry
            or (os.path.abspath(entry) not in ours and os.path.realpath(entry) not in ours)
        ]
        environment["PATH"] = os.pathsep.join(kept)
    virtual_env = environment.get("VIRTUAL_ENV")
    if virtual_env and os.path.join(os.path.abspath(virtual_env), "bin") in ours:
        del environment["VIRTUAL_ENV"]
    # Set by a macOS framework build's venv launcher for the interpreter it starts;
    # inherited, it would make the user's python3 believe it is ours.
    environment.pop("__PYVENV_LAUNCHER__", None)
    return environment


def _program(name: str, path: str | None) -> str:
    """``name``, or its file in our own ``bin`` when the user's ``path`` does not find
    it and ours does.

    The docs spell the built-in validator ``turn-hooks validate command -- ...``: a
    bare name that only our own installation has, which :func:`user_environment`
    takes out of ``PATH``. A program the user's ``PATH`` finds stays theirs, so the
    project's ``python3`` is never replaced by ours.
    """
    import shutil

    if not name or os.sep in name or shutil.which(name, path=path) is not None:
        return name
    for directory in sorted(_own_bin_directories()):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return name


def run_external(
    argv: list[str],
    request: Any,
    *,
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    sort_keys: bool = False,
    max_output: int = MAX_JSON_SIZE,
    stderr: Literal["discard", "merge", "tail"] = "discard",
    tail: int = 0,
    pass_fds: tuple[int, ...] = (),
) -> ExternalRun:
    """Run ``argv`` with ``request`` as compact UTF-8 JSON on stdin; never raises.

    :param timeout: seconds from start to exit, the whole run included.
    :param sort_keys: serialise the request with sorted keys (a caller whose
        command digests what it reads).
    :param max_output: the most stdout bytes kept; one more kills the command.
    :param stderr: ``discard`` it, ``merge`` it into stdout (as a terminal shows
        both), or keep its last ``tail`` bytes in ``ExternalRun.stderr``.
    :param tail: keep the last ``tail`` bytes of stdout in ``ExternalRun.tail`` (and
        of stderr, with ``stderr="tail"``), even when the run timed out or was killed.
    :param pass_fds: descriptors the command inherits (a lock it holds while it
        lives, even past its caller's death); every other one is closed.

    The command runs in its own process group, which is killed as a whole on a
    timeout or too much output, so a shell's children do not outlive it. Its
    environment is the user's (:func:`user_environment`), with
    ``PYTHONDONTWRITEBYTECODE=1``: a Python validator must not write caches into the
    repository it checks. A program only our own installation has (``turn-hooks``)
    still starts from there.
    """
    import subprocess

    try:
        data = json.dumps(
            request, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys
        ).encode("utf-8")
        environment = {**user_environment(), "PYTHONDONTWRITEBYTECODE": "1"}
        process = subprocess.Popen(
            [_program(argv[0], environment.get("PATH")), *argv[1:]] if argv else argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr={
                "discard": subprocess.DEVNULL,
                "merge": subprocess.STDOUT,
                "tail": subprocess.PIPE,
            }[stderr],
            cwd=cwd,
            env=environment,
            process_group=0,
            pass_fds=pass_fds,
        )
    except (OSError, ValueError, TypeError):  # no program, a NUL, a surrogate, not JSON
        return ExternalRun("external_unavailable")
    deadline = time.monotonic() + timeout
    stdin, stdout_pipe = process.stdin, process.stdout
    assert stdin is not None and stdout_pipe is not None  # both were asked for as pipes
    tails = _Tails(tail, process.stderr)
    try:
        reason, stdout = _exchange(stdin, stdout_pipe, data, deadline, max_output, tails)
        if reason is None:
            try:
                process.wait(max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                reason = "external_timeout"
    finally:
        if process.returncode is None:
            _kill(process)
        stdin.close()
        stdout_pipe.close()
        if process.stderr is not None:
            process.stderr.close()
    tail_, stderr_ = bytes(tails.stdout), bytes(tails.stderr)
    if reason is not None:
        return ExternalRun(reason, tail=tail_, stderr=stderr_)
    if process.returncode != 0:
        return ExternalRun(
            "external_failed", process.returncode, stdout, tail=tail_, stderr=stderr_
        )
    return ExternalRun(None, exit_code=0, stdout=stdout, tail=tail_, stderr=stderr_)


class _Tails:
    """The last ``size`` bytes read from stdout and from a stderr pipe (if any)."""

    def __init__(self, size: int, stderr: IO[bytes] | None) -> None:
        self.size = size
        self.stderr_pipe = stderr
        self.stdout = bytearray()
        self.stderr = bytearray()

    def add(self, kept: bytearray, chunk: bytes) -> None:
        if self.size:
            kept += chunk
            del kept[: max(len(kept) - self.size, 0)]


def _exchange(
    stdin: IO[bytes],
    stdout: IO[bytes],
    data: bytes,
    deadline: float,
    max_output: int,
    tails: _Tails,
) -> tuple[str | None, bytes]:
    """Write the request and read stdout (and a stderr pipe) until EOF, the deadline
    or the bound."""
    import selectors

    chunks: list[bytes] = []
    size = 0
    written = 0
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        if tails.stderr_pipe is not None:
            selector.register(tails.stderr_pipe, selectors.EVENT_READ)
        # Non-blocking, so a command that reads nothing cannot hold the write (and
        # the deadline with it) once the pipe is full; JSON is never empty.
        os.set_blocking(stdin.fileno(), False)
        selector.register(stdin, selectors.EVENT_WRITE)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "external_timeout", b""
            for key, _ in selector.select(remaining):
                if key.fileobj is stdin:
                    try:
                        written += os.write(stdin.fileno(), data[written : written + _CHUNK])
                    except BrokenPipeError:  # it stopped reading: its exit code says why
                        written = len(data)
                    if written >= len(data):
                        selector.unregister(stdin)
                        stdin.close()
                    continue
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                if key.fileobj is not stdout:  # stderr: only its tail, never bounded
                    tails.add(tails.stderr, chunk)
                    continue
                tails.add(tails.stdout, chunk)
                size += len(chunk)
                if size > max_output:
                    return "external_output_too_large", b""
                chunks.append(chunk)
    return None, b"".join(chunks)


def _kill(process: Popen[bytes]) -> None:
    import signal

    # The whole group: a shell's children would otherwise keep running. The group
    # outlives its leader while any member is left, so this finds them too.
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def output_tail(data: bytes, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a run's output as text a person can read safely.

    Decoded as UTF-8 (a broken sequence becomes U+FFFD), cut at a line start when
    cut at all, with terminal escapes (colours, titles) removed and other control
    characters replaced, so printing it cannot drive the person's terminal; ``\\r``
    progress lines become lines. Every word a secret touches is ``[redacted]``
    (:func:`turn_hooks._secrets.redact_secrets`): the tail is private, kept in 0600
    sidecars, but it is shown on screens.
    """
    from turn_hooks._secrets import redact_secrets

    text = data[-limit:].decode("utf-8", "replace") if limit > 0 else ""
    if len(data) > limit and "\n" in text:
        text = text.split("\n", 1)[1]  # the first line is cut: it starts mid-way
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return redact_secrets(_CONTROL.sub("\ufffd", text))
