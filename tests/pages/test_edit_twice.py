"""On the page, a change of an irreversible value is typed twice: its card carries a second
field ("Type the new value again", shown by the script once the value differs from the one on
record, always there without it), the server refuses a change without an equal second entry
with a message in place, and every field of a card has its own name and label."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

import pytest
from django.test import Client

from beliefs.models import AuditEvent, Belief, Prompt, PromptResponse, TaskInstance
from tests.browser import scenarios
from tests.support.pages import HTMX

pytestmark = pytest.mark.django_db


def _url(prompt: Prompt) -> str:
    return f"/instances/{prompt.instance_id}/prompts/{prompt.pk}/respond/"


def _page(client: Client, instance: TaskInstance) -> str:
    return client.get(f"/instances/{instance.pk}/").content.decode()


def _card(html: str, prompt: Prompt) -> str:
    start = html.index(f'id="prompt-{prompt.pk}"')
    return html[start : html.index("</article>", start)]


def _recorded() -> tuple[int, int, int]:
    return Belief.objects.count(), AuditEvent.objects.count(), PromptResponse.objects.count()


def test_an_irreversible_confirm_card_has_the_second_field_with_the_value_on_record(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    card = _card(_page(alice_client, vendor), prompt)
    repeat = re.search(r'<div class="field repeat"[^>]*>', card).group(0)
    assert f'data-repeat="{prompt.prefill}"' in repeat
    assert (
        f'<label for="prompt-{prompt.pk}-again">Type the new value again'
        '<span class="visually-hidden"> for Amount</span></label>'
    ) in card
    field = re.search(r'<input id="prompt-\d+-again"[^>]*>', card).group(0)
    assert 'name="value_confirmation"' in field and 'value=""' in field
    assert f'aria-describedby="prompt-{prompt.pk}-again-help"' in field


@pytest.mark.parametrize("risk", ["reversible", "policy"])
def test_a_card_that_is_not_irreversible_has_no_second_field(
    vendor: TaskInstance, alice_client: Client, risk: str
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    Prompt.objects.filter(pk=prompt.pk).update(effective_risk=risk)
    card = _card(_page(alice_client, vendor), prompt)
    assert 'name="value_confirmation"' not in card and "data-repeat" not in card


@pytest.mark.parametrize("htmx", [True, False])
def test_it_asks_for_the_changed_value_a_second_time_in_place(
    vendor: TaskInstance, alice_client: Client, htmx: bool
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    before = _recorded()
    first = alice_client.post(
        _url(prompt),
        {"action": "edit", "version": prompt.version, "value": "1300", "value_confirmation": ""},
        **(HTMX if htmx else {}),
    )
    assert first.status_code == 400
    html = first.content.decode()
    card = _card(html, prompt)
    # The next step, said as one, beside what was typed; nothing is recorded.
    assert "<strong>One more step.</strong>" in card and "cannot be undone" in card
    assert 'value="1300"' in card
    field = re.search(r'<input id="prompt-\d+-again"[^>]*>', card).group(0)
    assert f"prompt-{prompt.pk}-message" in field and 'aria-invalid="true"' not in field
    assert _recorded() == before
    prompt.refresh_from_db()
    assert prompt.state == "open"


def test_it_refuses_a_second_value_that_differs_and_takes_an_equal_one(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    before = _recorded()
    data = {"action": "edit", "version": prompt.version, "value": "1300"}
    wrong = alice_client.post(_url(prompt), {**data, "value_confirmation": "1030"}, **HTMX)
    assert wrong.status_code == 400
    card = _card(wrong.content.decode(), prompt)
    assert "The two values do not match." in card
    assert "<strong>Please correct this.</strong>" in card
    assert 'aria-invalid="true"' in re.search(r'<input id="prompt-\d+-again"[^>]*>', card).group(0)
    assert _recorded() == before

    right = alice_client.post(_url(prompt), {**data, "value_confirmation": " 1300 "}, **HTMX)
    assert right.status_code == 200
    assert "Edited and confirmed" in right.content.decode()
    assert Belief.objects.get(instance=vendor, slot__key="amount", status="active").value == 1300


def test_it_takes_an_answer_equal_to_the_earlier_value_once(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "approval_scope")
    assert prompt.context_value == "single"
    response = alice_client.post(
        _url(prompt), {"action": "answer", "version": prompt.version, "value": "single"}, **HTMX
    )
    assert response.status_code == 200


class _Fields(HTMLParser):
    """Each form's named fields, and every label's text, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[list[tuple[str, str]]] = []
        self.labels: list[str] = []
        self._label: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append([])
        elif tag in ("input", "textarea", "select") and self.forms and a.get("name"):
            self.forms[-1].append((a["name"], a.get("type", tag)))
        elif tag in ("label", "legend"):
            self._label = []

    def handle_data(self, data: str) -> None:
        if self._label is not None:
            self._label.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("label", "legend") and self._label is not None:
            self.labels.append(" ".join("".join(self._label).split()))
            self._label = None


def test_the_fields_of_a_card_have_their_own_names_and_every_label_names_its_slot(
    vendor: TaskInstance, alice_client: Client
) -> None:
    """Text meant for one field cannot land in another: no two fields of a form share a name
    (radio buttons and tick boxes of one group aside), and no two labels of the page read alike,
    so "the value to use" says for what."""
    parser = _Fields()
    parser.feed(_page(alice_client, vendor))
    answer_forms = [f for f in parser.forms if ("value", "text") in f or ("value", "radio") in f]
    assert len(answer_forms) == 3  # amount, recipient account, approval scope
    for form in answer_forms:
        names = Counter(name for name, kind in form if kind not in ("radio", "checkbox"))
        assert [name for name, n in names.items() if n > 1] == [], form
    typed = [label for label in parser.labels if label]
    assert [label for label, n in Counter(typed).items() if n > 1] == []
    assert "The value to use for Amount" in typed and "Your answer for Approval scope" in typed
