"""Import direction (shared/STYLE.md): an AST walk over every module of every package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PACKAGES = ("turn_hooks", "sidecars", "capabilities", "hosts", "conformance")
ALLOWED = {
    "turn_hooks": set(),
    "sidecars": {"turn_hooks"},
    "capabilities": {"turn_hooks", "sidecars"},
    "hosts": {"turn_hooks", "sidecars"},
    "conformance": {"turn_hooks"},
}
# Packages whose sibling imports must go through the public package name only.
PUBLIC_ONLY = {"hosts": {"turn_hooks", "sidecars"}, "conformance": {"turn_hooks"}}
PUBLIC_SUBMODULES = {
    "turn_hooks": {"errors", "models", "hookspecs", "schema", "canonical"},
    "sidecars": set(),
}


def imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield pytest.param(package, path, id=str(path.relative_to(ROOT)))


# The command line is the composition root: it alone may add the maintainers'
# conformance commands to its parser (they are no entry point, so no Turn loads them).
COMPOSITION_ROOT = {("hosts/cli.py", "conformance.commands")}


@pytest.mark.parametrize(("package", "path"), list(modules()))
def test_imports_follow_the_layering(package, path):
    for name in imports(path):
        top = name.split(".")[0]
        if top not in PACKAGES or top == package:
            continue
        if (str(path.relative_to(ROOT)), name) in COMPOSITION_ROOT:
            continue
        assert top in ALLOWED[package], f"{package} may not import {name}"
        if top in PUBLIC_ONLY.get(package, set()):
            parts = name.split(".")
            assert len(parts) == 1 or (len(parts) == 2 and parts[1] in PUBLIC_SUBMODULES[top]), (
                f"{package} must use the public API of {top}, not {name}"
            )


def test_capabilities_do_not_import_each_other():
    for path in (ROOT / "capabilities").glob("*.py"):
        for name in imports(path):
            parts = name.split(".")
            if parts[0] == "capabilities":
                assert parts[1:2] == ["providers"], f"{path.name} imports {name}"


def test_the_layer_check_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import hosts.cli\nfrom capabilities import x\nfrom . import y\n")
    assert list(imports(bad)) == ["hosts.cli", "capabilities"]
