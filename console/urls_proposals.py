from __future__ import annotations

from django.urls import path

from console.views import proposals as views

urlpatterns = [
    path("", views.proposal_list, name="proposals"),
    path("export.csv", views.proposal_export, name="proposals-export"),
    path("stats/", views.proposal_stats, name="proposals-stats"),
    path("<int:pk>/", views.proposal_detail, name="proposal"),
    path("<int:pk>/annotation/", views.proposal_annotate, name="proposal-annotate"),
]
