"""The API refuses oversized bodies with a JSON 413 and stores nothing."""

from __future__ import annotations

import pytest
from django.test import override_settings

from beliefs.models import ProposalValidation
from tests.conftest import JsonClient

pytestmark = pytest.mark.django_db


@override_settings(API_MAX_BODY_BYTES=1000)
def test_it_refuses_a_body_over_the_limit(runtime: JsonClient) -> None:
    graph = {"nodes": [{"id": f"n{i}", "type": "fact", "label": "x" * 50} for i in range(50)]}
    response = runtime.post_json("/api/v1/proposals/validate/", {"graph": graph, "update": {}})
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"
    assert ProposalValidation.objects.count() == 0


@override_settings(API_MAX_BODY_BYTES=1000)
def test_it_reads_a_body_under_the_limit(runtime: JsonClient) -> None:
    response = runtime.post_json("/api/v1/instances/", {"task_class": "nope", "principal": "x"})
    assert response.status_code == 404  # judged, not refused for its size
