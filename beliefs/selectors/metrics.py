"""What /metrics reads from the database at each scrape: the same for every process."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min

from beliefs.domain.policy import Route
from beliefs.models import (
    InstanceStatus,
    OutgoingEmail,
    Prompt,
    PromptState,
    TaskInstance,
    WebhookDelivery,
)


@dataclass(frozen=True)
class Standing:
    open_prompts: dict[str, int]  # by route
    instances: dict[str, int]  # by status
    outbox_pending: dict[str, int]  # webhook, email
    outbox_oldest: dict[str, datetime | None]  # the oldest pending item's creation
    deliveries: dict[str, int]  # webhook deliveries by state


def standing() -> Standing:
    """Counts of what stands now, each one aggregate query."""
    prompts = (
        Prompt.objects.filter(state=PromptState.OPEN)
        .values("route")
        .annotate(count=Count("id"))
        .order_by()
    )
    instances = TaskInstance.objects.values("status").annotate(count=Count("id")).order_by()
    deliveries = WebhookDelivery.objects.values("state").annotate(count=Count("id")).order_by()
    totals = {"count": Count("id"), "oldest": Min("created_at")}
    outbox = {
        "webhook": WebhookDelivery.objects.filter(state="pending").aggregate(**totals),
        "email": OutgoingEmail.objects.filter(state="pending").aggregate(**totals),
    }
    # Every route, status and outcome is named, 0 where none stands: a graph has its line
    # from the start, and an alert on a rate sees the first one come.
    return Standing(
        open_prompts={r.value: 0 for r in Route} | {row["route"]: row["count"] for row in prompts},
        instances=dict.fromkeys(InstanceStatus.values, 0)
        | {row["status"]: row["count"] for row in instances},
        outbox_pending={kind: row["count"] for kind, row in outbox.items()},
        outbox_oldest={kind: row["oldest"] for kind, row in outbox.items()},
        deliveries=dict.fromkeys(WebhookDelivery.State.values, 0)
        | {row["state"]: row["count"] for row in deliveries},
    )
