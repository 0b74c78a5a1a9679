"""Sidecar path tokens T(v) and path safety (identities.md §4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecars import lock_path, path_token, sidecar_path, sidecar_root
from turn_hooks import SidecarPathError


@pytest.mark.parametrize(
    ("value", "fallback", "expected"),
    [
        ("demo-goal", "goal", "demo-goal-1bf74ace4b64"),
        ("explorer", "agent", "explorer-1c467339c960"),
        ("ccacaaa758c25c7958af", "event", "ccacaaa758c25c7958af-9b78205f96a6"),
        ("", "event", "event-e3b0c44298fc"),
        (None, "event", "event-e3b0c44298fc"),
        ("a/b c", "goal", "a-b-c-0af99a609169"),
        ("—", "goal", "goal-bda050585a00"),
        ("x" * 59 + "/y" + "z" * 10, "goal", "x" * 59 + "-" + "-bd1f800ec712"),
        ("app:c87d5767567f6843a55e", "candidate", "app-c87d5767567f6843a55e-c2b56cf33ff1"),
    ],
)
def test_path_token_vectors(value, fallback, expected):
    assert path_token(value, fallback) == expected


def test_journal_path_vector(tmp_path):
    path = sidecar_path(
        sidecar_root(tmp_path),
        "reward-memory-outcomes",
        path_token("demo-goal", "goal"),
        path_token("explorer", "agent"),
        path_token("ccacaaa758c25c7958af", "event") + ".json",
    )
    assert path.relative_to(tmp_path).as_posix() == (
        ".local/turn-hooks/reward-memory-outcomes/demo-goal-1bf74ace4b64/"
        "explorer-1c467339c960/ccacaaa758c25c7958af-9b78205f96a6.json"
    )
    assert lock_path(path).name == "ccacaaa758c25c7958af-9b78205f96a6.json.lock"


@pytest.mark.parametrize("part", ["", ".", "..", "a/b", "a\\b", "a\0b", ".hidden", "/etc"])
def test_unsafe_components_are_refused(tmp_path, part):
    with pytest.raises(SidecarPathError) as info:
        sidecar_path(tmp_path, "ok", part)
    assert info.value.reason_code == "sidecar_path_escape"


def test_a_path_needs_a_file_name(tmp_path):
    with pytest.raises(SidecarPathError):
        sidecar_path(tmp_path)


def test_relative_roots_become_absolute():
    assert sidecar_path("relative", "x.json").is_absolute()
    assert sidecar_root("repo") == Path("repo").absolute() / ".local" / "turn-hooks"
