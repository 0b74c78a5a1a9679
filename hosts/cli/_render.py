"""Receipts for people (Markdown) and for machines (one compact JSON document)."""

from __future__ import annotations

import json
from typing import Any


def encode_output(text: str) -> bytes:
    """``text`` as UTF-8, each lone surrogate replaced by U+FFFD (a defined policy, so
    output is valid UTF-8, and valid JSON even for parsers that refuse a lone ``\\u``
    surrogate escape)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 with surrogatepass keeps a real pair joined and marks only lone ones.
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed.encode("utf-8")


def to_json(document: Any) -> str:
    """One compact JSON document, non-ASCII kept."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


MAX_TABLE_COLUMNS = 8
"""A list of rows wider than this is shown row by row, each as its own section."""


def _text(value: Any) -> str:
    """A scalar as text (JSON spelling for ``true``/``null``/numbers); a list of
    scalars joined with commas. Never a JSON object or array in a cell."""
    if isinstance(value, list):
        return ", ".join(_text(item) for item in value) if value else "(none)"
    if isinstance(value, dict):  # only an empty one reaches a cell
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _cell(value: Any) -> str:
    return _text(value).replace("|", "\\|").replace("\n", " ")


def _is_flat(value: Any) -> bool:
    """A scalar or a list of scalars: fits one cell."""
    if isinstance(value, list):
        return all(not isinstance(item, dict | list) for item in value)
    return not isinstance(value, dict)


def _pairs(mapping: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Flat ``(dotted key, value)`` pairs of a mapping: nested mappings are spelt out
    key by key; a list of mappings stays one value (shown as its own section)."""
    pairs: list[tuple[str, Any]] = []
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            pairs += _pairs(value, name + ".")
        else:
            pairs.append((name, {} if isinstance(value, dict) else value))
    return pairs


def _fields(lines: list[str], pairs: list[tuple[str, Any]]) -> None:
    if pairs:
        lines += ["| field | value |", "|---|---|"]
        lines += [f"| {key} | {_cell(value)} |" for key, value in pairs]
        lines.append("")


def _section(lines: list[str], heading: str, level: int, value: Any, paragraph: str = "") -> None:
    """One titled key/value section, a table of flat rows, or a list, recursively;
    ``paragraph`` goes between the heading and the content."""
    lines += [f"{'#' * level} {heading}", ""]
    if paragraph:
        lines += [paragraph, ""]
    if isinstance(value, dict):
        _mapping(lines, value, level)
        return
    if all(isinstance(row, dict) for row in value):  # never empty: [] is a flat value
        _rows(lines, heading, level, value)
        return
    nested = [item for item in value if isinstance(item, dict)]
    lines += [f"- {_cell(item)}" for item in value if not isinstance(item, dict)]
    lines.append("")
    for number, item in enumerate(nested, 1):
        _section(lines, f"{heading}: {number}", min(level + 1, 6), item)


def _row_name(row: dict[str, Any], number: int) -> str:
    """What a row's own section is called: its most specific naming field (a name or
    scenario, then an id, a ref, a host) when it has one, else its position."""
    ranks = (
        lambda key: key in {"name", "scenario", "id"},
        lambda key: key.endswith("_id"),
        lambda key: key.endswith("_ref"),
        lambda key: key == "host",
    )
    for naming in ranks:
        for key, value in row.items():
            if naming(key) and isinstance(value, str) and value:
                return _cell(value)
    return str(number)


def _rows(lines: list[str], heading: str, level: int, rows: list[dict[str, Any]]) -> None:
    """A table of the fields that are flat in every row, then each row's nested
    fields as its own section; a row too wide for a table is a section of its own."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    # A schema version every row shares says nothing per row: it is left out.
    if len({str(row.get("schema_version")) for row in rows}) == 1:
        columns = [c for c in columns if c != "schema_version"]
    flat = [c for c in columns if all(_is_flat(row.get(c, "")) for row in rows)]
    if not flat or len(flat) > MAX_TABLE_COLUMNS:
        for number, row in enumerate(rows, 1):
            _section(lines, f"{heading}: {_row_name(row, number)}", min(level + 1, 6), row)
        return
    lines.append("| " + " | ".join(flat) + " |")
    lines.append("|" + "---|" * len(flat))
    for row in rows:
        # An absent value (null) is an empty cell: a column of "null" reads as noise.
        cells = (_cell(row.get(c)) if row.get(c) is not None else "" for c in flat)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for number, row in enumerate(rows, 1):
        rest = {
            k: v for k, v in row.items() if k in columns and k not in flat and v not in ({}, [])
        }
        if rest:  # named like its row, so it reads as that row's detail
            _section(lines, f"{heading}: {_row_name(row, number)}", min(level + 1, 6), rest)


def _mapping(
    lines: list[str],
    document: dict[str, Any],
    level: int,
    notes: dict[str, tuple[str, str]] | None = None,
) -> None:
    # Nested mappings are sections of their own down to ####, dotted keys below that.
    if level >= 4:
        pairs = _pairs(document)
    else:
        pairs = [(k, {} if isinstance(v, dict) and not v else v) for k, v in document.items()]
    _fields(lines, [(key, value) for key, value in pairs if _is_flat(value) or value == {}])
    for key, value in pairs:
        if not (_is_flat(value) or value == {}):
            qualifier, paragraph = (notes or {}).get(key, ("", ""))
            heading = f"{key} ({qualifier})" if qualifier else key
            _section(lines, heading, min(level + 1, 6), value, paragraph)


def to_markdown(
    document: Any,
    *,
    title: str,
    note: str | None = None,
    notes: dict[str, tuple[str, str]] | None = None,
) -> str:
    """A heading, an optional one-line note, then short key/value sections.

    Scalars form one ``field | value`` table; a nested mapping is a section of its
    own (spelt out as dotted keys from the fourth level down); a list of rows is a
    table of the fields flat in every row, each row's nested fields following as
    sections. No cell holds JSON. ``notes`` qualify a top-level section: key ->
    (words added to its heading, a paragraph before it), so a field kept for wire
    compatibility is not read as what it is not.
    """
    lines = [f"## {title}", ""]
    if note:
        lines += [note, ""]
    if isinstance(document, list):
        document = {"items": document}
    _mapping(lines, document, 2, notes)
    return "\n".join(lines).rstrip() + "\n"


def render(
    document: Any,
    *,
    fmt: str,
    title: str,
    note: str | None = None,
    notes: dict[str, tuple[str, str]] | None = None,
) -> str:
    """Render ``document`` as ``json`` or ``markdown`` (``note`` and ``notes`` are
    Markdown only: see :func:`to_markdown`)."""
    if fmt == "json":
        return to_json(document) + "\n"
    return to_markdown(document, title=title, note=note, notes=notes)


def fenced(heading: str, text: str) -> str:
    """A Markdown section holding ``text`` verbatim in a fence longer than any run of
    backticks inside it, so the text cannot close it."""
    import re

    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"\n### {heading}\n\n{fence}text\n{body}{fence}\n"
