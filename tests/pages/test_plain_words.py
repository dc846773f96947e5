"""End-user pages in plain words: Yes/No for yes/no values (never JSON's true or false), no
digest names or character limits, a risk badge that says what the risk is (an unclassified
value is treated as irreversible until classified, not "Cannot be undone")."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import TaskInstance
from beliefs.services.planning import instance_plan
from console.forms.respond import is_date_input_text
from tests.browser import scenarios
from tests.builders import answer_all, classify, open_instance, open_prompt, register_task_class
from tests.pages.test_instance_page import card_html

pytestmark = pytest.mark.django_db


def _consent(user: User, *, classified: bool) -> TaskInstance:
    task_class = register_task_class(
        key="consent.share",
        name="Share your data",
        slots=[
            {"key": "share", "label": "Share with partners", "value_type": "boolean"},
            {"key": "until", "label": "Until", "value_type": "date"},
        ],
        actor=scenarios.RUNTIME,
    )
    if classified:
        classify(task_class, slots={"share": "irreversible", "until": "irreversible"})
    instance = open_instance(
        task_class_key=task_class.key,
        principal=user.username,
        beliefs=[
            {"slot": "share", "value": False, "source": "tool"},
            {"slot": "until", "value": "2027-01-31", "source": "inference"},
        ],
        actor=scenarios.RUNTIME,
    )
    return instance_plan(instance=instance, actor=scenarios.RUNTIME)


def _text(html: str) -> str:
    """What a person reads of the page's main content: its text, not its markup."""
    main = html.split('<main id="main"', 1)[1].split("</main>", 1)[0]
    return " ".join(re.findall(r">([^<]+)<", main))


@pytest.fixture
def alice_client(alice: User, signed_in: Callable[[User], Client]) -> Client:
    return signed_in(alice)


def test_a_yes_no_value_reads_yes_or_no_everywhere(alice: User, alice_client: Client) -> None:
    instance = _consent(alice, classified=True)
    html = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    card = card_html(html, open_prompt(instance, "share"))
    assert '<span class="value">No</span>' in card  # the value on record
    assert not re.search(r"\b(true|false)\b", _text(html), re.IGNORECASE)
    assert 'Share with partners <span class="value">No</span>' in html  # the restatement
    answer_all(instance, alice, {"share": False, "until": "2027-01-31"})
    done = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    assert not re.search(r"\b(true|false)\b", _text(done), re.IGNORECASE)
    assert '<td><span class="value">No</span></td>' in done  # the final values


def test_a_date_is_picked_with_a_date_input(alice: User, alice_client: Client) -> None:
    instance = _consent(alice, classified=True)
    html = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    prompt = open_prompt(instance, "until")
    field = html[html.index(f'id="prompt-{prompt.pk}-value"') :].split(">", 1)[0]
    assert 'type="date"' in field and 'value="2027-01-31"' in field


def test_no_digest_name_or_character_limit_on_the_persons_pages(
    alice: User, alice_client: Client
) -> None:
    instance = _consent(alice, classified=True)
    waiting = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    answer_all(instance, alice, {"share": True, "until": "2027-01-31"})
    ready = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    vendor = scenarios.vendor(alice)
    assumptions = alice_client.get(f"/instances/{vendor.pk}/").content.decode()
    for html in (waiting, ready, assumptions):
        assert "SHA-256" not in html and "2,000 characters" not in html
    instance.refresh_from_db()
    assert instance.bindings_digest in ready  # still there, for who checks it, unnamed


@pytest.mark.parametrize("classified", [True, False], ids=["classified", "unclassified"])
def test_the_risk_badge_says_what_the_risk_is(
    alice: User, alice_client: Client, classified: bool
) -> None:
    instance = _consent(alice, classified=classified)
    html = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    card = card_html(html, open_prompt(instance, "share"))
    if classified:
        assert '<span class="badge risk risk-irreversible">Cannot be undone</span>' in card
    else:
        assert (
            '<span class="badge risk risk-unclassified">'
            "Treated as irreversible until classified</span>"
        ) in card
        assert "Cannot be undone" not in card


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("2026-12-01", True),
        ("2000-01-01", True),
        ("2026-02-30", False),
        ("20261201", False),
        ("2026-W48-2", False),
        ("2026-12-1", False),
        ("12/01/2026", False),
        ("", False),
        ("2026-12-01T10:00", False),
    ],
)
def test_a_date_input_holds_only_a_calendar_date(text: str, holds: bool) -> None:
    assert is_date_input_text(text) is holds
