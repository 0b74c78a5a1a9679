"""Private JSON files on disk, written atomically under a lock beside each file.

The discipline (turn-lifecycle.md §7.5, filelock's how-to): directories 0700, files
and locks 0600; ``<file>.lock`` taken with an explicit timeout around every
read-modify-write; the new content goes to a temp file in the same directory,
is fsynced and replaces the old file with ``os.replace``, and the directory is
fsynced. Readers need no lock, because a reader sees either the old or the new
file, never a torn one. Symlinks anywhere below the root are refused.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecars.paths import lock_path, sidecar_path
from turn_hooks.errors import (
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
MAX_SIDECAR_BYTES = 4 * 1024 * 1024

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
        # Every existing component from the root down must be a real directory or
        # file (a planted symlink could redirect a write outside the root), and every
        # directory must still be private: someone widening it is refused, visibly.
        current = self.root
        for part in ("", *self._relative_parts(path)):
            current = current / part if part else current
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
            if stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
                raise SidecarPermissionError(
                    "a sidecar directory is open to other users", path=str(current)
                )

    def _ensure_dirs(self, directory: Path) -> None:
        missing = []
        current = directory
        while not current.exists():
            missing.append(current)
            current = current.parent
        for created in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(created, DIR_MODE)
            os.chmod(created, DIR_MODE)  # the umask may have narrowed or widened mkdir's mode

    @contextlib.contextmanager
    def lock(self, path: Path) -> Iterator[None]:
        """Hold ``<file>.lock`` exclusively, or raise SidecarLockTimeout."""
        import filelock  # lazily: a read-only Turn never pays for importing it

        self._check_tree(path)
        self._ensure_dirs(path.parent)
        target = lock_path(path)
        lock = filelock.FileLock(str(target), timeout=self.lock_timeout, mode=FILE_MODE)
        try:
            lock.acquire(poll_interval=POLL_INTERVAL)
        except filelock.Timeout as exc:
            raise SidecarLockTimeout(
                "the sidecar is locked by another process", path=str(path)
            ) from exc
        try:
            yield
        finally:
            lock.release()

    def read(self, path: Path) -> Document | None:
        """The document at ``path``, or ``None`` if there is none; lock-free.

        Raises SidecarCorrupt for unreadable or non-object JSON and
        SidecarPermissionError when the file is more open than 0600 or not ours.
        """
        self._check_tree(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._open_error(exc, path) from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SidecarCorrupt("the sidecar is not a regular file", path=str(path))
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
            document = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SidecarCorrupt("the sidecar is not valid JSON", path=str(path)) from exc
        if not isinstance(document, dict):
            raise SidecarCorrupt("the sidecar is not a JSON object", path=str(path))
        return document

    def write(self, path: Path, document: Document) -> None:
        """Replace the document at ``path`` under its lock."""
        with self.lock(path):
            self._replace(path, document)

    @contextlib.contextmanager
    def transaction(self, path: Path) -> Iterator[SidecarTransaction]:
        """Hold the sidecar's lock for a longer read-modify-write (several writes).

        The lock is held until the block ends, so another process's transaction on
        the same sidecar waits (up to the lock timeout) instead of interleaving.
        """
        with self.lock(path):
            yield SidecarTransaction(self, path)

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

    def _replace(self, path: Path, document: Document) -> None:
        try:
            text = dumps(document)
        except (TypeError, ValueError) as exc:
            raise SidecarWriteError("the document is not JSON", path=str(path)) from exc
        atomic_write_text(path, text, mode=FILE_MODE)

    def delete(self, path: Path) -> bool:
        """Remove the document at ``path`` under its lock; ``True`` if it existed."""
        with self.lock(path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                return False
            _fsync_directory(path.parent)
            return True

    def iter_documents(self, *parts: str) -> Iterator[Path]:
        """The ``*.json`` sidecars directly in a directory below the root, sorted by name."""
        directory = self.path(*parts) if parts else self.root
        self._check_tree(directory)
        if not directory.is_dir():
            return iter(())
        return iter(sorted(p for p in directory.glob("*.json") if not p.is_symlink()))

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
        if stat.S_IMODE(info.st_mode) & 0o077 and repair and info.st_uid == os.getuid():
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

    def __init__(self, store: SidecarStore, path: Path) -> None:
        self._store = store
        self.path = path

    def read(self) -> Document | None:
        """The current document, or ``None``."""
        return self._store.read(self.path)

    def write(self, document: Document) -> None:
        """Atomically replace the document."""
        self._store._replace(self.path, document)


def atomic_write_text(path: Path, text: str, *, mode: int) -> None:
    """Temp file in the same directory, fsync, ``os.replace``, fsync the directory.

    A reader sees the old or the new file, never a torn one; on failure the temp
    file is removed and the old file is unchanged.
    """
    fd, temp_name = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
        os.chmod(path, mode)
        _fsync_directory(path.parent)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise SidecarWriteError("the file could not be written", path=str(path)) from exc


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
