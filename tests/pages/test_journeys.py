"""Where each of a person's actions stands, and what approvers see.

The principal's inbox lists every unfinished action of theirs by its state (waiting for their
answer, their signature, their approvers) and the recently finished ones; an approver's lists
what waits for their approval. The instance page's words follow the state. The approvers'
page writes each value as the principal's page does and, once decided, says who did what.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from beliefs.models import Decision, TaskInstance
from tests.api.test_quorum import answered, approve, bob, dave, register, treasury  # noqa: F401
from tests.conftest import JsonClient
from tests.support.api import Driver

CLASS = "treasury.transfer"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _section(html: str, title_id: str) -> str:
    start = html.index(f'id="{title_id}"')
    end = html.find("</section>", start)
    return html[start:end]


def test_the_inbox_lists_an_action_waiting_for_approvers_with_where_they_stand(
    api: Driver,
    treasury: Group,  # noqa: F811
    alice: User,
    bob: User,  # noqa: F811
    dave: User,  # noqa: F811
    signed_in: Callable[[User], Client],
    person_client: Callable[[User], JsonClient],
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    approve(person_client(bob), instance)
    html = signed_in(alice).get("/").content.decode()
    group = _text(_section(html, "with-approvers-title"))
    assert "Waiting for approvers" in group
    assert f'href="/instances/{instance["id"]}/"' in _section(html, "with-approvers-title")
    assert "1 approval missing" in group
    assert "approved so far by bob" in group
    assert re.search(
        r"the approvers’ time runs out in \d+ hours? \( ?\d+ \w{3} \d{4}, \d\d:\d\d UTC ?\)", group
    )
    # Who asks, and what is at stake.
    assert "Asked by" in group and "250000" in group
    # The approver who has not approved yet finds it in their own inbox.
    asked = _text(_section(signed_in(dave).get("/").content.decode(), "approvals-title"))
    assert "Waiting for your approval" in asked and "For alice" in asked and "250000" in asked


def test_the_instance_page_waiting_for_approvers_does_not_say_it_will_not_be_done(
    api: Driver,
    treasury: Group,  # noqa: F811
    alice: User,
    bob: User,  # noqa: F811
    signed_in: Callable[[User], Client],
) -> None:
    register(api, treasury, 1)
    instance_id = api.open(
        CLASS,
        beliefs=[
            {"slot": "iban", "value": "DE89370400440532013000", "source": "tool"},
            {"slot": "amount", "value": 1000, "source": "tool"},
        ],
    )
    api.plan(instance_id)
    api.respond(api.prompt(instance_id, "iban"), "confirm")
    api.respond(api.prompt(instance_id, "amount"), "confirm")
    assert api.instance(instance_id)["status"] == "awaiting_approval"
    text = _text(signed_in(alice).get(f"/instances/{instance_id}/").content.decode())
    assert "waiting for the approvers" in text
    assert "will not be done" not in text and "would have used" not in text
    assert "Nothing here can be changed any more" not in text


@pytest.mark.parametrize("rows", [1, 4])
def test_the_inbox_reads_the_same_queries_for_1_and_4_actions_with_approvers(
    rows: int,
    api: Driver,
    treasury: Group,  # noqa: F811
    alice: User,
    bob: User,  # noqa: F811
    signed_in: Callable[[User], Client],
    person_client: Callable[[User], JsonClient],
    django_assert_num_queries: Any,
) -> None:
    register(api, treasury, 2)
    for n in range(rows):
        approve(person_client(bob), answered(api, amount=1000 + n))
    client = signed_in(alice)
    # 1 the session, 2 the user; 3 the waiting instances (none: so no decisions to read for
    # them); 4 the recently finished (none); 5 the approvals asked of alice (none); her
    # actions with approvers: 6 the instances, 7 their decisions, 8 the decisions' slots,
    # 9 their approvals, 10 the groups' members; 11 her ready actions done on a runtime's
    # report (none); 12 the latest write (live); 13 the header's permissions.
    with django_assert_num_queries(13):
        response = client.get("/")
    assert response.status_code == 200
    assert response.content.decode().count('id="approvers-link-') == rows


@pytest.fixture
def consent_class(api: Driver, treasury: Group) -> str:  # noqa: F811
    api.register(
        "privacy.consent",
        slots=[{"key": "consent", "label": "Consent to share data", "value_type": "boolean"}],
        decisions=[{"key": "share", "label": "Share the data", "slots": ["consent"]}],
        risks={"consent": "irreversible"},
        decision_risks={"share": "irreversible"},
    )
    Decision.objects.filter(key="share").update(approvals_required=2, approvers=treasury)
    return "privacy.consent"


def _consent_awaiting(api: Driver) -> str:
    instance_id = api.open(
        "privacy.consent", beliefs=[{"slot": "consent", "value": True, "source": "tool"}]
    )
    api.plan(instance_id)
    assert api.respond(api.prompt(instance_id, "consent"), "confirm").status_code == 200
    return instance_id


@pytest.mark.usefixtures("consent_class")
def test_the_approvers_page_writes_values_as_the_principals_page_does(
    api: Driver,
    alice: User,
    bob: User,  # noqa: F811
    dave: User,  # noqa: F811
    signed_in: Callable[[User], Client],
) -> None:
    instance_id = _consent_awaiting(api)
    page = signed_in(bob).get(f"/approvals/{instance_id}/").content.decode()
    block = _text(
        page[
            page.index('id="value-consent"') : page.index("</li>", page.index('id="value-consent"'))
        ]
    )
    assert "Consent to share data Yes" in block and "true" not in block
    assert "Fingerprint of these values" in page
    assert "An approval is for exactly these values" in page
    own = _text(signed_in(alice).get(f"/instances/{instance_id}/").content.decode())
    assert "Consent to share data Yes" in own  # the same words on both pages


@pytest.mark.usefixtures("consent_class")
def test_after_a_rejection_it_says_who_did_what_and_promises_nothing(
    api: Driver,
    alice: User,
    bob: User,  # noqa: F811
    dave: User,  # noqa: F811
    signed_in: Callable[[User], Client],
) -> None:
    instance_id = _consent_awaiting(api)
    dave_pages = signed_in(dave)
    waiting = TaskInstance.objects.get(pk=instance_id)
    digests = {"bindings_digest": waiting.bindings_digest, "worlds_digest": waiting.worlds_digest}
    refused = dave_pages.post(
        f"/approvals/{instance_id}/act/",
        {"action": "reject", **digests, "reason": "scope too wide"},
    )
    assert refused.status_code == 302
    for viewer in (dave, bob, alice):
        page = signed_in(viewer).get(f"/approvals/{instance_id}/").content.decode()
        approvers = _text(_section_list(page))
        assert re.search(
            r"dave( \(you\))?: ✕ rejected \d+ \w{3} \d{4}, \d\d:\d\d UTC ?: “scope too wide”",
            approvers,
        )
        assert "not yet" not in approvers
        assert "bob" + (" (you)" if viewer == bob else "") + ": did not decide" in approvers
        assert "Fingerprint" not in page and "for exactly these values" not in page
        assert "Approve these values" not in page


def _section_list(html: str) -> str:
    start = html.index('id="approvers"')
    return html[start : html.index("</ul>", start)]
