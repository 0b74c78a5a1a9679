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


def capability_of(path):
    """The capability a module of ``capabilities/`` belongs to: its sub-package, or the
    module itself when it is a top-level module."""
    parts = path.relative_to(ROOT / "capabilities").parts
    return parts[0] if len(parts) > 1 else path.stem


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(path, id=str(path.relative_to(ROOT)))
        for path in sorted((ROOT / "capabilities").rglob("*.py"))
    ],
)
def test_capabilities_do_not_import_each_other(path):
    own = capability_of(path)
    for name in imports(path):
        parts = name.split(".")
        if parts[0] == "capabilities":
            assert parts[1:2] in (["providers"], [own]), f"{path.name} imports {name}"


def test_the_layer_check_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import hosts.cli\nfrom capabilities import x\nfrom . import y\n")
    assert list(imports(bad)) == ["hosts.cli", "capabilities"]
    nested = ROOT / "capabilities" / "reward_memory" / "contract" / "values.py"
    assert capability_of(nested) == "reward_memory", "sub-packages belong to their capability"


# --- hosts and the kernel know no capability --------------------------------------------

NEUTRAL_PACKAGES = ("hosts", "turn_hooks")
CAPABILITY_NAMES = ("reward_memory", "candidate_ref", "reflection_json")
"""Names of one capability's formats; a host or the kernel that needs one is no longer
capability-neutral (issue 14)."""


def _docstrings(tree):
    """Bare string statements: module, class and function docstrings, and the attribute
    docstrings the models use. Examples in prose may name a capability."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def code_names(source):
    """Every identifier and string constant of ``source`` outside its docstrings."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in prose:
                yield node.value
        elif isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg
        elif isinstance(node, ast.alias):
            yield from filter(None, (node.name, node.asname))
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def capability_names_in(names):
    return sorted(
        {forbidden for name in names for forbidden in CAPABILITY_NAMES if forbidden in name.lower()}
    )


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(path, id=str(path.relative_to(ROOT)))
        for package in NEUTRAL_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    ],
)
def test_hosts_and_the_kernel_name_no_capability(path):
    found = capability_names_in(code_names(path.read_text(encoding="utf-8")))
    assert found == [], f"{path.relative_to(ROOT)} names {found} outside its docstrings"


@pytest.mark.parametrize(
    "path",
    [pytest.param(path, id=path.name) for path in sorted((ROOT / "hosts").rglob("*.mjs"))],
)
def test_the_bundled_host_plugins_name_no_capability(path):
    assert capability_names_in([path.read_text(encoding="utf-8")]) == []


def test_the_name_check_sees_code_and_skips_prose():
    source = (
        '"""A docstring may name reward_memory as an example."""\n'
        "class Host:\n"
        '    """So may this one: candidate_ref."""\n'
        "    field: int = 1\n"
        '    """And an attribute docstring: reflection_json."""\n'
        "def render(item, reward_memory_recall=None):\n"
        '    return item["candidate_ref"], f"<{item.reflection_json}>"\n'
    )
    assert capability_names_in(code_names(source)) == sorted(CAPABILITY_NAMES)
    assert capability_names_in(code_names('"""reward_memory"""\nx = 1\n')) == []
    assert capability_names_in(["from capabilities.REWARD_MEMORY import x"]) == ["reward_memory"]
    names = set(code_names("from a.b import c as d\nimport e\nasync def f(h):\n    f(g=1)\n"))
    assert names >= {"a.b", "c", "d", "e", "f", "g", "h"}
