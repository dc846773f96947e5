"""Every card names the runtime that reported a value, and a runtime's `user` source reads as
that runtime's report, distinct from an answer the person gave in the console."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import RuntimeAPIKey, TaskClass, TaskInstance
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond
from tests.builders import classify, open_instance, open_prompt, register_task_class
from tests.conftest import runtime_key_of
from tests.pages.test_instance_page import card_html

WORLD = {"iban": {"holder": "Bob Example"}}


def _runtime(name: str) -> Actor:
    key, _ = runtime_key_of(name)
    return Actor(key=RuntimeAPIKey.objects.select_related("runtime").get(pk=key.pk))


def _class(owner: Actor) -> TaskClass:
    task_class = register_task_class(
        key="payments.refund",
        actor=owner,
        slots=[{"key": "iban", "label": "IBAN"}, {"key": "note", "label": "Note"}],
    )
    classify(task_class, slots={"iban": "irreversible", "note": "reversible"})
    return task_class


def _run(owner: Actor, beliefs: list[dict[str, object]] | None = None) -> TaskInstance:
    instance = open_instance(
        task_class_key="payments.refund",
        principal="alice",
        world=WORLD,
        beliefs=beliefs,
        actor=owner,
    )
    return instance_plan(instance=instance, actor=owner)


def _card(client: Client, instance: TaskInstance, slot: str) -> str:
    response = client.get(f"/instances/{instance.pk}/")
    assert response.status_code == 200
    return card_html(response.content.decode(), open_prompt(instance, slot))


def test_a_runtimes_user_value_reads_as_its_report(alice: User, signed_in: type[Client]) -> None:
    agent = _runtime("billing-agent")
    _class(agent)
    _run(agent, [{"slot": "iban", "value": "GB33", "source": "user", "world_ref": WORLD["iban"]},
                 {"slot": "note", "value": "refund", "source": "tool"}])  # fmt: skip
    later = _run(agent)
    client = signed_in(alice)
    iban = _card(client, later, "iban")
    assert "billing-agent reports you gave it" in iban
    assert "given by you in the console" not in iban
    assert "This value is from an earlier attempt: billing-agent reports you gave it." in iban
    assert "from a tool billing-agent used" in _card(client, later, "note")


def test_an_answer_in_the_console_reads_as_given_there(
    alice: User, signed_in: type[Client]
) -> None:
    agent = _runtime("billing-agent")
    _class(agent)
    first = _run(agent)
    prompt = open_prompt(first, "iban")
    prompt_respond(
        prompt_id=prompt.pk, user=alice, action="answer", version=prompt.version, value="NL91"
    )
    later = _run(agent)
    iban = _card(signed_in(alice), later, "iban")
    assert "given by you in the console" in iban
    assert "reports you gave it" not in iban


def test_a_runtimes_name_is_shown_as_data(alice: User, signed_in: type[Client]) -> None:
    agent = _runtime('<img src=x onerror="alert(1)">\u202e')
    _class(agent)
    _run(agent, [{"slot": "note", "value": "x", "source": "tool"}])
    later = _run(agent)
    note = _card(signed_in(alice), later, "note")
    assert "<img src=x" not in note
    assert "&lt;img src=x" in note
    assert "\u202e" not in note and "U+202E" in note


def test_an_earlier_value_shown_for_reference_names_who_reported_it(
    alice: User, signed_in: type[Client]
) -> None:
    """An ASK with the earlier value as read-only context (R5: no world reference) still says
    whose value it was."""
    agent = _runtime("billing-agent")
    _class(agent)
    _run(agent, [{"slot": "iban", "value": "GB33", "source": "user"}])
    later = _run(agent)
    iban = _card(signed_in(alice), later, "iban")
    assert "for reference only" in iban
    assert "billing-agent reports you gave it" in iban
