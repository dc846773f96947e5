"""Every page of the demo, seeded with hostile text, shows hidden characters for what they are.

A crawler signs in as each demo user, follows every link of the site from the top pages (plus a
filter link that carries a right-to-left override in its query string) and reads the text of
each page as a browser would show it: no bidirectional control or zero-width character may be
in it raw. (Attribute values, such as an input's value, are not shown as text.)
"""

from __future__ import annotations

from collections import deque
from html.parser import HTMLParser
from urllib.parse import quote, urldefrag, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from beliefs.models import TaskClass
from beliefs.services.proposals import proposal_validate_and_store
from beliefs.services.responses import prompt_respond
from tests.browser import scenarios
from tests.pages.test_proposals_hostile_text import BODIES

pytestmark = pytest.mark.django_db

BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
ZERO_WIDTH = set("\u200b\u200c\u200d\u2060\ufeff")
HIDDEN = BIDI | ZERO_WIDTH
START = [
    "/",
    "/classify/",
    "/classify/matrix/",
    "/proposals/",
    "/proposals/stats/",
    "/insights/",
    "/activity/",
    f"/proposals/?code={quote('contract.V1' + chr(0x202E) + 'x')}",
    f"/proposals/?verdict={quote(chr(0x200B) + 'PASS')}",
]
SKIP = ("/api/", "/static/", "/accounts/logout", "/admin/")
MAX_PAGES = 400


class TextAndLinks(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.links: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        if tag == "a":
            self.links.extend(value for name, value in attrs if name == "href" and value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


@pytest.fixture(scope="module")
def hostile_corpus(demo: str) -> None:
    """The demo with a hostile task class, an answered prompt and hostile proposals, loaded once
    for the module (inside the demo's transaction, so it goes when the module ends)."""
    alice = get_user_model().objects.get(username="alice")
    instance = scenarios.hostile(alice)
    # A runtime names a task class in one URL segment, so its key never holds a "/" (which the
    # classify pages could not link to); give the hostile class a key a runtime could send.
    TaskClass.objects.filter(pk=instance.task_class_id).update(key="hostile.<b>demo\u202e\u200b")
    # Answer one prompt, so the hostile task class also reaches the insights' figures.
    prompt = scenarios.open_prompt(instance, "file")
    prompt_respond(prompt_id=prompt.pk, user=alice, action="confirm", version=prompt.version)
    for body in BODIES.values():
        proposal_validate_and_store(
            graph=body["graph"],
            update=body["update"],
            source={"provider": "p\u202erovider", "model": "m\u200bodel", "run": "r\u2066un"},
            actor=scenarios.RUNTIME,
        )


def _crawl(client: Client) -> dict[str, str]:
    """Every page reachable from START: {path: its visible text}."""
    seen: dict[str, str] = {}
    queue = deque(START)
    while queue and len(seen) < MAX_PAGES:
        url = urldefrag(queue.popleft())[0]
        parts = urlsplit(url)
        if parts.netloc or url in seen or url.startswith(SKIP) or not url.startswith("/"):
            continue
        response = client.get(url)
        seen[url] = ""
        if response.status_code >= 300 and response.status_code < 400:
            continue
        if "html" not in response.get("Content-Type", ""):
            continue
        page = TextAndLinks()
        page.feed(response.content.decode())
        seen[url] = "".join(page.text)
        queue.extend(page.links)
    return seen


@pytest.mark.parametrize("username", ["alice", "carol", "rita"])
def test_it_shows_no_raw_bidi_or_zero_width_character_on_any_page(
    hostile_corpus: None, username: str
) -> None:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))

    pages = _crawl(client)

    assert len(pages) > 5, pages.keys()
    raw = {
        url: sorted(f"U+{ord(c):04X}" for c in set(text) & HIDDEN)
        for url, text in pages.items()
        if set(text) & HIDDEN
    }
    assert raw == {}
