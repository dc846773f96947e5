"""The classifier pages: permissions, query budgets, inline saves, four eyes, previews."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import AuditEvent, Decision, Prompt, RiskChangeRequest, Slot, TaskClass
from beliefs.services import classification as c
from beliefs.services.audit import SYSTEM, Actor
from tests.builders import (
    answered_run,
    classify,
    contract,
    many_slots,
    register_task_class,
    run,
    shop,
)

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
ANSWERS = {"item_sku": "A", "shipping_address": "x", "delivery_speed": "std", "gift_wrap": False}


def slot(key: str) -> Slot:
    return Slot.objects.get(key=key)


def slot_url(key: str) -> str:
    s = Slot.objects.select_related("task_class").get(key=key)
    return f"/classify/{s.task_class.key}/slots/{s.pk}/"


def decision_url(key: str) -> str:
    d = Decision.objects.select_related("task_class").get(key=key)
    return f"/classify/{d.task_class.key}/decisions/{d.pk}/"


def page_urls() -> list[str]:
    return [
        "/classify/",
        "/classify/commerce.ship_order/",
        "/classify/matrix/",
        "/activity/",
    ]


# --- permissions -------------------------------------------------------------------------


def test_it_sends_anonymous_visitors_to_sign_in(client: Client) -> None:
    shop()
    for url in page_urls():
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")
    response = client.post(slot_url("item_sku"), {"risk_class": "irreversible", "reason": "r"})
    assert response.status_code == 302
    assert slot("item_sku").risk_class == "reversible"


@pytest.mark.parametrize("who", ["mallory", "rita"])
def test_it_forbids_people_without_the_classifier_permission(
    signed_in: Callable[[User], Client], who: str, request: pytest.FixtureRequest
) -> None:
    shop()
    client = signed_in(request.getfixturevalue(who))
    for url in page_urls():
        assert client.get(url).status_code == 403
    response = client.post(slot_url("item_sku"), {"risk_class": "irreversible", "reason": "r"})
    assert response.status_code == 403
    assert slot("item_sku").risk_class == "reversible"
    assert not AuditEvent.objects.filter(kind__startswith="classification.").exists()


def test_it_shows_every_page_to_a_classifier(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    client = signed_in(carol)
    for url in page_urls():
        assert client.get(url).status_code == 200


def test_it_answers_404_for_what_does_not_exist(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    contract()
    client = signed_in(carol)
    assert client.get("/classify/no.such.class/").status_code == 404
    other = Slot.objects.get(key="entity_id")  # a slot of another task class
    response = client.post(
        f"/classify/commerce.ship_order/slots/{other.pk}/",
        {"risk_class": "irreversible", "reason": "r"},
    )
    assert response.status_code == 404


# --- query budgets -----------------------------------------------------------------------


@pytest.mark.parametrize("count", [5, 60])
def test_it_shows_a_task_class_in_constant_queries(
    signed_in: Callable[[User], Client],
    carol: User,
    django_assert_num_queries: Callable[[int], object],
    count: int,
) -> None:
    many_slots(count)
    client = signed_in(carol)
    client.get("/classify/bulk.task/")  # warm the session
    # session, user, permissions (their own and their groups'), task class, slots, decisions,
    # decision-slot links, pending requests, open instance count, the groups approvers may
    # come from (M-of-N approval)
    with django_assert_num_queries(10):
        response = client.get("/classify/bulk.task/")
    assert response.content.decode().count('data-slot="') == count


@pytest.mark.parametrize("count", [5, 60])
def test_it_previews_pending_requests_in_constant_queries(
    signed_in: Callable[[User], Client],
    carol: User,
    cathy: User,
    alice: User,
    mallory: User,
    django_assert_num_queries: Callable[[int], object],
    count: int,
) -> None:
    task_class = many_slots(count)
    run(task_class, alice)
    run(task_class, mallory)
    for key in ("s000", "s002"):  # two pending requests: reversible -> cosmetic is immediate,
        c.slot_set_monotonic(  # so request the clearing of monotonic flags set first
            slot=Slot.objects.get(key=key), monotonic=True, reason="r", actor=Actor(user=carol)
        )
        c.slot_set_monotonic(
            slot=Slot.objects.get(key=key), monotonic=False, reason="r", actor=Actor(user=cathy)
        )
    client = signed_in(carol)
    client.get("/classify/bulk.task/")
    # session, user, permissions (their own and their groups'), task class, slots, decisions,
    # decision-slot links, pending requests, open instances, their principals' beliefs, the
    # groups approvers may come from (M-of-N approval)
    with django_assert_num_queries(11):
        response = client.get("/classify/bulk.task/")
    assert response.content.decode().count('class="pending-item"') == 2


@pytest.mark.parametrize("count", [1, 12])
def test_it_lists_task_classes_in_constant_queries(
    signed_in: Callable[[User], Client],
    carol: User,
    django_assert_num_queries: Callable[[int], object],
    count: int,
) -> None:
    for i in range(count):
        many_slots(4, key=f"bulk.{i}")
    client = signed_in(carol)
    client.get("/classify/")
    # session, user, permissions (their own and their groups'), task classes with their counts
    # (pending requests included), the unclassified slots queue, the unclassified decisions
    # queue, the requests waiting for this classifier's approval
    with django_assert_num_queries(7):
        response = client.get("/classify/")
    assert response.content.decode().count('data-task-class="') == count


# --- inline saves ------------------------------------------------------------------------


def test_it_saves_a_slot_inline_and_re_renders_the_classification(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    client = signed_in(carol)
    response = client.post(
        slot_url("shipping_address"),
        {"risk_class": "irreversible", "reason": "A3"},
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html and 'id="classification"' in html
    assert "Saved: slot shipping_address is now irreversible." in html
    assert "unclassified: treated as irreversible" not in html
    assert slot("shipping_address").risk_class == "irreversible"


def test_it_saves_without_javascript_and_redirects_back_to_the_row(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    client = signed_in(carol)
    response = client.post(slot_url("delivery_speed"), {"risk_class": "policy", "reason": "r"})
    assert response.status_code == 302
    assert (
        response["Location"] == f"/classify/commerce.ship_order/#slot-{slot('delivery_speed').pk}"
    )
    page = client.get(response["Location"]).content.decode()
    assert "Saved: slot delivery_speed is now policy." in page


@pytest.mark.parametrize("headers", [{}, HTMX])
def test_it_requires_a_reason(
    signed_in: Callable[[User], Client], carol: User, headers: dict[str, str]
) -> None:
    shop()
    client = signed_in(carol)
    response = client.post(
        slot_url("shipping_address"), {"risk_class": "irreversible", "reason": "  "}, **headers
    )
    assert response.status_code == 400
    assert "Give a reason for this change" in response.content.decode()
    assert slot("shipping_address").risk_class == "unclassified"
    assert not AuditEvent.objects.filter(kind__startswith="classification.").exists()


def test_it_says_when_nothing_changed(signed_in: Callable[[User], Client], carol: User) -> None:
    shop()
    response = signed_in(carol).post(
        slot_url("item_sku"), {"risk_class": "reversible", "reason": "r"}, **HTMX
    )
    assert response.status_code == 400
    assert "Nothing changed" in response.content.decode()


def test_it_keeps_the_scope_order_when_the_form_does_not_show_it(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    contract()
    Slot.objects.filter(key="reminder").update(scope_order=["a", "b"])
    response = signed_in(carol).post(
        slot_url("reminder"), {"risk_class": "policy", "reason": "r"}, **HTMX
    )
    assert response.status_code == 200
    assert slot("reminder").scope_order == ["a", "b"]


def test_it_saves_monotonic_and_scope_order_together(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    contract()
    response = signed_in(carol).post(
        slot_url("scope"),
        {
            "risk_class": "policy",
            "monotonic": "on",
            "scope_order": "read, write, admin",
            "reason": "r",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert slot("scope").scope_order == ["read", "write", "admin"]


def test_it_shows_a_bad_scope_order_in_place(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    contract()
    response = signed_in(carol).post(
        slot_url("scope"),
        {"risk_class": "policy", "monotonic": "on", "scope_order": "admin", "reason": "r"},
        **HTMX,
    )
    assert response.status_code == 400
    assert "at least two distinct scopes" in response.content.decode()
    assert slot("scope").scope_order == ["read", "write"]


def test_it_saves_a_decision_and_every_slot_it_feeds_changes(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    response = signed_in(carol).post(
        decision_url("ship"),
        {
            "risk_class": "irreversible",
            "slots": ["item_sku", "delivery_speed", "gift_wrap"],
            "reason": "r",
        },
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("inherited from decision ship (irreversible)") == 3
    assert {s.key for s in Decision.objects.get(key="ship").slots.all()} == {
        "item_sku",
        "delivery_speed",
        "gift_wrap",
    }


def test_it_explains_a_refused_unlink_in_place(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    contract()
    response = signed_in(carol).post(
        decision_url("sign"),
        {"risk_class": "irreversible", "slots": ["entity_id"], "reason": "r"},
        **HTMX,
    )
    assert response.status_code == 400
    assert "Raise the slot&#x27;s own class to irreversible first" in response.content.decode()
    assert {s.key for s in Decision.objects.get(key="sign").slots.all()} == {"name", "entity_id"}


def test_it_saves_all_of_a_row_or_nothing(signed_in: Callable[[User], Client], carol: User) -> None:
    contract()
    c.slot_set_monotonic(slot=slot("scope"), monotonic=False, reason="r", actor=Actor(user=carol))
    # A second clearing request conflicts; the risk raise in the same form must not stay.
    response = signed_in(carol).post(
        slot_url("scope"), {"risk_class": "irreversible", "reason": "r"}, **HTMX
    )
    assert response.status_code == 409
    assert "already waiting for approval" in response.content.decode()
    assert slot("scope").risk_class == "policy"


# --- four eyes on the page ---------------------------------------------------------------


def request_downgrade(client: Client) -> RiskChangeRequest:
    response = client.post(
        slot_url("shipping_address"), {"risk_class": "reversible", "reason": "editable"}, **HTMX
    )
    assert response.status_code == 200
    assert "Not applied yet" in response.content.decode()
    return RiskChangeRequest.objects.get()


def test_it_lists_a_pending_request_without_an_approve_button_for_its_requester(
    signed_in: Callable[[User], Client], carol: User, cathy: User
) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    client = signed_in(carol)
    change_request = request_downgrade(client)
    html = client.get("/classify/commerce.ship_order/").content.decode()
    assert f'id="request-{change_request.pk}"' in html
    assert 'value="approve"' not in html and "Withdraw" in html
    assert slot("shipping_address").risk_class == "irreversible"
    html = signed_in(cathy).get("/classify/commerce.ship_order/").content.decode()
    assert 'value="approve"' in html
    assert "Requested by <strong>carol</strong>" in html


# The same 403 for htmx: the page's htmx configuration swaps a 403 into place like a 400 or 409.
@pytest.mark.parametrize(("headers", "status"), [({}, 403), (HTMX, 403)])
def test_it_refuses_the_requester_approving_on_the_page(
    signed_in: Callable[[User], Client], carol: User, headers: dict[str, str], status: int
) -> None:
    shop()
    client = signed_in(carol)
    change_request = request_downgrade(client)
    response = client.post(
        f"/classify/commerce.ship_order/requests/{change_request.pk}/",
        {"action": "approve", "reason": "fine by me"},
        **headers,
    )
    assert response.status_code == status
    assert "you cannot approve it: another classifier must" in response.content.decode()
    change_request.refresh_from_db()
    assert change_request.state == "pending"


def test_it_lets_a_second_classifier_approve_on_the_page(
    signed_in: Callable[[User], Client], carol: User, cathy: User
) -> None:
    shop()
    change_request = request_downgrade(signed_in(carol))
    client = signed_in(cathy)
    url = f"/classify/commerce.ship_order/requests/{change_request.pk}/"
    response = client.post(url, {"action": "approve", "reason": ""}, **HTMX)
    assert response.status_code == 400  # a decision needs a reason too
    response = client.post(url, {"action": "approve", "reason": "checked"})
    assert response.status_code == 302
    assert slot("shipping_address").risk_class == "reversible"
    change_request.refresh_from_db()
    assert (change_request.state, change_request.decided_by) == ("approved", cathy)


def test_it_lets_a_second_classifier_refuse_on_the_page(
    signed_in: Callable[[User], Client], carol: User, cathy: User
) -> None:
    shop()
    change_request = request_downgrade(signed_in(carol))
    response = signed_in(cathy).post(
        f"/classify/commerce.ship_order/requests/{change_request.pk}/",
        {"action": "refuse", "reason": "addresses go stale"},
        **HTMX,
    )
    assert response.status_code == 200
    assert "Refused the request" in response.content.decode()
    assert slot("shipping_address").risk_class == "unclassified"


# --- impact preview ----------------------------------------------------------------------


def test_it_previews_the_impact_of_a_change_without_writing(
    signed_in: Callable[[User], Client], carol: User, alice: User
) -> None:
    task_class = shop()
    answered_run(task_class, alice, ANSWERS)
    run(task_class, alice)
    prompts = list(Prompt.objects.values_list("pk", "route", "version"))
    events = AuditEvent.objects.count()
    response = signed_in(carol).post(
        decision_url("ship") + "preview/",
        {"risk_class": "irreversible", "slots": ["item_sku", "delivery_speed"]},
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "2 prompts become blocking" in html
    assert "2 SURFACED become ASK" in html
    assert "open instances are re-planned now" in html
    assert list(Prompt.objects.values_list("pk", "route", "version")) == prompts
    assert AuditEvent.objects.count() == events
    assert Decision.objects.get(key="ship").risk_class == "reversible"


def test_it_previews_without_javascript_next_to_the_row(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    response = signed_in(carol).post(
        slot_url("shipping_address") + "preview/", {"risk_class": "cosmetic", "reason": ""}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html
    assert "Needs a second classifier&#x27;s approval" in html
    assert '<option value="cosmetic" selected>' in html  # the row keeps what was chosen


def test_it_escapes_labels_from_runtimes(signed_in: Callable[[User], Client], carol: User) -> None:
    register_task_class(
        key="hostile",
        name="<b>bold</b>",
        slots=[{"key": "k", "label": "<script>alert(1)</script>\u202e"}],
        actor=SYSTEM,
    )
    html = signed_in(carol).get("/classify/hostile/").content.decode()
    assert "<script>alert(1)" not in html
    assert '&lt;script&gt;alert(1)&lt;/script&gt;<span class="hidden-char"' in html
    assert "<b>bold</b>" not in html


def test_it_lists_the_unclassified_queue_first(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    contract()
    TaskClass.objects.count()
    html = signed_in(carol).get("/classify/").content.decode()
    queue, classes = html.split('id="classes-title"')
    assert "shipping_address" in queue
    assert "treated as irreversible until classified" in queue
    assert "policy" in queue  # the runtime's suggestion
    assert "entity_id" not in queue


# --- four eyes on scope orders -------------------------------------------------------------

HX_HEADERS = {"HX-Request": "true"}


def test_a_weaker_scope_order_waits_on_the_page_and_a_second_classifier_approves_it(
    signed_in: Callable[[User], Client], carol: User, cathy: User
) -> None:
    contract()
    form = {"risk_class": "policy", "monotonic": "on", "reason": "flip"}
    preview = signed_in(carol).post(
        slot_url("scope") + "preview/", {**form, "scope_order": "write, read"}, headers=HX_HEADERS
    )
    assert preview.status_code == 200
    assert "Needs a second classifier" in preview.content.decode()
    response = signed_in(carol).post(
        slot_url("scope"), {**form, "scope_order": "write, read"}, headers=HX_HEADERS
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Not applied yet: it puts write below read" in html
    assert slot("scope").scope_order == ["read", "write"]
    change_request = RiskChangeRequest.objects.get()
    html = signed_in(cathy).get("/classify/legal.sign_contract/").content.decode()
    assert f'id="request-{change_request.pk}"' in html
    assert 'scope order <span class="scope-order">read &lt; write</span> → ' in html
    assert "Waiting for approval: scope order write &lt; read" in html
    approved = signed_in(cathy).post(
        f"/classify/legal.sign_contract/requests/{change_request.pk}/",
        {"action": "approve", "reason": "checked"},
    )
    assert approved.status_code == 302
    assert slot("scope").scope_order == ["write", "read"]


def test_a_scope_order_with_new_scopes_on_top_saves_at_once_and_scopes_are_escaped(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    contract()
    order = "read, write, <b>admin</b>&amp;\u202e"
    response = signed_in(carol).post(
        slot_url("scope"),
        {"risk_class": "policy", "monotonic": "on", "scope_order": order, "reason": "r"},
        headers=HX_HEADERS,
    )
    assert response.status_code == 200
    assert slot("scope").scope_order == ["read", "write", "<b>admin</b>&amp;\u202e"]
    assert not RiskChangeRequest.objects.exists()
    # Cleared, then shown read-only once the slot is no longer monotonic: escaped once.
    Slot.objects.filter(key="scope").update(monotonic=False)
    html = signed_in(carol).get("/classify/legal.sign_contract/").content.decode()
    assert "read &lt; write &lt; &lt;b&gt;admin&lt;/b&gt;&amp;amp;" in html
    assert "<b>admin" not in html and "\u202e" not in html


def test_the_classifier_pages_mark_look_alike_letters_in_names_and_labels(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    task_class = contract()
    TaskClass.objects.filter(pk=task_class.pk).update(name="Sign \u0440ayments <b>x</b>")
    Slot.objects.filter(key="name").update(label="C\u043eunterparty")
    for url in ("/classify/", "/classify/legal.sign_contract/"):
        html = signed_in(carol).get(url).content.decode()
        assert "\u201c\u0440ayments\u201d mixes Cyrillic and Latin letters" in html, url
        assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    html = signed_in(carol).get("/classify/legal.sign_contract/").content.decode()
    assert "\u201cC\u043eunterparty\u201d mixes Cyrillic and Latin letters" in html
    assert "U+043E CYRILLIC SMALL LETTER O" in html


# --- the real effect, the queue of what awaits me, counts that follow a save ------------------


def test_the_index_lists_what_waits_for_my_approval_first(
    signed_in: Callable[[User], Client], carol: User, cathy: User
) -> None:
    shop()
    change_request = request_downgrade(signed_in(carol))
    mine = signed_in(cathy).get("/classify/").content.decode()
    queue = mine[mine.index('id="awaiting-me-title"') : mine.index('id="queue-title"')]
    assert mine.index('id="awaiting-me-title"') < mine.index('id="queue-title"')
    assert "shipping_address" in queue and "asked by <strong>carol</strong>" in queue
    assert f'href="/classify/commerce.ship_order/#request-{change_request.pk}"' in queue
    # Its requester cannot approve it: it is not in their queue.
    theirs = signed_in(carol).get("/classify/").content.decode()
    assert "Nothing waits for your approval." in theirs


def test_a_lowered_slot_that_a_decision_keeps_irreversible_says_so(
    signed_in: Callable[[User], Client], carol: User, cathy: User
) -> None:
    task_class = shop()
    classify(task_class, slots={"item_sku": "irreversible"}, decisions={"ship": "irreversible"})
    held = (
        "The effective risk of item_sku stays irreversible: inherited from decision ship "
        "(irreversible)"
    )
    client = signed_in(carol)
    preview = client.post(
        f"/classify/commerce.ship_order/slots/{slot('item_sku').pk}/preview/",
        {"risk_class": "reversible", "reason": ""},
        **HTMX,
    ).content.decode()
    assert held in preview
    # Lowering out of irreversible waits for a second classifier, whose approval says it too.
    client.post(slot_url("item_sku"), {"risk_class": "reversible", "reason": "r"}, **HTMX)
    change_request = RiskChangeRequest.objects.get()
    page = signed_in(cathy).get("/classify/commerce.ship_order/").content.decode()
    approval = page[page.index(f'id="request-{change_request.pk}"') :].split("</li>")[0]
    assert held in approval
    approved = (
        signed_in(cathy)
        .post(
            f"/classify/commerce.ship_order/requests/{change_request.pk}/",
            {"action": "approve", "reason": "checked"},
            **HTMX,
        )
        .content.decode()
    )
    assert "item_sku is now reversible. " + held in approved


def test_the_counts_under_the_title_follow_a_save(
    signed_in: Callable[[User], Client], carol: User
) -> None:
    shop()
    client = signed_in(carol)
    page = client.get("/classify/commerce.ship_order/").content.decode()
    assert "<strong>1 unclassified</strong>" in page
    assert page.count('id="classify-summary"') == 1
    response = client.post(
        slot_url("shipping_address"), {"risk_class": "irreversible", "reason": "r"}, **HTMX
    )
    html = response.content.decode()
    summary = html[html.index('id="classify-summary"') :].split("</p>")[0]
    assert 'hx-swap-oob="true"' in summary and "unclassified" not in summary
    assert html.index('id="classify-summary"') < html.index('id="classification"')


@pytest.mark.parametrize(
    ("action", "words"),
    [
        ("refuse", "Give a reason for refusing this request"),
        ("approve", "Give a reason for approving this request"),
    ],
)
def test_a_decision_on_a_request_without_a_reason_says_what_is_missing_for_what(
    signed_in: Callable[[User], Client], carol: User, cathy: User, action: str, words: str
) -> None:
    shop()
    change_request = request_downgrade(signed_in(carol))
    response = signed_in(cathy).post(
        f"/classify/commerce.ship_order/requests/{change_request.pk}/",
        {"action": action, "reason": "  "},
        **HTMX,
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert words in html and "Give a reason for this change" not in html
    change_request.refresh_from_db()
    assert change_request.state == "pending"
