"""``turn-hooks validate command -- ARGV``: an attestation only when ARGV exits 0.

Run as the hosts run it, a subprocess with the Turn's result on stdin; the
attestation is checked by the plugin's own parser, and a whole settled Turn learns
through it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import f1
from turn_support import RAW, bound_goal, hook_argv, reflection_message, run_process

from capabilities.reward_memory.cli.validate import evidence_ref
from capabilities.reward_memory.contract.experience import parse_attestation
from capabilities.reward_memory.contract.identities import reflection_digest

TURN_HOOKS = shutil.which("turn-hooks", path=str(Path(sys.executable).parent))
REFS = f1.REFLECTION["evidence_refs"]


def validate(cwd: Path, argv: list[str], request: object, *options: str):
    assert TURN_HOOKS
    return subprocess.run(
        [TURN_HOOKS, "validate", "command", *options, "--", *argv],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=60,
    )


def cli_request(raw: str = RAW) -> dict[str, str]:
    return {"reward_memory_reflection_json": raw, "host": "codex_cli", "host_turn_id": "t1"}


def records(repo: Path) -> list[dict]:
    directory = repo / ".local" / "turn-hooks" / "validations"
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_a_passing_command_attests_the_exact_reflection(repo):
    argv = [sys.executable, "-c", "print('4 ' + 'passed')"]
    result = validate(repo, argv, cli_request())
    assert result.returncode == 0
    digest = reflection_digest(RAW)
    assert parse_attestation(result.stdout, digest, REFS) == {
        "schema_version": "reward_memory_reflection_validation_v0",
        "status": "validated",
        "reflection_digest": digest,
        "evidence_refs": REFS,
    }
    ref = evidence_ref(argv, 0, b"4 passed\n")
    assert ref in result.stderr
    (record,) = records(repo)
    assert record["evidence_ref"] == ref and record["exit_status"] == 0
    assert record["reflection_digest"] == digest
    # The output itself stays out; its last kilobytes are kept, privately (issue 36).
    assert record["output_tail"] == "4 passed\n" and record["reason_code"] is None


def test_a_failing_or_slow_command_attests_nothing(repo):
    # A failed check is the protocol's "failed" (exit 1), never a validated task.
    failing = validate(repo, [sys.executable, "-c", "raise SystemExit('3 failed')"], cli_request())
    assert failing.returncode == 1
    assert json.loads(failing.stdout)["reason_code"] == "validated_command_failed"
    assert "None" not in failing.stderr
    # stderr merged: what the check printed there is the tail, on stderr and recorded.
    assert failing.stderr.splitlines()[1:] == ["3 failed"]
    slow = [sys.executable, "-c", "import time; time.sleep(30)"]
    timed_out = validate(repo, slow, cli_request(), "--timeout-seconds", "1")
    assert timed_out.returncode == 1
    assert json.loads(timed_out.stdout)["reason_code"] == "validated_command_timeout"
    missing = validate(repo, ["no-such-program-here"], cli_request())
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["reason_code"] == "validated_command_unavailable"
    assert sorted(r["exit_status"] for r in records(repo) if r["exit_status"] is not None) == [1]
    assert "3 failed\n" in [r["output_tail"] for r in records(repo)]
    assert len(records(repo)) == 3


def test_the_evidence_ref_covers_command_status_and_output():
    base = evidence_ref(["make", "test"], 0, b"ok")
    assert base.startswith("validation:command:") and len(base) == len("validation:command:") + 20
    assert base == evidence_ref(["make", "test"], 0, b"ok")
    others = {
        evidence_ref(["make", "check"], 0, b"ok"),
        evidence_ref(["make", "test"], 1, b"ok"),
        evidence_ref(["make", "test"], 0, b"ok!"),
    }
    assert base not in others and len(others) == 3


@pytest.mark.parametrize(
    "request_document",
    [
        {},
        [],
        cli_request(""),
        cli_request("not json"),
        cli_request(json.dumps({**f1.REFLECTION, "evidence_refs": []})),
        cli_request(json.dumps({**f1.REFLECTION, "evidence_refs": [1]})),
        cli_request("[1]"),
    ],
    ids=["empty", "list", "blank", "not-json", "no-refs", "ref-not-text", "not-object"],
)
def test_without_a_reflection_to_attest_nothing_runs(tmp_path, request_document):
    marker = tmp_path / "ran"
    result = validate(tmp_path, ["touch", str(marker)], request_document)
    assert (result.returncode, result.stdout, marker.exists()) == (0, "", False)


def test_the_codex_app_request_is_attested_with_its_digest(tmp_path):
    request = {
        "schema_version": "reward_memory_reflection_validation_request_v0",
        "reflection": f1.REFLECTION,
        "reflection_digest": "sha256:" + "ab" * 32,
    }
    result = validate(tmp_path, ["true"], request)  # not a repository: no record, still attested
    assert json.loads(result.stdout)["reflection_digest"] == "sha256:" + "ab" * 32
    assert not (tmp_path / ".local").exists()


def test_no_command_is_a_typed_error(tmp_path):
    result = validate(tmp_path, [], cli_request())
    assert result.returncode == 2
    assert json.loads(result.stdout)["reason_code"] == "validate_command_missing"


def test_a_settled_turn_learns_through_the_built_in_validator(tmp_path):
    registry = bound_goal(tmp_path)
    repo = tmp_path / "repo"
    assert TURN_HOOKS
    validator = [TURN_HOOKS, "validate", "command", "--", sys.executable, "-c", "pass"]
    event = {"turn_id": "t1", "cwd": str(repo), "last_assistant_message": reflection_message()}
    result = run_process(hook_argv(registry, validator=validator), json.dumps(event))
    ingest = json.loads(result.stdout)["results"]["reward-memory.outcome-ingest"]
    assert (ingest["status"], ingest["exact_readback_verified"]) == ("activated", True)
    failing = [TURN_HOOKS, "validate", "command", "--", sys.executable, "-c", "exit(1)"]
    event["turn_id"] = "t2"
    result = run_process(hook_argv(registry, validator=failing), json.dumps(event))
    ingest = json.loads(result.stdout)["results"]["reward-memory.outcome-ingest"]
    assert ingest["status"] != "activated"


APPLIED = json.dumps({"outcome": "applied", "memory_refs": ["[memory 1]"]})


@pytest.mark.parametrize(("code", "exit_code"), [(0, 0), (3, 1)])
def test_a_turn_that_applied_a_memory_is_validated_without_a_reflection(repo, code, exit_code):
    # Issue 39: the verdict is the outcome the applied memory is judged by. It runs the
    # command; passing, it attests nothing (no reflection) and exits 0; failing, 1.
    marker = repo / "ran"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w'); raise SystemExit({code})"]
    request = {**cli_request(""), "reward_memory_application_json": APPLIED}
    result = validate(repo, argv, request)
    assert (result.returncode, marker.exists()) == (exit_code, True)
    assert (result.stdout == "") is (code == 0), "a pass attests nothing; a failure says why"
    [record] = records(repo)
    assert record["reflection_digest"] is None
