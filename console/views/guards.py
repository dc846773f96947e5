"""A decision's and a slot's on/off guards, set by classifiers: whether the person confirms
a runtime's report of their answer in the console, and whether a date slot takes only dates
from today on. Turning one on takes effect at once; turning it off waits for a second
classifier (`beliefs.services.decision_settings`)."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.views.decorators.http import require_POST

from beliefs.domain.vocabulary import MAX_TEXT_LENGTH
from beliefs.errors import ServiceError
from beliefs.models import TaskClass
from beliefs.services import Actor
from beliefs.services.decision_settings import (
    ChangeResult,
    decision_set_person_confirms,
    slot_set_future,
)
from console.http import AuthedHttpRequest
from console.views.classify import (
    _after_change,
    _announce,
    _decision,
    _slot,
    _task_class,
    classifier_required,
)


class FlagSettingForm(forms.Form):
    """An on/off guard and the reason for changing it."""

    flag = forms.BooleanField(required=False)
    reason = forms.CharField(max_length=MAX_TEXT_LENGTH, required=False)


def _flag_save(
    request: AuthedHttpRequest,
    task_class: TaskClass,
    focus: str,
    name: str,
    save: Callable[[bool, str], ChangeResult],
) -> HttpResponse:
    form = FlagSettingForm({"flag": request.POST.get(name), "reason": request.POST.get("reason")})
    form.is_valid()  # a checkbox and a text: nothing to refuse before the service
    data = form.cleaned_data
    try:
        result = save(bool(data.get("flag")), data.get("reason", ""))
    except ServiceError as exc:
        words = [p for problems in exc.fields.values() for p in problems]
        messages.error(request, f"Not saved: {words[0] if words else exc.detail}")
        return _after_change(request, task_class, focus)
    _announce(request, [result])
    return _after_change(request, task_class, focus)


@require_POST
@classifier_required
def decision_person_confirms_save(
    request: AuthedHttpRequest, key: str, decision_id: int
) -> HttpResponse:
    """Whether the person confirms this decision's values in the console: on at once, off
    with a second classifier."""
    task_class = _task_class(key)
    decision = _decision(task_class, decision_id)
    return _flag_save(
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
    return _flag_save(
        request,
        task_class,
        f"slot-{slot.pk}",
        "future",
        lambda on, reason: slot_set_future(
            slot=slot, future=on, reason=reason, actor=Actor(user=request.user)
        ),
    )
