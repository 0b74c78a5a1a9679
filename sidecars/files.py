"""Reading a file someone else named: bounded, never blocking, regular files only.

A registry, a config, an ``--input`` file, a ``hooks.json`` or a patch layer is
named by a user or a host, so it may be anything: ``/dev/zero`` would fill memory
if read whole, and a FIFO opened for reading waits for a writer for ever (a hook
would hang its Turn, and a detached worker would sit on its lock). So every such
file is opened with ``O_NONBLOCK``, refused unless ``fstat`` says it is a regular
file, and read for at most one byte over its bound. The bound and the reason codes
are those of :func:`turn_hooks.loads_bounded`: 4 MiB, ``<prefix>_too_large``.

:func:`kind_problem` is the one test of what kind of file a path holds, shared by
the sidecar store and the embedded SQLite store, which must also refuse links.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import IO, Any

from turn_hooks import MAX_JSON_SIZE
from turn_hooks.errors import InvalidInputError

STDIN = "-"
"""The source name that means standard input."""


def kind_problem(mode: int, *, directory: bool = False) -> str | None:
    """What is wrong with the kind of file an ``lstat`` mode describes, if anything.

    ``"symlink"`` for a link, ``"not_regular"`` for anything but a regular file (a
    directory when ``directory``), ``None`` when the kind is the expected one.
    """
    if stat.S_ISLNK(mode):
        return "symlink"
    expected = stat.S_ISDIR(mode) if directory else stat.S_ISREG(mode)
    return None if expected else "not_regular"


def _refused(reason_prefix: str, suffix: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, reason_code=f"{reason_prefix}_{suffix}")


def read_stream(stream: IO[Any] | None, *, reason_prefix: str, limit: int = MAX_JSON_SIZE) -> bytes:
    """At most ``limit`` bytes of an open stream (its byte buffer when it has one).

    One byte over the bound is read and no more, so an endless writer (``yes |``)
    costs a bounded read; ``<prefix>_too_large`` says so. No stream reads as empty.
    A text stream without a buffer (a test's ``StringIO``) is encoded as UTF-8, with
    lone surrogates kept for the JSON reader to judge.

    :raises InvalidInputError: ``<prefix>_unreadable`` or ``<prefix>_too_large``.
    """
    if stream is None:
        return b""
    source = getattr(stream, "buffer", stream)
    try:
        data = source.read(limit + 1)
    except (OSError, ValueError) as exc:  # ValueError: a closed stream
        raise _refused(reason_prefix, "unreadable", "the input cannot be read") from exc
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogatepass")
    if len(data) > limit:
        raise _refused(reason_prefix, "too_large", "the input is larger than its bound")
    return bytes(data)


def read_bounded(
    path: str | os.PathLike[str],
    *,
    reason_prefix: str,
    limit: int = MAX_JSON_SIZE,
    missing: bytes | None = None,
    name: str = "the file",
) -> bytes:
    """The bytes of a regular file, read without blocking and within ``limit``.

    :param reason_prefix: the reason codes are ``<prefix>_unreadable`` (absent, no
        permission, a NUL in the path), ``<prefix>_not_regular`` (a FIFO, socket,
        device or directory) and ``<prefix>_too_large``.
    :param missing: returned instead when the file does not exist, for callers to
        whom an absent file is an empty one.

    A symlink is followed (a user's registry may well be one); what it points to
    must still be a regular file.
    """
    try:
        # O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and is
        # then refused by its kind; a regular file ignores the flag.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        if missing is not None:
            return missing
        raise _refused(reason_prefix, "unreadable", f"{name} does not exist") from exc
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it
            raise _refused(reason_prefix, "not_regular", f"{name} is not a regular file") from exc
        raise _refused(reason_prefix, "unreadable", f"{name} cannot be opened") from exc
    except ValueError as exc:  # a NUL in the path
        raise _refused(reason_prefix, "unreadable", f"{name} has an invalid path") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refused(reason_prefix, "not_regular", f"{name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise _refused(reason_prefix, "unreadable", f"{name} cannot be read") from exc
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _refused(reason_prefix, "too_large", f"{name} is larger than its bound")
    return data


def read_source(source: str, *, reason_prefix: str = "input", limit: int = MAX_JSON_SIZE) -> bytes:
    """An ``--input`` source: a file through :func:`read_bounded`, ``-`` for stdin
    through :func:`read_stream`; both bounded, both with the same reason codes."""
    if source == STDIN:
        return read_stream(sys.stdin, reason_prefix=reason_prefix, limit=limit)
    return read_bounded(source, reason_prefix=reason_prefix, limit=limit)
