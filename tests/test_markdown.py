"""Markdown receipts: short key/value sections, tables only for narrow flat rows, no JSON."""

from __future__ import annotations

import json
import re

from fixtures import f1
from test_openviking_real import health_goal

from hosts.cli import command as cli
from hosts.cli._render import MAX_TABLE_COLUMNS, render, to_markdown

JSON_IN_A_CELL = re.compile(r"\| *[\[{]")


def test_scalars_nested_mappings_and_rows():
    document = {
        "ok": True,
        "status": "ready",
        "tags": ["a", "b"],
        "empty": {},
        "detail": {"kind": "x", "inner": {"deep": 1}},
        "rows": [{"name": "one", "count": 1, "extra": {"why": "because"}}, {"name": "two"}],
        "none": [],
    }
    text = to_markdown(document, title="T", note="A note.")
    assert text.startswith("## T\n\nA note.\n\n| field | value |\n")
    assert "| tags | a, b |" in text and "| empty | (none) |" in text
    assert "### detail\n" in text and "| kind | x |" in text
    assert "#### inner\n" in text and "| deep | 1 |" in text
    assert "| name | count |\n|---|---|\n| one | 1 |\n| two |  |" in text
    assert "#### rows: one\n" in text and "| extra.why | because |" in text
    assert "| none | (none) |" in text
    assert not JSON_IN_A_CELL.search(text)


def test_a_wide_row_is_a_key_value_section_of_its_own():
    row = {f"field_{n}": n for n in range(MAX_TABLE_COLUMNS + 1)}
    text = to_markdown({"corpora": [{"corpus_id": "c", **row}, {"x": 1, **row}]}, title="W")
    assert "#### corpora: c\n" in text and "#### corpora: 2\n" in text
    assert "| field_0 | 0 |" in text and "| field_0 |" not in text.split("####")[0]


def test_a_list_of_mixed_items_and_a_top_level_list():
    text = to_markdown([{"name": "n"}, {"name": "m"}], title="L")
    assert "### items\n\n| name |\n|---|\n| n |\n| m |" in text
    mixed = to_markdown({"xs": ["a", ["b", "c"], {"k": "v"}]}, title="M")
    assert "- a\n- b, c\n" in mixed and "#### xs: 1\n" in mixed and "| k | v |" in mixed


def test_json_is_unchanged_by_the_note():
    assert render({"a": 1}, fmt="json", title="T", note="ignored") == '{"a":1}\n'


def test_configure_and_recall_markdown_hold_no_json(capsys, tmp_path):
    registry = health_goal(tmp_path, "md-goal", "embedded_sqlite")
    args = ["--registry", str(registry), "--goal-id", "md-goal", "--agent-id", f1.AGENT]
    for argv in (
        ["reward-memory", "configure", *args, "--config", f1.CONFIG_PATH],
        ["reward-memory", "recall", *args, "--query", "a change touches one module"],
    ):
        assert cli.main([*argv, "--format", "markdown"]) == 0
        text = capsys.readouterr().out
        assert not JSON_IN_A_CELL.search(text), argv
        widest = max(line.count("|") for line in text.splitlines())
        assert widest <= MAX_TABLE_COLUMNS + 1, "no one-row table of every field"
    assert "No memory yet" in text, "an empty recall says so in Markdown"
    assert cli.main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert "No memory yet" not in json.dumps(document), "JSON stays the reference's document"
