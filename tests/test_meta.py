"""Every module imports cleanly under -W error, and the top-level names are ours."""

from __future__ import annotations

import importlib.util
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
        "import sys, turn_hooks, sidecars, hosts.cli; "
        "print(sorted(m for m in ('pydantic', 'filelock', 'httpx') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
