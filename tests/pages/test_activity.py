"""/activity/: the audit log for classifiers, filtered and paginated in constant queries."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent, TaskClass
from beliefs.services.audit import SYSTEM, Actor, audit
from tests.builders import shop

pytestmark = pytest.mark.django_db


def fill(task_class: TaskClass, carol: User, count: int) -> None:
    for i in range(count):
        audit(
            "classification.slot_risk" if i % 2 else "instance.opened",
            actor=Actor(user=carol) if i % 3 else SYSTEM,
            task_class=task_class,
            subject=f"s{i}",
            data={"before": "policy", "after": "irreversible", "reason": f"reason {i}"},
        )


@pytest.fixture
def carol_client(carol: User, signed_in: Callable[[User], Client]) -> Client:
    return signed_in(carol)


def rows(html: str) -> int:
    return html.count('class="activity-event"')


@pytest.mark.parametrize("count", [5, 120])
def test_it_pages_the_log_in_constant_queries(
    carol_client: Client,
    carol: User,
    django_assert_num_queries: Callable[[int], object],
    count: int,
) -> None:
    fill(shop(), carol, count)
    carol_client.get("/activity/")
    # session, user, permissions (their own and their groups'), count, the page of events with
    # their task classes, the task class keys, the actors (the kinds are an enum: no query)
    with django_assert_num_queries(7):
        response = carol_client.get("/activity/?page=1")
    assert rows(response.content.decode()) == min(count + 1, 50)  # +1: the registration


def test_it_shows_who_when_before_after_and_reason(carol_client: Client, carol: User) -> None:
    fill(shop(), carol, 2)
    html = carol_client.get("/activity/?kind=classification.slot_risk").content.decode()
    assert rows(html) == 1
    assert '<td class="a-actor" data-label="Who">carol</td>' in html
    assert '<span class="before">policy</span> → <span class="after">irreversible</span>' in html
    assert '<td class="a-reason" data-label="Reason">reason 1</td>' in html
    assert "<time datetime=" in html


def test_it_filters_by_task_class_actor_and_kind(carol_client: Client, carol: User) -> None:
    fill(shop(), carol, 12)
    other = TaskClass.objects.create(key="other", name="other")
    audit("classification.slot_risk", actor=Actor(user=carol), task_class=other)
    assert rows(carol_client.get("/activity/?task_class=other").content.decode()) == 1
    # i in 1..11 with i % 3: carol; i % 2: slot_risk -> 1, 5, 7, 11, and the other class's one
    assert (
        rows(
            carol_client.get(
                "/activity/?actor=carol&kind=classification.slot_risk"
            ).content.decode()
        )
        == 5
    )
    assert rows(carol_client.get("/activity/?kind=classification.*").content.decode()) == 7
    assert rows(carol_client.get("/activity/?kind=task_class.*").content.decode()) == 1
    assert rows(carol_client.get("/activity/?actor=nobody").content.decode()) == 0


def test_it_keeps_the_filters_across_pages(carol_client: Client, carol: User) -> None:
    fill(shop(), carol, 120)
    html = carol_client.get("/activity/?kind=instance.opened").content.decode()
    assert "page 1 of 2" in html
    assert 'href="?kind=instance.opened&amp;page=2"' in html
    html = carol_client.get("/activity/?kind=instance.opened&page=2").content.decode()
    assert rows(html) == 10
    assert carol_client.get("/activity/?page=abc").status_code == 200  # a bad page is page 1


def test_it_shows_a_classification_made_on_the_pages(carol_client: Client) -> None:
    shop()
    carol_client.post(
        "/classify/commerce.ship_order/slots/"
        + str(TaskClass.objects.get().slots.get(key="shipping_address").pk)
        + "/",
        {"risk_class": "irreversible", "reason": "A3: stale addresses ship"},
    )
    html = carol_client.get("/activity/?task_class=commerce.ship_order").content.decode()
    assert "classification.slot_risk" in html
    assert "A3: stale addresses ship" in html
    assert '<span class="before">unclassified</span>' in html


def test_it_counts_a_long_log_up_to_a_cap_and_says_so(
    carol_client: Client, carol: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from console.presenters import activity

    task_class = shop()
    monkeypatch.setattr(activity, "ACTIVITY_COUNT_CAP", 60)
    fill(task_class, carol, 40)
    html = carol_client.get("/activity/").content.decode()
    assert f"{AuditEvent.objects.count()} events." in html  # under the cap: the exact count
    fill(task_class, carol, 40)
    html = carol_client.get("/activity/").content.decode()
    assert "60+ events, page 1 of 2+." in html


def test_it_offers_every_kind_and_the_latest_actors(
    carol_client: Client, carol: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beliefs.selectors import activity

    task_class = shop()
    fill(task_class, carol, 3)  # system, carol, carol
    audit("instance.cancelled", actor=SYSTEM, task_class=task_class)
    # Every kind the services write is offered, in order, without reading the log.
    every = set(AuditEvent.objects.values_list("kind", flat=True))
    assert "instance.cancelled" in every
    assert every <= set(activity.audit_kinds())
    assert activity.audit_kinds() == sorted(kind.value for kind in AuditKind)
    monkeypatch.setattr(activity, "ACTIVITY_ACTORS_FROM", 1)  # the latest event: system's
    assert activity.recent_actors("") == ["system"]
    assert activity.recent_actors("carol") == ["carol", "system"]  # the selected one stays


def test_it_marks_look_alike_letters_in_subjects_and_values(
    carol_client: Client, carol: User
) -> None:
    audit(
        "classification.slot_risk",
        actor=Actor(user=carol),
        task_class=shop(),
        subject="\u0440ayee<b>",
        data={"before": "x", "after": "p\u0430ypal\u202e", "reason": "r"},
    )
    html = carol_client.get("/activity/?kind=classification.slot_risk").content.decode()
    assert "\u201c\u0440ayee\u201d mixes Cyrillic and Latin letters" in html
    assert "\u201cp\u0430ypal\u201d mixes Cyrillic and Latin letters" in html
    assert "<b>" not in html.split("<tbody>")[1] and "\u202e" not in html


def test_an_instances_events_link_to_its_history(
    carol_client: Client, carol: User, alice: User
) -> None:
    from tests.browser import scenarios

    changed, hidden = scenarios.refunds(alice)
    html = carol_client.get("/activity/").content.decode()
    link = f'href="/activity/?instance={changed.pk}"'
    assert link in html and f">instance {str(changed.pk)[:8]}</a>" in html
    history = carol_client.get(f"/activity/?instance={changed.pk}").content.decode()
    assert rows(history) == AuditEvent.objects.filter(instance_id=changed.pk).count() > 0
    assert str(hidden.pk)[:8] not in history.split("The history of one instance")[1]
    assert f'<input type="hidden" name="instance" value="{changed.pk}">' in history


@pytest.mark.parametrize("raw", ["nope", "1234", "<script>"])
def test_an_instance_filter_that_is_no_id_matches_nothing(
    carol_client: Client, carol: User, raw: str
) -> None:
    fill(shop(), carol, 3)
    response = carol_client.get("/activity/", {"instance": raw})
    assert response.status_code == 200
    assert rows(response.content.decode()) == 0
