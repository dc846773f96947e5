"""The SSRF guard: https and public addresses only, at registration and again at delivery."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from beliefs.domain.webhooks import UnsafeDestination, check_destination, retry_delay
from beliefs.models import WebhookDelivery, WebhookEndpoint
from beliefs.services.audit import Actor
from demo.receiver import Receiver
from tests.conftest import JsonClient
from tests.support.outbound import API, open_transfer, run_worker

PUBLIC = "93.184.215.14"


def _resolver(*answers: str) -> Any:
    return lambda host, port: list(answers)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_it_refuses_non_public_addresses_unless_allowed(address: str) -> None:
    with pytest.raises(UnsafeDestination, match="non-public"):
        check_destination("https://hooks.example/x", _resolver(address), allow_private=False)
    allowed = check_destination("https://hooks.example/x", _resolver(address), allow_private=True)
    assert allowed.addresses == (address,)


def test_one_private_answer_among_public_ones_is_enough_to_refuse() -> None:
    with pytest.raises(UnsafeDestination):
        check_destination("https://a.example/", _resolver(PUBLIC, "10.0.0.1"), allow_private=False)


def test_https_only_and_plain_http_only_for_private_addresses_when_allowed() -> None:
    dest = check_destination("https://a.example:8443/h?x=1", _resolver(PUBLIC), allow_private=False)
    assert (dest.scheme, dest.port, dest.target) == ("https", 8443, "/h?x=1")
    for allow in (False, True):
        with pytest.raises(UnsafeDestination, match="https"):
            check_destination("http://a.example/", _resolver(PUBLIC), allow_private=allow)
    assert check_destination("http://localhost/", _resolver("127.0.0.1"), allow_private=True)
    for url in ("ftp://a.example/", "https://user:pw@a.example/", "https:///x", "https://a b/"):
        with pytest.raises(UnsafeDestination):
            check_destination(url, _resolver(PUBLIC), allow_private=True)


def test_the_retry_schedule_spans_about_three_days_then_gives_up() -> None:
    from beliefs.domain.webhooks import RETRY_SECONDS

    total = sum(RETRY_SECONDS)
    assert 2.5 * 86400 < total < 3.5 * 86400
    assert retry_delay(1) == 5
    assert retry_delay(len(RETRY_SECONDS) + 1) is None
    assert list(RETRY_SECONDS) == sorted(RETRY_SECONDS)  # backing off, never speeding up


@override_settings(CONSOLE_WEBHOOK_ALLOW_PRIVATE=False)
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:9/hooks", "non-public"),
        ("https://127.0.0.1/hooks", "non-public"),
        ("https://[::1]/hooks", "non-public"),
        ("https://169.254.169.254/latest/meta-data/", "non-public"),
        ("https://localhost/hooks", "non-public"),
        ("ftp://example.org/", "https"),
        ("not a url", "spaces"),
        (None, "null"),  # refused at the edge, before the address guard
    ],
)
def test_registration_refuses_with_a_400_naming_the_url(
    runtime: JsonClient, url: Any, message: str
) -> None:
    response = runtime.post_json(f"{API}/webhook-endpoints/", {"url": url})
    assert response.status_code == 400, response.json()
    body = response.json()
    assert list(body["fields"]) == ["url"]
    assert message in body["detail"]
    assert not WebhookEndpoint.objects.exists()


def test_registration_names_other_bad_fields(runtime: JsonClient) -> None:
    bad = runtime.post_json(
        f"{API}/webhook-endpoints/", {"url": "http://127.0.0.1/", "event_types": ["nope"]}
    )
    assert bad.status_code == 400
    assert [name.split("[")[0] for name in bad.json()["fields"]] == ["event_types"]
    extra = runtime.post_json(f"{API}/webhook-endpoints/", {"url": "http://127.0.0.1/", "x": 1})
    assert extra.status_code == 400 and list(extra.json()["fields"]) == ["x"]


def test_delivery_checks_the_address_again(runtime: JsonClient, rt: Actor) -> None:
    with Receiver("whsec_" + "A" * 44) as receiver:
        created = runtime.post_json(f"{API}/webhook-endpoints/", {"url": receiver.url})
        assert created.status_code == 201  # allowed while developing
        with override_settings(CONSOLE_WEBHOOK_ALLOW_PRIVATE=False):
            open_transfer(rt)
            run_worker()
    delivery = WebhookDelivery.objects.get()
    assert receiver.received == []
    assert delivery.state == WebhookDelivery.State.PENDING  # retried: DNS may change back
    assert "non-public" in delivery.last_error


def test_a_host_name_that_cannot_be_encoded_is_a_400_not_a_500(runtime: JsonClient) -> None:
    response = runtime.post_json(f"{API}/webhook-endpoints/", {"url": "https://" + "ä" * 70 + "/"})
    assert response.status_code == 400, response.content
    assert list(response.json()["fields"]) == ["url"]


@pytest.mark.parametrize("hidden", ["64:ff9b::7f00:1", "::7f00:1", "2002:7f00:1::1", "fec0::1"])
def test_delivery_refuses_an_embedded_loopback_answer_before_connecting(
    runtime: JsonClient, rt: Actor, monkeypatch: pytest.MonkeyPatch, hidden: str
) -> None:
    """A name that resolved to a public address at registration and to an IPv6 form of
    loopback at delivery is refused at the attempt, and nothing is connected to."""
    import socket

    from beliefs.services.webhooks import delivery, endpoints

    monkeypatch.setattr(endpoints, "resolve", lambda host, port: [PUBLIC])
    created = runtime.post_json(f"{API}/webhook-endpoints/", {"url": "https://hooks.example/"})
    assert created.status_code == 201, created.json()
    connected: list[Any] = []

    def connect(*args: Any, **kwargs: Any) -> Any:
        connected.append(args)
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(delivery, "resolve", lambda host, port: [hidden])
    monkeypatch.setattr(socket, "create_connection", connect)
    with override_settings(CONSOLE_WEBHOOK_ALLOW_PRIVATE=False):
        open_transfer(rt)
        run_worker()
    delivery = WebhookDelivery.objects.get()
    assert connected == []
    assert "non-public" in delivery.last_error and hidden in delivery.last_error


def test_the_pinned_connection_goes_only_to_the_checked_addresses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`post` connects to the addresses `check_destination` returned, one after the other,
    never to a fresh answer for the host name."""
    from beliefs import net
    from beliefs.net import Deadline

    dest = check_destination(
        "https://hooks.example/x", _resolver(PUBLIC, "2606:4700::1"), allow_private=False
    )
    connected: list[Any] = []

    def refuse(address: Any, *args: Any, **kwargs: Any) -> Any:
        connected.append(address)
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(net.socket, "create_connection", refuse)
    monkeypatch.setattr(
        net.socket, "getaddrinfo", lambda *args, **kwargs: [(2, 1, 6, "", ("127.0.0.1", 443))]
    )
    outcome = net.post(dest, {}, b"{}", Deadline(1.0))
    assert not outcome.ok
    assert connected == [(PUBLIC, 443), ("2606:4700::1", 443)]
