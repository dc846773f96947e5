"""The classifier console, mounted at /classify/. A task class key is any text a runtime
registered (a slash too), hence `path`."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from console.views import classify, guards

urlpatterns: list[URLPattern | URLResolver] = [
    path("", classify.index, name="classify-index"),
    path("matrix/", classify.matrix, name="classify-matrix"),
    path("<path:key>/slots/<int:slot_id>/", classify.slot_save, name="classify-slot"),
    path(
        "<path:key>/slots/<int:row_id>/preview/",
        classify.row_preview,
        {"kind": "slot"},
        name="classify-slot-preview",
    ),
    path(
        "<path:key>/decisions/<int:decision_id>/",
        classify.decision_save,
        name="classify-decision",
    ),
    path(
        "<path:key>/decisions/<int:row_id>/preview/",
        classify.row_preview,
        {"kind": "decision"},
        name="classify-decision-preview",
    ),
    path(  # a decision's passkey signature requirement
        "<str:key>/decisions/<int:decision_id>/signature/",
        classify.decision_signature_save,
        name="classify-decision-signature",
    ),
    path(
        "<str:key>/decisions/<int:decision_id>/person-confirms/",
        guards.decision_person_confirms_save,
        name="classify-decision-person-confirms",
    ),
    path(
        "<str:key>/slots/<int:slot_id>/future/",
        guards.slot_future_save,
        name="classify-slot-future",
    ),
    path(
        "<str:key>/decisions/<int:decision_id>/approvals/",
        classify.decision_approvals_save,
        name="classify-decision-approvals",
    ),
    path(
        "<path:key>/requests/<int:request_id>/",
        classify.request_decide,
        name="classify-request",
    ),
    # Last: a key may hold a slash ("hostile.<b>demo</b>"), so the page's own pattern takes
    # everything the ones above did not.
    path("<path:key>/", classify.task_class_page, name="classify-task-class"),
]
