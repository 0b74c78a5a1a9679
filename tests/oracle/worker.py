"""A CLI kept warm: one interpreter runs many command lines of one tool (stdlib only).

Started as ``python worker.py module:function [module:builder ...]`` in the tool's
own interpreter (ours or the oracle's venv), it reads one JSON request per line,
``{"argv": [...], "cwd": ...}``,
calls the tool's ``main(argv)`` with stdout and stderr captured, and answers one JSON
line ``{"code": int, "stdout": str, "stderr": str}``. The differential fuzzer needs
thousands of calls; a fresh process each costs about two seconds of imports.

Each further ``module:builder`` names an argument-less parser builder to memoise.
Nothing of the tool is imported until the first line names it, so the same file
drives either side without either side's package being on the other's path.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
import os
import sys


def _resolve(entry: str) -> tuple[object, str]:
    module_name, _, function_name = entry.partition(":")
    return importlib.import_module(module_name), function_name


def _serve(entry: str, memoised: list[str]) -> None:
    module, function_name = _resolve(entry)
    main = getattr(module, function_name)
    for name in memoised:
        # A parser built once per interpreter instead of once per call (upstream's
        # takes two seconds to build); parsing itself is unchanged.
        owner, attribute = _resolve(name)
        setattr(owner, attribute, functools.cache(getattr(owner, attribute)))
    protocol = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        os.chdir(request["cwd"])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(request["argv"]))
            except SystemExit as exc:  # argparse usage errors
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception as exc:  # a crash of the tool is an answer, not ours
                code = 101
                err.write(f"{type(exc).__name__}: {exc}")
        protocol.write(
            json.dumps({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}) + "\n"
        )
        protocol.flush()


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2:])
