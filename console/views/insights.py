"""/insights/: convergence per task class and confirmation fatigue, for classifiers and
reviewers."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render

from beliefs.roles import is_classifier, is_reviewer
from beliefs.selectors import insights
from console.http import AuthedHttpRequest

CHART_HEIGHT = 120
BAR_WIDTH = 28
BAR_GAP = 12


def _bars(points: list[insights.RunPoint], peak: float) -> list[dict[str, float | int]]:
    """Geometry of one bar per run, scaled to the highest bar across all task classes."""
    bars = []
    for index, point in enumerate(points):
        # Room below for the run label, above for the value label.
        height = 0 if peak == 0 else point.blocking_per_instance / peak * (CHART_HEIGHT - 36)
        x = BAR_GAP + index * (BAR_WIDTH + BAR_GAP)
        bars.append(
            {
                "x": x,
                "label_x": x + BAR_WIDTH / 2,
                "y": CHART_HEIGHT - 16 - height,
                "height": height,
                "value_y": CHART_HEIGHT - 20 - height,  # at least 16 from the top
                "run": point.run_number,
                "value": point.blocking_per_instance,
                "instances": point.instances,
            }
        )
    return bars


def insights_page(request: AuthedHttpRequest) -> HttpResponse:
    if not (is_classifier(request.user) or is_reviewer(request.user)):
        raise PermissionDenied
    series = insights.convergence()
    peak = max((s.peak for s in series), default=0.0)
    charts = [
        {
            "series": s,
            "bars": _bars(s.points, peak),
            "width": BAR_GAP + len(s.points) * (BAR_WIDTH + BAR_GAP),
        }
        for s in series
    ]
    return render(
        request,
        "insights/insights.html",
        {
            "charts": charts,
            "chart_height": CHART_HEIGHT,
            "bar_width": BAR_WIDTH,
            "fatigue": insights.fatigue(),
            "fast_seconds": insights.FAST_SECONDS,
            "window": insights.WINDOW,
        },
    )
