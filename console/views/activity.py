"""The audit log page: every change, newest first, filterable by task class, actor and kind.

Reads come from `beliefs.selectors.activity`; the rows, the filters and the capped count from
`console.presenters.activity`.
"""

from __future__ import annotations

from uuid import UUID

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from beliefs.selectors import activity as audit_log
from console.http import AuthedHttpRequest
from console.presenters.activity import ActivityFilter, CappedPaginator, event_row
from console.views.classify import classifier_required

ACTIVITY_PAGE_SIZE = 50


@require_GET
@classifier_required
def activity(request: AuthedHttpRequest) -> HttpResponse:
    """The audit log, newest first, filterable by task class, actor and kind; one page at a
    time: a count, a page of events, and the three lists the filters offer."""
    task_class_key = request.GET.get("task_class", "").strip()
    actor = request.GET.get("actor", "").strip()
    kind = request.GET.get("kind", "").strip()
    raw_instance = request.GET.get("instance", "").strip()
    instance = _uuid(raw_instance)
    events = audit_log.audit_events(
        task_class=task_class_key, actor=actor, kind=kind, instance=instance
    )
    if raw_instance and instance is None:
        events = events.none()  # no such instance can have events
    page = CappedPaginator(events, ACTIVITY_PAGE_SIZE).get_page(request.GET.get("page"))
    kinds = audit_log.audit_kinds()
    families = sorted({k.split(".")[0] + ".*" for k in kinds if "." in k})
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "activity/index.html",
        {
            "page": page,
            "events": [event_row(e) for e in page.object_list],
            "filters": [
                ActivityFilter(
                    "task_class",
                    "Task class",
                    "any",
                    audit_log.task_class_keys(),
                    task_class_key,
                ),
                ActivityFilter("actor", "Actor", "anyone", audit_log.recent_actors(actor), actor),
                ActivityFilter("kind", "Kind", "any", families + kinds, kind),
            ],
            "query": query.urlencode(),
            "instance": raw_instance,
        },
    )


def _uuid(raw: str) -> UUID | None:
    try:
        return UUID(raw) if raw else None
    except ValueError:
        return None
