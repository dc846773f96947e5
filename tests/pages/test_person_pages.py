"""How the pages meet a person: where they land, what the browser may keep, errors in place,
inputs that fit the value, and plain words."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import Belief, InstanceStatus, Slot, TaskInstance
from beliefs.services.planning import instance_plan
from tests.browser import scenarios
from tests.builders import open_instance, register_task_class
from tests.conftest import PASSWORD
from tests.support.pages import HTMX

pytestmark = pytest.mark.django_db


def sign_in(username: str, next_url: str = "") -> str:
    """Where a person lands after signing in (following the app's own redirects)."""
    client = Client()
    data = {"username": username, "password": PASSWORD}
    if next_url:
        data["next"] = next_url
    response = client.post("/accounts/login/", data)
    while response.status_code == 302 and response["Location"].startswith("/start/"):
        response = client.get(response["Location"])
    return response["Location"]


def test_classifiers_and_reviewers_land_on_their_work(alice: User, carol: User, rita: User) -> None:
    assert sign_in("alice") == "/"
    assert sign_in("carol") == "/classify/"
    assert sign_in("rita") == "/proposals/"
    # Coming from "/" (where a signed-out visit starts) is not a wish to see an empty inbox.
    assert sign_in("carol", next_url="/") == "/classify/"
    # A page asked for on purpose is kept.
    assert sign_in("carol", next_url="/activity/") == "/activity/"


def test_a_classifier_with_something_waiting_lands_on_the_inbox(carol: User) -> None:
    scenarios.vendor(carol)
    assert sign_in("carol") == "/"


def test_after_a_wrong_password_the_password_field_has_the_focus(alice: User) -> None:
    html = Client().post("/accounts/login/", {"username": "alice", "password": "no"}).content
    html = html.decode()
    username = html[html.index('id="id_username"') :].split(">", 1)[0]
    password = html[html.index('id="id_password"') :].split(">", 1)[0]
    assert "autofocus" not in username
    assert "autofocus" in password and 'aria-describedby="sign-in-error"' in password
    first = Client().get("/accounts/login/").content.decode()
    assert "autofocus" in first[first.index('id="id_username"') :].split(">", 1)[0]


def test_pages_are_never_stored_by_the_browser(vendor: TaskInstance, alice_client: Client) -> None:
    for path in ("/", f"/instances/{vendor.pk}/", "/inbox/rows/"):
        cache_control = alice_client.get(path)["Cache-Control"]
        assert "no-store" in cache_control, path
    assert "no-store" in Client().get("/accounts/login/")["Cache-Control"]


def test_an_htmx_request_that_is_not_allowed_gets_a_message_for_the_main_area(
    alice_client: Client,
) -> None:
    response = alice_client.post("/classify/any/slots/1/", {}, **HTMX)
    assert response.status_code == 403
    assert response["HX-Retarget"] == "#main" and response["HX-Reswap"] == "innerHTML"
    html = response.content.decode()
    assert "<html" not in html and 'role="alert"' in html and "Not allowed" in html
    # The same refusal to a plain request is a whole page.
    page = alice_client.post("/classify/any/slots/1/", {})
    assert page.status_code == 403 and "<html" in page.content.decode()


def test_a_stale_csrf_token_gets_a_message_not_djangos_page(vendor: TaskInstance) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.get(username="alice"))
    prompt = scenarios.open_prompt(vendor, "amount")
    response = client.post(
        f"/instances/{vendor.pk}/prompts/{prompt.pk}/respond/",
        {"action": "confirm", "version": prompt.version},
        **HTMX,
    )
    assert response.status_code == 403
    assert "Reload the page and try again" in response.content.decode()
    assert response["HX-Retarget"] == "#main"


def test_choices_are_offered_as_radio_buttons(alice: User, alice_client: Client) -> None:
    register_task_class(
        key="commerce.ship",
        name="Ship",
        slots=[
            {"key": "speed", "label": "Delivery speed", "choices": ["standard", "express"]},
            {"key": "wrap", "label": "Gift wrap", "value_type": "boolean"},
        ],
        decisions=[],
        actor=scenarios.RUNTIME,
    )
    instance = open_instance(
        task_class_key="commerce.ship", principal="alice", actor=scenarios.RUNTIME
    )
    instance = instance_plan(instance=instance, actor=scenarios.RUNTIME)
    html = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    assert html.count('type="radio" name="value" value="standard"') == 1
    assert 'type="radio" name="value" value="express"' in html
    assert 'type="radio" name="value" value="true"' in html and "> Yes</label>" in html
    # Each legend names its slot (for a screen reader; two cards never read alike).
    assert '<legend>Your answer<span class="visually-hidden"> for Delivery speed</span>' in html


def test_a_typed_choice_differing_only_in_case_or_spaces_is_taken_as_the_choice(
    vendor: TaskInstance, alice: User, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "approval_scope")
    response = alice_client.post(
        f"/instances/{vendor.pk}/prompts/{prompt.pk}/respond/",
        {"action": "answer", "version": prompt.version, "value": "  Single "},
        **HTMX,
    )
    assert response.status_code == 200
    belief = Belief.objects.get(instance=vendor, slot__key="approval_scope", status="active")
    assert belief.value == "single"  # the canonical choice, as listed
    assert '<span class="value">single</span>' in response.content.decode()


def test_inputs_hold_their_limits_without_printing_them(
    vendor: TaskInstance, alice_client: Client
) -> None:
    html = alice_client.get(f"/instances/{vendor.pk}/").content.decode()
    prompt = scenarios.open_prompt(vendor, "recipient_account")
    card = html[html.index(f'id="prompt-{prompt.pk}"') :]
    field = card[card.index(f'id="prompt-{prompt.pk}-value"') :].split(">", 1)[0]
    assert 'maxlength="2000"' in field
    # The limit is the input's own; a person never needs the number (2,000 characters is far
    # beyond any value), and going over is said when it happens.
    assert "Up to 2,000 characters" not in card[: card.index("</article>")]


def test_a_long_value_is_clamped_with_a_way_to_read_it_all(
    alice: User, alice_client: Client
) -> None:
    scenarios.vendor_payment()
    long_reference = "INV " + "x" * 1738
    instance = open_instance(
        task_class_key="payments.vendor",
        principal="alice",
        beliefs=[{"slot": "reference", "value": long_reference, "source": "tool", "turn": 1}],
        actor=scenarios.RUNTIME,
    )
    instance = instance_plan(instance=instance, actor=scenarios.RUNTIME)
    html = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    assert "Show all 1,742 characters" in html
    assert html.count(long_reference) == 1  # once in full (inside the control), else cut short


def test_a_world_the_runtime_did_not_state_is_not_shown_as_json(
    alice: User, alice_client: Client
) -> None:
    scenarios.vendor_payment()
    scenarios.vendor_run_1(alice)
    instance = open_instance(
        task_class_key="payments.vendor", principal="alice", actor=scenarios.RUNTIME
    )
    instance = instance_plan(instance=instance, actor=scenarios.RUNTIME)
    Slot.objects.filter(key="recipient_account").update(risk_class="irreversible")
    instance = instance_plan(instance=instance, actor=scenarios.RUNTIME)
    assert instance.status == InstanceStatus.AWAITING_USER
    html = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    assert "it reports nothing for now" in html
    assert '<dl class="world-then">' in html and '<dt class="world-key">bank</dt>' in html
    assert '{\n  "bank"' not in html and "&quot;bank&quot;" not in html
