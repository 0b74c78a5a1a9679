"""Keep a case the fuzzer found as a regression: ``python tests/oracle/keep.py FOUND NAME NOTE``.

FOUND is a file the fuzzer wrote (``$TURN_HOOKS_DIFF_OUT/*.json``); the kept file
holds the case, upstream's recorded answer, the excuse rules it may need, and why it
is kept. Run it after the fix, so the replay in the default test run passes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oracle.differential import REGRESSIONS
from oracle.excuses import CASE_RULES, RULES


def keep(found: Path, name: str, note: str, excuses: list[str]) -> Path:
    """Write ``regressions/<name>.json`` from one found case."""
    unknown = set(excuses) - set(RULES) - set(CASE_RULES) - {"upstream_crash"}
    if unknown:
        raise SystemExit(f"unknown excuse rules: {sorted(unknown)}")
    record = json.loads(found.read_text(encoding="utf-8"))
    kept = {
        "note": note,
        "class": record["class"],
        "excuses": sorted(excuses),
        "case": record["case"],
        "upstream": record["upstream"],
    }
    target = REGRESSIONS / f"{name}.json"
    target.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


if __name__ == "__main__":
    print(keep(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]))
