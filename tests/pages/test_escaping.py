"""Untrusted labels, values and world references are data: escaped, and deceit made visible."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import TaskInstance
from tests.browser import scenarios
from tests.support.pages import HTMX, marked

pytestmark = pytest.mark.django_db

RAW = [
    "<script>alert(",
    "<img src=x",
    "<b>demo</b>",
    'href="javascript:',
    "onerror=alert('img')>",  # as markup, the attribute would end the tag
    "\u202e",
    "\u200b",
]


@pytest.fixture
def hostile(alice: User) -> TaskInstance:
    return scenarios.hostile(alice)


class Tags(HTMLParser):
    """Every element the browser would build from the markup, with its attributes."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def assert_inert(html: str) -> None:
    for raw in RAW:
        assert raw not in html, raw
    for tag, attrs in Tags(html).tags:
        assert tag not in ("img", "style", "iframe", "object", "embed"), tag
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        assert "style" not in attrs, (tag, attrs)
        for name in ("href", "src", "action", "hx-get", "hx-post"):
            assert not (attrs.get(name) or "").lower().startswith("javascript:"), attrs
        if tag == "script":  # only our own scripts, from /static/
            assert set(attrs) == {"src", "defer"} and attrs["src"].startswith("/static/"), attrs


def test_it_escapes_every_hostile_value_on_the_instance_page(
    hostile: TaskInstance, alice_client: Client
) -> None:
    html = alice_client.get(f"/instances/{hostile.pk}/").content.decode()
    assert_inert(html)
    assert "&lt;script&gt;alert(&#x27;script&#x27;)&lt;/script&gt;" in html
    assert "Payee &lt;img src=x onerror=alert(&#x27;img&#x27;)&gt;" in html
    assert "javascript:alert(&#x27;url&#x27;)" in html  # as text, never as a link
    assert "Hostile &lt;script&gt;alert(&#x27;script&#x27;)&lt;/script&gt;" in html  # the title


def test_it_shows_hidden_characters_and_flags_their_cards(
    hostile: TaskInstance, alice_client: Client
) -> None:
    html = alice_client.get(f"/instances/{hostile.pk}/").content.decode()
    assert f"invoice{marked('U+202E')}fdp.exe" in html
    assert f"iban{marked('U+200B')}" in html  # in a world reference's key
    file_card = html[html.index("Confirm: Attachment") :]
    file_card = file_card[: file_card.index("</article>")]
    assert "Warning: hidden characters." in file_card and "(U+202E)" in file_card
    # The value is not copied into the input, where the override would act again.
    assert re.search(r'<input id="prompt-\d+-value" name="value" type="text" value=""', file_card)
    assert "not copied here" in file_card
    link_card = html[html.index("Confirm: Link") :]
    link_card = link_card[: link_card.index("</article>")]
    assert "Warning: hidden characters" not in link_card
    assert "⚠ hidden characters" in html  # the restatement flags the value too


def test_it_shows_an_object_value_as_formatted_json(
    hostile: TaskInstance, alice_client: Client
) -> None:
    html = alice_client.get(f"/instances/{hostile.pk}/").content.decode()
    assert (
        f"{{\n  &quot;bidi&quot;: &quot;invoice{marked('U+202E')}fdp.exe&quot;,\n"
        "  &quot;html&quot;: &quot;&lt;img src=x onerror=alert(&#x27;img&#x27;)&gt;&quot;\n}"
    ) in html


def test_it_escapes_hostile_values_in_the_inbox(
    hostile: TaskInstance, alice_client: Client
) -> None:
    assert_inert(alice_client.get("/").content.decode())
    assert_inert(alice_client.get("/inbox/rows/", **HTMX).content.decode())


def test_it_escapes_what_a_refused_answer_typed(
    hostile: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(hostile, "payee")
    response = alice_client.post(
        f"/instances/{hostile.pk}/prompts/{prompt.pk}/respond/",
        {"action": "confirm", "version": prompt.version, "value": '"><script>alert(2)</script>'},
        **HTMX,
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert_inert(html)
    assert 'value="&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"' in html


def test_it_escapes_a_hostile_answer_once_recorded(
    hostile: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(hostile, "link")
    answer = "<img src=x onerror=alert(3)>\u2066"
    response = alice_client.post(
        f"/instances/{hostile.pk}/prompts/{prompt.pk}/respond/",
        {
            "action": "edit",
            "version": prompt.version,
            "value": answer,
            "value_confirmation": answer,
        },
        **HTMX,
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert f"&lt;img src=x onerror=alert(3)&gt;{marked('U+2066')}" in html
    assert "<img src=x onerror=alert(3)>" not in html and "\u2066" not in html


def test_it_does_not_take_a_look_alike_marker_for_a_hidden_character(
    alice: User, alice_client: Client
) -> None:
    """Text that merely spells "⟨U+202E⟩" is shown as typed: not marked, card not flagged."""
    instance = scenarios.vendor(alice)
    prompt = scenarios.open_prompt(instance, "reference")
    prompt.prefill = "INV ⟨U+202E⟩ 7"
    prompt.save(update_fields=["prefill"])
    html = alice_client.get(f"/instances/{instance.pk}/").content.decode()
    assert "INV ⟨U+202E⟩ 7" in html
    assert 'class="hidden-char"' not in html
    assert "Warning: hidden characters" not in html
