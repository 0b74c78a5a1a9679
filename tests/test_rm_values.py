"""Shared value rules (contracts.md §1), including the compact-text vectors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from capabilities.reward_memory.contract import values as v


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("  a   b\tc  ", 10, "a b c"),
        ("abcdefghijk", 10, "abcdefghi…"),
        ("abcd efghijk", 6, "abcd…"),
        ("https://x.y/z", 100, "https://x.y/z"),
        ("先运行  聚焦测试", 100, "先运行 聚焦测试"),
        (None, 10, ""),
        (0, 10, ""),
    ],
)
def test_compact_vectors(text, limit, expected):
    assert v.compact_or_empty(text, limit) == expected


@pytest.mark.parametrize(
    "unsafe",
    [
        "see /home/u/x",
        "/Users/me/secret",
        "copy C:\\Users\\x",
        "open D:/data",
        "\\\\host\\share",
        "token=abcdefghijkl1",
        "password: 'hunter2hunter2'",
        "Bearer abcdefghijklmnopqrstu",
        "ghp_aaaaaaaaaaaaaaaaaaaa",
        "github_pat_aaaaaaaaaaaaaaaaaaaaaaaa",
        "AKIAABCDEFGHIJKLMNOP",
        "xoxb-1234567890",
        "AIzaabcdefghijklmnopqrstuv",
        "sk_live_abcdefghijkl",
        "npm_abcdefghijklmnopqrstuv",
        "pypi-abcdefghijklmnopqrstuv",
        "eyJhbGci.eyJzdWIi.c2lnbmF0",
        "api_key=abc",
        "sk-abcdefghijklmnop",
        "-----BEGIN RSA PRIVATE KEY-----",
    ],
)
def test_paths_and_secrets_are_treated_as_empty(unsafe):
    assert v.compact_or_empty(unsafe, 500) == ""
    with pytest.raises(v.RewardMemoryInputError) as info:
        v.compact(unsafe, 500, "content_summary")
    assert info.value.reason_code == "text_not_public_safe"
    assert unsafe not in str(info.value.to_public())


@pytest.mark.parametrize(
    "safe",
    [
        "see https://example.com/home/x",
        "ask about tokens",
        "the ak-47 is a rifle",
        "a/tmp/b",
        "http://host/var/log",
    ],
)
def test_ordinary_text_is_kept(safe):
    assert v.compact_or_empty(safe, 500) == safe


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("workspace:demo", True),
        ("a" * 200, True),
        ("a" * 201, False),
        ("-x", False),
        ("has space", False),
        ("", False),
        (0, False),
        ("viking://x", True),
    ],
)
def test_token(value, ok):
    if ok:
        assert v.token(value, "f") == value
    else:
        with pytest.raises(v.RewardMemoryInputError):
            v.token(value, "f")


@pytest.mark.parametrize(
    ("value", "text"),
    [(5, "5"), (1.5, "1.5"), (True, "True"), (["a"], "['a']"), ("  a  b ", "a b")],
)
def test_compact_text_of_a_non_string_is_its_str(value, text):
    # contracts.md §1.1 step 1, as LoopX 2.1.1 reads an event's text.
    assert v.compact(value, 500, "f") == text


@pytest.mark.parametrize("empty", [0, False, None, [], {}])
def test_a_falsy_non_string_is_empty_compact_text(empty):
    with pytest.raises(v.RewardMemoryInputError):
        v.compact(empty, 500, "f")


@pytest.mark.parametrize(
    ("value", "normal"),
    [
        (" ref:a ", "ref:a"),
        (5, "5"),
        (1e9, "1000000000.0"),
        (True, "True"),
        (None, None),
        ("", None),
    ],
)
def test_a_non_string_token_is_its_str_text(value, normal):
    assert v.optional_token(value, "f") == normal
    if normal is not None:
        assert v.token(value, "f") == normal


@pytest.mark.parametrize("bad", [0, False, [], ["a"], "has space"])
def test_tokens_reject_empty_and_non_token_text(bad):
    with pytest.raises(v.RewardMemoryInputError):
        v.optional_token(bad, "f")


@pytest.mark.parametrize(
    ("raw", "normal"),
    [("  Code  Reviewer ", "code-reviewer"), ("explorer", "explorer"), ("A@b.c", "a@b.c")],
)
def test_agent_id_normalisation(raw, normal):
    assert v.normalise_agent_id(raw) == normal


@pytest.mark.parametrize("bad", ["", "1abc", "a/b", None, "x" * 81])
def test_invalid_agent_ids(bad):
    with pytest.raises(v.RewardMemoryInputError):
        v.normalise_agent_id(bad)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("2026-08-15T00:00:00+00:00", True),
        ("2026-08-15T00:00:00Z", True),
        ("2026-08-15T00:00:00", False),
        ("yesterday", False),
        (5, False),
    ],
)
def test_timestamps_need_an_offset_and_are_kept_verbatim(value, ok):
    if ok:
        assert v.timestamp(f" {value} ", "t") == value
    else:
        with pytest.raises(v.RewardMemoryInputError):
            v.timestamp(value, "t")


def test_booleans_and_integers_are_strict():
    with pytest.raises(v.RewardMemoryInputError):
        v.boolean(1, "b")
    with pytest.raises(v.RewardMemoryInputError):
        v.integer(True, "i", 0)
    with pytest.raises(v.RewardMemoryInputError):
        v.integer(9, "i", 1, 8)
    assert v.integer(8, "i", 1, 8) == 8


def test_error_public_shape_matches_upstream():
    with pytest.raises(v.RewardMemoryInputError) as info:
        v.exact_keys({"a": 1, "zz": 2}, "event", frozenset({"a"}))
    public = info.value.to_public()
    assert public["schema_version"] == "reward_memory_error_v0"
    assert (public["ok"], public["status"], public["reason_code"]) == (
        False,
        "invalid_request",
        "unknown_key",
    )
    assert public["field"] == "event.zz"


PACKAGE = Path(v.__file__).parent.parent
SPELT_ELSEWHERE = {
    # Moves to hosts/ on its own branch; what stays takes the constants after the merge.
    "turn/app.py": "external_writes_performed raw_content_captured",
}


def _code_strings(tree):
    """Every string constant of ``tree`` except docstrings (prose may name a flag)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield node.value


def spelt_flags(source):
    return sorted(
        {
            flag
            for text in _code_strings(ast.parse(source))
            for flag in v.BOUNDARY_FLAGS
            if flag in text
        }
    )


def test_the_boundary_flags_keep_their_wire_names():
    assert v.BOUNDARY_FLAGS == (
        "grants_new_action_authority",
        "external_writes_performed",
        "raw_content_captured",
    )


@pytest.mark.parametrize(
    "path",
    sorted(PACKAGE.rglob("*.py")),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_only_the_values_module_spells_a_boundary_flag(path):
    relative = str(path.relative_to(PACKAGE))
    if relative == "contract/values.py":
        return
    spelt = spelt_flags(path.read_text(encoding="utf-8"))
    assert spelt == sorted(SPELT_ELSEWHERE.get(relative, "").split()), (
        f"{relative} spells {spelt}; use contract.values.BOUNDARY_FLAGS' names"
    )


def test_the_spelling_check_sees_keys_and_field_paths_but_not_prose():
    source = '"""Says raw_content_captured."""\nx = {"external_writes_performed": 1}\n'
    source += 'f"{a}.grants_new_action_authority"\n'
    assert spelt_flags(source) == ["external_writes_performed", "grants_new_action_authority"]
