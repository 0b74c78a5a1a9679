"""The wheel builds, holds exactly the five packages with their data, and declares the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("turn_hooks-*.whl")
    return zipfile.ZipFile(built)


def test_wheel_contains_the_five_packages_and_nothing_else(wheel):
    tops = {name.split("/")[0] for name in wheel.namelist() if not name.startswith("turn_hooks-")}
    assert tops == {"turn_hooks", "capabilities", "sidecars", "hosts", "conformance"}


def test_wheel_ships_schemas_and_type_markers(wheel):
    names = set(wheel.namelist())
    assert "turn_hooks/schemas/turn_context.json" in names
    assert "hosts/dsh/turn_hooks_dsh.mjs" in names, "the DSH plugin ships in the package"
    assert "conformance/dsh_hmr_shim.mjs" in names
    assert "capabilities/providers/synonyms.txt" in names, "recall's synonym table ships"
    for package in ("turn_hooks", "capabilities", "sidecars", "hosts", "conformance"):
        assert f"{package}/py.typed" in names


def test_wheel_declares_the_console_script_and_entry_points(wheel):
    [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "turn-hooks = hosts._entry:main" in text
    [group] = re.findall(r"\[turn_hooks\]\n((?:.+\n?)*)", text)
    assert group.split() == ["reward_memory", "=", "capabilities.reward_memory.plugin:plugin"], (
        "production entry points are the built-in capabilities only"
    )
