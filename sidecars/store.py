"""Private JSON files on disk, written atomically under a lock beside each file.

The discipline (turn-lifecycle.md §7.5, filelock's how-to): directories 0700, files
and locks 0600; ``<file>.lock`` taken with an explicit timeout around every
read-modify-write (``flock(2)``, the lock filelock takes on Unix); the new content
goes to a temp file in the same directory, is fsynced and replaces the old file with
``os.replace``, and the directory is fsynced. Readers need no lock, because a reader
sees either the old or the new file, never a torn one. Symlinks anywhere below the
root are refused (and, for a Goal's ``.local/turn-hooks``, a linked ``.local`` too).

Nothing here may block a Turn: files are opened with ``O_NONBLOCK | O_NOFOLLOW`` and
anything that is not a regular file (a FIFO, a socket, a device, a directory) at a
sidecar or lock path is refused with ``SidecarCorrupt`` (``sidecar_not_regular``)
before it is read or locked, and directory listings yield regular files only. A FIFO
opened for reading would otherwise wait for a writer for ever.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecars.files import kind_problem
from sidecars.paths import lock_path, sidecar_path, tree_top
from turn_hooks import loads_bounded
from turn_hooks.errors import (
    InvalidInputError,
    SidecarCorrupt,
    SidecarError,
    SidecarLockTimeout,
    SidecarPathError,
    SidecarPermissionError,
    SidecarWriteError,
)

FILE_MODE = 0o600
DIR_MODE = 0o700
DEFAULT_LOCK_TIMEOUT = 5.0
POLL_INTERVAL = 0.05
"""The longest pause between two tries of a held lock (:func:`_acquire`)."""
FIRST_POLL = 0.001
"""The first pause: most locks a hook meets are held for milliseconds."""
MAX_SIDECAR_BYTES = 4 * 1024 * 1024
STALE_TEMP_SECONDS = 60.0
"""A temp file of a sidecar older than this was left by a writer killed mid-replace."""
_TEMP_TAIL = re.compile(r"\.[a-z0-9_]{8}")
"""What ``tempfile.mkstemp`` appends to the ``<name>.`` prefix atomic_write_text gives."""
_swept: set[Path] = set()
"""Directories whose stale temp files this process already removed: once is enough."""

Document = dict[str, Any]


def dumps(document: Document) -> str:
    """The on-disk form: ``indent=2``, sorted keys, non-ASCII kept, one newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True, slots=True)
class SidecarCheck:
    """The verdict on one sidecar file, public-safe (relative name, no content)."""

    name: str
    status: str
    """``ok``, ``repaired`` or the reason code of the failure."""
    mode: str | None = None
    size: int | None = None
    schema_version: str | None = None


class SidecarStore:
    """JSON sidecars below one root directory.

    :param root: the sidecar root (usually :func:`sidecars.paths.sidecar_root`).
    :param lock_timeout: seconds to wait for a lock; a per-Turn path never blocks
        forever, it fails open with :class:`SidecarLockTimeout`.
    """

    def __init__(self, root: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.root = Path(root).absolute()
        self.lock_timeout = lock_timeout
        self.sweep_temps = True
        """Whether a write first removes the stale temp files of its directory (once
        per directory and process, :func:`_remove_stale_temps`). That lists the whole
        directory, and some grow by a sidecar a Turn: a hook on the Turn's critical path
        turns it off and leaves the sweep to the process it hands its work to."""
        self._above: list[Path] | None = None
        """The directories from the tree's top down to the root, the root excluded."""

    def path(self, *parts: str) -> Path:
        """A sidecar path below the root from safe components."""
        return sidecar_path(self.root, *parts)

    def _relative_parts(self, path: Path) -> tuple[str, ...]:
        try:
            return Path(path).absolute().relative_to(self.root).parts
        except ValueError as exc:
            raise SidecarPathError(
                "the sidecar path is outside its root", reason_code="sidecar_path_escape"
            ) from exc

    def _check_tree(self, path: Path) -> None:
        # Every existing component from the tree's top down must be a real directory
        # (or, last, the file): a planted symlink could redirect a write outside the
        # root. Every directory from the root down must still be private: someone
        # widening it is refused, visibly. Above the root (``.local``) only links are
        # refused, since the private root inside keeps the tree private.
        parts = self._relative_parts(path)
        if self._above is None:  # the same for every path of this store: made once
            top = tree_top(self.root)
            self._above = [
                Path(*self.root.parts[:n]) for n in range(len(top.parts), len(self.root.parts))
            ]
        private_from = len(self._above)
        chain = [*self._above, self.root]
        for part in parts:
            chain.append(chain[-1] / part)
        for index, current in enumerate(chain):
            try:
                info = os.lstat(current)
            except (FileNotFoundError, NotADirectoryError):
                return  # nothing below can be a link; opening it fails with a typed error
            if stat.S_ISLNK(info.st_mode):
                raise SidecarPathError(
                    "a sidecar path component is a symlink",
                    reason_code="sidecar_symlink",
                    path=str(path),
                )
            if stat.S_ISDIR(info.st_mode):
                if index >= private_from and stat.S_IMODE(info.st_mode) & 0o077:
                    raise SidecarPermissionError(
                        "a sidecar directory is open to other users", path=str(current)
                    )
            elif index < len(chain) - 1:
                raise SidecarPermissionError(
                    "a sidecar directory is not a directory",
                    reason_code="sidecar_unreadable",
                    path=str(current),
                )

    def _ensure_dirs(self, directory: Path) -> None:
        # Every missing directory is made 0700, ``.local`` and any above the root
        # included (XDG asks the same of a missing state directory). ``lexists``: a
        # dangling link is not missing; _check_tree has refused it below the top.
        missing = []
        current = directory
        while not os.path.lexists(current):
            missing.append(current)
            current = current.parent
        for created in reversed(missing):
            try:
                os.mkdir(created, DIR_MODE)
            except FileExistsError:
                continue  # another process made it, the same way
            except OSError as exc:
                raise SidecarWriteError(
                    "a sidecar directory could not be created", path=str(created)
                ) from exc
            os.chmod(created, DIR_MODE)  # the umask may have narrowed or widened mkdir's mode

    def _check_kind(self, path: Path) -> None:
        # A sidecar or lock path holds a regular file or nothing. Anything else is
        # refused before the lock or a reader opens it: a FIFO could block, a link
        # could point anywhere (opening a lock creates its target).
        try:
            problem = kind_problem(os.lstat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return
        if problem == "symlink":
            raise SidecarPathError(
                "the sidecar or its lock is a symlink",
                reason_code="sidecar_symlink",
                path=str(path),
            )
        if problem is not None:
            raise SidecarCorrupt(
                "the sidecar or its lock is not a regular file",
                reason_code="sidecar_not_regular",
                path=str(path),
            )

    def _check_path(self, path: Path) -> None:
        # What refuses a sidecar before its lock is opened: the tree, then the
        # sidecar's and its lock's kinds.
        self._check_tree(path)
        self._check_kind(path)
        self._check_kind(lock_path(path))

    def check_writable(self, path: Path) -> None:
        """Raise what taking the lock of ``path`` and reading it raise before anything
        is written: a link or a widened directory on the way, a sidecar or lock that is
        not a regular file, a sidecar more open than 0600 or not this user's. Nothing
        is created or read: a check for a caller that wants to know before it writes
        later (:mod:`hosts.settlement.hook_log`)."""
        self._check_path(path)
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        self._check_mode(info, path)

    def make_directory(self, directory: Path) -> None:
        """Make ``directory`` below the root, and every missing one on the way, 0700,
        once the existing ones are checked: no link, none open to other users.

        :raises SidecarError: a link or a widened directory on the way, or one that
            cannot be made.
        """
        self._check_tree(directory)
        self._ensure_dirs(directory)

    @contextlib.contextmanager
    def lock(self, path: Path) -> Iterator[int]:
        """Hold ``<file>.lock`` exclusively, or raise SidecarLockTimeout; the block gets
        the lock's descriptor (a forked child that keeps it holds the lock on)."""
        self._check_path(path)
        self._ensure_dirs(path.parent)
        fd = _acquire(lock_path(path), self.lock_timeout, sidecar=path)
        try:
            yield fd
        finally:
            os.close(fd)  # closing the only descriptor releases the flock

    def read(self, path: Path) -> Document | None:
        """The document at ``path``, or ``None`` if there is none; lock-free.

        Raises SidecarCorrupt for unreadable or non-object JSON and
        SidecarPermissionError when the file is more open than 0600 or not ours.
        """
        self._check_tree(path)
        try:
            # O_NONBLOCK: opening a FIFO for reading would wait for a writer for ever.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._open_error(exc, path) from exc
        try:
            info = os.fstat(fd)
            if kind_problem(info.st_mode) is not None:
                raise SidecarCorrupt(
                    "the sidecar is not a regular file",
                    reason_code="sidecar_not_regular",
                    path=str(path),
                )
            self._check_mode(info, path)
            with os.fdopen(fd, "rb", closefd=False) as handle:
                raw = handle.read(MAX_SIDECAR_BYTES + 1)
        finally:
            os.close(fd)
        return self._decode(raw, path)

    def _open_error(self, exc: OSError, path: Path) -> SidecarError:
        if exc.errno == errno.ELOOP:
            return SidecarPathError(
                "the sidecar is a symlink", reason_code="sidecar_symlink", path=str(path)
            )
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
            return SidecarCorrupt(
                "the sidecar is not a regular file",
                reason_code="sidecar_not_regular",
                path=str(path),
            )
        return SidecarPermissionError(
            "the sidecar cannot be opened", reason_code="sidecar_unreadable", path=str(path)
        )

    def _check_mode(self, info: os.stat_result, path: Path) -> None:
        if stat.S_IMODE(info.st_mode) & 0o077 or info.st_uid != os.getuid():
            raise SidecarPermissionError(
                "the sidecar is readable by others or not owned by this user; "
                "run `turn-hooks sidecar check --repair` after checking who changed it",
                path=str(path),
            )

    def _decode(self, raw: bytes, path: Path) -> Document:
        if len(raw) > MAX_SIDECAR_BYTES:
            raise SidecarCorrupt("the sidecar is larger than 4 MiB", path=str(path))
        try:
            document = loads_bounded(raw, max_size=MAX_SIDECAR_BYTES)
        except InvalidInputError as exc:  # not UTF-8, not JSON, too deep, huge numbers
            raise SidecarCorrupt("the sidecar is not valid JSON", path=str(path)) from exc
        if not isinstance(document, dict):
            raise SidecarCorrupt("the sidecar is not a JSON object", path=str(path))
        return document

    def write(self, path: Path, document: Document, *, durable: bool = True) -> None:
        """Replace the document at ``path`` under its lock.

        ``durable=False``: without the fsyncs, for a record whose loss in a crash of the
        machine costs nothing but itself (:meth:`SidecarTransaction.write`).
        """
        with self.lock(path):
            self._replace(path, document, durable=durable)

    @contextlib.contextmanager
    def transaction(self, path: Path) -> Iterator[SidecarTransaction]:
        """Hold the sidecar's lock for a longer read-modify-write (several writes).

        The lock is held until the block ends, so another process's transaction on
        the same sidecar waits (up to the lock timeout) instead of interleaving.
        """
        with self.lock(path) as held:
            yield SidecarTransaction(self, path, held)

    def update(
        self, path: Path, change: Callable[[Document | None], Document | None]
    ) -> Document | None:
        """Read-modify-write under the lock.

        ``change`` gets the current document (``None`` if absent) and returns the new
        one, or ``None`` to leave the file as it is. A corrupt or widened file raises
        before ``change`` runs, so its bytes are never overwritten silently.
        """
        with self.lock(path):
            current = self.read(path)
            new = change(current)
            if new is None:
                return current
            self._replace(path, new)
            return new

    def _replace(self, path: Path, document: Document, *, durable: bool = True) -> None:
        try:
            text = dumps(document)
            size = len(text.encode("utf-8"))  # a lone surrogate is no JSON text either
        except (TypeError, ValueError) as exc:
            raise SidecarWriteError("the document is not JSON", path=str(path)) from exc
        if size > MAX_SIDECAR_BYTES:
            # Never write what read() refuses: the file would be stuck unreadable.
            raise SidecarWriteError(
                "the document is larger than 4 MiB", reason_code="sidecar_too_large", path=str(path)
            )
        if self.sweep_temps:
            _remove_stale_temps(path.parent)
        atomic_write_text(path, text, mode=FILE_MODE, durable=durable)

    def delete(self, path: Path, *, drop_lock: bool = False) -> bool:
        """Remove the document at ``path`` under its lock; ``True`` if it existed.

        With ``drop_lock`` the lock file goes too, last, while still held: a sidecar
        made and removed once per Turn (a queue marker) would otherwise leave a lock
        file a Turn behind, and every listing of its directory would grow with the
        history. A process waiting for the removed lock finds, once it holds it, that
        the name is gone, and locks the file there is instead (:func:`_acquire`); the
        only overlap is with this holder, which has done its work by then. (A
        ``filelock.FileLock`` does not look again: it must not share such a sidecar.)
        """
        with self.lock(path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                existed = False
            else:
                existed = True
                _fsync_directory(path.parent)
            if drop_lock:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock_path(path))
            return existed

    def raise_flag(self, path: Path, *, touch: bool = False) -> None:
        """Make the empty flag file at ``path`` (0600) and make it durable; one already
        there is kept, and with ``touch`` its modification time becomes now.

        A flag says one thing by being there, so it needs no lock: creating and
        removing a name are each atomic. Anything but a regular file in its place is
        refused, as for a sidecar.
        """
        self._check_tree(path)
        self._ensure_dirs(path.parent)
        # O_EXCL: never opens what is there, a link (not followed) or a FIFO included.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, FILE_MODE)
        except FileExistsError:
            self._check_kind(path)
            if touch:
                self._touch(path)
            return
        except OSError as exc:
            raise SidecarWriteError("the flag could not be made", path=str(path)) from exc
        try:
            os.fchmod(fd, FILE_MODE)  # whatever the umask made of it
        finally:
            os.close(fd)
        _fsync_directory(path.parent)

    def _touch(self, path: Path) -> None:
        try:
            os.utime(path, follow_symlinks=False)
        except OSError as exc:
            raise SidecarWriteError("the flag could not be touched", path=str(path)) from exc

    def lower_flag(self, path: Path) -> bool:
        """Remove the flag at ``path``; ``True`` if it was there.

        Not made durable: a flag that comes back after a crash says again what it
        said, and whoever reads flags checks what they stand for.
        """
        self._check_tree(path)
        self._check_kind(path)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise SidecarWriteError("the flag could not be removed", path=str(path)) from exc
        return True

    def flag_age(self, path: Path) -> float | None:
        """Seconds since the flag at ``path`` was made or touched; ``None`` when there is
        no flag (or something else is in its place)."""
        self._check_tree(path)
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        return time.time() - info.st_mtime

    def flags(self, *parts: str, suffix: str) -> list[str]:
        """The names of the flags ending in ``suffix`` directly in a directory below
        the root, sorted; regular files only, as :meth:`iter_documents` lists."""
        directory = self.path(*parts)
        self._check_tree(directory)
        try:
            with os.scandir(directory) as entries:
                return sorted(
                    entry.name
                    for entry in entries
                    if entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False)
                )
        except (FileNotFoundError, NotADirectoryError):
            return []

    def drop_orphan_locks(self, *parts: str) -> int:
        """Remove the lock files of ``*.json`` sidecars no longer there, directly in a
        directory below the root; how many went.

        What :meth:`delete` with ``drop_lock`` does, for the locks deletes without it
        left (an older version's, one a Turn). Each is taken without waiting and
        removed while held, as ``delete`` removes one, so a lock someone holds stays
        and one whose sidecar was written since is only made again by its next user.
        """
        directory = self.path(*parts)
        self._check_tree(directory)
        try:
            with os.scandir(directory) as entries:
                names = {entry.name for entry in entries if entry.is_file(follow_symlinks=False)}
        except (FileNotFoundError, NotADirectoryError):
            return 0
        dropped = 0
        for name in sorted(names):
            sidecar = name.removesuffix(".lock")
            if sidecar == name or not sidecar.endswith(".json") or sidecar in names:
                continue
            try:
                with SidecarStore(self.root, lock_timeout=0).lock(directory / sidecar):
                    os.unlink(directory / name)
            except (SidecarError, OSError):
                continue  # held, or gone already: not this sweep's
            dropped += 1
        return dropped

    def iter_documents(self, *parts: str) -> Iterator[Path]:
        """The ``*.json`` sidecars directly in a directory below the root, sorted by name.

        Regular files only: a link, a FIFO or a directory with a ``.json`` name is
        skipped, so a consumer that reads each one never meets one (a FIFO would
        have blocked the reader).
        """
        directory = self.path(*parts) if parts else self.root
        self._check_tree(directory)
        try:
            with os.scandir(directory) as entries:
                found = [
                    Path(entry.path)
                    for entry in entries
                    if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)
                ]
        except (FileNotFoundError, NotADirectoryError):
            return iter(())
        return iter(sorted(found))

    def check(self, path: Path, *, repair: bool = False) -> SidecarCheck:
        """Verify one sidecar: no links, mode 0600, ours, a JSON object, lock free.

        With ``repair`` a widened mode is narrowed back to 0600 (reported as
        ``repaired``); corrupt content is never repaired.
        """
        name = "/".join(self._relative_parts(path))
        try:
            self._check_tree(path)
            info = os.lstat(path)
        except SidecarError as exc:
            return SidecarCheck(name=name, status=exc.reason_code)
        except FileNotFoundError:
            return SidecarCheck(name=name, status="sidecar_missing")
        mode = oct(stat.S_IMODE(info.st_mode))
        status = "ok"
        widened = stat.S_IMODE(info.st_mode) & 0o077
        if widened and repair and stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid():
            os.chmod(path, FILE_MODE)
            status = "repaired"
        try:
            document = self.read(path)
            with self.lock(path):
                pass
        except SidecarError as exc:
            return SidecarCheck(name=name, status=exc.reason_code, mode=mode, size=info.st_size)
        assert document is not None  # lstat just saw the file; a racing delete is a bug
        version = document.get("schema_version")
        return SidecarCheck(
            name=name,
            status=status,
            mode=mode,
            size=info.st_size,
            schema_version=version if isinstance(version, str) else None,
        )


class SidecarTransaction:
    """Reads and atomic writes of one sidecar while its lock is held."""

    def __init__(self, store: SidecarStore, path: Path, lock_fd: int) -> None:
        self._store = store
        self.path = path
        self.lock_fd = lock_fd
        """The descriptor that holds the lock (``flock(2)``, on the open file)."""

    def read(self) -> Document | None:
        """The current document, or ``None``."""
        return self._store.read(self.path)

    def write(self, document: Document, *, durable: bool = True) -> None:
        """Atomically replace the document.

        ``durable=False`` skips the two fsyncs (file and directory): for a write that
        another fsynced record already covers, so a crash that loses it loses nothing
        (readers see the old file, the new one or, at worst, an unreadable one, never a
        torn one).
        """
        self._store._replace(self.path, document, durable=durable)


def _acquire(target: Path, timeout: float, *, sidecar: Path) -> int:
    """An exclusive ``flock(2)`` on ``target``, polled for ``timeout`` s: after 1 ms
    first, then twice as long each time up to every 50 ms. A hook waiting for a lock
    held briefly (the next PreTurn waiting for a settlement to finish) gets it about
    when it is let go, not up to 50 ms later, and one held long costs a poll every
    50 ms.

    This is the lock ``filelock.FileLock`` takes on Unix (the same call on the same
    file, which stays in place, mode 0600), so a process holding one of those
    excludes this one and the other way round; each lock is its own descriptor, so a
    second lock of the same file in one process waits too, as a second ``FileLock``
    does. Taken here directly, it spares every hook that writes a sidecar importing
    filelock (tens of milliseconds, on every Turn).
    """
    import fcntl

    deadline = time.monotonic() + timeout
    pause = FIRST_POLL
    while True:
        fd = _open_lock(target)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise SidecarLockTimeout(
                            "the sidecar is locked by another process", path=str(sidecar)
                        ) from None
                    time.sleep(min(pause, left))
                    pause = min(2 * pause, POLL_INTERVAL)
        except BaseException:
            os.close(fd)
            raise
        if _names(target, fd):
            return fd
        # Its holder removed the lock file with what it locked (delete(drop_lock=True)):
        # this lock is of a file no one else opens now, so take the one there is.
        os.close(fd)


def _open_lock(target: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(target, flags, FILE_MODE)
    with contextlib.suppress(PermissionError):  # another user's lock: only narrowed
        os.fchmod(fd, FILE_MODE)  # whatever the umask made of a new one
    return fd


def _names(target: Path, fd: int) -> bool:
    """Whether ``target`` still names the file open at ``fd`` (gone, or not to be
    looked at: no, and the caller opens the name again, which says why if it fails)."""
    try:
        held, named = os.fstat(fd), os.lstat(target)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def atomic_write_text(path: Path, text: str, *, mode: int, durable: bool = True) -> None:
    """Temp file in the same directory, fsync, ``os.replace``, fsync the directory.

    A reader sees the old or the new file, never a torn one; on failure the temp
    file is removed and the old file is unchanged. ``durable=False`` leaves out both
    fsyncs (about 4 ms each): the replace is still atomic for every process, but a
    crash of the machine may leave the old file or an empty one.
    """
    fd, temp_name = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(temp_name, path)
        os.chmod(path, mode)
        if durable:
            _fsync_directory(path.parent)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise SidecarWriteError("the file could not be written", path=str(path)) from exc


def _remove_stale_temps(directory: Path) -> None:
    """Remove temp files that writers killed between ``mkstemp`` and ``os.replace`` left.

    Once per directory and process, so a Turn pays one listing at most. Only regular
    files named ``<sidecar>.json.`` plus mkstemp's eight-character tail, older than
    :data:`STALE_TEMP_SECONDS` go: a live writer's temp file lives for milliseconds, and
    the caller holds the lock of the sidecar it writes. Failing to clean is harmless.
    """
    if directory in _swept:
        return
    _swept.add(directory)
    cutoff = time.time() - STALE_TEMP_SECONDS
    try:
        with os.scandir(directory) as entries:
            stale = [
                entry.path
                for entry in entries
                if ".json." in entry.name
                and _TEMP_TAIL.fullmatch(entry.name[entry.name.rindex(".json.") + 5 :])
                and entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_mtime < cutoff
            ]
    except OSError:
        return
    for name in stale:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
