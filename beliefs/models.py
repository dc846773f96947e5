"""Storage for task classes, beliefs with provenance, prompts and the audit log.

Effective risk is never stored: `beliefs.domain.policy` computes it from the classes stored here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import ClassVar

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Exists, F, Min, OuterRef, Q
from rest_framework_api_key.models import AbstractAPIKey, APIKeyManager

from beliefs.domain.policy import RiskClass, Route, Rule, Source
from beliefs.domain.reveal import reveal
from beliefs.domain.vocabulary import (
    FRICTION_KINDS,
    INSIGHTS_RUNS_SHOWN,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_KEY_LENGTH,
    MAX_LABEL_LENGTH,
    MAX_PATH_LENGTH,
    MAX_PROBLEM_LENGTH,
    MAX_SECRET_LENGTH,
    MAX_URL_LENGTH,
    VERDICTS,
)

RISK_CHOICES = [(r.value, r.value) for r in RiskClass]
SOURCE_CHOICES = [(s.value, s.value) for s in Source]
ROUTE_CHOICES = [(r.value, r.value) for r in Route]
RULE_CHOICES = [(r.value, r.value) for r in Rule]
VERDICT_CHOICES = [(v, v.title()) for v in VERDICTS]


class Runtime(models.Model):
    """An application that calls the API ("billing-agent"). It owns what its keys do, so a key
    can be rotated without losing sight of the runtime's instances."""

    name = models.CharField(max_length=50, unique=True)
    # The names its receipts may be for (`audience` at open) besides its own: the tool servers
    # it calls. Kept by staff (the admin), not by the runtime: a key alone must not mint a
    # receipt for a tool server that trusts another runtime's.
    audiences = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return reveal(self.name)  # shown by the admin: hidden characters as ⟨U+202E⟩


class RuntimeAPIKeyManager(APIKeyManager):
    def get_usable_keys(self) -> models.QuerySet[RuntimeAPIKey]:
        # Every request names its runtime: fetch it with the key.
        return super().get_usable_keys().select_related("runtime")


class RuntimeAPIKey(AbstractAPIKey):
    """One of a runtime's keys; only its hash is stored."""

    runtime = models.ForeignKey(Runtime, on_delete=models.PROTECT, related_name="keys")

    objects: ClassVar[RuntimeAPIKeyManager] = RuntimeAPIKeyManager()

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "runtime API key"
        verbose_name_plural = "runtime API keys"

    def __str__(self) -> str:
        return reveal(str(self.name))


class TaskClass(models.Model):
    key = models.CharField(max_length=MAX_KEY_LENGTH, unique=True)
    name = models.CharField(max_length=MAX_LABEL_LENGTH)
    # The runtime that registered it: only that runtime may change it (staff may transfer it).
    # NULL for a class registered before runtimes existed: the next runtime to register it
    # adopts it.
    owner = models.ForeignKey(
        Runtime, on_delete=models.PROTECT, null=True, blank=True, related_name="task_classes"
    )
    # A tool passthrough (each call's arguments differ): a belief or an open may name a slot the
    # class does not have, which registers it unclassified, in play only where it is named.
    open_slots = models.BooleanField(default=False, db_default=False)
    # The world key (a slot's, or an entry of the world) that names the thing a run acts on, as
    # a refund's `order`: runs with different subjects are different tasks to a person, not
    # retries of one. Shown only; carrying and routing do not read it. "": none.
    subject_key = models.CharField(max_length=MAX_KEY_LENGTH, blank=True, default="", db_default="")
    # Retention (services/erasure.py): a finished instance's values and world references are
    # removed this many days after its last change. NULL: kept until erased on request.
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Days after a finished instance's last change when its values and world "
        "references are removed (the audit keeps their digests). Empty: kept.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        verbose_name_plural = "task classes"
        permissions = [("classify", "Can classify slot and decision risk")]

    def __str__(self) -> str:
        return reveal(self.key)


class TaskClassShare(models.Model):
    """The owner of a task class lets another runtime open instances of it.

    Values stay with the runtime that reported them: the runtime's instances carry only its own
    earlier values, unless `history` is on. The runtimes whose share has `history`, and the
    owner, form the class's history pool: each of them carries the values of all of them (the
    owner accepts their values into its own runs, so it is turned on only for a runtime trusted
    as much as the owner itself)."""

    task_class = models.ForeignKey(TaskClass, on_delete=models.CASCADE, related_name="shares")
    runtime = models.ForeignKey(Runtime, on_delete=models.CASCADE, related_name="shared_classes")
    history = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task_class_id", "runtime_id"]
        constraints = [
            models.UniqueConstraint(fields=["task_class", "runtime"], name="share_once"),
        ]

    def __str__(self) -> str:
        return f"{self.task_class_id} shared with {self.runtime_id}"


class TaskClassPart(models.Model):
    """What a slot and a decision share: a key of their own within their task class, a label
    and a risk class. Each declares its own `task_class` (and so its related name)."""

    task_class_id: int
    key = models.CharField(max_length=MAX_KEY_LENGTH)
    label = models.CharField(max_length=MAX_LABEL_LENGTH)
    risk_class = models.CharField(
        max_length=20, choices=RISK_CHOICES, default=RiskClass.UNCLASSIFIED.value
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        constraints = [
            models.UniqueConstraint(fields=["task_class", "key"], name="%(class)s_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.task_class_id}:{self.key}"


class Slot(TaskClassPart):
    class ValueType(models.TextChoices):
        STRING = "string"
        NUMBER = "number"
        BOOLEAN = "boolean"
        DATE = "date"
        JSON = "json"

    task_class = models.ForeignKey(TaskClass, on_delete=models.CASCADE, related_name="slots")
    value_type = models.CharField(max_length=20, choices=ValueType, default=ValueType.STRING)
    choices = models.JSONField(null=True, blank=True)
    scope_order = models.JSONField(null=True, blank=True)
    monotonic = models.BooleanField(default=False)
    # A date slot that takes only dates from today on: a date before today is asked, never
    # bound (set by a classifier, or by the runtime at registration; turning it off waits
    # for a second classifier).
    future = models.BooleanField(default=False, db_default=False)
    suggested_risk = models.CharField(max_length=20, choices=RISK_CHOICES, blank=True)
    position = models.PositiveIntegerField(default=0)
    # Declared by a registration; False for a slot an open-slots class grew from one call's
    # arguments: it is in an action only where that action names it.
    declared = models.BooleanField(default=True, db_default=True)
    # A retired slot is no longer planned; its history stays.
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta(TaskClassPart.Meta):
        ordering = ["task_class_id", "position", "id"]


class Decision(TaskClassPart):
    task_class = models.ForeignKey(TaskClass, on_delete=models.CASCADE, related_name="decisions")
    slots = models.ManyToManyField(Slot, related_name="decisions", blank=True)
    # An action this decision is part of is ready only once its person signed the bindings
    # with a passkey. Turning it off waits for a second classifier.
    requires_signature = models.BooleanField(default=False, db_default=False)
    # The person confirms in the console: a `source: "user"` value that a runtime recorded
    # for a slot of this decision is not bound on the runtime's word; it is confirmed by the
    # person (pre-filled). Turning it off waits for a second classifier.
    person_confirms = models.BooleanField(default=False, db_default=False)
    # --- M-of-N approval (services/quorum.py) ---
    # With an approvers group, an action of this decision is ready only once this many
    # members of the group approved its exact bindings (the principal's answers count as one
    # when the principal is a member). Without a group: the principal alone, as always.
    approvals_required = models.PositiveSmallIntegerField(default=1, db_default=1)
    approvers = models.ForeignKey(
        "auth.Group", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # --- end M-of-N approval ---

    class Meta(TaskClassPart.Meta):
        ordering = ["task_class_id", "id"]


class InstanceStatus(models.TextChoices):
    OPEN = "open"  # opened, not planned yet
    AWAITING_USER = "awaiting_user"
    # Every blocking prompt is answered; a decision requires the person's passkey signature of
    # exactly these bindings before they are final (`services.passkeys`).
    AWAITING_SIGNATURE = "awaiting_signature"
    # Every blocking prompt is answered; approvers of the group still have to approve.
    AWAITING_APPROVAL = "awaiting_approval"
    READY = "ready"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @classmethod
    def open(cls) -> frozenset[InstanceStatus]:
        """The statuses in which an instance may still change."""
        return frozenset(
            {cls.OPEN, cls.AWAITING_USER, cls.AWAITING_APPROVAL, cls.AWAITING_SIGNATURE}
        )

    @classmethod
    def planned_open(cls) -> frozenset[InstanceStatus]:
        """Planned and still open: what a change of routing's inputs re-plans."""
        return cls.open() - {cls.OPEN}

    @classmethod
    def waiting_for_person(cls) -> frozenset[InstanceStatus]:
        """The statuses in which an instance waits for its principal (the inbox lists them)."""
        return frozenset({cls.AWAITING_USER, cls.AWAITING_SIGNATURE})

    @classmethod
    def closed(cls) -> frozenset[InstanceStatus]:
        """The statuses an instance ends in: it never binds anew (a veto may still reopen a
        ready one, see `TaskInstance.accepts_veto`)."""
        return frozenset({cls.READY, cls.CANCELLED, cls.EXPIRED})


def signature_overdue_q(now: datetime) -> Q:
    """`TaskInstance.signature_overdue` as a condition: awaiting a signature, and its time to
    sign is up (then the instance expires, as a blocking prompt past its time does)."""
    return Q(status=InstanceStatus.AWAITING_SIGNATURE, signature_due_at__lte=now)


class TaskInstanceQuerySet(models.QuerySet["TaskInstance"]):
    def signature_overdue(self, now: datetime) -> TaskInstanceQuerySet:
        """Instances whose person never signed in time (see `signature_overdue_q`)."""
        return self.filter(signature_overdue_q(now))

    def waiting(self, now: datetime) -> TaskInstanceQuerySet:
        """Instances waiting for their person: awaiting an answer, and none of their blocking
        prompts past its time to live (such an instance no longer waits for anyone; the next
        read expires it)."""
        overdue = Prompt.objects.filter(overdue_q(now), instance=OuterRef("pk"))
        return (
            self.filter(status__in=InstanceStatus.waiting_for_person())
            .exclude(Exists(overdue))
            # Awaiting a signature: waiting until its signature is due.
            .exclude(signature_overdue_q(now))
        )

    def with_next_expiry(self) -> TaskInstanceQuerySet:
        """Each annotated with `next_expiry`, the earliest time to live of its open blocking
        prompts (None when they have none)."""
        return self.annotate(
            next_expiry=Min("prompts__expires_at", filter=blocking_open_q("prompts__"))
        )


class TaskInstance(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    task_class = models.ForeignKey(TaskClass, on_delete=models.PROTECT, related_name="instances")
    principal = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="instances"
    )
    # The instance belongs to the runtime; the key is kept to say which of its keys opened it.
    runtime = models.ForeignKey(
        Runtime, on_delete=models.PROTECT, null=True, blank=True, related_name="instances"
    )
    opened_by = models.ForeignKey(
        RuntimeAPIKey,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="instances",
    )
    # The n-th attempt of this task class for this principal, 1-based.
    run_number = models.PositiveIntegerField()
    # The keys of the slots this action uses, fixed when it is opened (named by the runtime, or
    # every declared slot the class then had): planning, prompts and bindings cover these only.
    action_slots = models.JSONField(default=list, blank=True)
    # Who the receipt is for (its `aud`): the runtime's name unless it named another at open.
    audience = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)
    world = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=InstanceStatus, default=InstanceStatus.OPEN)
    status_reason = models.TextField(blank=True)
    # The last plan, item per slot, as the API returns it.
    plan_items = models.JSONField(default=list, blank=True)
    # `json_digest` of plan_items, written with them: planning again tells whether the plan it
    # would make is the stored one by this digest, without reading the stored plan.
    plan_digest = models.CharField(max_length=64, blank=True, default="", db_default="")
    bindings = models.JSONField(null=True, blank=True)
    bindings_digest = models.CharField(max_length=64, blank=True)
    # `worlds_digest` of the bound irreversible slots' world references (with the bindings,
    # what approvals, signatures and the receipt are for).
    worlds_digest = models.CharField(max_length=64, blank=True, default="", db_default="")
    # The signed receipt of the last time it became ready (revoked if it no longer is).
    receipt = models.ForeignKey(
        "Receipt", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    planned_at = models.DateTimeField(null=True, blank=True)
    # --- passkey signatures ---
    # Set when the instance first waits for a signature (a decision of its action requires
    # one): until then it expires as its prompts did; from then on it is an instance that must
    # be signed, whatever the decision's setting later says (a downgrade binds nothing back).
    signature_due_at = models.DateTimeField(null=True, blank=True)
    # --- end passkey signatures ---
    # How many of its prompts are blocking: the questions this run put to its person, kept by
    # planning (which alone creates prompts and sets `blocking`) so /insights/ reads a number
    # per instance instead of counting prompts.
    blocking_asked = models.PositiveIntegerField(default=0, db_default=0)
    # The runtime's Idempotency-Key for the open, and the SHA-256 of the body it came with, so a
    # retried open returns this instance and a reused key with another body is refused. NULL,
    # not "", for "no key": the unique constraint below holds only among instances with a key.
    idempotency_key = models.CharField(  # noqa: DJ001
        max_length=MAX_IDEMPOTENCY_KEY_LENGTH, null=True, blank=True
    )
    idempotency_hash = models.CharField(max_length=64, blank=True)
    # When its values and world references were removed (services/erasure.py).
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TaskInstanceQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["principal", "task_class", "run_number"], name="instance_unique_run"
            ),
            # Per runtime, not per key: a retry after a key rotation still finds its instance.
            models.UniqueConstraint(
                fields=["runtime", "idempotency_key"], name="instance_unique_runtime_idempotency"
            ),
        ]
        indexes = [
            models.Index(fields=["principal", "status", "-created_at"]),
            # GET /api/v1/instances/: a runtime's instances newest first, all or of one status.
            models.Index(fields=["runtime", "-created_at"], name="instance_by_runtime"),
            models.Index(
                fields=["runtime", "status", "-created_at"], name="instance_by_runtime_status"
            ),
            # /insights/ reads the latest planned instances of the first runs, newest first:
            # only those rows are in the index, so the read walks exactly the rows it shows
            # (a plain planned_at index left PostgreSQL scanning every instance once the
            # early runs were a small share of them).
            models.Index(
                fields=["-planned_at"],
                condition=Q(planned_at__isnull=False, run_number__lte=INSIGHTS_RUNS_SHOWN),
                name="instance_early_runs_planned",
            ),
            # Retention (services/erasure.py) reads a class's finished instances whose values
            # are still held, oldest change first: erased ones leave the index.
            models.Index(
                fields=["task_class", "updated_at"],
                condition=Q(erased_at__isnull=True),
                name="instance_values_held",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_class_id} run {self.run_number} ({self.id})"

    def signature_overdue(self, now: datetime) -> bool:
        """Awaiting a signature, and its time to sign is up (`signature_overdue_q`)."""
        return (
            self.status == InstanceStatus.AWAITING_SIGNATURE
            and self.signature_due_at is not None
            and self.signature_due_at <= now
        )

    @property
    def is_open(self) -> bool:
        return self.status in InstanceStatus.open()

    @property
    def accepts_veto(self) -> bool:
        """An assumption may be vetoed while the instance waits (for its person, its approvers
        or its signature) and after it is ready (which reopens it); a cancelled or expired
        instance takes nothing."""
        return self.status in (
            InstanceStatus.AWAITING_USER,
            InstanceStatus.AWAITING_APPROVAL,
            InstanceStatus.AWAITING_SIGNATURE,
            InstanceStatus.READY,
        )


class BeliefStatus(models.TextChoices):
    ACTIVE = "active"
    VETOED = "vetoed"
    SUPERSEDED = "superseded"
    ERASED = "erased"  # its value removed (retention or a person's erasure): never carried


class RecordedVia(models.TextChoices):
    """Who put a belief on record: the runtime through the API (whatever source it names, even
    `user`: that is the runtime's report of what the person said), or the person answering in
    the console."""

    RUNTIME = "runtime"
    CONSOLE = "console"


class Belief(models.Model):
    # The instance that acquired this belief; principal and slot are kept beside it so that
    # carried beliefs are found with one indexed query. The instance's runtime is the runtime
    # the value belongs to: only its own later runs (or its class's history pool) carry it.
    # Its index is `belief_newest_of_instance` below, which serves "by instance" too.
    instance = models.ForeignKey(
        TaskInstance, on_delete=models.CASCADE, related_name="beliefs", db_index=False
    )
    principal = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="beliefs"
    )
    slot = models.ForeignKey(Slot, on_delete=models.CASCADE, related_name="beliefs")
    # Its instance's runtime (an instance's runtime never changes), kept beside it so that
    # planning seeks each runtime's newest value in the index below instead of walking the
    # values of runtimes it may not carry from. Every place that creates a belief sets it from
    # the instance. Not indexed on its own and not checked on a runtime's deletion: the
    # instance's own foreign key already keeps a runtime with instances (so with beliefs) from
    # being deleted, and the database's constraint stays.
    runtime = models.ForeignKey(
        Runtime,
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    value = models.JSONField()
    source = models.CharField(max_length=20, choices=SOURCE_CHOICES)
    turn = models.PositiveIntegerField(default=0)
    acquired_at = models.DateTimeField()
    world_ref = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=BeliefStatus, default=BeliefStatus.ACTIVE)
    status_reason = models.TextField(blank=True)
    recorded_via = models.CharField(
        max_length=10, choices=RecordedVia, default=RecordedVia.RUNTIME, db_default="runtime"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-acquired_at", "-id"]
        indexes = [
            # Serves "the newest active belief of a principal for a slot from one runtime"
            # (planning's choice, one seek per runtime it may carry from) as one short index
            # scan, however long the principal's history with that runtime or any other.
            models.Index(
                fields=["principal", "slot", "status", "runtime", "-acquired_at", "-id"],
                name="belief_newest_per_runtime",
            ),
            # Serves "the newest active belief of this instance for a slot" as one seek.
            models.Index(
                fields=["instance", "slot", "status", "-acquired_at", "-id"],
                name="belief_newest_of_instance",
            ),
        ]

    def __str__(self) -> str:
        return f"belief {self.pk} for {self.slot_id}"

    def carried_into(self, instance_id: uuid.UUID) -> bool:
        """Carried: acquired by an earlier instance than the one that would bind it."""
        return self.instance_id != instance_id


class PromptState(models.TextChoices):
    OPEN = "open"  # waiting for a person (blocking), or listed as an assumption (SURFACED)
    ANSWERED = "answered"  # confirmed, edited or answered
    VETOED = "vetoed"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"  # a re-plan no longer needs it
    CANCELLED = "cancelled"
    EXPIRED = "expired"


def blocking_open_q(prefix: str = "") -> Q:
    """`PromptQuerySet.blocking_open` as a condition, for filters and aggregates that reach
    prompts through a relation (`prefix` is that path, e.g. "prompts__")."""
    return Q(**{f"{prefix}state": PromptState.OPEN, f"{prefix}blocking": True})


def overdue_q(now: datetime, prefix: str = "") -> Q:
    """`PromptQuerySet.overdue` as a condition (see `blocking_open_q`)."""
    return blocking_open_q(prefix) & Q(**{f"{prefix}expires_at__lte": now})


class PromptQuerySet(models.QuerySet["Prompt"]):
    def blocking_open(self) -> PromptQuerySet:
        """Blocking prompts still waiting for their person: what keeps an instance waiting."""
        return self.filter(blocking_open_q())

    def overdue(self, now: datetime) -> PromptQuerySet:
        """Blocking prompts still waiting past their time to live: they expire their instance.
        The time to live includes its last instant: at `expires_at` the prompt is overdue."""
        return self.filter(overdue_q(now))


def is_blocking_open(state: str, blocking: bool) -> bool:
    """`PromptQuerySet.blocking_open` for one prompt whose values are already read."""
    return state == PromptState.OPEN and blocking


def is_overdue(state: str, blocking: bool, expires_at: datetime | None, now: datetime) -> bool:
    """`PromptQuerySet.overdue` for one prompt whose values are already read."""
    return is_blocking_open(state, blocking) and expires_at is not None and expires_at <= now


def any_overdue(prompts: Iterable[Prompt], now: datetime) -> bool:
    """`PromptQuerySet.overdue(now).exists()` for prompts already read."""
    return any(p.is_overdue(now) for p in prompts)


class Prompt(models.Model):
    instance = models.ForeignKey(TaskInstance, on_delete=models.CASCADE, related_name="prompts")
    slot = models.ForeignKey(Slot, on_delete=models.CASCADE, related_name="prompts")
    belief = models.ForeignKey(
        Belief, on_delete=models.SET_NULL, null=True, blank=True, related_name="prompts"
    )
    route = models.CharField(max_length=10, choices=ROUTE_CHOICES)
    rule = models.CharField(max_length=3, choices=RULE_CHOICES)
    reason = models.TextField()
    effective_risk = models.CharField(max_length=20, choices=RISK_CHOICES)
    risk_reason = models.TextField()
    blocking = models.BooleanField()
    # CONFIRM: the value pre-filled. ASK: always null. SURFACED: the value bound.
    prefill = models.JSONField(null=True, blank=True)
    # ASK of a monotonic slot: the earlier grant, shown read-only, never pre-filled.
    context_value = models.JSONField(null=True, blank=True)
    world_ref = models.JSONField(null=True, blank=True)
    world_now = models.JSONField(null=True, blank=True)
    world_diff = models.JSONField(default=list, blank=True)
    # SHA-256 of the canonical JSON of what planning wrote into the prompt (route to world
    # diff, in `services.planning.DESIRED_FIELDS` order): planning compares what it wants now
    # with this, without reading, let alone decoding, the prompt's JSON columns.
    content_digest = models.CharField(max_length=64, blank=True, default="", db_default="")
    state = models.CharField(max_length=20, choices=PromptState, default=PromptState.OPEN)
    version = models.PositiveIntegerField(default=1)
    action = models.CharField(max_length=20, blank=True)
    response_value = models.JSONField(null=True, blank=True)
    response_reason = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    shown_at = models.DateTimeField(null=True, blank=True)
    responded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PromptQuerySet.as_manager()

    class Meta:
        ordering = ["instance_id", "slot__position", "slot_id", "id"]
        # /insights/ reads the latest answered prompts, newest first.
        indexes = [models.Index(fields=["-responded_at"], name="prompt_latest_responded")]
        constraints = [
            # At most one live prompt per slot of an instance.
            models.UniqueConstraint(
                fields=["instance", "slot"],
                condition=Q(state="open"),
                name="prompt_one_open_per_slot",
            ),
        ]

    def __str__(self) -> str:
        return f"prompt {self.pk} {self.route} v{self.version}"

    @property
    def is_blocking_open(self) -> bool:
        """`PromptQuerySet.blocking_open` for this prompt."""
        return is_blocking_open(self.state, self.blocking)

    def is_overdue(self, now: datetime) -> bool:
        """`PromptQuerySet.overdue` for this prompt."""
        return is_overdue(self.state, self.blocking, self.expires_at, now)

    @property
    def carried(self) -> bool:
        """Was the prompt's belief acquired by an earlier instance? Needs `belief` selected."""
        return self.belief is not None and self.belief.carried_into(self.instance_id)

    @property
    def dwell_seconds(self) -> float | None:
        if self.shown_at and self.responded_at:
            return (self.responded_at - self.shown_at).total_seconds()
        return None


class PromptResponse(models.Model):
    """The one decision taken on one version of a prompt.

    The unique constraint on (prompt, version) is what makes two racing responses unable to both
    win: the loser's INSERT fails in the database, whatever Python believed.
    """

    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="responses")
    version = models.PositiveIntegerField()
    action = models.CharField(max_length=20)
    value = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    responded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="prompt_responses"
    )
    # NULL, not "", for "no key": the unique constraint below must ignore keyless responses.
    idempotency_key = models.CharField(  # noqa: DJ001
        max_length=MAX_IDEMPOTENCY_KEY_LENGTH, null=True, blank=True
    )
    belief = models.ForeignKey(
        Belief, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["prompt", "version"], name="prompt_one_decision_per_version"
            ),
            models.UniqueConstraint(
                fields=["responded_by", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="prompt_response_idempotency_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} on prompt {self.prompt_id} v{self.version}"


class AuditEvent(models.Model):
    """Append-only: database triggers refuse UPDATE and DELETE (migration 0002)."""

    kind = models.CharField(max_length=60, db_index=True)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
    )
    actor_key_name = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)
    # Nullable on purpose: adding a NOT NULL column makes SQLite rebuild the table, which would
    # drop the append-only triggers with it.
    actor_key_prefix = models.CharField(max_length=8, null=True, blank=True)  # noqa: DJ001
    # "alice", "runtime:demo-runtime", "system"
    actor = models.CharField(max_length=MAX_LABEL_LENGTH)
    task_class = models.ForeignKey(
        TaskClass,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
    )
    instance_id = models.UUIDField(null=True, blank=True, db_index=True)
    prompt_id = models.BigIntegerField(null=True, blank=True)
    subject = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)  # the slot or decision key
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # /activity/ pages the log newest first: the index gives that order without a sort.
            models.Index(fields=["-created_at", "-id"], name="audit_newest_first"),
            # The latest events of one kind (friction changes on /insights/) without walking the
            # whole log for a rare kind.
            models.Index(fields=["kind", "-created_at", "-id"], name="audit_kind_newest_first"),
            # A person's latest change of friction, read with every irreversible confirm: only
            # the friction events, by person. Without it SQLite's planner walked the whole log
            # newest first for a person who had none (0.1 s at a million events).
            models.Index(
                fields=["actor_user", "-created_at", "-id"],
                condition=Q(kind__in=[kind.value for kind in FRICTION_KINDS]),
                name="audit_friction_by_person",
            ),
        ]

    def __str__(self) -> str:
        return reveal(f"{self.kind} by {self.actor}")


class RiskChangeRequest(models.Model):
    """A change that lowers a guard (a downgrade out of irreversible, clearing monotonic,
    weakening a scope order) waiting for a second classifier."""

    class State(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REFUSED = "refused"

    class Field(models.TextChoices):
        RISK_CLASS = "risk_class"
        MONOTONIC = "monotonic"
        SCOPE_ORDER = "scope_order"
        REQUIRES_SIGNATURE = "requires_signature"  # a decision's; turning it off waits
        PERSON_CONFIRMS = "person_confirms"  # a decision's; turning it off waits
        FUTURE = "future"  # a date slot's; turning it off waits
        # M-of-N approval: fewer approvals, or another or no approvers group.
        APPROVALS_REQUIRED = "approvals_required"
        APPROVERS = "approvers"

    task_class = models.ForeignKey(TaskClass, on_delete=models.CASCADE, related_name="+")
    slot = models.ForeignKey(Slot, on_delete=models.CASCADE, null=True, blank=True)
    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, null=True, blank=True)
    field = models.CharField(max_length=20, choices=Field)
    before = models.JSONField()
    after = models.JSONField()
    reason = models.TextField()
    state = models.CharField(max_length=20, choices=State, default=State.PENDING)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decision_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(slot__isnull=False, decision__isnull=True)
                | Q(slot__isnull=True, decision__isnull=False),
                name="risk_change_one_target",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.field} {self.before} -> {self.after} ({self.state})"


class ProposalValidation(models.Model):
    """One stored run of the proposal contract validator."""

    graph = models.JSONField()
    update = models.JSONField()
    verdict = models.CharField(max_length=10, choices=VERDICT_CHOICES, db_index=True)
    errors = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    declared = models.BooleanField(null=True)
    meaningful_change = models.BooleanField(null=True)  # None: could not be computed (schema)
    decided_by = models.CharField(max_length=40, blank=True)
    policy = models.CharField(max_length=20)
    counts = models.JSONField(default=dict)
    provider = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True, db_index=True)
    model = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True, db_index=True)
    run = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)
    submitted_by_key = models.ForeignKey(
        RuntimeAPIKey,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    submitted_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("review_proposals", "Can review proposal validations")]

    def __str__(self) -> str:
        return f"validation {self.pk}: {self.verdict}"


class ProposalFinding(models.Model):
    """One finding of a validation, in its own row so lists filter and count by code."""

    validation = models.ForeignKey(
        ProposalValidation, on_delete=models.CASCADE, related_name="findings"
    )
    code = models.CharField(max_length=100, db_index=True)
    severity = models.CharField(max_length=10)  # error | warning
    message = models.TextField()
    path = models.CharField(max_length=MAX_PATH_LENGTH)

    class Meta:
        ordering = ["validation_id", "id"]

    def __str__(self) -> str:
        return f"{self.code} at {self.path}"


class ProposalAnnotation(models.Model):
    class Agreement(models.TextChoices):
        AGREE = "agree"
        DISAGREE = "disagree"

    validation = models.ForeignKey(
        ProposalValidation, on_delete=models.CASCADE, related_name="annotations"
    )
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    agreement = models.CharField(max_length=10, choices=Agreement)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["validation", "reviewer"], name="annotation_one_per_reviewer"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agreement} by {self.reviewer_id} on {self.validation_id}"


# --- Reaching out: webhooks to runtimes, email to people ----------------------------------------


class OutboxItem(models.Model):
    """What the console sends out (a webhook delivery, an email): the fields of the one state
    machine both follow (services/outbox.py): pending → sending (claimed, under a lease) →
    done, or pending again after a failure (the retry schedule), or failed at its end."""

    # pending, sending, failed, and each kind's own end states (its State choices).
    state = models.CharField(max_length=20, default="pending")
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    # A worker that claimed the item holds it until then; after, it is taken up again.
    lease_until = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # The worker that made the last claim (`worker id#lane` for a delivery: deliveries of one
    # endpoint claimed together are sent in turn over one connection, and the caps count lanes).
    claimed_by = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)

    class Meta:
        abstract = True


class WebhookEndpoint(models.Model):
    """Where a runtime wants its events posted, signed with its secret (Standard Webhooks).

    Deleting one deactivates it (`deleted_at`): its deliveries stay as history."""

    runtime = models.ForeignKey(Runtime, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=MAX_URL_LENGTH)
    # The signing secret must be readable to sign with, so it is stored as is (like a password
    # for an outgoing connection), shown to the runtime once and never again.
    secret = models.CharField(max_length=MAX_SECRET_LENGTH)
    # After a rotation the old secret also signs until previous_secret_until.
    previous_secret = models.CharField(max_length=MAX_SECRET_LENGTH, blank=True)
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    event_types = models.JSONField(default=list, blank=True)  # empty: every event
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Why events skip this endpoint (a stored URL or event_types that is not valid), for staff.
    problem = models.CharField(max_length=MAX_PROBLEM_LENGTH, blank=True)

    class Meta:
        ordering = ["runtime_id", "id"]

    def __str__(self) -> str:
        return f"{self.runtime_id}: {reveal(self.url)}"


class WebhookEvent(models.Model):
    """The outbox: written in the transaction of the change that causes it."""

    # The Standard Webhooks `webhook-id`: the same on every retry, so receivers drop duplicates.
    webhook_id = models.CharField(max_length=40, unique=True)
    type = models.CharField(max_length=60, db_index=True)
    runtime = models.ForeignKey(
        Runtime, on_delete=models.CASCADE, null=True, blank=True, related_name="webhook_events"
    )
    instance = models.ForeignKey(
        TaskInstance,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="webhook_events",
    )
    # Per instance, 1-based, so that a receiver can order what it gets.
    sequence = models.PositiveIntegerField(null=True, blank=True)
    payload = models.JSONField()
    # The W3C traceparent of the request that caused it: its deliveries continue that trace.
    traceparent = models.CharField(max_length=55, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["instance", "sequence"], name="webhook_event_sequence_per_instance"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.webhook_id}"


class WebhookDelivery(OutboxItem):
    class State(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    state = models.CharField(max_length=20, choices=State, default=State.PENDING)
    # Its endpoint or runtime had as many deliveries in flight as allowed: it waits (pending)
    # until one of them finishes, which takes it up.
    held = models.BooleanField(default=False)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_response = models.TextField(blank=True)  # at most 1 KB of what the receiver said
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="webhook_delivery_once"),
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event_id} to {self.endpoint_id}: {self.state}"


class EmailState(models.TextChoices):
    """Where an email stands, and with it each notification it carries."""

    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    SKIPPED = "skipped"  # nothing left waiting, or email turned off, when its turn came
    FAILED = "failed"


class OutgoingEmail(OutboxItem):
    """One email to one person: it tells of one or more notifications of one kind (a digest
    when several instances started waiting within CONSOLE_EMAIL_DIGEST_WINDOW)."""

    State = EmailState

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="outgoing_emails"
    )
    kind = models.CharField(max_length=20)  # an EmailNotification.Kind
    state = models.CharField(max_length=20, choices=State, default=State.PENDING)
    # The first time it may go out: one window after the person's previous email of its kind.
    not_before = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["recipient", "kind", "not_before"]),
            models.Index(fields=["state", "next_attempt_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind} email to {self.recipient_id}: {self.state}"


class EmailNotification(models.Model):
    """One email to a person about one instance in one state; the constraint keeps it one.
    The email that carries it is `email` (shared with others in a digest)."""

    class Kind(models.TextChoices):
        AWAITING_USER = "awaiting_user"
        AWAITING_SIGNATURE = "awaiting_signature"
        EXPIRING = "expiring"
        # To each member of a decision's approvers group (services/quorum.py).
        AWAITING_APPROVAL = "awaiting_approval"
        APPROVAL_EXPIRING = "approval_expiring"

    State = EmailState  # a notification follows its email (services.notify)

    instance = models.ForeignKey(
        TaskInstance, on_delete=models.CASCADE, related_name="email_notifications"
    )
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    email = models.ForeignKey(
        OutgoingEmail,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="notifications",
    )
    kind = models.CharField(max_length=20, choices=Kind)
    state = models.CharField(max_length=20, choices=State, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Per recipient: an approval request tells every member of the group.
            models.UniqueConstraint(
                fields=["instance", "kind", "recipient"], name="email_once_per_state_and_person"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} email for {self.instance_id}"


class PersonSettings(models.Model):
    """A person's own preferences (the account page)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="console_settings"
    )
    email_notifications = models.BooleanField(default=True)

    class Meta:
        verbose_name_plural = "person settings"

    def __str__(self) -> str:
        return f"settings of {self.user_id}"


class Receipt(models.Model):
    """A signed, single-use statement that a person approved exactly these bindings.

    The token is a compact JWS (`beliefs.signing`); this row is the console's ledger of it:
    one redemption per `jti` (a conditional UPDATE admits one), and revocation when the person
    vetoes after ready or the instance is cancelled."""

    jti = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    instance = models.ForeignKey(TaskInstance, on_delete=models.CASCADE, related_name="receipts")
    audience = models.CharField(max_length=MAX_LABEL_LENGTH)
    bindings_digest = models.CharField(max_length=64)
    token = models.TextField()
    issued_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)
    redeemed_at = models.DateTimeField(null=True, blank=True)
    redeemed_by = models.ForeignKey(
        RuntimeAPIKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-issued_at"]
        constraints = [
            # However often an instance is ready, one of its receipts at most is unrevoked.
            models.UniqueConstraint(
                fields=["instance"],
                condition=Q(revoked_at__isnull=True),
                name="receipt_one_live_per_instance",
            ),
        ]

    def __str__(self) -> str:
        return f"receipt {self.jti} of {self.instance_id}"

    def state(self, now: datetime) -> str:
        """revoked, redeemed, expired or valid: the one word the API and pages show."""
        if self.revoked_at is not None:
            return "revoked"
        if self.redeemed_at is not None:
            return "redeemed"
        if self.expires_at <= now:
            return "expired"
        return "valid"


# --- Passkeys and signed approvals --------------------------------------------------------------


class Passkey(models.Model):
    """A WebAuthn credential a person registered (user verification required). Removing one
    keeps its row (`removed_at`): signatures it made stay verifiable with its public key."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=MAX_LABEL_LENGTH)
    # base64url, as WebAuthn's JSON names it (at most 1023 bytes, so 1364 characters).
    credential_id = models.CharField(max_length=1400, unique=True)
    public_key = models.BinaryField()  # COSE_Key, as the authenticator gave it
    sign_count = models.PositiveBigIntegerField(default=0)
    transports = models.JSONField(default=list, blank=True)
    aaguid = models.CharField(max_length=64, blank=True)
    backed_up = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user_id", "created_at", "id"]

    def __str__(self) -> str:
        return reveal(f"passkey {self.name} of {self.user_id}")

    @property
    def active(self) -> bool:
        return self.removed_at is None


class SignatureAttempt(models.Model):
    """One attempt to sign an instance's bindings: a fresh nonce, stored, whose challenge is
    SHA-256 of the canonical JSON {"instance", "bindings_digest", "nonce"}. It holds the
    assertion once one verified (`verified_at`); a later change of the instance voids it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    instance = models.ForeignKey(
        TaskInstance, on_delete=models.CASCADE, related_name="signature_attempts"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    bindings_digest = models.CharField(max_length=64)
    # The world the bindings were bound with; "" for an attempt made before it was signed too.
    worlds_digest = models.CharField(max_length=64, blank=True, default="", db_default="")
    nonce = models.CharField(max_length=64, unique=True)
    challenge = models.CharField(max_length=64)  # hex SHA-256
    rp_id = models.CharField(max_length=MAX_LABEL_LENGTH)
    origin = models.CharField(max_length=MAX_URL_LENGTH)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    passkey = models.ForeignKey(
        Passkey, on_delete=models.PROTECT, null=True, blank=True, related_name="signatures"
    )
    assertion = models.JSONField(null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    voided_at = models.DateTimeField(null=True, blank=True)
    voided_reason = models.CharField(max_length=MAX_LABEL_LENGTH, blank=True)

    class Meta:
        ordering = ["instance_id", "-created_at"]
        constraints = [
            # One attempt is used at most once, and one signature at a time stands per instance.
            models.UniqueConstraint(
                fields=["instance"],
                condition=Q(verified_at__isnull=False, voided_at__isnull=True),
                name="signature_one_standing_per_instance",
            ),
        ]

    def __str__(self) -> str:
        return f"signature attempt {self.pk} of {self.instance_id}"


# --- end passkeys ---------------------------------------------------------------------------------


# --- M-of-N approval (services/quorum.py) --------------------------------------------------


class ApprovalRoundQuerySet(models.QuerySet["ApprovalRound"]):
    def open(self) -> ApprovalRoundQuerySet:
        """The rounds still asked: of an instance awaiting approval, for its current bindings,
        not yet reached (whatever their time)."""
        return self.filter(
            instance__status=InstanceStatus.AWAITING_APPROVAL,
            bindings_digest=F("instance__bindings_digest"),
            worlds_digest=F("instance__worlds_digest"),
            reached_at__isnull=True,
        )


class ApprovalRound(models.Model):
    """An instance waiting for its approvers, for one `bindings_digest`: started when the
    principal's answers settle into `awaiting_approval`, reached when the last approval needed
    arrives. A change of the bindings starts a new round: the approvals of the earlier one are
    for other values and no longer count."""

    instance = models.ForeignKey(
        TaskInstance, on_delete=models.CASCADE, related_name="approval_rounds"
    )
    bindings_digest = models.CharField(max_length=64)
    # The world the bindings were bound with: a change of it starts a new round too.
    worlds_digest = models.CharField(max_length=64, blank=True, default="", db_default="")
    started_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    reached_at = models.DateTimeField(null=True, blank=True)
    # The reminder before expiry, once per round.
    warned_at = models.DateTimeField(null=True, blank=True)

    objects = ApprovalRoundQuerySet.as_manager()

    class Meta:
        ordering = ["instance_id", "started_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["instance", "bindings_digest", "worlds_digest"],
                name="approval_round_once_per_digests",
            ),
        ]
        indexes = [
            # /insights/' time to quorum reads the latest rounds that reached it from here,
            # however many instances there are.
            models.Index(
                fields=["-reached_at"],
                condition=models.Q(reached_at__isnull=False),
                name="round_reached_newest_first",
            ),
        ]

    def __str__(self) -> str:
        return f"approval round of {self.instance_id} for {self.bindings_digest[:12]}"


class Approval(models.Model):
    """One person's approval of one instance's exact bindings. The unique constraint on
    (instance, digest, person) is what keeps anyone from counting twice, however they race."""

    class Via(models.TextChoices):
        ANSWERS = "answers"  # the principal's own answers, the principal being an approver
        APPROVE = "approve"  # an approver's Approve

    instance = models.ForeignKey(TaskInstance, on_delete=models.CASCADE, related_name="approvals")
    round = models.ForeignKey(ApprovalRound, on_delete=models.CASCADE, related_name="approvals")
    bindings_digest = models.CharField(max_length=64)
    worlds_digest = models.CharField(max_length=64, blank=True, default="", db_default="")
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="approvals"
    )
    via = models.CharField(max_length=10, choices=Via)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["instance", "bindings_digest", "worlds_digest", "approver"],
                name="approval_once_per_person_and_digests",
            ),
        ]

    def __str__(self) -> str:
        return f"approval of {self.instance_id} by {self.approver_id}"


class ApproverAway(models.Model):
    """Another member of the group marked this approver away for this instance: they are no
    longer asked or reminded. It approves nothing and lowers no count."""

    instance = models.ForeignKey(
        TaskInstance, on_delete=models.CASCADE, related_name="approvers_away"
    )
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "approver"], name="approver_away_once"),
        ]

    def __str__(self) -> str:
        return f"{self.approver_id} away for {self.instance_id}"


class SignInIdentity(models.Model):
    """A person as a single sign-on provider knows them: the provider's issuer and its subject
    (`sub`), which the provider never reuses for someone else. Signing in through the provider
    finds the person by these two alone, never by e-mail, which people change and providers
    may let them set. An administrator can link an existing account by adding a row."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_in_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["issuer", "subject"]
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"], name="sign_in_identity_once_per_provider"
            ),
        ]

    def __str__(self) -> str:
        return reveal(f"{self.subject} at {self.issuer}")
