"""Every module imports cleanly under -W error, and the top-level names are ours."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PACKAGES = ("turn_hooks", "capabilities", "sidecars", "hosts", "conformance")


def module_names():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("module", list(module_names()))
def test_module_imports_cleanly_with_warnings_as_errors(module):
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", PACKAGES)
def test_top_level_name_resolves_inside_this_distribution(name):
    origin = Path(importlib.util.find_spec(name).origin).resolve()
    assert origin.is_relative_to(ROOT), f"{name} resolves to another distribution: {origin}"


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_is_typed(name):
    assert (ROOT / name / "py.typed").is_file()


def test_importing_the_hook_path_does_not_import_pydantic_or_filelock():
    code = (
        "import sys, turn_hooks, sidecars, hosts.cli.command; "
        "print(sorted(m for m in ('pydantic', 'filelock', 'httpx') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def uncovered():
    """This environment without a coverage run's variables: a process that measures
    its own imports must not start coverage (which imports sockets and more) first."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("COVERAGE_", "COV_"))}


def test_the_hook_client_imports_only_what_a_bare_interpreter_has_and_one_c_module():
    # The resident server's client runs on every Turn: every module it imports is
    # time on the Turn's critical path (an import of __future__ included).
    code = (
        "import sys; before = set(sys.modules); "
        "import hosts._entry, hosts._warm; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=uncovered()
    )
    assert result.stdout.split() == ["_socket", "hosts", "hosts._entry", "hosts._warm"]


def test_a_hook_that_writes_a_sidecar_imports_no_filelock(tmp_path):
    # The sidecar store locks with flock(2) itself: a same-Turn receipt, a spool entry
    # or a hook log line costs no filelock import (tens of milliseconds per Turn).
    code = (
        "import sys; from sidecars import SidecarStore; "
        "store = SidecarStore(sys.argv[1]); "
        "store.update(store.path('a.json'), lambda doc: {'n': 1}); "
        "print('filelock' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / ".local" / "turn-hooks")],
        capture_output=True,
        text=True,
        check=True,
        env=uncovered(),
    )
    assert result.stdout.strip() == "False"
