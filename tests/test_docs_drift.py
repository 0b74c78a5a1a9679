"""The docs cannot drift from the code (datasette's cog-checked `--help`, as tests).

Three lists are read from the code and compared, both ways, with a page of docs/:

- every command and option of ``turn-hooks --help``, recursively, with docs/cli.md;
- every environment variable the source reads, with docs/environment.md;
- every reason code the source can print, with docs/troubleshooting.md.

And every relative link and ``#anchor`` in README.md and docs/*.md resolves, so a
page moved or a heading renamed fails here rather than in a reader's browser.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
PACKAGES = ("turn_hooks", "capabilities", "sidecars", "hosts", "conformance")

# The parser as `turn-hooks --help` builds it, walked in a child process: the
# child runs the stable front door (`hosts._entry`), and argparse hands the parser
# it is printing to `print_help`, which the child turns into JSON instead.
WALK_PARSER = """
import argparse, json, sys
seen = []
argparse.ArgumentParser.print_help = lambda self, file=None: seen.append(self)
sys.argv = ["turn-hooks", "--help"]
from hosts import _entry
try:
    _entry.main()
except SystemExit:
    pass

def walk(parser, path):
    options, commands = [], []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands += [walk(sub, [*path, name]) for name, sub in action.choices.items()]
        elif action.option_strings and action.help != argparse.SUPPRESS:
            options += [o for o in action.option_strings if o.startswith("--")]
    return {"path": path, "options": options, "commands": commands}

json.dump(walk(seen[0], []), sys.stdout)
"""


@cache
def cli_commands() -> dict[str, set[str]]:
    """``{"memory list": {"--state", ...}}`` for every leaf command of ``turn-hooks``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", WALK_PARSER],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    leaves: dict[str, set[str]] = {}

    def collect(node: dict) -> None:
        if not node["commands"]:
            leaves[" ".join(node["path"])] = set(node["options"]) - {"--help"}
        for sub in node["commands"]:
            collect(sub)

    collect(json.loads(done.stdout))
    return leaves


def documented_commands() -> dict[str, set[str]]:
    """docs/cli.md's ``### turn-hooks COMMAND`` sections and the ``--options`` each names."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    sections = re.split(r"^#{2,3} turn-hooks ([a-z][a-z -]*)$", text, flags=re.M)
    documented = {}
    for name, body in zip(sections[1::2], sections[2::2], strict=True):
        # `--state STATE` names an option of this command; `status --validation-output`
        # one of another command, so only spans that start with the option count.
        spans = re.findall(r"`(--[a-z][a-z0-9-]*)[^`\n]*`", body)
        documented[name.strip()] = set(spans) - {"--help"}
    return documented


def test_every_command_of_the_cli_has_its_section_in_the_reference():
    groups = {" ".join(name.split()[:n]) for name in cli_commands() for n in (1, 2)}
    documented = documented_commands()
    assert sorted(set(cli_commands()) - set(documented)) == [], "add them to docs/cli.md"
    assert sorted(set(documented) - set(cli_commands()) - groups) == [], "no such command"


@pytest.mark.parametrize("command", sorted(cli_commands()))
def test_every_option_is_documented_and_every_documented_option_exists(command):
    documented = documented_commands().get(command, set())
    assert sorted(cli_commands()[command] - documented) == [], f"docs/cli.md, {command}"
    assert sorted(documented - cli_commands()[command]) == [], f"{command} has no such option"


# --- environment variables ------------------------------------------------------

_NAME = r"[\"']([A-Z][A-Z0-9_]*[A-Z0-9])[\"']"
ENV_READS = (
    # os.environ.get("X"), os.getenv("X"), env.get("X"), environ["X"], "X" in os.environ
    re.compile(rf"(?:environ|getenv|env|environment)(?:\.get|\.pop|\.setdefault)?\(\s*{_NAME}"),
    re.compile(rf"environ\[\s*{_NAME}\s*\]"),
    re.compile(rf"{_NAME}\s+(?:not\s+)?in\s+(?:os\.)?environ\b"),
    # a name kept in a constant first: GOAL_ENV = "TURN_HOOKS_GOAL"
    re.compile(rf"^\s*[A-Z_]*ENV[A-Z_]*\s*(?::\s*str\s*)?=\s*{_NAME}", re.M),
    # our own namespaces: every such literal names a variable
    re.compile(r"[\"']((?:TURN_HOOKS|OPENVIKING)_[A-Z0-9_]*[A-Z0-9])[\"']"),
)


def package_sources() -> dict[Path, str]:
    return {
        path: path.read_text(encoding="utf-8")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def variables_read() -> set[str]:
    """Every environment variable the packages read, found in their source text."""
    names = set()
    for text in package_sources().values():
        for pattern in ENV_READS:
            names.update(next(g for g in m.groups() if g) for m in pattern.finditer(text))
        # OpenViking's settings are read as ENV_PREFIX + key.upper() over SETTING_KEYS.
        if "ENV_PREFIX + key.upper()" in text:
            prefix = re.search(r"^ENV_PREFIX = \"(\w+)\"", text, re.M).group(1)
            keys = re.search(r"^SETTING_KEYS = \((.*?)\)", text, re.M).group(1)
            names.update(prefix + key.upper() for key in re.findall(r"\"(\w+)\"", keys))
    return names


def documented_variables() -> tuple[set[str], set[str]]:
    """docs/environment.md's variables: those the package reads, those make and tests read."""
    text = (DOCS / "environment.md").read_text(encoding="utf-8")
    package, _, make = text.partition("\n## For `make` and the tests\n")
    names = re.compile(r"^\| (`[A-Z][A-Z0-9_]*`(?:, `[A-Z][A-Z0-9_]*`)*) \|", re.M)

    def listed(part: str) -> set[str]:
        return {n for cell in names.findall(part) for n in re.findall(r"`(\w+)`", cell)}

    return listed(package), listed(make)


def test_every_variable_the_code_reads_is_documented():
    package, _ = documented_variables()
    assert sorted(variables_read() - package) == [], "add them to docs/environment.md"


def test_every_documented_variable_is_read_somewhere():
    package, make = documented_variables()
    source = "\n".join(package_sources().values())
    # Hosts' own variables are kept in tables (`"CLAUDE_CONFIG_DIR",` in a host row).
    gone = {name for name in package - variables_read() if f'"{name}"' not in source}
    assert sorted(gone) == [], "documented in docs/environment.md, read nowhere"
    elsewhere = "\n".join(
        path.read_text(encoding="utf-8")
        for path in [
            ROOT / "Makefile",
            *(ROOT / "tests").rglob("*.py"),
            *(ROOT / "benchmarks").glob("*.py"),
        ]
    )
    assert sorted(name for name in make if name not in elsewhere) == []


# --- reason codes ---------------------------------------------------------------

CODE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
REASON_PARAMETERS = {"reason_code", "reason", "code"}
# A parameter at these names is never the reason, even in a function that has one.
OTHER_PARAMETERS = {"field", "name", "key", "path"}
# Words the scan meets in a reason position that are not themselves printed.
NOT_CODES = {
    "reason_code": "the key's own name, in lists of keys",
    "claude_json": "a prefix, printed composed as claude_json_invalid",
}


def _positions(function: ast.FunctionDef | ast.AsyncFunctionDef, names: set[str]) -> set[int]:
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    skip = 1 if params[:1] in (["self"], ["cls"]) else 0
    return {i - skip for i, param in enumerate(params) if param in names}


def _functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def reason_codes() -> set[str]:
    """Every reason code the packages can print, read from their syntax trees.

    A code is a snake_case literal in a reason position: ``reason_code=`` (or
    ``reason=``, ``code=``), the value of a ``"reason_code"`` key, an assignment
    to ``reason_code``, the reason argument of a function that takes one (by
    position), and ``return "code", "message"``.
    """
    trees = {path: ast.parse(text) for path, text in package_sources().items()}
    anywhere: dict[str, set[int]] = {}
    never: dict[str, set[int]] = {}
    for tree in trees.values():
        for function in _functions(tree):
            anywhere.setdefault(function.name, set()).update(
                _positions(function, REASON_PARAMETERS)
            )
            never.setdefault(function.name, set()).update(_positions(function, OTHER_PARAMETERS))
    found = set()
    for tree in trees.values():
        local = {f.name: _positions(f, REASON_PARAMETERS) for f in _functions(tree)}
        for node in ast.walk(tree):
            values: list[ast.AST | None] = []
            if isinstance(node, ast.Call):
                values += [kw.value for kw in node.keywords if kw.arg in REASON_PARAMETERS]
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                spots = local.get(name, anywhere.get(name, set()) - never.get(name, set()))
                values += [node.args[i] for i in spots if i < len(node.args)]
            elif isinstance(node, ast.Dict):
                values += [
                    v
                    for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant) and k.value == "reason_code"
                ]
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(
                    getattr(t, "id", getattr(t, "attr", None)) == "reason_code" for t in targets
                ):
                    values.append(node.value)
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
                # return "validator_run_failed", f"... what to do"
                first, *rest = node.value.elts or [None]
                message = rest[0] if len(rest) == 1 else None
                if isinstance(first, ast.Constant) and (
                    isinstance(message, ast.JoinedStr)
                    or (isinstance(message, ast.Constant) and " " in str(message.value))
                ):
                    values.append(first)
            for value in filter(None, values):
                found.update(
                    n.value
                    for n in ast.walk(value)
                    if isinstance(n, ast.Constant)
                    and isinstance(n.value, str)
                    and CODE.match(n.value)
                )
    return found - set(NOT_CODES)


def documented_reason_codes() -> set[str]:
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([a-z0-9_]+)` \|", text, re.M))


def test_every_reason_code_is_in_troubleshooting():
    assert sorted(reason_codes() - documented_reason_codes()) == [], "docs/troubleshooting.md"


def in_source(code: str, source: str) -> bool:
    """``code`` is a word of the source, or composed there: ``"input"`` and ``"too_large"``
    (for ``f"{prefix}_{suffix}"``) or ``"reflection_block"`` and ``_repeated"``."""
    if re.search(rf"\b{code}\b", source):
        return True
    splits = [m.start() for m in re.finditer("_", code)]
    return any(
        f'"{code[:i]}"' in source
        and (f'"{code[i + 1 :]}"' in source or f'_{code[i + 1 :]}"' in source)
        for i in splits
    )


def test_every_documented_reason_code_is_in_the_source():
    source = "\n".join(package_sources().values())
    gone = {code for code in documented_reason_codes() if not in_source(code, source)}
    assert sorted(gone) == [], "documented in docs/troubleshooting.md, printed nowhere"


# --- links ------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        out.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return out


PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(target)
    assert broken == []


def test_every_docs_page_is_reachable_from_the_index():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w-]+\.md)(?:#[^)]*)?\)", index))
    assert (
        sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md" and p.name not in linked)
        == []
    )
