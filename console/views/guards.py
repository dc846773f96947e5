"""A decision's and a slot's on/off guards, set by classifiers: whether the person confirms
a runtime's report of their answer in the console, and whether a date slot takes only dates
from today on. Turning one on takes effect at once; turning it off waits for a second
classifier (`beliefs.services.decision_settings`)."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_POST

from beliefs.services.audit import Actor
from beliefs.services.decision_settings import (
    decision_set_person_confirms,
    slot_set_future,
)
from console.http import AuthedHttpRequest
from console.views.classify import (
    _decision,
    _slot,
    _task_class,
    classifier_required,
    flag_save,
)


@require_POST
@classifier_required
def decision_person_confirms_save(
    request: AuthedHttpRequest, key: str, decision_id: int
) -> HttpResponse:
    """Whether the person confirms this decision's values in the console: on at once, off
    with a second classifier."""
    task_class = _task_class(key)
    decision = _decision(task_class, decision_id)
    return flag_save(
        request,
        task_class,
        f"decision-{decision.pk}",
        "person_confirms",
        lambda on, reason: decision_set_person_confirms(
            decision=decision, person_confirms=on, reason=reason, actor=Actor(user=request.user)
        ),
    )


@require_POST
@classifier_required
def slot_future_save(request: AuthedHttpRequest, key: str, slot_id: int) -> HttpResponse:
    """Whether a date slot takes only dates from today on: on at once, off with a second
    classifier."""
    task_class = _task_class(key)
    slot = _slot(task_class, slot_id)
    return flag_save(
        request,
        task_class,
        f"slot-{slot.pk}",
        "future",
        lambda on, reason: slot_set_future(
            slot=slot, future=on, reason=reason, actor=Actor(user=request.user)
        ),
    )
