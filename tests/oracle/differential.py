"""The differential comparison: one case, both tools, named excuses, one verdict.

A *case* is a command line and the files it reads, written under a scratch root::

    {"family": "utility-project", "argv": ["reward-memory", ..., "{root}/input.json"],
     "files": {"input.json": <JSON document>}}

Every ``{root}`` inside ``argv`` or inside a file's JSON text is replaced by the
scratch directory, so registry cases can name their repository. Both tools see the
same bytes. Their answers are compared on the exit code and the whole JSON
document, type-strictly (``1`` is not ``1.0``, ``-0.0`` is not ``0.0``) and in key
order (an object's keys in the order printed), after the
excuse rules of :mod:`oracle.excuses` have removed the differences we chose.

This module never imports the oracle: the oracle runs in its own interpreter through
:mod:`oracle.worker`. The regression replay in the default test run uses
:func:`run_ours` and :func:`divergences` against upstream answers recorded in files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from oracle.excuses import apply_excuses

WORKER = Path(__file__).with_name("worker.py")
REPO = Path(__file__).resolve().parents[2]
REGRESSIONS = Path(__file__).with_name("regressions")


def materialise(case: dict[str, Any], root: Path) -> list[str]:
    """Write the case's files under ``root``; return its argv with ``{root}`` filled."""
    for name, document in case["files"].items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        text = document if isinstance(document, str) else json.dumps(document)
        target.write_text(text.replace("{root}", str(root)), encoding="utf-8")
    return [arg.replace("{root}", str(root)) for arg in case["argv"]]


def parse_answer(code: int, stdout: str) -> dict[str, Any]:
    """One tool's answer: exit code and the JSON it printed (or the raw text)."""
    try:
        output: Any = json.loads(stdout)
    except ValueError:
        output = {"unparsed_stdout": stdout[-2000:]}
    return {"exit_code": code, "output": output}


class Tool:
    """One tool's CLI in a warm interpreter of its own (see :mod:`oracle.worker`)."""

    def __init__(
        self,
        python: Path | str,
        entry: str,
        env: dict[str, str],
        extra: list[str],
        memoised: tuple[str, ...] = (),
    ):
        self.extra = extra  # arguments this tool needs appended (the oracle's --format json)
        self.process = subprocess.Popen(
            [str(python), str(WORKER), entry, *memoised],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )

    def run(self, argv: list[str], cwd: Path) -> dict[str, Any]:
        """Run one command line; return its answer."""
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"argv": [*argv, *self.extra], "cwd": str(cwd)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the worker died")
        answer = json.loads(line)
        return parse_answer(answer["code"], answer["stdout"])

    def close(self) -> None:
        """End the worker (its stdin closes, it exits)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


def ours_env() -> dict[str, str]:
    """Our CLI's environment: a throw-away HOME, so no user state is read."""
    home = tempfile.mkdtemp(prefix="turn-hooks-home-")
    return {**os.environ, "HOME": home, "TURN_HOOKS_RESIDENT": "0"}


def start_ours() -> Tool:
    """Our CLI in this interpreter's venv."""
    return Tool(sys.executable, "hosts.cli.command:main", ours_env(), [])


def run_ours(case: dict[str, Any], root: Path, tool: Tool | None = None) -> dict[str, Any]:
    """Our answer to ``case`` (a fresh process unless a warm ``tool`` is given)."""
    argv = materialise(case, root)
    if tool is not None:
        return tool.run(argv, root)
    result = subprocess.run(
        [sys.executable, "-m", "hosts.cli", *argv],
        capture_output=True,
        text=True,
        env=ours_env(),
        cwd=root,
        check=False,
        timeout=120,
    )
    return parse_answer(result.returncode, result.stdout)


def strict(value: Any) -> Any:
    """``value`` with every scalar tagged by its type, so ``==`` is type-strict.

    ``True == 1`` and ``0.0 == -0.0`` in Python; JSON consumers tell them apart.
    """
    if isinstance(value, dict):
        return {key: strict(item) for key, item in value.items()}
    if isinstance(value, list):
        return [strict(item) for item in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def divergences(
    family: str,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    case: dict[str, Any] | None = None,
) -> tuple[list[str], list[str]]:
    """(divergence classes, excuse rules applied) between two answers to one case.

    A class names where the two differ (``exit_code``, or the first JSON path that
    differs), so one behaviour found on many inputs counts once.
    """
    ours_out, theirs_out, used = apply_excuses(family, ours, theirs, case)
    if "upstream_crash" in used or (
        isinstance(ours_out, dict) and "excused" in ours_out and ours_out == theirs_out
    ):
        # A whole answer excused by one rule: its exit code is part of what we chose.
        return [], used
    kinds = [_kind(ours["exit_code"], ours_out), _kind(theirs["exit_code"], theirs_out)]
    if kinds[0] != kinds[1]:
        # A different kind of answer (an error against a receipt) is one class, not
        # one per field of the receipt.
        return [f"{family}:answer:{kinds[0]}!={kinds[1]}"], used
    return [f"{family}:{path}" for path in _differing_paths(ours_out, theirs_out, "")], used


def _kind(code: int, output: Any) -> str:
    schema = output.get("schema_version") if isinstance(output, dict) else None
    return f"{code}/{schema}"


def _differing_paths(ours: Any, theirs: Any, path: str) -> list[str]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        # Byte-for-byte compatibility needs the same key order: the keys both have
        # must come in the same order (a missing or extra key is its own class).
        if [key for key in ours if key in theirs] != [key for key in theirs if key in ours]:
            found.append(f"{path or '$'}:key_order")
        for key in sorted(set(ours) | set(theirs)):
            where = f"{path}.{key}"
            if key not in ours or key not in theirs:
                found.append(f"{where}:{'missing' if key not in ours else 'extra'}")
            else:
                found.extend(_differing_paths(ours[key], theirs[key], where))
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        found = []
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found.extend(_differing_paths(a, b, f"{path}[]" if index >= 0 else path))
        return sorted(set(found))
    return [] if strict(ours) == strict(theirs) else [f"{path or '$'}:value"]
