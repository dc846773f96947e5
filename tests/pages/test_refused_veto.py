"""A veto refused (a second tab, after the assumption was already vetoed or the instance
closed) says so, and shows the reason it did not send: never a silent success."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import Prompt, PromptResponse, TaskInstance
from beliefs.services.instances import instance_cancel
from beliefs.services.responses import prompt_respond
from tests.browser import scenarios
from tests.pages.test_respond import post

pytestmark = pytest.mark.django_db


def _line(html: str, prompt: Prompt) -> str:
    start = html.index(f'id="prompt-{prompt.pk}"')
    return html[start : start + 6000]


@pytest.mark.parametrize("first_reason", ["", "we moved it"])
def test_a_second_veto_with_its_own_reason_is_refused_and_says_so(
    vendor: TaskInstance, alice: User, alice_client: Client, first_reason: str
) -> None:
    prompt = scenarios.open_prompt(vendor, "due_date")
    prompt_respond(
        prompt_id=prompt.pk, user=alice, action="veto", version=prompt.version,
        reason=first_reason,
    )  # fmt: skip
    response = post(alice_client, prompt, action="veto", reason="the date is wrong")
    assert response.status_code == 409
    line = _line(response.content.decode(), prompt)
    assert "<strong>Not recorded.</strong> This was already vetoed" in line
    assert "Your reason was not sent either: “the date is wrong”." in line
    assert ("with the reason “we moved it”" if first_reason else "without a reason") in line
    assert PromptResponse.objects.filter(prompt=prompt).count() == 1
    assert Prompt.objects.get(pk=prompt.pk).response_reason == first_reason


def test_the_same_veto_twice_is_one_veto_and_no_message(
    vendor: TaskInstance, alice: User, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "due_date")
    assert post(alice_client, prompt, action="veto", reason="moved").status_code == 200
    again = post(alice_client, prompt, action="veto", reason="moved")
    assert again.status_code == 200 and "Not recorded" not in again.content.decode()
    assert PromptResponse.objects.filter(prompt=prompt).count() == 1


def test_a_veto_after_the_instance_was_cancelled_says_so_with_its_reason(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "due_date")
    instance_cancel(instance=vendor, actor=scenarios.RUNTIME, reason="not needed")
    response = post(alice_client, prompt, action="veto", reason="the date is wrong")
    assert response.status_code == 409
    assert response["HX-Retarget"] == "#instance-view"  # the whole view: it was cancelled
    line = _line(response.content.decode(), prompt)
    assert "the action was cancelled, so nothing was recorded." in line
    assert "Your reason was not sent either: “the date is wrong”." in line


def test_a_refused_reason_is_shown_escaped(vendor: TaskInstance, alice_client: Client) -> None:
    prompt = scenarios.open_prompt(vendor, "due_date")
    instance_cancel(instance=vendor, actor=scenarios.RUNTIME, reason="not needed")
    html = post(alice_client, prompt, action="veto", reason="<b>x</b>\u202e").content.decode()
    assert "“&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert "U+202E" in html
