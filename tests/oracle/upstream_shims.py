"""Upstream's answer where its CLI reads only built-in cases (oracle interpreter only).

LoopX 2.1.1's ``reward-memory candidate-review`` reviews one built-in Issue Fix
candidate (``--case``) and reads no file, so the CLI cannot answer a generated input.
The function it calls, ``review_reward_memory_candidate(candidate, review)``, is
stateless and offline. ``main`` answers our command line
``reward-memory candidate-review --input F --decision D`` by calling that function on
F's ``candidate`` and F's ``review`` with the decision added, the way upstream's CLI
calls it for its own case, and reports a ``ValueError`` as upstream's CLI does
(``reward_memory_error_v0``, exit 2). Every other command line goes to upstream's CLI
unchanged. Nothing here is imported by turn-hooks or its unit tests.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def _review(argv: list[str]) -> int:
    from loopx.capabilities.reward_memory.candidate_review import (
        review_reward_memory_candidate,
    )

    parser = argparse.ArgumentParser(prog="candidate-review")
    parser.add_argument("--input", required=True)
    parser.add_argument("--decision", required=True)
    parser.add_argument("--format", default="json")
    args = parser.parse_args(argv)
    with open(args.input, encoding="utf-8") as handle:
        source = json.load(handle)
    payload: dict[str, Any]
    try:
        payload = review_reward_memory_candidate(
            source["candidate"], {**source["review"], "decision": args.decision}
        )
        code = 0
    except ValueError as exc:
        payload = {
            "ok": False,
            "schema_version": "reward_memory_error_v0",
            "status": "invalid_request",
            "error": str(exc),
        }
        code = 2
    sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
    return code


def main(argv: list[str]) -> int | None:
    """Upstream's answer to one command line."""
    if argv[:2] == ["reward-memory", "candidate-review"] and "--input" in argv:
        return _review(argv[2:])
    from loopx.entrypoint import main as upstream

    return upstream(argv)
