"""The classifier console, mounted at /classify/."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from console.views import classify

urlpatterns: list[URLPattern | URLResolver] = [
    path("", classify.index, name="classify-index"),
    path("matrix/", classify.matrix, name="classify-matrix"),
    path("<str:key>/", classify.task_class_page, name="classify-task-class"),
    path("<str:key>/slots/<int:slot_id>/", classify.slot_save, name="classify-slot"),
    path(
        "<str:key>/slots/<int:row_id>/preview/",
        classify.row_preview,
        {"kind": "slot"},
        name="classify-slot-preview",
    ),
    path(
        "<str:key>/decisions/<int:decision_id>/",
        classify.decision_save,
        name="classify-decision",
    ),
    path(
        "<str:key>/decisions/<int:row_id>/preview/",
        classify.row_preview,
        {"kind": "decision"},
        name="classify-decision-preview",
    ),
    path(  # (issue 23) a decision's passkey signature requirement
        "<str:key>/decisions/<int:decision_id>/signature/",
        classify.decision_signature_save,
        name="classify-decision-signature",
    ),
    path(
        "<str:key>/decisions/<int:decision_id>/approvals/",
        classify.decision_approvals_save,
        name="classify-decision-approvals",
    ),
    path(
        "<str:key>/requests/<int:request_id>/",
        classify.request_decide,
        name="classify-request",
    ),
]
