"""The pinned HTTP transport against misbehaving receivers on real sockets: one deadline for
the whole attempt however the peer drips, and only a complete HTTP response counts."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from beliefs.domain.webhooks import Destination
from beliefs.net import Deadline, post, to_uri
from tests.hooks.servers import CutServer, DripServer, TlsServer, self_signed


def _dest(port: int) -> Destination:
    return Destination("http", "127.0.0.1", port, "/hooks", ("127.0.0.1",), allow_private=True)


def test_a_receiver_dripping_its_answer_cannot_stretch_the_deadline() -> None:
    with DripServer(interval=0.1) as server:
        started = time.monotonic()
        outcome = post(_dest(server.port), {}, b"{}", Deadline(1.0))
        took = time.monotonic() - started
    assert not outcome.ok and outcome.status is None
    assert outcome.error.startswith("DeadlineExceeded")
    # Each byte came well within any per-read timeout; the whole attempt still ended on time.
    assert 0.9 <= took < 1.5


@pytest.mark.parametrize(
    "reply",
    [
        b"",
        b"HTTP/1.1 200 OK\r\n",  # the status line, then the connection closes
        b"HTTP/1.1 204 No Content\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n",  # cut in the headers
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",  # a short body
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc",  # a cut chunk
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",  # no last chunk
        b"HTTP/1.1 100 Continue\r\n\r\n",  # only an interim answer
        b"not http at all\r\n\r\n",
    ],
)
def test_a_reply_that_is_not_a_complete_http_response_is_a_failure(reply: bytes) -> None:
    with CutServer(reply) as server:
        outcome = post(_dest(server.port), {}, b"{}", Deadline(5))
    assert not outcome.ok, outcome
    assert outcome.status is None
    assert outcome.error, outcome
    assert len(server.requests) == 1  # sent once, to the checked address


@pytest.mark.parametrize(
    ("reply", "status", "kept"),
    [
        (b"HTTP/1.1 204 No Content\r\n\r\n", 204, ""),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", 200, "abc"),
        (b"HTTP/1.1 200 OK\r\n\r\nread until the close", 200, "read until the close"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 200, "abc"),
        (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
            202,
            "",
        ),  # noqa: E501
        (b"HTTP/1.1 302 Found\r\nLocation: http://10.0.0.1/\r\nContent-Length: 0\r\n\r\n", 302, ""),
    ],
)
def test_a_complete_reply_is_read_with_its_status(reply: bytes, status: int, kept: str) -> None:
    with CutServer(reply) as server:
        outcome = post(_dest(server.port), {}, b"{}", Deadline(5))
    assert (outcome.status, outcome.response, outcome.error) == (status, kept, "")
    assert outcome.ok == (200 <= status < 300)  # a redirect is not followed: a failure


def test_the_request_line_and_host_header_are_what_was_checked() -> None:
    with CutServer(b"HTTP/1.1 204 No Content\r\n\r\n") as server:
        dest = Destination(
            "http", "hooks.example", server.port, "/a%C3%A9?x=1", ("127.0.0.1",), allow_private=True
        )
        post(dest, {"webhook-id": "msg_1"}, b'{"a":1}', Deadline(5))
    (request,) = server.requests
    head = request.split(b"\r\n")
    assert head[0] == b"POST /a%C3%A9?x=1 HTTP/1.1"
    assert f"host: hooks.example:{server.port}".encode() in [h.lower() for h in head]
    assert request.endswith(b'\r\n\r\n{"a":1}')


def test_a_target_that_is_not_ascii_is_an_error_not_a_crash() -> None:
    with CutServer(b"HTTP/1.1 204 No Content\r\n\r\n") as server:
        dest = Destination(
            "http", "127.0.0.1", server.port, "/hooks/é", ("127.0.0.1",), allow_private=True
        )
        outcome = post(dest, {}, b"{}", Deadline(5))
    assert not outcome.ok and "UnicodeEncodeError" in outcome.error


@pytest.mark.parametrize(
    ("iri", "uri"),
    [
        ("https://8.8.8.8/hooks/é", "https://8.8.8.8/hooks/%C3%A9"),
        ("https://8.8.8.8/h?q=ü&x=1", "https://8.8.8.8/h?q=%C3%BC&x=1"),
        ("https://bücher.example:8443/x", "https://xn--bcher-kva.example:8443/x"),
        ("https://8.8.8.8/already%20encoded", "https://8.8.8.8/already%20encoded"),
    ],
)
def test_an_iri_becomes_the_uri_it_stands_for(iri: str, uri: str) -> None:
    assert to_uri(iri) == uri
    assert to_uri(uri) == uri


@pytest.fixture
def certificate(tmp_path: Any) -> Iterator[tuple[str, str]]:
    cert, key = self_signed("hooks.example", str(tmp_path))
    trusting = ssl.create_default_context(cafile=cert)
    with mock.patch("beliefs.net.tls_context", lambda: trusting):
        yield cert, key


def test_tls_goes_to_the_checked_address_and_checks_the_host_name(
    certificate: tuple[str, str],
) -> None:
    with TlsServer(*certificate) as server:
        # hooks.example resolves nowhere: the connection goes to the address that was checked.
        dest = Destination(
            "https", "hooks.example", server.port, "/hooks", ("127.0.0.1",), allow_private=True
        )
        outcome = post(dest, {}, b"{}", Deadline(5))
        assert (outcome.status, outcome.error) == (204, "")
        assert server.server_names == ["hooks.example"]
        wrong = Destination(
            "https", "other.example", server.port, "/hooks", ("127.0.0.1",), allow_private=True
        )
        refused = post(wrong, {}, b"{}", Deadline(5))
    assert refused.status is None and "SSLCertVerificationError" in refused.error
    assert "other.example" in refused.error
    assert len(server.requests) == 1  # nothing was sent to the server with the wrong name


def test_a_server_silent_during_the_tls_handshake_is_bounded_by_the_deadline(
    certificate: tuple[str, str],
) -> None:
    with TlsServer(*certificate, silent=True) as server:
        dest = Destination(
            "https", "hooks.example", server.port, "/hooks", ("127.0.0.1",), allow_private=True
        )
        started = time.monotonic()
        outcome = post(dest, {}, b"{}", Deadline(1.0))
        took = time.monotonic() - started
    assert outcome.error.startswith("DeadlineExceeded") and 0.9 <= took < 1.5
