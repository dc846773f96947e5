"""The server takes a confirm only with every act it needs: a confirm of an
irreversible value whose world changed names each changed detail, and under raised friction
types the value's last characters; an edit to the value on record is a confirm. Tested over
every combination of the inputs, through the service.

The two histories (a person confirming fast, whose friction is raised, and one confirming
slowly) are written once for the module, inside a transaction rolled back after it; each
combination runs in a savepoint within it, so each starts from the same two histories."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings

from beliefs.errors import InvalidInput
from beliefs.models import AuditEvent, PromptState
from beliefs.selectors import attention
from beliefs.services.audit import Actor, digest_of
from beliefs.services.responses import prompt_respond
from tests.builders import transfer
from tests.conftest import make_user, runtime_key_of
from tests.support.attention import HABIT_SETTINGS, ON_RECORD, WINDOW, history, target

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def histories(
    django_db_setup: None,
    django_db_blocker: Any,  # noqa: ANN401
) -> Iterator[tuple[Actor, dict[bool, User]]]:
    """The runtime, and the person whose friction is raised (True) or not (False), each with a
    full window of kept confirmations."""
    with override_settings(**HABIT_SETTINGS), django_db_blocker.unblock(), transaction.atomic():
        rt = Actor(key=runtime_key_of("test-runtime")[0])
        transfer(rt)
        people = {True: make_user("hasty"), False: make_user("careful")}
        for fast, person in people.items():
            history(rt, person, fast=fast)
        yield rt, people
        transaction.set_rollback(True)


ACTIONS = {
    "confirm": {"action": "confirm"},
    # (A change of an irreversible value is entered twice: that is another rule's test.)
    "edit": {"action": "edit", "value": "NL00 NEW", "value_confirmation": "NL00 NEW"},
    "edit to the value on record": {"action": "edit", "value": f"  {ON_RECORD} "},
}
ACKS = {"none": [], "some": ["iban"], "all": ["iban", "holder"]}
TAILS = {"right": "3704", "wrong": "3740", "missing": None}


@pytest.mark.parametrize(
    ("changed", "acked", "friction", "tail", "risk", "action"),
    list(
        itertools.product(
            [True, False], ACKS, [True, False], TAILS, ["irreversible", "policy"], ACTIONS
        )
    ),
)
def test_a_confirm_is_taken_only_with_every_act_it_needs(
    histories: tuple[Actor, dict[bool, User]],
    changed: bool,
    acked: str,
    friction: bool,
    tail: str,
    risk: str,
    action: str,
) -> None:
    rt, people = histories
    person = people[friction]
    assert attention.habit(person.pk).habitual is friction
    prompt = target(rt, person, changed=changed, risk=risk)
    guarded = risk == "irreversible" and action != "edit"  # an edit is typed: no acts
    needs_acks = guarded and changed and acked != "all"
    needs_tail = guarded and friction and tail != "right"
    responses_before = AuditEvent.objects.filter(kind__startswith="prompt.").count()

    def respond() -> None:
        prompt_respond(
            prompt_id=prompt.pk,
            user=person,
            version=prompt.version,
            acknowledged=ACKS[acked],
            typed_tail=TAILS[tail],
            **ACTIONS[action],
        )

    if needs_acks or needs_tail:
        with pytest.raises(InvalidInput) as refused:
            respond()
        fields = {"acknowledged"} if needs_acks else set()
        fields |= {"typed_tail"} if needs_tail else set()
        assert set(refused.value.fields) == fields
        assert refused.value.code == ("not_acknowledged" if needs_acks else "tail_not_typed")
        prompt.refresh_from_db()
        assert prompt.state == PromptState.OPEN and not prompt.responses.exists()
        assert AuditEvent.objects.filter(kind__startswith="prompt.").count() == responses_before
        return

    respond()
    prompt.refresh_from_db()
    recorded_as = "edit" if action == "edit" else "confirm"
    assert (prompt.state, prompt.action) == (PromptState.ANSWERED, recorded_as)
    assert prompt.response_value == ("NL00 NEW" if action == "edit" else ON_RECORD)
    event = AuditEvent.objects.get(kind=f"prompt.{recorded_as}", prompt_id=prompt.pk)
    if guarded and changed:
        assert [d["key"] for d in event.data["acknowledged"]] == ["holder", "iban"]
        assert event.data["acknowledged"][1] == {
            "key": "iban",
            "change": "changed",
            "old_digest": digest_of("DE89 3704"),
            "new_digest": digest_of("DE02 1203"),
        }
    else:
        assert "acknowledged" not in event.data
    if guarded and friction:
        assert event.data["friction"]["typed_tail"] is True
        assert event.data["friction"]["looked_at"] == WINDOW
    else:
        assert "friction" not in event.data
    assert event.data.get("edited_to_the_value_on_record", False) is (
        action == "edit to the value on record"
    )
