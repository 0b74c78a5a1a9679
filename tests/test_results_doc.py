"""benchmarks/RESULTS.md opens with the current figure of every target (issue 42).

Its first screen is one table: target, current figure, the bar, the date measured and
the command that reproduces the row. The history of how each figure was reached lives
in benchmarks/HISTORY.md. These checks keep that first screen honest as benchmarks
are added: a new ``benchmarks/bench_*.py`` needs a row whose command runs it, a
renamed script cannot leave a row pointing at nothing, and the history stays linked.
"""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
RESULTS = BENCHMARKS / "RESULTS.md"
FIRST_SCREEN = 80
NO_DATE = "\N{EN DASH}"
"""The date cell of a row with no dated figure."""
COLUMNS = ["target", "current figure", "the bar it must meet", "date measured"]


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def first_table() -> tuple[int, list[list[str]]]:
    """The first Markdown table: its last line number (1-based) and its rows."""
    lines = RESULTS.read_text(encoding="utf-8").splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith("|"))
    end = start
    while end + 1 < len(lines) and lines[end + 1].startswith("|"):
        end += 1
    return end + 1, [cells(line) for line in lines[start : end + 1]]


def test_the_table_of_current_figures_is_on_the_first_screen():
    end, rows = first_table()
    assert end <= FIRST_SCREEN, f"the table ends at line {end}; keep it within {FIRST_SCREEN}"
    header, rule, *body = rows
    assert header[:4] == COLUMNS and header[4].startswith("command"), header
    assert all(set(cell) <= set("-: ") for cell in rule), "the second line is the rule"
    assert body, "at least one target"
    for row in body:
        assert len(row) == len(header), f"a cell holds a '|' or is missing: {row}"
        target, figure, bar, date, command = row
        assert target and figure and bar and command, row
        # A date for every figure, and no date for a target not measured yet.
        if figure.startswith("not measured"):
            assert date == NO_DATE, row
        else:
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) or date == NO_DATE, row


def test_every_benchmark_script_is_named_by_a_rows_command():
    commands = " ".join(row[4] for row in first_table()[1][2:])
    scripts = sorted(path.name for path in BENCHMARKS.glob("bench_*.py"))
    assert scripts, "no benchmark script found"
    missing = [name for name in scripts if f"benchmarks/{name}" not in commands]
    assert not missing, f"add a row to benchmarks/RESULTS.md whose command runs {missing}"


def test_every_script_a_row_names_exists():
    commands = " ".join(row[4] for row in first_table()[1][2:])
    named = re.findall(r"\b((?:benchmarks|tests)/[\w.]+\.py)\b", commands)
    assert named
    missing = sorted({path for path in named if not (BENCHMARKS.parent / path).is_file()})
    assert not missing, f"benchmarks/RESULTS.md names scripts that do not exist: {missing}"


def test_the_history_is_linked_and_resolves():
    text = RESULTS.read_text(encoding="utf-8")
    first_screen = "\n".join(text.splitlines()[:FIRST_SCREEN])
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", first_screen)
    assert "HISTORY.md" in links, "link the history from the first screen"
    for link in links:
        target = BENCHMARKS / link
        assert target.is_file(), f"{link} does not resolve from benchmarks/"
    history = (BENCHMARKS / "HISTORY.md").read_text(encoding="utf-8")
    assert "](RESULTS.md)" in history, "the history links back to the current figures"
