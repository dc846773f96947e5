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
from beliefs.net import MAX_READ_BYTES, Deadline, Pool, post, to_uri
from tests.support.fake_servers import (
    CutServer,
    DripServer,
    KeepAliveServer,
    TlsServer,
    self_signed,
)


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


def test_an_answer_longer_than_the_read_limit_is_a_failure() -> None:
    """The answer is read to its end to know it is complete, but never past MAX_READ_BYTES."""
    size = MAX_READ_BYTES + 1
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size + b"x" * size
    with CutServer(reply) as server:
        outcome = post(_dest(server.port), {}, b"{}", Deadline(5))
    assert outcome.status is None and "longer than" in outcome.error, outcome


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


# --- kept connections ---------------------------------------------------------------------

OK = b"HTTP/1.1 204 No Content\r\n\r\n"


def _posts(dest: Destination, pool: Pool, count: int) -> list[Any]:
    return [post(dest, {}, b"{}", Deadline(5), pool) for _ in range(count)]


def test_a_pool_sends_one_request_after_another_over_one_connection() -> None:
    with KeepAliveServer([OK]) as server:
        pool = Pool()
        outcomes = _posts(_dest(server.port), pool, 5)
        pool.close()
    assert [o.status for o in outcomes] == [204] * 5
    assert server.on_connection == [1] * 5 and pool.opened == 1
    # Kept open: the request does not ask for the close (without a pool, each one does).
    assert b"connection: close" not in server.requests[0].lower()


def test_a_kept_connection_serves_only_its_origin_and_address() -> None:
    with KeepAliveServer([OK]) as server:
        pool = Pool()
        first = _dest(server.port)
        other_host = Destination(
            "http", "hooks.example", server.port, "/hooks", ("127.0.0.1",), allow_private=True
        )
        other_address = Destination(
            "http", "127.0.0.1", server.port, "/hooks", ("127.0.0.2",), allow_private=True
        )
        post(first, {}, b"{}", Deadline(5), pool)
        post(other_host, {}, b"{}", Deadline(5), pool)  # another origin: its own connection
        # Another checked address (where nothing listens): connected to, not handed the kept one.
        elsewhere = post(other_address, {}, b"{}", Deadline(5), pool)
        post(first, {}, b"{}", Deadline(5), pool)  # the first one's, kept
        pool.close()
    assert server.on_connection == [1, 2, 1]
    assert elsewhere.status is None and "ConnectionRefused" in elsewhere.error


@pytest.mark.parametrize(
    "bad",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",  # cut short (then closed)
        b"HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\n",  # the peer says it closes
        b"HTTP/1.1 200 OK\r\n\r\nread until the close",  # a body that ends at the close
    ],
)
def test_a_connection_is_not_used_again_after_an_error_or_a_close(bad: bytes) -> None:
    with KeepAliveServer([OK, bad, OK], close_after=2) as server:
        pool = Pool()
        outcomes = _posts(_dest(server.port), pool, 3)
        pool.close()
    assert outcomes[0].status == 204 and outcomes[2].status == 204
    assert server.on_connection == [1, 1, 2]  # the third on a new connection


def test_a_connection_the_peer_closed_while_idle_is_not_used() -> None:
    with KeepAliveServer([OK], close_after=1) as server:
        pool = Pool()
        first = post(_dest(server.port), {}, b"{}", Deadline(5), pool)
        # Wait until the server has hung up (it closes after one answer).
        deadline = time.monotonic() + 5
        while server.closed < 1:
            assert time.monotonic() < deadline, "the server did not hang up"
            time.sleep(0.01)
        second = post(_dest(server.port), {}, b"{}", Deadline(5), pool)
        pool.close()
    assert (first.status, second.status) == (204, 204)  # not a failed attempt
    assert server.on_connection == [1, 2]


def test_a_kept_connection_gets_the_new_attempts_deadline() -> None:
    with KeepAliveServer([OK]) as server:
        pool = Pool()
        post(_dest(server.port), {}, b"{}", Deadline(5), pool)
        server.replies = [OK, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"]  # then hangs
        started = time.monotonic()
        outcome = post(_dest(server.port), {}, b"{}", Deadline(0.5), pool)
        took = time.monotonic() - started
        pool.close()
    assert outcome.error.startswith("DeadlineExceeded") and took < 1.5
    assert server.on_connection == [1, 1]
