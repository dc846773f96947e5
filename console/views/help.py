"""/glossary/: the terms of art the classifier and reviewer pages use, in plain words."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from beliefs.roles import is_classifier, is_reviewer
from console.presenters.proposals import INVARIANTS


@require_GET
def glossary(request: HttpRequest) -> HttpResponse:
    if not (is_classifier(request.user) or is_reviewer(request.user)):
        raise PermissionDenied("The glossary is for classifiers and reviewers.")
    return render(request, "help/glossary.html", {"invariants": INVARIANTS})
