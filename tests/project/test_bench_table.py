"""`make bench` writes its table into the docs page between the markers, and nowhere else."""

from __future__ import annotations

from pathlib import Path

from bench.main import DOCS_PAGE, TABLE_END, TABLE_START, Row, write_docs_table

ROWS = {
    "SQLite": [Row("plan by slots", "queries, 5 vs 200 slots", "4 vs 4", 1.0, "equal", True)],
    "PostgreSQL": [Row("plan by slots", "queries, 5 vs 200 slots", "4 vs 5", 1.25, "equal", False)],
}


def test_the_table_replaces_only_what_stands_between_the_markers(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Benchmarks\n\nWhy.\n\n{TABLE_START}\nold table\n{TABLE_END}\n\nAfter.\n")

    assert write_docs_table("Benchmark (quick)", ROWS, page)

    text = page.read_text()
    assert text.startswith(f"# Benchmarks\n\nWhy.\n\n{TABLE_START}\nBenchmark (quick)\n\n")
    assert text.endswith(f"{TABLE_END}\n\nAfter.\n")
    assert "old table" not in text
    assert "| plan by slots | queries, 5 vs 200 slots | 1.00× (4 vs 4) | 1.25× (4 vs 5) |" in text
    assert text.count(TABLE_START) == 1


def test_a_page_without_markers_is_left_alone(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n")

    assert not write_docs_table("Benchmark (quick)", ROWS, page)
    assert page.read_text() == "# Benchmarks\n"


def test_the_docs_page_has_the_markers() -> None:
    text = DOCS_PAGE.read_text()
    assert text.index(TABLE_START) < text.index(TABLE_END)
