"""Test data helpers shared by every test area.

Risk classes are a classifier's decision (services of their own, tested in tests/classify);
here they are written straight to the rows, as the state a test starts from.
"""

from __future__ import annotations

from collections.abc import Mapping

from beliefs.models import Decision, Prompt, PromptState, Slot, TaskClass, TaskInstance


def classify(
    task_class: TaskClass,
    *,
    slots: Mapping[str, str] | None = None,
    decisions: Mapping[str, str] | None = None,
    monotonic: tuple[str, ...] = (),
) -> None:
    """Set risk classes (and monotonic) as a classifier's decision would leave them."""
    for key, risk in (slots or {}).items():
        Slot.objects.filter(task_class=task_class, key=key).update(risk_class=risk)
    for key, risk in (decisions or {}).items():
        Decision.objects.filter(task_class=task_class, key=key).update(risk_class=risk)
    if monotonic:
        Slot.objects.filter(task_class=task_class, key__in=monotonic).update(monotonic=True)


def open_prompt(instance: TaskInstance, slot: str) -> Prompt:
    """The one open prompt of `slot` in `instance` (fails the test if there is none)."""
    return Prompt.objects.select_related("slot", "belief").get(
        instance=instance, slot__key=slot, state=PromptState.OPEN
    )
