"""Reads of instances, prompts and task classes that the pages and the API share, each with its
joins already chosen, and the builders of the JSON the API answers with (the shapes they return
are in `shapes`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, cast
from uuid import UUID

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count, Exists, Model, OuterRef, Q, QuerySet
from django.utils import timezone

from beliefs.domain.vouch import bound_claims, vouched_by_runtime
from beliefs.errors import NotFound, PermissionDenied
from beliefs.models import (
    Belief,
    InstanceStatus,
    Prompt,
    PromptState,
    Receipt,
    Runtime,
    Slot,
    TaskClass,
    TaskClassShare,
    TaskInstance,
    any_overdue,
    blocking_open_q,
    is_blocking_open,
    is_overdue,
)
from beliefs.selectors import rows
from beliefs.selectors.access import Owner, owned_rows
from beliefs.selectors.beliefs import (
    belief_body,
    belief_summary,
    slot_effective_risk,
    with_light_instance,
)
from beliefs.selectors.passkeys import instance_signature
from beliefs.selectors.quorum import approval_due, quorum_payload
from beliefs.selectors.shapes import (
    BeliefSummaryJSON,
    BoundJSON,
    DecisionJSON,
    InstanceJSON,
    PlanItemJSON,
    PlanJSON,
    PromptFormJSON,
    PromptJSON,
    QuorumJSON,
    ShareJSON,
    ShareListJSON,
    SignatureJSON,
    SlotJSON,
    TaskClassJSON,
)


def _instances() -> QuerySet[TaskInstance]:
    return TaskInstance.objects.select_related("task_class", "principal")


def instance_prompts(instance: TaskInstance) -> list[Prompt]:
    """With slot and belief; of the belief's instance, only what `belief_summary` shows."""
    prompts = instance.prompts.select_related("slot", "belief", "belief__instance__runtime")
    return list(
        with_light_instance(prompts, "belief__instance").order_by("slot__position", "slot_id", "id")
    )


def open_prompts(instance: TaskInstance) -> list[Prompt]:
    return [p for p in instance_prompts(instance) if p.state == PromptState.OPEN]


def prompts_for_user(user: User, state: str | None = None) -> QuerySet[Prompt]:
    mine = Owner.of(principal_id=user.pk).q("instance__")
    qs: QuerySet[Prompt] = Prompt.objects.filter(mine).select_related(
        "slot", "instance__task_class", "belief", "belief__instance__runtime"
    )
    qs = with_light_instance(with_light_instance(qs, "instance"), "belief__instance")
    if state:
        qs = qs.filter(state=state)
    return qs.order_by("-created_at", "-id")


def inbox_instances(user: User, now: datetime | None = None) -> QuerySet[TaskInstance]:
    """The user's instances awaiting them, newest first, with the runtime that opened each and
    counts of blocking prompts; with
    `now`, only those still waiting then (`TaskInstanceQuerySet.waiting`, with `next_expiry`)."""
    mine = TaskInstance.objects.select_related("task_class", "principal", "runtime").filter(
        principal=user
    )
    awaiting = (
        mine.waiting(now).with_next_expiry()
        if now is not None
        else mine.filter(status__in=InstanceStatus.waiting_for_person())
    )
    return awaiting.annotate(
        blocking_count=Count("prompts", filter=blocking_open_q("prompts__")),
        assumption_count=Count(
            "prompts", filter=Q(prompts__state=PromptState.OPEN, prompts__blocking=False)
        ),
    ).order_by("-created_at")


def task_class_with_slots(key: str, *, reader: Runtime | None = None) -> TaskClass:
    """The task class with its slots and decisions. With `reader` (a runtime), 404 as for no
    such class unless that runtime owns it, has it shared, or nobody owns it yet (it may open
    and adopt it): one runtime's definitions are not another's to read."""
    found = TaskClass.objects.prefetch_related("slots__decisions", "decisions__slots").filter(
        key=key
    )
    if reader is not None:
        shared = TaskClassShare.objects.filter(task_class=OuterRef("pk"), runtime=reader)
        found = found.filter(Q(owner__isnull=True) | Q(owner=reader) | Exists(shared))
    task_class = found.first()
    if task_class is None:
        raise NotFound(f"No task class {key!r}.", code="unknown_task_class")
    return task_class


def task_class_payload(task_class: TaskClass) -> TaskClassJSON:
    """Needs `task_class_with_slots`' prefetches."""
    slots: list[SlotJSON] = []
    for slot in task_class.slots.all():
        effective = slot_effective_risk(slot)
        slots.append(
            {
                "key": slot.key,
                "label": slot.label,
                "value_type": slot.value_type,
                "choices": slot.choices,
                "scope_order": slot.scope_order,
                "monotonic": slot.monotonic,
                "future": slot.future,
                "risk_class": slot.risk_class,
                "suggested_risk": slot.suggested_risk or None,
                "effective_risk": effective.risk.value,
                "risk_reason": effective.reason,
                "decisions": [d.key for d in slot.decisions.all()],
                "declared": slot.declared,
                "retired": slot.retired_at is not None,
            }
        )
    decisions: list[DecisionJSON] = [
        {
            "key": d.key,
            "label": d.label,
            "risk_class": d.risk_class,
            "slots": [s.key for s in d.slots.all()],
            "requires_signature": d.requires_signature,
            "person_confirms": d.person_confirms,
        }
        for d in task_class.decisions.all()
    ]
    return {
        "key": task_class.key,
        "name": task_class.name,
        "open_slots": task_class.open_slots,
        "subject_key": task_class.subject_key or None,
        "slots": slots,
        "decisions": decisions,
    }


def task_class_for_owner(key: str, runtime_id: int) -> TaskClass:
    """The task class, for the sharing endpoints: 404 for no such class, 403 for a runtime that
    does not own it (classes are public by key, so their existence is not a secret)."""
    task_class = TaskClass.objects.select_related("owner").filter(key=key).first()
    if task_class is None:
        raise NotFound(f"No task class {key!r}.", code="unknown_task_class")
    if task_class.owner_id != runtime_id:
        raise PermissionDenied(
            f"Task class {key!r} belongs to another runtime: only its owner sees and changes "
            "whom it is shared with.",
            code="not_owner",
        )
    return task_class


def share_payload(share: TaskClassShare) -> ShareJSON:
    return {
        "runtime": share.runtime.name,
        "history": share.history,
        "created_at": share.created_at.isoformat(),
        "updated_at": share.updated_at.isoformat(),
    }


def shares_payload(task_class: TaskClass) -> ShareListJSON:
    shares = TaskClassShare.objects.filter(task_class=task_class).select_related("runtime")
    return {
        "task_class": task_class.key,
        "owner": task_class.owner.name if task_class.owner is not None else None,
        "shares": [share_payload(s) for s in shares.order_by("runtime__name")],
    }


def prompt_body(
    id: int,
    instance: UUID,
    route: str,
    rule: str,
    reason: str,
    effective_risk: str,
    risk_reason: str,
    blocking: bool,
    state: str,
    version: int,
    prefill: Any,
    context_value: Any,
    world_ref: Any,
    world_now: Any,
    world_diff: Any,
    action: str,
    response_value: Any,
    response_reason: str,
    expires_at: datetime | None,
    shown_at: datetime | None,
    responded_at: datetime | None,
    slot: str,
    label: str,
    *,
    belief: BeliefSummaryJSON | None,
) -> PromptJSON:
    """A prompt as the API shows it, from plain values: the one builder of that body, fed by a
    model (`prompt_detail`) or by a row of the instance read (its columns in this order).
    `instance` is its instance's id, `slot` and `label` its slot's, `belief` the
    `belief_body` of its belief (None: none)."""
    return {
        "id": id,
        "instance": str(instance),
        "slot": slot,
        "label": label,
        "route": route,
        "rule": rule,
        "reason": reason,
        "effective_risk": effective_risk,
        "risk_reason": risk_reason,
        "blocking": blocking,
        "state": state,
        "version": version,
        "prefill": prefill,
        "context_value": context_value,
        "belief": belief,
        "world_ref": world_ref,
        "world_now": world_now,
        "world_diff": world_diff,
        "action": action or None,
        "response_value": response_value,
        "reason_given": response_reason or None,
        "expires_at": _iso(expires_at),
        "shown_at": _iso(shown_at),
        "responded_at": _iso(responded_at),
    }


def prompt_detail(prompt: Prompt, *, with_belief: bool = True) -> PromptJSON:
    """A prompt as the API shows it; needs slot selected, and belief__instance unless
    `with_belief` is False (then its belief is not read, and shows as null)."""
    belief = belief_summary(prompt.belief, carried=prompt.carried) if with_belief else None
    return prompt_body(
        id=prompt.pk,
        instance=prompt.instance_id,
        route=prompt.route,
        rule=prompt.rule,
        reason=prompt.reason,
        effective_risk=prompt.effective_risk,
        risk_reason=prompt.risk_reason,
        blocking=prompt.blocking,
        state=prompt.state,
        version=prompt.version,
        prefill=prompt.prefill,
        context_value=prompt.context_value,
        world_ref=prompt.world_ref,
        world_now=prompt.world_now,
        world_diff=prompt.world_diff,
        action=prompt.action,
        response_value=prompt.response_value,
        response_reason=prompt.response_reason,
        expires_at=prompt.expires_at,
        shown_at=prompt.shown_at,
        responded_at=prompt.responded_at,
        slot=prompt.slot.key,
        label=prompt.slot.label,
        belief=belief,
    )


def fresh_prompt(prompt: Prompt) -> PromptFormJSON:
    """The fresh form of a prompt, for a refused response to show: the keys of
    `PromptFormJSON`, taken from its body (its belief, not among them, is not read). Needs
    slot selected."""
    body: Mapping[str, object] = prompt_detail(prompt, with_belief=False)
    return cast(PromptFormJSON, {key: body[key] for key in PromptFormJSON.__annotations__})


def instance_body(
    *,
    id: UUID,
    task_class: str,
    principal: str,
    run_number: int,
    slots: Any,
    status: str,
    status_reason: str,
    world: Any,
    bindings: Any,
    bindings_digest: str,
    receipt: str | None,
    receipt_state: str | None,
    plan: list[PlanItemJSON],
    prompts: list[PromptJSON],
    planned_at: datetime | None,
    created_at: datetime,
    updated_at: datetime,
    signature: SignatureJSON | None = None,
    quorum: QuorumJSON | None = None,
    worlds_digest: str = "",
) -> InstanceJSON:
    """An instance as the API shows it, from plain values: the one builder of that body, fed by
    models (`instance_payload`) or by the instance read's rows. `task_class` is its class's
    key, `principal` its person's username, `receipt` its receipt's token (shown only while
    `receipt_state` is "valid"), `prompts` each prompt's `prompt_body`, in order."""
    blocking = sum(1 for p in prompts if is_blocking_open(p["state"], p["blocking"]))
    settled = bindings is not None and isinstance(plan, list)
    return {
        "id": str(id),
        "task_class": task_class,
        "principal": principal,
        "run_number": run_number,
        "slots": slots,
        "status": status,
        "status_reason": status_reason or None,
        "blocking": blocking,
        "world": world,
        "bindings": bindings,
        "bindings_digest": bindings_digest or None,
        "worlds_digest": worlds_digest or None,
        # Once the values are settled: who vouched for each (console, runtime or policy), and
        # the irreversible ones no person confirmed in the console, as the receipt says.
        # (the domain's claims, in the shape BoundJSON documents)
        "bound": cast(dict[str, BoundJSON], bound_claims(plan)) if settled else None,
        "vouched_by_runtime": vouched_by_runtime(plan) if settled else None,
        "receipt": receipt if receipt_state == "valid" else None,
        "receipt_state": receipt_state,
        # once the instance waits for a passkey signature: whether it is signed,
        # and the assertion that signed these bindings.
        "signature": signature,
        "plan": plan,
        "prompts": prompts,
        # M-of-N approval: while it awaits approval, who approved and how many are missing.
        "quorum": quorum,
        "planned_at": _iso(planned_at),
        "created_at": created_at.isoformat(),
        "updated_at": updated_at.isoformat(),
    }


def instance_payload(instance: TaskInstance, prompts: list[Prompt] | None = None) -> InstanceJSON:
    """The instance as the API shows it; `prompts`: its `instance_prompts`, when the caller has
    read them. An instance never planned has none (only planning makes prompts): its answer
    to the open that made it reads none."""
    if prompts is None:
        prompts = instance_prompts(instance) if instance.planned_at is not None else []
    bodies = [prompt_detail(p) for p in prompts]
    receipt = instance.receipt
    return instance_body(
        id=instance.pk,
        task_class=instance.task_class.key,
        principal=instance.principal.get_username(),
        run_number=instance.run_number,
        slots=instance.action_slots,
        status=instance.status,
        status_reason=instance.status_reason,
        world=instance.world,
        bindings=instance.bindings,
        bindings_digest=instance.bindings_digest,
        worlds_digest=instance.worlds_digest,
        receipt=receipt.token if receipt is not None else None,
        receipt_state=receipt.state(timezone.now()) if receipt is not None else None,
        plan=instance.plan_items,
        prompts=bodies,
        planned_at=instance.planned_at,
        created_at=instance.created_at,
        updated_at=instance.updated_at,
        signature=instance_signature(instance.pk, instance.signature_due_at is not None),
        quorum=quorum_payload(instance),
    )


def expiry_due(instance: TaskInstance, prompts: list[Prompt], now: datetime) -> bool:
    """`InstanceRead.expiry_due` of an instance and its prompts already read: what it waits
    for ran out of time, and the next read expires it."""
    if instance.status == InstanceStatus.AWAITING_SIGNATURE:
        return instance.signature_overdue(now)  # never signed in time
    if instance.status == InstanceStatus.AWAITING_APPROVAL:
        return approval_due(instance.pk, now)
    return instance.status == InstanceStatus.AWAITING_USER and any_overdue(prompts, now)


def plan_payload(instance: TaskInstance, items: list[PlanItemJSON]) -> PlanJSON:
    """The answer to a plan: the instance's `id` and state, and the plan's `items`, as planning
    made them."""
    blocking = sum(
        1
        for item in items
        if item["prompt"] and is_blocking_open(item["prompt"]["state"], item["prompt"]["blocking"])
    )
    return {
        "id": str(instance.pk),
        "slots": instance.action_slots,
        "status": instance.status,
        "blocking": blocking,
        "bindings": instance.bindings,
        "bindings_digest": instance.bindings_digest or None,
        "items": items,
    }


# --- the instance read, in two fixed queries ---------------------------------------------------
#
# A runtime polls its instance while it waits for a person: the read is the API's most frequent
# request. It answers with exactly `instance_payload`'s body, from one query for the instance
# (with its task class key and principal's name) and one for its prompts (with slot, belief and
# the belief's run number), read with fixed SQL.

_INSTANCE_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *(
        (TaskInstance, name)
        for name in (
            "id",
            "run_number",
            "action_slots",
            "status",
            "status_reason",
            "world",
            "bindings",
            "bindings_digest",
            "worlds_digest",
            "plan_items",
            "planned_at",
            "created_at",
            "updated_at",
            "signature_due_at",
        )
    ),
    (TaskClass, "key"),
    (User, User.USERNAME_FIELD),
    (Receipt, "token"),
    (Receipt, "expires_at"),
    (Receipt, "revoked_at"),
    (Receipt, "redeemed_at"),
)
# fmt: off
_PROMPT_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *(
        (Prompt, name)
        for name in [  # in the order of `prompt_body`'s parameters
            "id", "instance_id", "route", "rule", "reason", "effective_risk", "risk_reason",
            "blocking", "state", "version", "prefill", "context_value", "world_ref", "world_now",
            "world_diff", "action", "response_value", "response_reason", "expires_at",
            "shown_at", "responded_at",
        ]
    ),
    (Slot, "key"),
    (Slot, "label"),
    *(
        (Belief, name)
        for name in (
            "id", "source", "recorded_via", "instance_id", "turn", "acquired_at", "world_ref"
        )
    ),
    (TaskInstance, "run_number"),
    (Runtime, "name"),
)
# fmt: on
_EXPIRES_AT = _PROMPT_COLUMNS.index((Prompt, "expires_at"))


@cache
def _instance_sql(owner: str) -> str:
    """`owner`: the `Owner.sql` condition the instance must meet."""
    instance = rows.column  # of the instance's own table, the one the WHERE names
    return (
        "SELECT "
        + ", ".join(rows.column(m, n) for m, n in _INSTANCE_COLUMNS)
        + f" FROM {rows.table(TaskInstance)}"
        + f" INNER JOIN {rows.table(TaskClass)}"
        + f" ON {rows.column(TaskClass, 'id')} = {instance(TaskInstance, 'task_class')}"
        + f" INNER JOIN {rows.table(User)}"
        + f" ON {rows.column(User, 'id')} = {instance(TaskInstance, 'principal')}"
        + f" LEFT OUTER JOIN {rows.table(Receipt)}"
        + f" ON {rows.column(Receipt, 'jti')} = {instance(TaskInstance, 'receipt')}"
        + f" WHERE {instance(TaskInstance, 'id')} = %s AND {owner}"
    )


@cache
def _prompts_sql() -> str:
    # The belief's instance is joined under an alias: the prompt's own instance is not joined.
    columns = [rows.column(m, n) for m, n in _PROMPT_COLUMNS[:-2]]
    columns.append(rows.column(TaskInstance, "run_number", alias="belief_instance"))
    columns.append(rows.column(Runtime, "name", alias="belief_runtime"))
    return (
        "SELECT "
        + ", ".join(columns)
        + f" FROM {rows.table(Prompt)}"
        + f" INNER JOIN {rows.table(Slot)}"
        + f" ON {rows.column(Slot, 'id')} = {rows.column(Prompt, 'slot')}"
        + f" LEFT OUTER JOIN {rows.table(Belief)}"
        + f" ON {rows.column(Belief, 'id')} = {rows.column(Prompt, 'belief')}"
        + f" LEFT OUTER JOIN {rows.table(TaskInstance, alias='belief_instance')}"
        + f" ON {rows.column(TaskInstance, 'id', alias='belief_instance')}"
        + f" = {rows.column(Belief, 'instance')}"
        + f" LEFT OUTER JOIN {rows.table(Runtime, alias='belief_runtime')}"
        + f" ON {rows.column(Runtime, 'id', alias='belief_runtime')}"
        + f" = {rows.column(TaskInstance, 'runtime', alias='belief_instance')}"
        + f" WHERE {rows.column(Prompt, 'instance')} = %s"
        + f" ORDER BY {rows.column(Slot, 'position')}, {rows.column(Slot, 'id')},"
        + f" {rows.column(Prompt, 'id')}"
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


_OWN_PROMPT_COLUMNS = _PROMPT_COLUMNS.index((Belief, "id"))


def _prompt_row_body(row: list[Any]) -> PromptJSON:
    """`prompt_detail` of one row of `_prompts_sql`."""
    (
        belief_id, source, recorded_via, belief_instance, turn, acquired_at, belief_world_ref,
        run_number, runtime_name,
    ) = row[_OWN_PROMPT_COLUMNS:]  # fmt: skip
    belief = None
    if belief_id is not None:
        belief = belief_body(
            belief_id,
            source,
            recorded_via,
            runtime_name,
            str(belief_instance),
            run_number,
            turn,
            acquired_at,
            belief_instance != row[1],  # carried: of another instance than the prompt's
            belief_world_ref,
        )
    return prompt_body(*row[:_OWN_PROMPT_COLUMNS], belief=belief)


@dataclass(frozen=True)
class InstanceRead:
    payload: InstanceJSON
    # A blocking prompt is past its time to live: the instance must expire before anyone
    # reads it, which the services do (and then `instance_payload` answers).
    expiry_due: bool


def instance_read(
    instance_id: UUID, *, runtime_id: int | None = None, principal_id: int | None = None
) -> InstanceRead | None:
    """`instance_payload` of the instance if this runtime opened it, or if this person is its
    principal (exactly one of the two: `Owner.of`); None for anyone else or no such instance.
    Two queries of fixed SQL; `tests.oracles.instance_read` is the same read through the ORM."""
    owner = Owner.of(runtime_id=runtime_id, principal_id=principal_id)
    found = owned_rows(_instance_sql, instance_id, owner, _INSTANCE_COLUMNS)
    if not found:
        return None
    (
        pk, run_number, slots, status, status_reason, world, bindings, digest, worlds_digest,
        plan_items, planned_at, created_at, updated_at, signature_due_at, task_class_key,
        username, token,
        receipt_expires, revoked_at, redeemed_at,
    ) = found[0]  # fmt: skip
    prompt_rows = rows.fetch(
        _prompts_sql(), [rows.prepare(Prompt, "instance", pk)], _PROMPT_COLUMNS
    )
    prompts = [_prompt_row_body(row) for row in prompt_rows]
    now = timezone.now()
    due = status == InstanceStatus.AWAITING_USER and any(
        is_overdue(p["state"], p["blocking"], row[_EXPIRES_AT], now)
        for p, row in zip(prompts, prompt_rows, strict=True)
    )
    if status == InstanceStatus.AWAITING_SIGNATURE and signature_due_at is not None:
        due = signature_due_at <= now  # never signed in time
    quorum = None
    if status == InstanceStatus.AWAITING_APPROVAL:
        # M-of-N approval: rare and short-lived, read through the ORM (a few more queries).
        waiting = TaskInstance.objects.get(pk=pk)
        quorum = quorum_payload(waiting)
        due = approval_due(pk, now)
    state = None
    if token is not None:
        state = Receipt(
            expires_at=receipt_expires, revoked_at=revoked_at, redeemed_at=redeemed_at
        ).state(now)
    payload = instance_body(
        id=pk,
        task_class=task_class_key,
        principal=username,
        run_number=run_number,
        slots=slots,
        status=status,
        status_reason=status_reason,
        world=world,
        bindings=bindings,
        bindings_digest=digest,
        worlds_digest=worlds_digest,
        receipt=token,
        receipt_state=state,
        plan=plan_items,
        prompts=prompts,
        planned_at=planned_at,
        created_at=created_at,
        updated_at=updated_at,
        signature=instance_signature(pk, signature_due_at is not None),
        quorum=quorum,
    )
    return InstanceRead(payload=payload, expiry_due=due)


# --- the instance planning reads ----------------------------------------------------------
#
# Planning reads its instance on every request: unlocked (the commonest plan, which changes
# nothing, needs no lock) and, to write, under the lock every writer of an instance takes.

# Under the lock, the instance comes with its task class and principal. Unlocked, it comes
# alone and without its stored plan: its task class and principal are for the writes that
# only happen under the lock, and the stored plan is compared by its digest (either is read on
# first use, should anything ask).
_LOCKED_COLUMNS = (*rows.concrete(TaskInstance), *rows.concrete(TaskClass), *rows.concrete(User))
_UNLOCKED_COLUMNS = tuple(c for c in rows.concrete(TaskInstance) if c[1] != "plan_items")


@cache
def _planned_sql(owner: str | None, lock: bool) -> str:
    col = rows.column
    columns = [col(m, n) for m, n in (_LOCKED_COLUMNS if lock else _UNLOCKED_COLUMNS)]
    sql = f"SELECT {', '.join(columns)} FROM {rows.table(TaskInstance)}"
    if lock:
        sql += (
            f" INNER JOIN {rows.table(TaskClass)}"
            f" ON {col(TaskClass, 'id')} = {col(TaskInstance, 'task_class')}"
            f" INNER JOIN {rows.table(User)}"
            f" ON {col(User, 'id')} = {col(TaskInstance, 'principal')}"
        )
    sql += f" WHERE {col(TaskInstance, 'id')} = %s"
    if owner is not None:
        sql += f" AND {owner}"
    if lock and connection.features.has_select_for_update:
        # As `select_for_update(of=("self",), no_key=True)` writes it.
        sql += f" FOR NO KEY UPDATE OF {rows.table(TaskInstance)}"
    return sql


def instance_to_plan(pk: Any, *, runtime_id: int | None, lock: bool) -> TaskInstance | None:
    """The instance (only if `runtime_id`'s runtime opened it, when given), None when there is
    none. With `lock`, under a row lock so concurrent writers queue, with its task class and
    principal; without, alone and without its stored plan (`plan_items` is read on first
    use). One query of fixed SQL; `tests.oracles.instance_to_plan` is the same read through the
    ORM.

    Only the instance's own row is locked (`of`): the joined task class and principal are read,
    not locked, so a writer never holds a user or task-class row that an open waits for. No key
    update: inserts that refer to the instance (prompts, beliefs) need only a key share.
    """
    owner = Owner.of(runtime_id=runtime_id) if runtime_id is not None else None
    params: list[Any] = [rows.prepare(TaskInstance, "id", pk)]
    if owner is not None:
        params.append(owner.id)
    columns = _LOCKED_COLUMNS if lock else _UNLOCKED_COLUMNS
    found = rows.fetch(_planned_sql(owner.sql() if owner else None, lock), params, columns)
    if not found:
        return None
    values = found[0]
    if not lock:
        return rows.instance_of(TaskInstance, values, [name for _, name in _UNLOCKED_COLUMNS])
    instances, classes = len(rows.concrete(TaskInstance)), len(rows.concrete(TaskClass))
    instance = rows.instance_of(TaskInstance, values[:instances])
    instance.task_class = rows.instance_of(TaskClass, values[instances : instances + classes])
    instance.principal = rows.instance_of(User, values[instances + classes :])
    return instance


@cache
def _opening_sql(by_runtime: bool) -> str:
    col = rows.column
    statuses = ", ".join(["%s"] * len(InstanceStatus.open()))
    t = "o"
    runtime = "= %s" if by_runtime else "IS NULL"
    return (
        f"SELECT (SELECT COUNT(*) FROM {rows.table(TaskInstance, t)}"
        f" WHERE {col(TaskInstance, 'principal', t)} = %s"
        f" AND {col(TaskInstance, 'runtime', t)} {runtime}"
        f" AND {col(TaskInstance, 'status', t)} IN ({statuses})),"
        f" (SELECT MAX({col(TaskInstance, 'run_number', t)}) FROM {rows.table(TaskInstance, t)}"
        f" WHERE {col(TaskInstance, 'principal', t)} = %s"
        f" AND {col(TaskInstance, 'task_class', t)} = %s)"
    )


def opening_counts(
    principal_id: int, runtime_id: int | None, task_class_id: int
) -> tuple[int, int]:
    """What an open reads under the principal's lock, in one query of fixed SQL (named, with
    its figure, in the read layer's docstring; `tests.oracles.opening_counts` is the same read
    through the ORM): how many of the person's instances from this runtime (None: opened by
    none) are still open, for the limit, and the person's last run number of the class (0:
    none yet)."""
    by_runtime = runtime_id is not None
    params = [principal_id, *([runtime_id] if by_runtime else []), *sorted(InstanceStatus.open())]
    params += [principal_id, task_class_id]
    number = (TaskInstance, "run_number")
    ((open_count, last),) = rows.fetch(_opening_sql(by_runtime), params, (number, number))
    return int(open_count), int(last or 0)
