"""Every method of Console and AsyncConsole against a scripted console (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import pytest
from conftest import BASE, INSTANCE_ID, KEY, FakeConsole, instance, ready
from console_client import (
    AsyncConsole,
    BadRequest,
    Conflict,
    Console,
    DigestMismatch,
    Forbidden,
    InstanceExpired,
    NotFound,
    NotReady,
    PayloadTooLarge,
    ServerError,
    Unauthorized,
    WaitTimeout,
)
from console_client._core import MAX_DROPS
from console_client.errors import ApiError, ConsoleError, ConsoleTimeout, ConsoleUnavailable

PATH = f"instances/{INSTANCE_ID}/"


def _json(request: httpx.Request) -> Any:
    return json.loads(request.content)


# --- one request per method ----------------------------------------------------------------


def test_register_task_class_puts_the_class(console: Console, fake: FakeConsole) -> None:
    fake.on("PUT", "task-classes/payments.refund/", {"key": "payments.refund", "slots": []})
    slots = [{"key": "iban", "suggested_risk": "irreversible"}]
    decisions = [{"key": "refund", "slots": ["iban"]}]
    result = console.register_task_class(
        "payments.refund", name="Refund", slots=slots, decisions=decisions
    )
    assert result["key"] == "payments.refund"
    (request,) = fake.requests
    assert request.method == "PUT"
    assert str(request.url) == f"{BASE}/api/v1/task-classes/payments.refund/"
    assert request.headers["Authorization"] == f"Api-Key {KEY}"
    assert _json(request) == {"name": "Refund", "slots": slots, "decisions": decisions}


def test_open_instance_sends_world_beliefs_and_the_idempotency_key(
    console: Console, fake: FakeConsole
) -> None:
    fake.on("POST", "instances/", (201, instance("open")))
    beliefs = [{"slot": "iban", "value": "NL91", "source": "tool"}]
    world = {"iban": {"holder": "Alice"}}
    result = console.open_instance(
        "payments.refund", "alice", world=world, beliefs=beliefs, idempotency_key="t1:s2"
    )
    assert result["id"] == INSTANCE_ID
    (request,) = fake.requests
    assert request.headers["Idempotency-Key"] == "t1:s2"
    assert _json(request) == {
        "task_class": "payments.refund",
        "principal": "alice",
        "world": world,
        "beliefs": beliefs,
    }


def test_open_instance_without_a_key_sends_no_header(console: Console, fake: FakeConsole) -> None:
    fake.on("POST", "instances/", (201, instance("open")))
    console.open_instance("payments.refund", "alice")
    (request,) = fake.requests
    assert "Idempotency-Key" not in request.headers
    assert _json(request) == {"task_class": "payments.refund", "principal": "alice"}


def test_record_belief(console: Console, fake: FakeConsole) -> None:
    fake.on("POST", PATH + "beliefs/", (201, {"id": 9, "slot": "iban"}))
    result = console.record_belief(
        INSTANCE_ID, "iban", "NL91", source="tool", turn=3, world_ref={"holder": "Alice"}
    )
    assert result["id"] == 9
    assert _json(fake.requests[0]) == {
        "slot": "iban",
        "value": "NL91",
        "source": "tool",
        "turn": 3,
        "world_ref": {"holder": "Alice"},
    }


def test_set_world(console: Console, fake: FakeConsole) -> None:
    fake.on("PUT", PATH + "world/", instance("awaiting_user"))
    console.set_world(INSTANCE_ID, {"iban": {"holder": "Bob"}})
    assert fake.requests[0].method == "PUT"
    assert _json(fake.requests[0]) == {"world": {"iban": {"holder": "Bob"}}}


def test_plan(console: Console, fake: FakeConsole) -> None:
    fake.on(
        "POST",
        PATH + "plan/",
        {"id": INSTANCE_ID, "status": "ready", "items": []},
    )
    assert console.plan(INSTANCE_ID)["status"] == "ready"
    assert fake.requests[0].url.path == f"/api/v1/{PATH}plan/"


def test_a_plans_instance_is_its_id_and_the_old_name_still_reads_deprecated(
    console: Console, fake: FakeConsole
) -> None:
    fake.on("POST", PATH + "plan/", {"id": INSTANCE_ID, "status": "ready", "items": []})
    plan = console.plan(INSTANCE_ID)
    assert plan["id"] == INSTANCE_ID and "instance" not in plan
    with pytest.warns(DeprecationWarning, match="read `id`") as caught:
        assert plan["instance"] == INSTANCE_ID
        assert plan.get("instance") == INSTANCE_ID
    assert [w.filename for w in caught] == [__file__, __file__]  # points at the reader
    assert json.loads(json.dumps(plan)) == {"id": INSTANCE_ID, "status": "ready", "items": []}


def test_get(console: Console, fake: FakeConsole) -> None:
    fake.on("GET", PATH, instance("awaiting_user"))
    assert console.get(INSTANCE_ID)["status"] == "awaiting_user"


def test_cancel_with_and_without_a_reason(console: Console, fake: FakeConsole) -> None:
    fake.on("POST", PATH + "cancel/", instance("cancelled"))
    console.cancel(INSTANCE_ID, "the customer withdrew")
    console.cancel(INSTANCE_ID)
    assert fake.bodies() == [{"reason": "the customer withdrew"}, {}]


def test_page_url_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSOLE_URL", "http://env.test:9000/")
    monkeypatch.setenv("CONSOLE_API_KEY", "from-env")
    console = Console()
    assert console.page_url("abc") == "http://env.test:9000/instances/abc/"
    assert console._http.headers["Authorization"] == "Api-Key from-env"
    monkeypatch.delenv("CONSOLE_API_KEY")
    with pytest.raises(ValueError, match="CONSOLE_API_KEY"):
        Console()


# --- typed errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, BadRequest),
        (401, Unauthorized),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (413, PayloadTooLarge),
        (500, ServerError),
    ],
)
def test_each_error_status_raises_its_type_with_the_servers_json(
    console: Console, fake: FakeConsole, status: int, error_class: type[ApiError]
) -> None:
    body = {"error": f"code_{status}", "detail": "what went wrong", "fields": {"slot": ["bad"]}}
    fake.on("POST", PATH + "beliefs/", (status, body))
    with pytest.raises(error_class) as caught:
        console.record_belief(INSTANCE_ID, "slot", 1, source="tool")
    error = caught.value
    assert type(error) is error_class
    assert error.status == status
    assert (error.error, error.detail, error.fields) == (
        f"code_{status}",
        "what went wrong",
        {"slot": ["bad"]},
    )
    assert error.body == body
    assert f"{status} code_{status}: what went wrong" in str(error)


def test_an_error_without_json_still_raises_typed(console: Console, fake: FakeConsole) -> None:
    fake.on("GET", PATH, httpx.Response(502, text="<html>Bad gateway</html>"))
    with pytest.raises(ServerError) as caught:
        console.get(INSTANCE_ID)
    assert caught.value.error == "http_502"
    assert "Bad gateway" in caught.value.detail


def test_a_reused_idempotency_key_is_a_conflict(console: Console, fake: FakeConsole) -> None:
    body = {"error": "idempotency_key_reused", "detail": "different body", "fields": {}}
    fake.on("POST", "instances/", (409, body))
    with pytest.raises(Conflict) as caught:
        console.open_instance("payments.refund", "alice", idempotency_key="k")
    assert caught.value.error == "idempotency_key_reused"


# --- wait: ETag polling, backoff, the ways a wait ends --------------------------------------


def test_wait_polls_with_if_none_match_and_backs_off(
    console: Console, fake: FakeConsole, sleeps: list[float]
) -> None:
    waiting = instance("awaiting_user")
    done = ready({"iban": "NL91"})
    fake.on("GET", PATH, waiting, waiting, waiting, waiting, waiting, done)
    resolution = console.wait(INSTANCE_ID)
    assert resolution.ready and resolution.bindings == {"iban": "NL91"}
    assert resolution.verified_bindings() == {"iban": "NL91"}
    # The first GET has no ETag; every later one sends the one it got; unchanged → 304.
    tags = [r.headers.get("If-None-Match") for r in fake.requests]
    assert tags[0] is None
    assert len(set(tags[1:])) == 1 and tags[1] is not None
    assert len(fake.requests) == 6
    assert sleeps == [0.5, 0.75, 1.125, 1.6875, 2.0]


def test_wait_waits_through_the_approvers_too(console: Console, fake: FakeConsole) -> None:
    """M-of-N approval: after the person, the approvers group; only ready ends the wait."""
    fake.on("GET", PATH, instance("awaiting_user"), instance("awaiting_approval"), ready({"a": 1}))
    assert console.wait(INSTANCE_ID).ready
    assert len(fake.requests) == 3


def test_wait_returns_at_once_when_nothing_awaits(console: Console, fake: FakeConsole) -> None:
    fake.on("GET", PATH, ready({"a": 1}))
    assert console.wait(INSTANCE_ID).status == "ready"
    assert len(fake.requests) == 1


def test_wait_ends_with_a_rejection_and_its_reason(console: Console, fake: FakeConsole) -> None:
    rejected = instance(
        "cancelled",
        status_reason="wrong account",
        prompts=[{"slot": "iban", "action": "reject", "reason_given": "wrong account"}],
    )
    fake.on("GET", PATH, instance("awaiting_user"), rejected)
    resolution = console.wait(INSTANCE_ID)
    assert (resolution.status, resolution.rejected, resolution.reason) == (
        "cancelled",
        True,
        "wrong account",
    )
    with pytest.raises(NotReady, match="wrong account"):
        resolution.verified_bindings()


def test_wait_raises_when_the_instance_expired(console: Console, fake: FakeConsole) -> None:
    expired = instance("expired", status_reason="a blocking prompt expired")
    fake.on("GET", PATH, instance("awaiting_user"), expired)
    with pytest.raises(InstanceExpired, match="expired before the person answered") as caught:
        console.wait(INSTANCE_ID)
    assert caught.value.instance_id == INSTANCE_ID
    assert caught.value.instance["status"] == "expired"


def test_wait_times_out(fake: FakeConsole) -> None:
    fake.on("GET", PATH, instance("awaiting_user"))
    console = Console(BASE, KEY, transport=httpx.MockTransport(fake), poll_interval=0.01)
    with pytest.raises(WaitTimeout, match="still awaits the person"):
        console.wait(INSTANCE_ID, timeout=0.05)
    assert len(fake.requests) >= 2


def test_wait_raises_not_found(console: Console, fake: FakeConsole) -> None:
    with pytest.raises(NotFound):
        console.wait(INSTANCE_ID)


# --- resolve: the common case --------------------------------------------------------------


def test_resolve_returns_at_once_when_nothing_blocks(console: Console, fake: FakeConsole) -> None:
    bindings = {"iban": "NL91", "note": "thanks"}
    fake.on("POST", "instances/", (201, instance("open")))
    plan = {
        "id": INSTANCE_ID,
        "instance": INSTANCE_ID,
        "status": "ready",
        "blocking": 0,
        "items": [],
    }
    plan |= {"bindings": bindings, "bindings_digest": ready(bindings)["bindings_digest"]}
    fake.on("POST", PATH + "plan/", plan)
    fake.on("GET", PATH, ready(bindings) | {"receipt": "the.receipt.token"})
    resolution = console.resolve(
        "payments.refund",
        "alice",
        {"iban": "NL91", "note": "thanks"},
        world={"iban": {"holder": "Alice"}},
        idempotency_key="k1",
    )
    assert resolution.ready
    assert resolution.verified_bindings() == bindings
    assert resolution.url == f"{BASE}/instances/{INSTANCE_ID}/"
    opened = _json(fake.requests[0])
    assert opened["beliefs"] == [
        {"slot": "iban", "value": "NL91", "source": "inference", "world_ref": {"holder": "Alice"}},
        {"slot": "note", "value": "thanks", "source": "inference"},
    ]
    assert fake.requests[0].headers["Idempotency-Key"] == "k1"
    # The plan's answer carries no receipt, so the ready instance is read once for it.
    assert [r.method for r in fake.requests] == ["POST", "POST", "GET"]
    assert resolution.receipt == "the.receipt.token"


def test_resolve_waits_for_the_person(console: Console, fake: FakeConsole) -> None:
    fake.on("POST", "instances/", (201, instance("open")))
    fake.on(
        "POST",
        PATH + "plan/",
        {"id": INSTANCE_ID, "status": "awaiting_user", "blocking": 1},
    )
    fake.on("GET", PATH, instance("awaiting_user"), ready({"iban": "NL00"}))
    resolution = console.resolve("payments.refund", "alice", {"iban": "NL91"})
    assert resolution.verified_bindings() == {"iban": "NL00"}  # the person's edit


def test_resolve_without_waiting_names_the_page(console: Console, fake: FakeConsole) -> None:
    fake.on("POST", "instances/", (201, instance("open")))
    fake.on(
        "POST",
        PATH + "plan/",
        {"id": INSTANCE_ID, "status": "awaiting_user", "blocking": 2},
    )
    resolution = console.resolve("payments.refund", "alice", {"iban": "NL91"}, wait=False)
    assert resolution.awaiting_user and resolution.blocking == 2
    assert resolution.url == f"{BASE}/instances/{INSTANCE_ID}/"
    assert not any(r.method == "GET" for r in fake.requests)


def test_resolve_replayed_skips_the_plan_of_a_ready_instance(
    console: Console, fake: FakeConsole
) -> None:
    fake.on("POST", "instances/", (200, ready({"iban": "NL91"})))
    resolution = console.resolve("payments.refund", "alice", {"iban": "NL91"}, idempotency_key="k")
    assert resolution.ready
    assert len(fake.requests) == 1


def test_a_tampered_digest_is_refused(console: Console, fake: FakeConsole) -> None:
    tampered = ready({"iban": "NL91"}) | {"bindings": {"iban": "EVIL"}}
    fake.on("GET", PATH, tampered)
    resolution = console.wait(INSTANCE_ID)
    with pytest.raises(DigestMismatch):
        resolution.verified_bindings()


# --- the async twin ------------------------------------------------------------------------


def test_async_console_has_every_method(
    async_console: AsyncConsole, fake: FakeConsole, sleeps: list[float]
) -> None:
    fake.on("PUT", "task-classes/t/", {"key": "t"})
    fake.on("POST", "instances/", (201, instance("open")))
    fake.on("POST", PATH + "beliefs/", (201, {"id": 1}))
    fake.on("PUT", PATH + "world/", instance("open"))
    fake.on(
        "POST",
        PATH + "plan/",
        {"id": INSTANCE_ID, "status": "awaiting_user"},
    )
    fake.on("POST", PATH + "cancel/", instance("cancelled"))
    fake.on("GET", PATH, instance("awaiting_user"), instance("awaiting_user"), ready({"a": 1}))

    async def run() -> None:
        async with async_console as c:
            assert (await c.register_task_class("t", slots=[{"key": "a"}]))["key"] == "t"
            assert (await c.open_instance("t", "alice", idempotency_key="k"))["status"] == "open"
            assert (await c.record_belief(INSTANCE_ID, "a", 1, source="tool"))["id"] == 1
            assert (await c.set_world(INSTANCE_ID, {"a": {"x": 1}}))["status"] == "open"
            assert (await c.plan(INSTANCE_ID))["status"] == "awaiting_user"
            assert (await c.get(INSTANCE_ID))["status"] == "awaiting_user"
            resolution = await c.wait(INSTANCE_ID)
            assert resolution.verified_bindings() == {"a": 1}
            assert (await c.cancel(INSTANCE_ID, "no"))["status"] == "cancelled"

    asyncio.run(run())
    methods = [(r.method, r.url.path.removeprefix("/api/v1/")) for r in fake.requests]
    assert methods == [
        ("PUT", "task-classes/t/"),
        ("POST", "instances/"),
        ("POST", PATH + "beliefs/"),
        ("PUT", PATH + "world/"),
        ("POST", PATH + "plan/"),
        ("GET", PATH),
        ("GET", PATH),
        ("GET", PATH),
        ("POST", PATH + "cancel/"),
    ]
    assert fake.requests[7].headers["If-None-Match"]  # polls conditionally
    assert "If-None-Match" not in fake.requests[6].headers
    assert sleeps == [0.5]


def test_async_resolve_and_errors(async_console: AsyncConsole, fake: FakeConsole) -> None:
    fake.on("POST", "instances/", (201, instance("open")))
    fake.on(
        "POST",
        PATH + "plan/",
        {"id": INSTANCE_ID, "status": "awaiting_user"},
    )
    fake.on("GET", PATH, instance("expired"))

    async def run() -> None:
        with pytest.raises(InstanceExpired):
            await async_console.resolve("t", "alice", {"a": 1})
        fake.on("POST", "instances/", (403, {"error": "forbidden", "detail": "no", "fields": {}}))
        with pytest.raises(Forbidden):
            await async_console.resolve("t", "alice", {"a": 1})
        await async_console.close()

    asyncio.run(run())


# --- wait: the long-poll (Prefer: wait) ------------------------------------------------------


def _long_polling(fake: FakeConsole, *payloads: dict[str, Any]) -> None:
    """A console that applies `Prefer: wait`: each GET answers the next payload (the last
    repeats), 304 when it is the one the client has, with Preference-Applied."""
    served = list(payloads)

    def answer(request: httpx.Request) -> httpx.Response:
        payload = served.pop(0) if len(served) > 1 else served[0]
        tag = '"' + str(abs(hash(json.dumps(payload, sort_keys=True)))) + '"'
        applied = (
            {"Preference-Applied": request.headers["Prefer"]} if "Prefer" in request.headers else {}
        )
        if request.headers.get("If-None-Match") == tag:
            return httpx.Response(304, headers={"ETag": tag, **applied})
        return httpx.Response(200, json=payload, headers={"ETag": tag, **applied})

    fake.on("GET", PATH, answer)


def test_wait_long_polls_and_asks_again_at_once(
    console: Console, fake: FakeConsole, sleeps: list[float]
) -> None:
    waiting = instance("awaiting_user")
    _long_polling(fake, waiting, waiting, waiting, ready({"iban": "NL91"}))
    resolution = console.wait(INSTANCE_ID)
    assert resolution.ready and resolution.bindings == {"iban": "NL91"}
    assert [r.headers["Prefer"] for r in fake.requests] == ["wait=25"] * 4
    tags = [r.headers.get("If-None-Match") for r in fake.requests]
    assert tags[0] is None and tags[1] is not None and len(set(tags[1:3])) == 1
    assert sleeps == []  # the console waited; the client never sleeps
    # The HTTP read timeout outlasts the wait (the client's own is 30 s).
    assert fake.requests[0].extensions["timeout"]["read"] > 25


def test_wait_long_polls_no_longer_than_its_timeout(
    console: Console, fake: FakeConsole, sleeps: list[float]
) -> None:
    _long_polling(fake, instance("awaiting_user"), ready({"a": 1}))
    console.wait(INSTANCE_ID, timeout=7.5)
    assert fake.requests[0].headers["Prefer"] == "wait=7"


def test_wait_falls_back_to_polling_when_the_console_ignores_prefer(
    console: Console, fake: FakeConsole, sleeps: list[float]
) -> None:
    waiting = instance("awaiting_user")
    fake.on("GET", PATH, waiting, waiting, waiting, ready({"a": 1}))  # no Preference-Applied
    assert console.wait(INSTANCE_ID).ready
    assert fake.requests[0].headers["Prefer"] == "wait=25"
    assert all("Prefer" not in r.headers for r in fake.requests[1:])
    assert len(fake.requests) == 4
    assert sleeps == [0.5, 0.75, 1.125]


def test_the_async_wait_long_polls_too(
    async_console: AsyncConsole, fake: FakeConsole, sleeps: list[float]
) -> None:
    waiting = instance("awaiting_user")
    _long_polling(fake, waiting, waiting, ready({"a": 1}))
    resolution = asyncio.run(async_console.wait(INSTANCE_ID))
    assert resolution.ready
    assert [r.headers["Prefer"] for r in fake.requests] == ["wait=25"] * 3
    assert sleeps == []


def _dropping(fake: FakeConsole, drops: int, *payloads: dict[str, Any]) -> None:
    """A long-polling console whose first `drops` answers never come: the connection closes."""
    _long_polling(fake, *payloads)
    serve = fake.routes[("GET", "/api/v1/" + PATH)][0]
    left = [drops]

    def answer(request: httpx.Request) -> httpx.Response:
        if left[0] > 0:
            left[0] -= 1
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        return serve(request)

    fake.on("GET", PATH, answer)


def test_wait_asks_again_after_a_dropped_long_poll(
    console: Console, fake: FakeConsole, sleeps: list[float]
) -> None:
    _dropping(fake, 2, instance("awaiting_user"), ready({"a": 1}))
    assert console.wait(INSTANCE_ID).bindings == {"a": 1}
    assert len(fake.requests) == 4  # two dropped, the waiting answer, the ready one
    assert sleeps == [0.5, 0.75]  # a pause after each drop, backing off


def test_the_async_wait_asks_again_after_a_dropped_long_poll(
    async_console: AsyncConsole, fake: FakeConsole, sleeps: list[float]
) -> None:
    _dropping(fake, 1, instance("awaiting_user"), ready({"a": 1}))
    assert asyncio.run(async_console.wait(INSTANCE_ID)).ready
    assert len(sleeps) == 1


def test_wait_raises_the_drop_when_the_console_stays_unreachable(
    console: Console, fake: FakeConsole, sleeps: list[float]
) -> None:
    _dropping(fake, 100, ready({"a": 1}))
    with pytest.raises(ConsoleUnavailable) as raised:
        console.wait(INSTANCE_ID)
    assert isinstance(raised.value.__cause__, httpx.RemoteProtocolError)
    assert raised.value.url.endswith(PATH) and "Is it running" in str(raised.value)
    assert len(fake.requests) == MAX_DROPS + 1
    assert len(sleeps) == MAX_DROPS


def test_wait_asks_again_after_a_long_poll_that_brings_no_answer_in_its_time(
    console: Console, fake: FakeConsole, sleeps: list[float]
) -> None:
    # A console too busy to answer within the wait it applied, plus the client's grace.
    _long_polling(fake, instance("awaiting_user"), ready({"a": 1}))
    serve = fake.routes[("GET", "/api/v1/" + PATH)][0]
    late = [1]

    def answer(request: httpx.Request) -> httpx.Response:
        if late[0]:
            late[0] -= 1
            raise httpx.ReadTimeout("The read operation timed out", request=request)
        return serve(request)

    fake.on("GET", PATH, answer)
    assert console.wait(INSTANCE_ID).bindings == {"a": 1}
    assert len(fake.requests) == 3  # the late one, the waiting answer, the ready one
    assert sleeps == [0.5]


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        (httpx.ReadTimeout("timed out"), ConsoleTimeout),
        (httpx.RemoteProtocolError("Server disconnected"), ConsoleUnavailable),
        (httpx.ConnectError("[Errno 111] Connection refused"), ConsoleUnavailable),
    ],
    ids=["timeout", "drop", "refused"],
)
def test_a_write_that_brings_no_answer_is_never_sent_again(
    console: Console, fake: FakeConsole, error: Exception, raised: type[ConsoleError]
) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise error

    fake.on("POST", f"instances/{INSTANCE_ID}/cancel/", fail)
    with pytest.raises(raised) as found:
        console.cancel(INSTANCE_ID, "no longer needed")
    assert len(fake.requests) == 1
    assert found.value.__cause__ is error
    # It says where it asked, the cause, and what to do about a write.
    assert f"instances/{INSTANCE_ID}/cancel/" in str(found.value)
    assert type(error).__name__ in str(found.value)
    assert "same Idempotency-Key" in str(found.value)


def test_a_write_whose_connection_drops_is_never_sent_again(
    console: Console, fake: FakeConsole
) -> None:
    def drop(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    fake.on("POST", f"instances/{INSTANCE_ID}/cancel/", drop)
    with pytest.raises(ConsoleUnavailable) as raised:
        console.cancel(INSTANCE_ID, "no longer needed")
    assert isinstance(raised.value.__cause__, httpx.RemoteProtocolError)
    assert len(fake.requests) == 1


def test_a_console_not_listening_is_unavailable_and_says_where_it_asked() -> None:
    """A real connection to a port nobody listens on, not a fake transport."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with (
            Console(f"http://127.0.0.1:{port}", "k.secret") as console,
            pytest.raises(ConsoleUnavailable) as raised,
        ):
            console.cancel(INSTANCE_ID, "no longer needed")
    assert isinstance(raised.value.__cause__, httpx.ConnectError)
    assert f"http://127.0.0.1:{port}/api/v1/instances/{INSTANCE_ID}/cancel/" in str(raised.value)
    assert "CONSOLE_URL" in str(raised.value)


def test_a_console_that_never_answers_is_a_timeout() -> None:
    """A real server that accepts the connection and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with (
            Console(f"http://127.0.0.1:{port}", "k.secret", timeout=0.5) as console,
            pytest.raises(ConsoleTimeout) as raised,
        ):
            console.get(INSTANCE_ID)
    assert isinstance(raised.value.__cause__, httpx.TimeoutException)
    assert "did not answer in time" in str(raised.value)
    assert "Idempotency-Key" not in str(raised.value)  # a read: nothing to send again


def test_the_async_client_raises_the_same_errors() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

        async def cancel() -> None:
            async with AsyncConsole(f"http://127.0.0.1:{port}", "k.secret") as console:
                await console.cancel(INSTANCE_ID, "no longer needed")

        with pytest.raises(ConsoleUnavailable):
            asyncio.run(cancel())
