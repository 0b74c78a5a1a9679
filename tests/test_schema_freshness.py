"""The committed JSON Schemas match the models (tox's freshness check)."""

from __future__ import annotations

import json

from turn_hooks.schema import REGENERATE_COMMAND, SCHEMA_DIR, render_schemas


def test_committed_schemas_are_fresh():
    expected = render_schemas()
    committed = {path.name: path.read_text(encoding="utf-8") for path in SCHEMA_DIR.glob("*.json")}
    stale = sorted(name for name in expected if committed.get(name) != expected[name])
    extra = sorted(set(committed) - set(expected))
    assert not stale and not extra, (
        f"stale schemas {stale}, unknown schemas {extra}: run `{REGENERATE_COMMAND}`"
    )


def test_schemas_are_strict():
    for text in render_schemas().values():
        assert json.loads(text)["additionalProperties"] is False
