"""`make bench`'s receiver of `instance.ready` webhooks (`bench.longpoll.ready_receiver`): it
serves the endpoint made for it, and deletes that endpoint when it stops, so that the groups of
a whole run that come after it do not have their worker deliver to a receiver that is gone."""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import pytest

from beliefs.models import RuntimeAPIKey, WebhookEndpoint
from beliefs.services.audit import Actor
from beliefs.services.webhooks.endpoints import live_endpoints
from bench.longpoll import ready_receiver


@pytest.mark.django_db
def test_a_stopped_receiver_leaves_no_endpoint_behind(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    key, _ = runtime_key
    bench = SimpleNamespace(actor=Actor(key=key))
    first = ready_receiver(bench, lambda _: None)
    try:
        assert list(live_endpoints(key.runtime)) == [first.endpoint]
        assert first.endpoint.event_types == ["instance.ready"]
        # It serves its endpoint's address (an unsigned post is refused, but answered).
        answered = httpx.post(first.endpoint.url, content=b"{}", timeout=5)
        assert answered.status_code in {400, 401}
    finally:
        first.stop()
    second = ready_receiver(bench, lambda _: None)
    second.stop()
    gone = WebhookEndpoint.objects.filter(pk__in=[first.endpoint.pk, second.endpoint.pk])
    assert [(e.active, e.deleted_at is not None) for e in gone] == [(False, True)] * 2
    assert not live_endpoints(key.runtime).exists()
    with pytest.raises(httpx.ConnectError):
        httpx.post(first.endpoint.url, content=b"{}", timeout=5)
