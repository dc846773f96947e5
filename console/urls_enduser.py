from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from console.views import enduser

urlpatterns: list[URLPattern | URLResolver] = [
    path("", enduser.inbox, name="inbox"),
    path("inbox/rows/", enduser.inbox_rows, name="inbox-rows"),
    path("instances/<uuid:instance_id>/", enduser.instance_detail, name="instance"),
    path(
        "instances/<uuid:instance_id>/prompts/<int:prompt_id>/respond/",
        enduser.prompt_respond,
        name="prompt-respond",
    ),
]
