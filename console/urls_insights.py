"""Pages mounted at the root for classifiers and reviewers: /activity/ (and /insights/)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from console.views import activity

urlpatterns: list[URLPattern | URLResolver] = [
    path("activity/", activity.activity, name="activity"),
]
