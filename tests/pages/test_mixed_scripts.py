"""Look-alike letters: a word that mixes Latin with Cyrillic or Greek is flagged, with a
visible mark and an explanation, on the end-user cards and the staff pages; text in one
script, accented Latin, CJK and words of different scripts side by side are not."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.domain.reveal import mixed_script_note, mixed_script_words, script_of, word_scripts
from beliefs.models import Runtime, TaskInstance, WebhookEndpoint
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from console.templatetags.console_tags import mixed_mark, shown_checked
from tests.builders import classify, open_instance, register_task_class
from tests.support.pages import marked

LOOKALIKES = {
    "\u0440ayments": "\u0440ayments",  # Cyrillic er in a Latin word
    "p\u0430ypal.com": "p\u0430ypal",  # Cyrillic a
    "g\u03bfogle": "g\u03bfogle",  # Greek omicron
    "\u0391pple": "\u0391pple",  # Greek capital alpha
    "micro\u0455oft": "micro\u0455oft",  # Cyrillic dze
    "admin \u0440oot": "\u0440oot",  # the mixed word among clean ones
    # mostly Cyrillic, with a Latin l
    "\u0420\u0430\u0443\u0440\u0430l": "\u0420\u0430\u0443\u0440\u0430l",
    "\u03b1\u0432c": "\u03b1\u0432c",  # Greek, Cyrillic and Latin
    "\u0440\u0430y": "\u0440\u0430y",
    "\u0440a\u0301yments": "\u0440a\u0301yments",  # a combining accent keeps the word whole
}

LEGITIMATE = [
    "payments",
    "\u041c\u043e\u0441\u043a\u0432\u0430",  # Москва
    "\u0410\u0411\u0412 \u0433\u0434\u0435",  # Cyrillic words
    "\u0391\u03b8\u03ae\u03bd\u03b1",  # Αθήνα
    "\u03c0\u03bf\u03bb\u03b9\u03c4\u03b9\u03ba\u03ae",  # Greek word
    "M\u00fcller",
    "na\u00efve caf\u00e9 \u0153uvre Stra\u00dfe \u01c5emal",
    "Invoice #2024-11, total: 1.250,00 \u20ac (paid)!",
    "user_42@example.org",
    "\u6771\u4eac Tokyo",  # CJK beside Latin
    "\u6771\u4eacTokyo",  # CJK joined to Latin: not a look-alike pair
    "\u3072\u3089\u304c\u306a \u30ab\u30bf\u30ab\u30ca",
    "M\u00fcller \u0418\u0432\u0430\u043d\u043e\u0432",  # two scripts, two words
    "\u03c0-calculus",  # a Greek letter beside a Latin word, not in it
    "\u0440-2",
    "\ufb01le",  # the Latin fi ligature
    "",
    "\u202e\u200b",
]


@pytest.mark.parametrize("text", list(LOOKALIKES))
def test_it_flags_each_word_that_mixes_look_alike_scripts(text: str) -> None:
    assert mixed_script_words(text) == [LOOKALIKES[text]]
    assert mixed_script_words({"k": [text]}) == [LOOKALIKES[text]]  # at any depth
    assert mixed_script_words({text: 1}) == [LOOKALIKES[text]]  # keys too
    note = mixed_script_note(text)
    assert LOOKALIKES[text] in note and "mixes" in note


@pytest.mark.parametrize("text", LEGITIMATE)
def test_it_leaves_text_in_one_script_alone(text: str) -> None:
    assert mixed_script_words(text) == []
    assert mixed_script_note(text) == ""
    assert mixed_mark(text) == ""


def test_it_names_the_letters_of_the_lesser_script() -> None:
    assert mixed_script_note("\u0440ayments") == (
        "\u201c\u0440ayments\u201d mixes Cyrillic and Latin letters "
        "(\u0440 is U+0440 CYRILLIC SMALL LETTER ER)"
    )
    assert "l is U+006C LATIN SMALL LETTER L" in mixed_script_note(
        "\u0420\u0430\u0443\u0440\u0430l"
    )


def test_it_takes_the_script_from_the_character_name() -> None:
    assert [script_of(c) for c in "a\u0440\u03bf1-\u6771"] == [
        "LATIN",
        "CYRILLIC",
        "GREEK",
        None,
        None,
        None,
    ]
    assert word_scripts("\u0440ay") == ["CYRILLIC", "LATIN"]


def test_the_mark_is_escaped_and_reveals_hidden_characters_in_the_word() -> None:
    html = shown_checked("<b>\u0440ay\u200bments</b>")
    assert "<b>" not in html and "&lt;b&gt;" in html
    assert "\u200b" not in html and "⟨U+200B⟩" in html
    assert 'class="flag-inline mixed-script"' in html and "look-alike letters" in html


# --- the pages --------------------------------------------------------------------------------


@pytest.fixture
def lookalike(alice: User) -> TaskInstance:
    """A confirmation whose value is a look-alike domain, and an assumption with one."""
    actor = Actor()
    task_class = register_task_class(
        key="payments.lookalike",
        name="Pay \u0440ayments",
        slots=[
            {"key": "site", "label": "Site"},
            {"key": "memo", "label": "Memo"},
        ],
        decisions=[{"key": "pay", "label": "Pay", "slots": ["site"]}],
        actor=actor,
    )
    classify(task_class, slots={"site": "irreversible", "memo": "reversible"})
    instance = open_instance(
        task_class_key=task_class.key,
        principal=alice.username,
        beliefs=[
            {"slot": "site", "value": "p\u0430ypal.com", "source": "tool", "turn": 1},
            {"slot": "memo", "value": "via g\u03bfogle", "source": "tool", "turn": 1},
        ],
        actor=actor,
    )
    return instance_plan(instance=instance, actor=actor)


@pytest.mark.django_db
def test_the_cards_flag_look_alike_letters_beside_hidden_characters(
    lookalike: TaskInstance, signed_in: Callable[[User], Client], alice: User
) -> None:
    html = signed_in(alice).get(f"/instances/{lookalike.pk}/").content.decode()
    card = html[html.index("Confirm: Site") :]
    card = card[: card.index("</article>")]
    assert "Warning: look-alike letters." in card
    assert "\u201cp\u0430ypal\u201d mixes Cyrillic and Latin letters" in card
    assert "U+0430 CYRILLIC SMALL LETTER A" in card
    assert "card-flagged" in html[html.rindex("<article", 0, html.index("Confirm: Site")) :][:300]
    assert "\u201cg\u03bfogle\u201d mixes Greek and Latin letters" in html  # the assumption
    assert "Warning: hidden characters" not in card


@pytest.fixture
def staff(db: None) -> Client:
    user = User.objects.create_superuser("root", "root@example.org", "pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_runtimes_page_reveals_hidden_characters_and_flags_look_alikes(staff: Client) -> None:
    runtime = Runtime.objects.create(name="\u0440ay<b>\u202e")
    WebhookEndpoint.objects.create(
        runtime=runtime,
        url="https://hooks.example/\u202eexe.txt",
        secret="whsec_" + "A" * 44,
        description="for p\u0430ypal \u200b<script>",
        event_types=["instance.ready", "b\u0430d"],
    )
    html = staff.get("/runtimes/").content.decode()
    for raw in ("\u202e", "\u200b", "<script>", "<b>"):
        assert raw not in html, raw
    assert f"{marked('U+202E')}exe.txt" in html and marked("U+200B") in html
    assert "\u0440ay&lt;b&gt;" in html
    assert "\u201c\u0440ay\u201d mixes Cyrillic and Latin letters" in html
    assert "\u201cp\u0430ypal\u201d mixes Cyrillic and Latin letters" in html
    assert "instance.ready, b\u0430d" in html and "\u201cb\u0430d\u201d mixes" in html
