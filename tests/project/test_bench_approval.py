"""The one-whole-approval rows: one version's turns add up to one window, an approval that
failed is not counted as done, and with `--against` the CPU row reads "this vs that", held to
the goal of halving it."""

from __future__ import annotations

from types import SimpleNamespace

from bench.approval import HALVED, Window, _rows


def _window(approvals: int, server_ms: float, failed: int = 0) -> Window:
    return Window(
        approvals=approvals,
        seconds=approvals / 10,
        server_ms=server_ms,
        worker_ms=approvals * 5.0,
        database_ms=approvals * 20.0,
        statements=approvals * 72,
        transactions=approvals * 6,
        failed=[f"{n}: boom" for n in range(failed)],
    )


def test_turns_add_up_and_failures_are_not_approvals() -> None:
    total = Window.total([_window(50, 50 * 60.0), _window(50, 50 * 40.0, failed=10)])
    assert (total.approvals, total.statements, len(total.failed)) == (100, 7200, 10)
    assert total.per_approval() == (5000.0 + 500.0 + 2000.0) / 90


def test_against_another_version_the_cpu_is_held_to_halving_it() -> None:
    postgres = SimpleNamespace(postgres=True)
    alone = _rows(postgres, _window(100, 100 * 60.0), None)
    assert [row["ratio"] for row in alone] == [None, None]
    assert alone[0]["value"].startswith("85.0 ms: servers 60.0, worker 5.0, PostgreSQL 20.0")

    for server_ms, holds in ((15.0, True), (17.5, True), (20.0, False)):
        this, that = _window(100, 100 * server_ms), _window(100, 100 * 60.0)
        cpu, statements = _rows(postgres, this, that)
        assert cpu["ratio"] == (server_ms + 25.0) / 85.0
        assert cpu["holds"] is holds and cpu["goal"] == f"≤ {HALVED:g}× of --against"
        assert " vs 85.0 ms: servers 60.0" in cpu["value"]
        assert statements["value"] == "72.0 (6.0) vs 72.0 (6.0)"
