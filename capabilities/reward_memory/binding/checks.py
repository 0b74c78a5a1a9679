"""Which check a repository already has: what ``turn-hooks init`` suggests validating with.

A suggestion is a command this repository can run as it is, found in its own files,
never a guess: with none found, ``init`` says so and asks for the check by name.
Files are read bounded and nothing is run.
"""

from __future__ import annotations

import itertools
import json
import re
import stat
from pathlib import Path

_MAKE_TARGET = re.compile(r"^(test|check)\s*::?(?!=)", re.MULTILINE)
_TEST_FILE = re.compile(r"(test_.*|.*_test)\.py")


def suggest_check(repo: Path) -> tuple[str, str] | None:
    """A check this repository has, and where it was found; ``None`` rather than a guess.

    In order: a Makefile ``test`` (else ``check``) target, the project's own entry
    point; pytest (its configuration, or test files under ``tests/`` or ``test/``), run
    by the repository's own ``.venv`` or ``venv`` interpreter when it has one;
    ``scripts.test`` of package.json (not npm's placeholder); Cargo.toml; go.mod.
    Files are read bounded and never run.
    """
    for name in ("GNUmakefile", "makefile", "Makefile"):
        text = _small_text(repo / name)
        if text is not None:
            targets = set(_MAKE_TARGET.findall(text))
            for target in ("test", "check"):
                if target in targets:
                    return f"make {target}", f"Makefile target {target}"
            break  # make reads the first of these it finds; none other counts
    if _has_pytest(repo):
        # A project with its own virtual environment runs its tests with that
        # interpreter: the python3 on PATH may lack pytest or the project's packages.
        for venv in (".venv", "venv"):
            if _is_virtualenv(repo / venv):
                return f"{venv}/bin/python -m pytest", f"pytest in {venv}"
        return "python3 -m pytest", "pytest"
    package = _small_text(repo / "package.json")
    if package is not None:
        try:
            scripts = json.loads(package).get("scripts")
        except (ValueError, AttributeError):
            scripts = None
        test = scripts.get("test") if isinstance(scripts, dict) else None
        if isinstance(test, str) and test.strip() and "no test specified" not in test:
            return "npm test", "package.json scripts.test"
    if (repo / "Cargo.toml").is_file():
        return "cargo test", "Cargo.toml"
    if (repo / "go.mod").is_file():
        return "go test ./...", "go.mod"
    return None


def _has_pytest(repo: Path) -> bool:
    if (repo / "pytest.ini").is_file() or (repo / "conftest.py").is_file():
        return True
    for name, section in (
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ):
        text = _small_text(repo / name)
        if text is not None and section in text:
            return True
    for directory in (repo / "tests", repo / "test"):
        if directory.is_dir() and not directory.is_symlink():
            try:
                # Bounded: a test tree is read for names only, and only so far.
                found = itertools.islice(directory.rglob("*.py"), 5000)
                if any(_TEST_FILE.fullmatch(path.name) for path in found):
                    return True
            except OSError:
                continue
    return False


def _is_virtualenv(directory: Path) -> bool:
    """A virtual environment made in the repository: a real directory (not a link out)
    with its ``pyvenv.cfg`` and a ``bin/python``."""
    try:
        if not stat.S_ISDIR(directory.lstat().st_mode):
            return False
        return (directory / "pyvenv.cfg").is_file() and (directory / "bin" / "python").exists()
    except OSError:
        return False


def _small_text(path: Path, limit: int = 1 << 20) -> str | None:
    """A regular file's text, if it is one and small; ``None`` otherwise."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode) or path.stat().st_size > limit:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
