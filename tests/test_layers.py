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
COMPOSITION_ROOT = {("hosts/cli/command.py", "conformance.commands")}


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
    """``capabilities/<x>.py`` and everything under ``capabilities/<x>/`` belong to ``x``."""
    parts = path.relative_to(ROOT / "capabilities").parts
    if parts == ("__init__.py",):
        return None
    return parts[0].removesuffix(".py")


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
            assert parts[1:2] in ([own], ["providers"]), f"{path.relative_to(ROOT)} imports {name}"


def test_the_capability_check_sees_sub_packages():
    assert capability_of(ROOT / "capabilities/reward_memory/turn/pre_turn.py") == "reward_memory"
    assert capability_of(ROOT / "capabilities/example_echo.py") == "example_echo"
    assert capability_of(ROOT / "capabilities/__init__.py") is None


# Reward memory's own layers, as data. Each sub-package may import itself and the
# sub-packages listed for it, nothing else:
#
#                  cli
#                   |
#                reports
#          +--------+
#        turn    curation
#          |        |
#       utility     |
#          +--------+
#                memory
#                   |
#                binding
#                   |
#                contract
#
# turn and curation sit side by side and never import each other. turn imports
# utility since issue 39: a settled Turn records its memory application and the
# utility observation it leads to, so utility is on the hook path; utility never
# imports turn. plugin.py, the entry point at the package root, imports binding/ and
# turn/ inside its hooks.
RM = ROOT / "capabilities" / "reward_memory"
RM_NAME = "capabilities.reward_memory"
BELOW_THE_TOP = {"contract", "binding", "memory", "turn", "curation", "utility", "reports"}
RM_LAYERS = {
    "contract": set(),
    "binding": {"contract"},
    "memory": {"contract", "binding"},
    "turn": {"contract", "binding", "memory", "utility"},
    "curation": {"contract", "binding", "memory"},
    "utility": {"contract", "binding", "memory"},
    "reports": BELOW_THE_TOP - {"reports"},
    "cli": BELOW_THE_TOP,
}
# Modules at the package root: the entry point (its path is in pyproject.toml) and
# the package docstring. Every other module lives in a sub-package.
RM_ROOT_MODULES = {"__init__.py", "plugin.py"}
PLUGIN_MAY_IMPORT = {"contract", "binding", "memory", "turn"}
# What a hook process may import. reports/ and cli/ are never on it: the plugin's
# register_commands hook imports cli/ inside its body, and only the command line
# calls that hook, never a Turn.
HOOK_PATH = ("plugin.py", "turn", "utility", "memory", "binding", "contract")
OFF_THE_HOOK_PATH = {"reports", "cli"}
COMMANDS_HOOK = "register_commands"


def reward_memory_imports(path):
    """``(sub-package, enclosing function)`` for each reward-memory import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                else function
            )
            if isinstance(child, ast.ImportFrom) and child.level:
                yield ".", inner  # relative imports hide the layer; the package uses none
            names = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                if child.module == RM_NAME:
                    names = [f"{RM_NAME}.{alias.name}" for alias in child.names]
                else:
                    names = [child.module]
            for name in names:
                if name == RM_NAME or name.startswith(RM_NAME + "."):
                    parts = name.split(".")
                    yield (parts[2] if len(parts) > 2 else ""), inner
            yield from walk(child, inner)

    yield from walk(tree, None)


def layer_of(path):
    """The sub-package a module is in, or its file name at the package root."""
    return path.relative_to(RM).parts[0]


def reward_memory_modules(*, hook_path_only=False):
    for path in sorted(RM.rglob("*.py")):
        if not hook_path_only or layer_of(path) in HOOK_PATH:
            yield pytest.param(path, id=str(path.relative_to(RM)))


def test_the_reward_memory_layers_are_the_sub_packages_on_disk():
    on_disk = {path.name for path in RM.iterdir() if (path / "__init__.py").is_file()}
    assert on_disk == set(RM_LAYERS)
    assert {path.name for path in RM.glob("*.py")} == RM_ROOT_MODULES, "no flat modules"


def test_the_reward_memory_layers_are_a_layering():
    # Transitive (whatever a layer may import, its importers may too) and acyclic.
    for layer, allowed in RM_LAYERS.items():
        assert layer not in allowed
        for lower in allowed:
            assert RM_LAYERS[lower] <= allowed, f"{layer} may import {lower} but not all below it"


@pytest.mark.parametrize("path", list(reward_memory_modules()))
def test_reward_memory_imports_follow_its_layers(path):
    layer = layer_of(path)
    allowed = PLUGIN_MAY_IMPORT if layer == "plugin.py" else RM_LAYERS.get(layer, set())
    for target, function in reward_memory_imports(path):
        if layer == "plugin.py" and target == "cli" and function == COMMANDS_HOOK:
            continue
        assert target == layer or target in allowed, f"{layer} may not import {target or RM_NAME}"


@pytest.mark.parametrize(
    "path",
    [
        param
        for param in reward_memory_modules()
        if param.values[0].relative_to(RM).parts[0] in HOOK_PATH
    ],
)
def test_nothing_on_the_hook_path_imports_reports_or_cli(path):
    for target, function in reward_memory_imports(path):
        if path.name == "plugin.py" and function == COMMANDS_HOOK:
            continue
        assert target not in OFF_THE_HOOK_PATH, f"{path.relative_to(RM)} imports {target}"


def test_the_plugin_imports_the_core_only_inside_its_hooks():
    # Importing the entry point must stay cheap: every Turn loads it.
    assert all(function is not None for _, function in reward_memory_imports(RM / "plugin.py"))


def test_the_reward_memory_layer_check_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from capabilities.reward_memory.reports.route import x\n"
        "from capabilities.reward_memory import cli\n"
        "def register_commands():\n"
        "    import capabilities.reward_memory.turn.pre_turn\n"
        "from . import y\n"
    )
    assert list(reward_memory_imports(bad)) == [
        ("reports", None),
        ("cli", None),
        ("turn", "register_commands"),
        (".", None),
    ]


def test_the_layer_check_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import hosts.cli\nfrom capabilities import x\nfrom . import y\n")
    assert list(imports(bad)) == ["hosts.cli", "capabilities"]


MAX_MODULE_LINES = 400


@pytest.mark.parametrize("path", list(reward_memory_modules()))
def test_no_reward_memory_module_outgrows_one_job(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, (
        f"{path.relative_to(ROOT)} has {lines} lines: split it along a seam into its sub-package"
    )


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


# --- the rooms of hosts/ ------------------------------------------------------------
#
#        _entry, _resident   (the front door: paths and module names installed hooks
#              |              and running servers are known by, so they stay flat)
#             cli
#              |
#           adapters
#              |
#            setup
#              |
#            _warm            (the resident server's client, flat beside _entry)
#              |
#          settlement
#              |
#            facts
#
# Each room may import itself and the rooms below it; nothing imports cli but the
# front door. Every import counts, those inside functions too: a lazy import keeps a
# module off the hook path, it does not change who depends on whom.
HOSTS = ROOT / "hosts"
HOST_ROOMS = {
    "facts": set(),
    "settlement": {"facts"},
    "_warm": {"settlement", "facts"},
    "setup": {"_warm", "settlement", "facts"},
    "adapters": {"setup", "_warm", "settlement", "facts"},
    "cli": {"adapters", "setup", "_warm", "settlement", "facts"},
    "front": {"cli", "adapters", "setup", "_warm", "settlement", "facts"},
}
HOST_ROOT_MODULES = {"__init__": None, "_entry": "front", "_resident": "front", "_warm": "_warm"}
# Known arrows against the rooms, each a lazy import inside one function, kept until a
# change of behaviour (not a move) takes them out. The test fails once one is gone, so
# the list only shrinks. spill rebuilds a dead Stop hook's Turn through the adapters.
HOST_BACK_EDGES = {
    ("hosts.settlement.spill", "hosts.adapters.generic"),
    ("hosts.settlement.spill", "hosts.adapters.codex_cli"),
}
# The one import circle left among hosts modules, all of it through lazy imports: a
# Turn asks status whether its tool channel is wired (channel -> status), status and
# install and the plugin route ask each other, and spill's rebuild (above). Breaking it
# is a change of behaviour of its own; it must not grow.
HOST_CYCLES = [
    {
        "hosts.adapters.channel",
        "hosts.adapters.codex_cli",
        "hosts.adapters.generic",
        "hosts.settlement.settlement",
        "hosts.settlement.spill",
        "hosts.setup.install",
        "hosts.setup.plugin_route",
        "hosts.setup.status",
    }
]


def host_module(path):
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


HOST_MODULES = {host_module(path): path for path in sorted(HOSTS.rglob("*.py"))}


def host_room(name):
    """The room of a hosts module: its sub-package, or its role at the package root."""
    parts = name.split(".")
    if len(parts) == 1:
        return None  # the package docstring
    if len(parts) == 2 and parts[1] in HOST_ROOT_MODULES:
        return HOST_ROOT_MODULES[parts[1]]
    return parts[1]  # a sub-package, or a module in one


def host_arrows(path):
    """The hosts modules ``path`` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            found.add(".")  # relative imports hide the room; hosts uses none
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in HOST_MODULES
                else node.module
                for alias in node.names
            ]
        found.update(name for name in names if name.split(".")[0] == "hosts")
    return found - {host_module(path) if path.is_relative_to(ROOT) else None}


def test_the_host_rooms_are_the_sub_packages_on_disk():
    on_disk = {path.name for path in HOSTS.iterdir() if (path / "__init__.py").is_file()}
    assert on_disk == set(HOST_ROOMS) - {"front", "_warm"}
    assert {path.stem for path in HOSTS.glob("*.py")} == set(HOST_ROOT_MODULES), "no flat modules"


def test_the_host_rooms_are_a_layering():
    for room, allowed in HOST_ROOMS.items():
        assert room not in allowed
        for lower in allowed:
            assert HOST_ROOMS[lower] <= allowed, f"{room} may import {lower} but not all below it"


@pytest.mark.parametrize(
    "name", [pytest.param(name, id=name) for name in HOST_MODULES if host_room(name)]
)
def test_hosts_imports_follow_the_rooms(name):
    room = host_room(name)
    for target in host_arrows(HOST_MODULES[name]):
        assert target != ".", f"{name} uses a relative import"
        if target not in HOST_MODULES:  # a room's package, or the hosts package itself
            continue
        if (name, target) in HOST_BACK_EDGES:
            continue
        other = host_room(target)
        assert other in (room, None) or other in HOST_ROOMS[room], (
            f"{name} ({room}) may not import {target} ({other})"
        )


def test_the_known_back_edges_are_still_there():
    for name, target in HOST_BACK_EDGES:
        assert target in host_arrows(HOST_MODULES[name]), f"{name} -> {target} is gone: drop it"


def host_cycles():
    """The strongly connected groups of two or more hosts modules (Tarjan)."""
    arrows = {
        name: {target for target in host_arrows(path) if target in HOST_MODULES}
        for name, path in HOST_MODULES.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(arrows[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for name in sorted(arrows):
        if name not in index:
            visit(name)
    return groups


def test_no_import_circle_among_hosts_modules_but_the_known_one():
    # cli <-> install and codex_install <-> codex_trust are gone: install's command-line
    # options moved to the cli room, Codex's app-server client to facts.
    assert sorted(map(sorted, host_cycles())) == sorted(map(sorted, HOST_CYCLES))


def test_the_host_room_check_sees_lazy_imports(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from hosts.setup import install\n"
        "def f():\n"
        "    from hosts.cli.command import main\n"
        "    import hosts.facts.caps\n"
    )
    assert host_arrows(bad) == {"hosts.setup.install", "hosts.cli.command", "hosts.facts.caps"}
