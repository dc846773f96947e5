"""The statistics page's SVG charts, their geometry computed here so the templates only place
numbers (the CSP forbids inline styles, so the charts use SVG attributes and classes from
console.css)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from beliefs.domain.vocabulary import VERDICTS
from beliefs.selectors import proposals as proposal_reads


def nice_ceiling(value: int) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is >= value (at least 1)."""
    if value <= 1:
        return 1
    power = int(10 ** math.floor(math.log10(value)))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class DayChart:
    width: int
    height: int
    left: int
    right: float
    top: int
    bottom: float
    bars: list[Bar]
    y_ticks: list[Tick]
    x_ticks: list[Tick]


def day_chart(days: list[proposal_reads.DayVerdicts]) -> DayChart:
    width, height, left, right, top, bottom = 880, 260, 44, 12, 12, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    ceiling = nice_ceiling(max((d.total for d in days), default=0))
    slot = plot_w / max(len(days), 1)
    bar_w = max(slot * 0.7, 1.0)
    bars = []
    for i, day in enumerate(days):
        x = left + i * slot + (slot - bar_w) / 2
        base: float = top + plot_h
        for verdict in VERDICTS:
            n = day.counts[verdict]
            if not n:
                continue
            h = n / ceiling * plot_h
            base -= h
            title = f"{day.day.isoformat()}: {n} {verdict}"
            bars.append(
                Bar(round(x, 1), round(base, 1), round(bar_w, 1), round(h, 1), verdict, title)
            )
    steps = range(0, ceiling + 1, max(ceiling // 5, 1))  # ceilings are 1, 2 or 5 x 10^k
    y_ticks = [Tick(round(top + plot_h - s / ceiling * plot_h, 1), str(s)) for s in steps]
    every = max(math.ceil(len(days) / 8), 1)
    x_ticks = [
        Tick(round(left + i * slot + slot / 2, 1), day.day.strftime("%m-%d"))
        for i, day in enumerate(days)
        if i % every == 0
    ]
    return DayChart(width, height, left, width - right, top, top + plot_h, bars, y_ticks, x_ticks)


@dataclass(frozen=True)
class CodeBar:
    code: str
    count: int
    y: float
    width: float
    text_x: float
    text_y: float


@dataclass(frozen=True)
class CodeChart:
    width: int
    height: int
    bar_x: int
    bar_height: int
    rows: list[CodeBar]


def code_chart(codes: list[proposal_reads.CodeFrequency]) -> CodeChart:
    width, label_w, row_h, bar_h, top = 880, 320, 28, 18, 6
    bar_max = width - label_w - 48
    most = max((c.findings for c in codes), default=1)
    rows = []
    for i, code in enumerate(codes):
        y = top + i * row_h
        w = max(code.findings / most * bar_max, 1.0)
        rows.append(
            CodeBar(
                code.code,
                code.findings,
                y,
                round(w, 1),
                round(label_w + w + 6, 1),
                y + bar_h - 4,
            )
        )
    return CodeChart(width, top * 2 + row_h * len(codes), label_w, bar_h, rows)
