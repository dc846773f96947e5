"""A value that differs from a listed choice only in case or surrounding spaces is that choice,
for the API as for the pages; anything else is still refused."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from beliefs.errors import InvalidInput
from beliefs.models import Belief
from beliefs.services.responses import prompt_respond
from tests.browser import scenarios

pytestmark = pytest.mark.django_db


def answer(instance, key: str, value: str, user: User) -> None:  # noqa: ANN001
    prompt = scenarios.open_prompt(instance, key)
    prompt_respond(
        prompt_id=prompt.pk,
        user=user,
        action="answer",
        version=prompt.version,
        value=value,
        value_confirmation=value,
    )


def test_it_takes_a_differently_cased_scope_as_the_listed_one(alice: User) -> None:
    instance = scenarios.vendor(alice)
    answer(instance, "approval_scope", " SINGLE ", alice)
    belief = Belief.objects.get(instance=instance, slot__key="approval_scope", status="active")
    assert belief.value == "single"


def test_it_still_refuses_a_value_that_is_not_a_choice(alice: User) -> None:
    instance = scenarios.vendor(alice)
    with pytest.raises(InvalidInput) as refused:
        answer(instance, "approval_scope", "recurrin", alice)
    assert refused.value.fields["value"] == ["must be one of single, recurring, unlimited"]
