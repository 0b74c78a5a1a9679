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


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(
    document: Any, *, title: str, notes: dict[str, tuple[str, str]] | None = None
) -> str:
    """A heading, a field table for scalars and a table per list of objects.

    ``notes`` qualify a nested table: key -> (words added to its heading, a paragraph
    before it), so a field kept for wire compatibility is not read as what it is not.
    """
    lines = [f"## {title}", ""]
    if isinstance(document, list):
        document = {"items": document}
    scalars = {k: v for k, v in document.items() if not isinstance(v, dict | list)}
    nested = {k: v for k, v in document.items() if isinstance(v, dict | list)}
    if scalars:
        lines += ["| field | value |", "|---|---|"]
        lines += [f"| {key} | {_cell(value)} |" for key, value in scalars.items()]
        lines.append("")
    for key, value in nested.items():
        qualifier, note = (notes or {}).get(key, ("", ""))
        lines.append(f"### {key} ({qualifier})" if qualifier else f"### {key}")
        lines.append("")
        if note:
            lines += [note, ""]
        rows = value if isinstance(value, list) else [value]
        if rows and all(isinstance(row, dict) for row in rows):
            columns = list(dict.fromkeys(column for row in rows for column in row))
            lines.append("| " + " | ".join(columns) + " |")
            lines.append("|" + "---|" * len(columns))
            for row in rows:
                lines.append("| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |")
        elif rows:
            lines += [f"- {_cell(item)}" for item in rows]
        else:
            lines.append("(none)")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render(
    document: Any, *, fmt: str, title: str, notes: dict[str, tuple[str, str]] | None = None
) -> str:
    """Render ``document`` as ``json`` or ``markdown`` (``notes``: see :func:`to_markdown`)."""
    if fmt == "json":
        return to_json(document) + "\n"
    return to_markdown(document, title=title, notes=notes)
