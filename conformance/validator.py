"""An independent validator that attests a reflection only against recorded evidence.

The demo and the conformance runner both use it: ``python -m conformance.validator
[EVIDENCE_FILE]``. A host runs it with the settled Turn's result on stdin: a CLI host sends
``{reward_memory_reflection_json, host, host_turn_id}``, the Codex App sends a
``reward_memory_reflection_validation_request_v0`` with the normalised reflection and
the digest of the submitted text. It checks that every evidence ref the reflection
cites is a check recorded as passed in the evidence file (the argument, else
$DEMO_EVIDENCE), and only then prints the exact attestation for that digest.
Anything else exits 0 without an attestation (the task is fine, the reflection is
not evidence) or non-zero (the request is malformed).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

# No pathlib: a host starts the validator once a Turn, and pathlib's imports (fnmatch,
# re, urllib.parse) were about a sixth of its run.


def main(evidence: str | os.PathLike[str] | None = None) -> int:
    """Read one request on stdin; print the attestation when the evidence backs it."""
    request = json.load(sys.stdin)
    if "reflection" in request:  # the Codex App protocol names the digest to attest
        reflection, digest = request["reflection"], request["reflection_digest"]
    else:
        raw = request.get("reward_memory_reflection_json") or ""
        if not raw.strip():
            return 0
        reflection = json.loads(raw)
        canonical = json.dumps(
            reflection, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        digest = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    evidence_file = os.environ.get("DEMO_EVIDENCE") or evidence or "evidence.json"
    with open(evidence_file, encoding="utf-8") as stream:
        passed = set(json.load(stream)["passed_checks"])
    refs = reflection.get("evidence_refs") or []
    if not refs or not set(refs) <= passed:
        return 0
    print(
        json.dumps(
            {
                "schema_version": "reward_memory_reflection_validation_v0",
                "status": "validated",
                "reflection_digest": digest,
                "evidence_refs": refs,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
