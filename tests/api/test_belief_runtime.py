"""A belief keeps its instance's runtime (planning seeks each runtime's values by it), whichever
way it was written: at the open, recorded later, answered in the console, asked again."""

from __future__ import annotations

from django.db.models import F, Q

from beliefs.models import Belief, Runtime
from tests.support.api import Driver, by_slot


def test_every_belief_carries_its_instance_s_runtime(api: Driver, transfer: str) -> None:
    opened = api.open(
        transfer,
        beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool", "turn": 1}],
    )
    recorded = api.runtime.post_json(
        f"/api/v1/instances/{opened}/beliefs/",
        {"slot": "memo", "value": "rent", "source": "user", "turn": 2},
    )
    assert recorded.status_code in (200, 201), recorded.json()
    api.plan(opened)
    api.answer_all(opened, {"recipient_account": "NL91"})  # a belief the console writes

    beliefs = Belief.objects.filter(instance_id=opened)
    assert beliefs.count() >= 3
    (runtime,) = Runtime.objects.filter(instances__id=opened)
    assert set(beliefs.values_list("runtime_id", flat=True)) == {runtime.pk}
    mismatched = Belief.objects.exclude(runtime_id=F("instance__runtime_id")).exclude(
        Q(runtime__isnull=True) & Q(instance__runtime__isnull=True)
    )
    assert not mismatched.exists()

    # The next run carries the console's answer, found through its runtime (and, irreversible
    # with nothing anchoring it, asks again with it as context).
    answered = beliefs.get(recorded_via="console")
    later = api.open(transfer)
    carried = by_slot(api.plan(later))["recipient_account"]["belief"]
    assert (carried["id"], carried["carried"], carried["runtime"]) == (
        answered.pk,
        True,
        runtime.name,
    )
