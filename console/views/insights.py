"""/insights/: convergence per task class and confirmation fatigue, for classifiers and
reviewers."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import floatformat

from beliefs import selectors
from beliefs.roles import is_classifier, is_reviewer
from beliefs.selectors import attention, insights
from console.http import AuthedHttpRequest

CHART_HEIGHT = 120
BAR_WIDTH = 28
BAR_GAP = 12


def _bars(points: list[insights.RunPoint], peak: float) -> list[dict[str, str | int]]:
    """Geometry of one bar per run, scaled to the highest bar across all task classes, with
    every number already written as the page shows it (as `stringformat:'.1f'` and
    `floatformat` would write it: formatting in the template cost more than the queries)."""
    bars: list[dict[str, str | int]] = []
    for index, point in enumerate(points):
        # Room below for the run label, above for the value label.
        height = 0 if peak == 0 else point.blocking_per_instance / peak * (CHART_HEIGHT - 36)
        x = BAR_GAP + index * (BAR_WIDTH + BAR_GAP)
        bars.append(
            {
                "x": f"{x:.1f}",
                "label_x": f"{x + BAR_WIDTH / 2:.1f}",
                "y": f"{CHART_HEIGHT - 16 - height:.1f}",
                "height": f"{height:.1f}",
                "value_y": f"{CHART_HEIGHT - 20 - height:.1f}",  # at least 16 from the top
                "run": point.run_number,
                "value": floatformat(point.blocking_per_instance, 1),
                "value_2": floatformat(point.blocking_per_instance, 2),
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
            "label_y": CHART_HEIGHT - 2,
            "bar_width": BAR_WIDTH,
            "fatigue": insights.fatigue(),
            "fast_seconds": insights.FAST_SECONDS,
            "window": insights.WINDOW,
            # M-of-N approval
            "quorum_times": selectors.time_to_quorum(),
            "friction": attention.friction_report(),
            "habit": attention.thresholds(),
        },
    )
