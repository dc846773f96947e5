"""One clock: every date and time that any page shows is written one way, with its zone
("4 Dec 2026, 18:23 UTC", `console.presenters.clock`), and expiries are also said from now
("in 23 hours"). The test renders every kind of page of the demo, in every role, and scans
them for any other way of writing a moment."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs.models import ProposalValidation, TaskInstance
from beliefs.services.approvals import instance_approve
from console.presenters.clock import from_now, moment_text
from tests.builders import confirm_or_answer, ticks

pytestmark = pytest.mark.django_db

MOMENT = re.compile(r"^\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d [A-Z]{2,5}$")
TIME_ELEMENT = re.compile(r"<time\b[^>]*>(.*?)</time>", re.S)
# The ways pages wrote moments before: ISO-like, Django's default, a moment without a zone.
OLD_FORMATS = [
    re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d"),
    re.compile(r"\b[A-Z][a-z]{2}\. \d{1,2}, \d{4}"),
    re.compile(r"\b\d{1,2}:\d\d [ap]\.m\."),
    re.compile(r"\b\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d(?!:| [A-Z]{2,5}\b)"),
]


def test_a_moment_is_written_with_its_zone_and_an_expiry_also_from_now() -> None:
    moment = datetime(2026, 12, 4, 18, 23, 45, tzinfo=UTC)
    assert moment_text(moment) == "4 Dec 2026, 18:23 UTC"
    with timezone.override("Europe/Amsterdam"):
        assert moment_text(moment) == "4 Dec 2026, 19:23 CET"
    assert from_now(moment + timedelta(hours=3, minutes=10), moment) == "in 3\xa0hours"
    assert from_now(moment - timedelta(minutes=5), moment) == "5\xa0minutes ago"
    assert from_now(moment + timedelta(seconds=20), moment) == "now"


def _visible(html: str) -> str:
    """The page's text outside attributes and scripts (a `datetime` attribute is ISO 8601 for
    machines, and stays so)."""
    html = re.sub(r"<script\b.*?</script>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def _pages(demo: str, signed_in: Callable[[User], Client]) -> dict[str, tuple[str, str]]:
    users = {u.username: u for u in User.objects.all()}
    alice = users["alice"]
    runs = {
        i.task_class.key: i
        for i in TaskInstance.objects.filter(principal=alice, run_number=2).select_related(
            "task_class"
        )
    }
    transfer, contract = runs["payments.transfer"], runs["legal.sign_contract"]
    for instance in (transfer, contract):
        confirm_or_answer(instance, alice, "typed in the test")
        instance.refresh_from_db()
    instance_approve(
        instance_id=transfer.pk,
        user=users["bob"],
        bindings_digest=transfer.bindings_digest,
        worlds_digest=transfer.worlds_digest,
        acknowledged=ticks(transfer),
    )
    proposal = ProposalValidation.objects.order_by("pk").first()
    assert proposal is not None
    pages = {
        "inbox": ("alice", "/"),
        "account": ("alice", "/account/"),
        "sign": ("alice", f"/instances/{contract.pk}/sign/"),
        "approval": ("dave", f"/approvals/{transfer.pk}/"),
        "approver inbox": ("dave", "/"),
        "classify": ("carol", "/classify/"),
        "classify task class": ("carol", "/classify/payments.transfer/"),
        "activity": ("carol", "/activity/"),
        "insights": ("carol", "/insights/"),
        "proposals": ("rita", "/proposals/"),
        "proposal": ("rita", f"/proposals/{proposal.pk}/"),
        "runtimes": ("admin", "/runtimes/"),
    }
    for key, instance in runs.items():
        pages[f"instance {key}"] = ("alice", f"/instances/{instance.pk}/")
    run_1 = TaskInstance.objects.get(task_class__key="payments.transfer", run_number=1)
    pages["finished instance"] = ("alice", f"/instances/{run_1.pk}/")
    return pages


def test_every_page_writes_every_moment_one_way(
    demo: str, signed_in: Callable[[User], Client]
) -> None:
    users = {u.username: u for u in User.objects.all()}
    clients: dict[str, Client] = {}
    seen = 0
    for name, (who, path) in _pages(demo, signed_in).items():
        client = clients.setdefault(who, signed_in(users[who]))
        response = client.get(path)
        assert response.status_code == 200, (name, response.status_code)
        html = response.content.decode()
        for text in TIME_ELEMENT.findall(html):
            assert MOMENT.match(text.strip()), (name, text)
            seen += 1
        text = _visible(html)
        for pattern in OLD_FORMATS:
            assert not pattern.search(text), (name, pattern.pattern, pattern.search(text))
    assert seen > 20  # the pages do show moments: the scan looked at them
