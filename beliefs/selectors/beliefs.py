"""Which belief each slot of an instance binds, and how it routes: the reads planning,
the pages and the impact preview share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any
from uuid import UUID

from django.db.models import Model, QuerySet
from django.utils import timezone

from beliefs.domain import policy
from beliefs.domain.meaning import date_in_past, meaning_expired
from beliefs.domain.policy import RiskClass, Source
from beliefs.domain.worlddiff import world_diff_json
from beliefs.models import (
    Belief,
    BeliefStatus,
    Decision,
    Prompt,
    PromptState,
    RecordedVia,
    Runtime,
    Slot,
    TaskClass,
    TaskClassShare,
    TaskInstance,
)
from beliefs.selectors import rows
from beliefs.selectors.shapes import BeliefSummaryJSON


@dataclass(frozen=True)
class SlotState:
    """Everything routing and the pages need of one slot of one instance."""

    slot: Slot
    effective: policy.EffectiveRisk
    belief: Belief | None
    carried: bool
    routing: policy.Routing
    world_now: dict[str, Any] | None
    diff: list[dict[str, Any]]


# A belief's instance is loaded for its run number only: an earlier instance's world, plan and
# bindings are the largest columns in the database, and nothing that shows a belief reads them.
INSTANCE_HEAVY_FIELDS = ("world", "plan_items", "bindings")


def with_light_instance(queryset: QuerySet[Any], path: str = "instance") -> QuerySet[Any]:
    """`select_related(path)` without that instance's large JSON columns."""
    return queryset.select_related(path).defer(*(f"{path}__{f}" for f in INSTANCE_HEAVY_FIELDS))


# The chosen beliefs, with their instance's run number and runtime: every column of the belief
# that routing, the plan and the pages read (its status note and creation time are left
# deferred), then its instance's run number and runtime, then that runtime's name.
_BELIEF_NAMES = (
    "id", "instance_id", "principal_id", "slot_id", "value", "source", "turn", "acquired_at",
    "world_ref", "status", "recorded_via",
)  # fmt: skip
_CHOSEN_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *((Belief, name) for name in _BELIEF_NAMES),
    (TaskInstance, "run_number"),
    (TaskInstance, "runtime_id"),
    (Runtime, "name"),
)
_OWN_COLUMNS = len(_BELIEF_NAMES)


def _owner_of(task_class: str) -> str:
    """SQL: the runtime that owns the class (an SQL expression)."""
    col = rows.column
    return (
        f"(SELECT {col(TaskClass, 'owner', 'o')} FROM {rows.table(TaskClass, 'o')}"
        f" WHERE {col(TaskClass, 'id', 'o')} = {task_class})"
    )


def _shares_history(runtime_is: str, task_class: str) -> str:
    """SQL: a runtime that `runtime_is` names (`= x`, `<> x`) shares the class's history."""
    col = rows.column
    return (
        f"EXISTS (SELECT 1 FROM {rows.table(TaskClassShare, 'h')}"
        f" WHERE {col(TaskClassShare, 'task_class', 'h')} = {task_class}"
        f" AND {col(TaskClassShare, 'runtime', 'h')} {runtime_is}"
        f" AND {col(TaskClassShare, 'history', 'h')})"
    )


def _in_history_pool(runtime: str, task_class: str) -> str:
    """SQL: the runtime (an SQL expression) is the class's owner or shares its history."""
    return f"({runtime} = {_owner_of(task_class)} OR {_shares_history('= ' + runtime, task_class)})"


def _others_in_pool(runtime: str, task_class: str) -> str:
    """SQL: a runtime other than this one (an SQL expression) is in the class's history pool:
    the owner, when it is not this runtime, or another runtime sharing its history."""
    return (
        f"({_owner_of(task_class)} <> {runtime} OR {_shares_history('<> ' + runtime, task_class)})"
    )


# The status planning binds, as an SQL literal: a constant, so the index's prefix is fixed.
_ACTIVE = f"'{BeliefStatus.ACTIVE.value}'"


def _indexed_by(name: str, vendor: str) -> str:
    """SQLite's hint to seek in the index `name`: misled by statistics taken while the table was
    small (`make bench` analyses its data), its planner looked for the instance's own value
    among every value of the slot, whoever's. PostgreSQL chooses the index itself."""
    return f' INDEXED BY "{name}"' if vendor == "sqlite" else ""


def _pick_sql(
    instance: str,
    principal: str,
    run_number: str,
    runtime: str,
    vendor: str,
    member: str | None = None,
    others: str | None = None,
) -> str:
    """SQL for the id of the belief that slot "s" binds for one instance: the newest active
    belief of the instance, else the newest active one of the principal from an earlier run of
    a runtime the instance's runtime may carry from (`HistoryPool.carries`: its own; with the
    class's history pool when it is a member, every member's; newest: acquired_at, then id).
    The instance's id, principal, run number and runtime are given as SQL (columns, or the
    instance's id as a placeholder: its only parameter). `member`: SQL for whether the runtime
    is in the class's history pool, where the caller works it out once for every slot (by
    default each slot's pick works it out for its own class); `others`, likewise, for whether
    another runtime is in that pool: where the runtime is not in the pool with another, its own
    seek is the carried belief, with none to compare it with.

    Each runtime it may carry from is one `LIMIT 1` seek of the index (principal, slot,
    status, runtime, acquired_at, id), so neither the principal's history with this runtime nor
    their history with any other runtime is walked; the newest of those few seeks wins. An
    instance opened without a runtime carries only from such instances (`IS NULL`)."""
    col = rows.column
    task_class = col(Slot, "task_class", "s")

    def newest(where: str, index: str, join: str = "") -> str:
        return (
            f"(SELECT {col(Belief, 'id', 'c')} FROM {rows.table(Belief, 'c')}"
            f"{_indexed_by(index, vendor)}{join}"
            f" WHERE {col(Belief, 'slot', 'c')} = {col(Slot, 'id', 's')}"
            f" AND {col(Belief, 'status', 'c')} = {_ACTIVE} AND {where}"
            f" ORDER BY {col(Belief, 'acquired_at', 'c')} DESC, {col(Belief, 'id', 'c')} DESC"
            " LIMIT 1)"
        )

    def earlier(runtime_is: str) -> str:
        """The newest carried belief of the runtime that `runtime_is` names."""
        return newest(
            f"{col(Belief, 'principal', 'c')} = {principal}"
            f" AND {col(Belief, 'runtime', 'c')} {runtime_is}"
            f" AND {col(TaskInstance, 'run_number', 'ci')} < {run_number}",
            "belief_newest_per_runtime",
            join=f" INNER JOIN {rows.table(TaskInstance, 'ci')}"
            f" ON {col(TaskInstance, 'id', 'ci')} = {col(Belief, 'instance', 'c')}",
        )

    current = newest(f"{col(Belief, 'instance', 'c')} = {instance}", "belief_newest_of_instance")
    member = member or _in_history_pool(runtime, task_class)
    # One seek for its own runtime, one for each other member of the pool when it is one.
    owner = col(TaskClass, "owner", "po")
    sharer = col(TaskClassShare, "runtime", "ph")
    seeks = (
        f'SELECT {earlier("= " + runtime)} AS "id"'
        f' UNION ALL SELECT {earlier("= " + owner)} AS "id"'
        f" FROM {rows.table(TaskClass, 'po')} WHERE {col(TaskClass, 'id', 'po')} = {task_class}"
        f" AND {owner} <> {runtime} AND {member}"
        f' UNION ALL SELECT {earlier("= " + sharer)} AS "id"'
        f" FROM {rows.table(TaskClassShare, 'ph')}"
        f" WHERE {col(TaskClassShare, 'task_class', 'ph')} = {task_class}"
        f" AND {col(TaskClassShare, 'history', 'ph')} AND {sharer} <> {runtime} AND {member}"
    )
    if vendor == "sqlite":
        # The seeks' ids first, then each found belief by its key: written as `id IN (seeks)`,
        # SQLite's planner could scan the whole table for them (its CROSS JOIN keeps that order).
        newest_found = (
            f'SELECT {col(Belief, "id", "x")} FROM ({seeks}) AS "k"'
            f' CROSS JOIN {rows.table(Belief, "x")} ON {col(Belief, "id", "x")} = "k"."id"'
            f" ORDER BY {col(Belief, 'acquired_at', 'x')} DESC, {col(Belief, 'id', 'x')} DESC"
        )
    else:
        # Each found id's time read by its key: joined instead, PostgreSQL hashed the table
        # (every belief, for every slot) wherever it holds few rows.
        acquired = (
            f"(SELECT {col(Belief, 'acquired_at', 'x')} FROM {rows.table(Belief, 'x')}"
            f' WHERE {col(Belief, "id", "x")} = "k"."id")'
        )
        newest_found = (
            f'SELECT "k"."id" FROM ({seeks}) AS "k" WHERE "k"."id" IS NOT NULL'
            f' ORDER BY {acquired} DESC, "k"."id" DESC'
        )
    alone = f" WHEN NOT ({member} AND {others}) THEN {earlier('= ' + runtime)}" if others else ""
    carried = (
        f"CASE WHEN {runtime} IS NULL THEN {earlier('IS NULL')}{alone}"
        f" ELSE ({newest_found} LIMIT 1) END"
    )
    return f"COALESCE({current}, {carried})"


def _belief_columns(alias: str) -> list[str]:
    """The columns of `_CHOSEN_COLUMNS`: a belief under `alias`, its instance (`<alias>i`)'s
    run number and runtime, and the runtime's name (`<alias>r`)."""
    columns = [rows.column(m, n, alias) for m, n in _CHOSEN_COLUMNS[:_OWN_COLUMNS]]
    columns.append(rows.column(TaskInstance, "run_number", f"{alias}i"))
    columns.append(rows.column(TaskInstance, "runtime", f"{alias}i"))
    columns.append(rows.column(Runtime, "name", f"{alias}r"))
    return columns


def _belief_joins(alias: str) -> str:
    """The joins `_belief_columns(alias)` reads: the belief's instance and its runtime."""
    col = rows.column
    return (
        f" LEFT OUTER JOIN {rows.table(TaskInstance, f'{alias}i')}"
        f" ON {col(TaskInstance, 'id', f'{alias}i')} = {col(Belief, 'instance', alias)}"
        f" LEFT OUTER JOIN {rows.table(Runtime, f'{alias}r')}"
        f" ON {col(Runtime, 'id', f'{alias}r')} = {col(TaskInstance, 'runtime', f'{alias}i')}"
    )


def _belief_of(values: Sequence[Any], lights: dict[UUID, TaskInstance]) -> Belief:
    """A belief from `_CHOSEN_COLUMNS` values, its instance attached as `with_light_instance`
    would load it: its run number and runtime only. `lights` holds the instances already made
    by this read: the beliefs of one earlier run share one."""
    belief = rows.instance_of(Belief, values[:_OWN_COLUMNS], _BELIEF_NAMES)
    light = lights.get(belief.instance_id)
    if light is None:
        run_number, runtime_id, runtime_name = values[_OWN_COLUMNS:]
        light = rows.instance_of(
            TaskInstance,
            [belief.instance_id, run_number, runtime_id],
            ["id", "run_number", "runtime_id"],
        )
        runtime = None
        if runtime_id is not None:
            runtime = rows.instance_of(Runtime, [runtime_id, runtime_name], ["id", "name"])
        TaskInstance.runtime.field.set_cached_value(light, runtime)
        lights[belief.instance_id] = light
    Belief.instance.field.set_cached_value(belief, light)
    return belief


@lru_cache(maxsize=64)
def _chosen_sql(slots: int, instances: int, vendor: str) -> str:
    """The belief picked for each (slot, instance) pair of these slots and instances."""
    col = rows.column
    run = lambda name: col(TaskInstance, name, "i")  # noqa: E731 - the pairs' instance
    pick = _pick_sql(run("id"), run("principal"), run("run_number"), run("runtime"), vendor)
    picks = (
        f"SELECT {pick}"
        f" FROM {rows.table(Slot, 's')} INNER JOIN {rows.table(TaskInstance, 'i')}"
        f" ON {run('task_class')} = {col(Slot, 'task_class', 's')}"
        f" WHERE {col(Slot, 'id', 's')} IN ({rows.placeholders(slots)})"
        f" AND {run('id')} IN ({rows.placeholders(instances)})"
    )
    return (
        f"SELECT {', '.join(_belief_columns('b'))} FROM {rows.table(Belief, 'b')}"
        f"{_belief_joins('b')}"
        f" WHERE {col(Belief, 'id', 'b')} IN ({picks})"
        f" ORDER BY {col(Belief, 'acquired_at', 'b')} DESC, {col(Belief, 'id', 'b')} DESC"
    )


@dataclass(frozen=True)
class HistoryPool:
    """The runtimes that carry each other's values for one task class: its owner and the
    runtimes it shares its history with (`TaskClassShare.history`)."""

    members: frozenset[int] = frozenset()

    def carries(self, belief_runtime: int | None, runtime: int | None) -> bool:
        """May an instance of `runtime` carry a value acquired by an instance of
        `belief_runtime`? Its own runtime's always (instances opened without a runtime count as
        one runtime of their own); another runtime's only when both are in the pool.
        `_pick_sql` is the same rule in SQL."""
        if belief_runtime == runtime:
            return True
        return belief_runtime in self.members and runtime in self.members

    def runtimes_for(self, runtime: int | None) -> frozenset[int | None]:
        """The runtimes whose values an instance of `runtime` may carry."""
        return self.members if runtime in self.members else frozenset([runtime])


def history_pool(task_class_id: int) -> HistoryPool:
    """The class's history pool, in one query."""
    found = TaskClass.objects.filter(pk=task_class_id).values_list(
        "owner_id", "shares__runtime_id", "shares__history"
    )
    members: set[int] = set()
    for owner, runtime, history in found:
        if owner is not None:
            members.add(owner)
        if runtime is not None and history:
            members.add(runtime)
    return HistoryPool(frozenset(members))


def _chosen_rows(instance_ids: Sequence[UUID], slot_ids: Sequence[int]) -> list[Belief]:
    """The picked beliefs, newest first, each with its instance (run number only) attached."""
    found = rows.fetch(
        _chosen_sql(len(slot_ids), len(instance_ids), rows.vendor()),
        [*slot_ids, *(rows.prepare(TaskInstance, "id", pk) for pk in instance_ids)],
        _CHOSEN_COLUMNS,
    )
    lights: dict[UUID, TaskInstance] = {}
    return [_belief_of(row, lights) for row in found]


def choose_beliefs_for(
    instances: Sequence[TaskInstance], slots: Iterable[Slot]
) -> dict[UUID, dict[int, tuple[Belief, bool]]]:
    """instance id -> slot id -> (belief, carried), for instances of the slots' task class.

    The rule: the newest active belief of the instance for the slot (current); else the newest
    active belief of the same principal for the slot from an earlier run whose runtime the
    instance's runtime carries from (`HistoryPool.carries`) (carried); newest is (acquired_at,
    id) descending. The instances need only pk, principal_id, run_number and runtime_id.

    One query, whose cost follows instances x slots and not the principal's history: for each
    (instance, slot) the database picks one belief id with at most two `LIMIT 1` probes of the
    index (principal, slot, status, acquired_at, id), and only the picked beliefs are loaded.
    A window function would rank, so read, every earlier belief; a stored pointer to the newest
    belief would have to be kept right by every write that changes a belief's status. The query
    is fixed SQL: planning runs it on every request, and the ORM took longer to build it than
    the database to answer it (`tests.oracles.choose_beliefs_for` is the same rule through the ORM).
    """
    slot_ids = [s.pk for s in slots]
    chosen: dict[UUID, dict[int, tuple[Belief, bool]]] = {i.pk: {} for i in instances}
    if not slot_ids or not chosen:
        return chosen
    runs_of: dict[int, list[TaskInstance]] = defaultdict(list)
    for instance in instances:
        runs_of[instance.principal_id].append(instance)
    found = _chosen_rows(list(chosen), slot_ids)
    pool = history_pool(next(iter(slots)).task_class_id) if found else HistoryPool()
    # Each pair's pick is among the rows, and any other row that fits a pair is another
    # candidate of the same rule, so older: newest first, the first fit is the pair's pick.
    for belief in found:
        mine = chosen.get(belief.instance_id)
        if mine is not None and (belief.slot_id not in mine or mine[belief.slot_id][1]):
            mine[belief.slot_id] = (belief, False)
        for later in runs_of[belief.principal_id]:
            if belief.instance.run_number < later.run_number and pool.carries(
                belief.instance.runtime_id, later.runtime_id
            ):
                chosen[later.pk].setdefault(belief.slot_id, (belief, True))
    return chosen


def choose_beliefs(instance: TaskInstance, slots: Iterable[Slot]) -> dict[int, tuple[Belief, bool]]:
    """slot id -> (belief, carried) for one instance, of these slots: the choice `slot_rows`
    makes for planning, by the same rule as `choose_beliefs_for`."""
    wanted = {slot.pk for slot in slots}
    return {
        row.slot.pk: (row.belief, row.carried)
        for row in slot_rows(instance)
        if row.belief is not None and row.slot.pk in wanted
    }


def slot_effective_risk(slot: Slot) -> policy.EffectiveRisk:
    """Needs slot.decisions prefetched to stay at a constant number of queries."""
    return policy.effective_risk(
        RiskClass(slot.risk_class),
        [(d.key, RiskClass(d.risk_class)) for d in slot.decisions.all()],
        monotonic=slot.monotonic,
    )


FactsKey = tuple[str, bool, bool, bool, bool, bool]


def _facts_of(
    belief: Belief | None, carried: bool, slot: Slot | None = None, now: datetime | None = None
) -> FactsKey | None:
    """`belief_facts` as plain values: (source, carried, has a world reference, given in the
    console, meaning expired, a past date in a future-only slot)."""
    if belief is None:
        return None
    in_console = belief.recorded_via == RecordedVia.CONSOLE
    expired = past = False
    if now is not None:
        expired = meaning_expired(
            belief.world_ref, now, in_console=in_console, acquired_at=belief.acquired_at
        )
        if slot is not None and slot.future and slot.value_type == Slot.ValueType.DATE:
            past = date_in_past(belief.value, now.astimezone(UTC).date())
    # An empty reference anchors nothing (R5), however it got stored.
    return belief.source, carried, bool(belief.world_ref), in_console, expired, past


def belief_facts(
    belief: Belief | None, carried: bool, slot: Slot | None = None, now: datetime | None = None
) -> policy.BeliefFacts | None:
    """What routing reads of the chosen belief (None: no belief was chosen). Without `now`,
    nothing has expired and no date is in the past."""
    return _facts_from(_facts_of(belief, carried, slot, now))


def _facts_from(facts: FactsKey | None) -> policy.BeliefFacts | None:
    """`belief_facts` of the plain values `_facts_of` gave."""
    if facts is None:
        return None
    source, carried, has_world_ref, in_console, expired, past = facts
    return policy.BeliefFacts(
        source=Source(source),
        carried=carried,
        has_world_ref=has_world_ref,
        in_console=in_console,
        expired=expired,
        past_date=past,
    )


# A slot as planning reads it (its value type, choices, scope order, suggestion and times are
# for forms and pages, and left deferred).
_SLOT_NAMES = (
    "id", "task_class_id", "key", "label", "monotonic", "risk_class", "position", "value_type",
    "future",
)  # fmt: skip
_SLOT_ROW_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *((Slot, name) for name in _SLOT_NAMES),
    (Decision, "key"),
    (Decision, "risk_class"),
    (Decision, "person_confirms"),
    *_CHOSEN_COLUMNS,
)


@cache
def _slot_rows_sql(vendor: str) -> str:
    """The slots of one instance's action (its `action_slots`, unless retired) in the class's
    order, a row per decision each feeds (one with none when it feeds none), each with the
    belief the slot binds for the instance.

    Each slot's belief is picked once, in a materialised step of its own: joined on the pick's
    expression, PostgreSQL hashed the join and so ran both probes of every slot twice."""
    col = rows.column
    through: type[Model] = Decision.slots.through
    slot_columns = [col(Slot, name, "s") for name in _SLOT_NAMES]
    # The instance's runtime, principal and run number are parameters ("given"), read from "me"
    # where the rule needs them (several times: once per runtime it may carry from). Every slot
    # is of the one class, so "me" also says, once, whether the runtime is in its history pool
    # and whether any other runtime is.
    pick = _pick_sql(
        "%s",
        '"me"."principal"',
        '"me"."run_number"',
        '"me"."runtime"',
        vendor,
        member='"me"."member"',
        others='"me"."others"',
    )
    picked = (
        f'SELECT {", ".join(slot_columns)}, {pick} AS "pick"'
        f' FROM {rows.table(Slot, "s")} CROSS JOIN "me"'
        f" WHERE {col(Slot, 'task_class', 's')} = %s"
        f" AND {col(Slot, 'retired_at', 's')} IS NULL"
        f" AND {rows.named_in(col(Slot, 'key', 's'), vendor)}"
    )
    columns = [
        *slot_columns,
        col(Decision, "key"),
        col(Decision, "risk_class"),
        col(Decision, "person_confirms"),
    ]
    columns += _belief_columns("b")
    given = ('"given"."runtime"', '"given"."task_class"')
    member, others = _in_history_pool(*given), _others_in_pool(*given)
    return (
        'WITH "given" AS (SELECT CAST(%s AS BIGINT) AS "runtime",'
        ' CAST(%s AS BIGINT) AS "principal", CAST(%s AS BIGINT) AS "run_number",'
        ' CAST(%s AS BIGINT) AS "task_class"),'
        f' "me" AS MATERIALIZED (SELECT "given".*, {member} AS "member",'
        f' {others} AS "others" FROM "given"),'
        f' "picked" AS MATERIALIZED ({picked})'
        f' SELECT {", ".join(columns)} FROM "picked" AS "s"'
        f" LEFT OUTER JOIN {rows.table(through)} ON {col(through, 'slot')} = {col(Slot, 'id', 's')}"
        f" LEFT OUTER JOIN {rows.table(Decision)}"
        f" ON {col(Decision, 'id')} = {col(through, 'decision')}"
        f' LEFT OUTER JOIN {rows.table(Belief, "b")} ON {col(Belief, "id", "b")} = "s"."pick"'
        f"{_belief_joins('b')}"
        # The decisions in the order a prefetch of `slot.decisions` gives them (their default
        # ordering): the first of equal levels names the reason.
        f" ORDER BY {col(Slot, 'position', 's')}, {col(Slot, 'id', 's')},"
        f" {col(Decision, 'task_class')}, {col(Decision, 'id')}"
    )


@dataclass(frozen=True)
class SlotRow:
    slot: Slot
    fed: list[tuple[str, RiskClass]]  # (key, class) of each decision the slot feeds
    belief: Belief | None
    carried: bool
    # A decision the slot feeds wants the person's own act in the console.
    person_required: bool = False


def _slot_rows_params(instance: TaskInstance) -> list[Any]:
    """The parameters of `_slot_rows_sql` for one instance."""
    return [
        instance.runtime_id,
        instance.principal_id,
        instance.run_number,
        instance.task_class_id,
        rows.prepare(TaskInstance, "id", instance.pk),
        instance.task_class_id,
        rows.keys_param(instance.action_slots),
    ]


def slot_rows_raw(instance: TaskInstance) -> list[tuple[Any, ...]]:
    """`slot_rows`' query, its rows as the driver gives them (`rows.fetch_raw`): equal exactly
    when every value planning reads of the slots, their decisions and beliefs is."""
    return rows.fetch_raw(_slot_rows_sql(rows.vendor()), _slot_rows_params(instance))


def slot_rows(instance: TaskInstance, raw: Sequence[Sequence[Any]] | None = None) -> list[SlotRow]:
    """Every slot of the instance's action, in order, with the decisions it feeds and the
    belief it binds (the rule of `_pick_sql`): one query of fixed SQL, which planning runs on
    every request (`tests.oracles.slot_rows` is the same read through the ORM). `raw`: that
    query's rows, where the caller has read them (`slot_rows_raw`)."""
    found = rows.convert(slot_rows_raw(instance) if raw is None else raw, _SLOT_ROW_COLUMNS)
    slot_width = len(_SLOT_NAMES)
    out: list[SlotRow] = []
    lights: dict[UUID, TaskInstance] = {}
    for values in found:
        if not out or out[-1].slot.pk != values[0]:
            belief = None
            if values[slot_width + 3] is not None:  # the belief's id
                belief = _belief_of(values[slot_width + 3 :], lights)
            slot = rows.instance_of(Slot, values[:slot_width], _SLOT_NAMES)
            carried = belief is not None and belief.instance_id != instance.pk
            out.append(SlotRow(slot, [], belief, carried))
        key, risk, person = values[slot_width : slot_width + 3]
        if key is not None:
            out[-1].fed.append((key, RiskClass(risk)))
            if person and not out[-1].person_required:
                out[-1] = replace(out[-1], person_required=True)
    return out


# What planning reads of an open prompt: the digest of its content, which it compares with
# the digest of what routing wants now, the route and risk a held prompt keeps, and what it
# writes back. The content's JSON columns, the answer's columns and the timestamps are left
# deferred: an open prompt has no answer, and decoding the JSON cost more than the rest of
# the comparison.
OPEN_PROMPT_NAMES = (
    "id", "slot_id", "belief_id", "route", "rule", "reason", "effective_risk", "risk_reason",
    "blocking", "content_digest", "state", "version", "expires_at",
)  # fmt: skip
_OPEN_PROMPT_COLUMNS: tuple[tuple[type[Model], str], ...] = tuple(
    (Prompt, name) for name in OPEN_PROMPT_NAMES
)


@cache
def _open_prompts_sql() -> str:
    col = rows.column
    return (
        f"SELECT {', '.join(col(m, n) for m, n in _OPEN_PROMPT_COLUMNS)} FROM {rows.table(Prompt)}"
        f" WHERE {col(Prompt, 'instance')} = %s AND {col(Prompt, 'state')} = %s"
        f" ORDER BY {col(Prompt, 'id')}"
    )


def open_prompts_of(instance: TaskInstance) -> list[Prompt]:
    """The instance's open prompts (at most one per slot), read with fixed SQL, with
    `_OPEN_PROMPT_COLUMNS` loaded (any other column is read on first use);
    `tests.oracles.open_prompts_of` is the same read through the ORM."""
    found = rows.fetch(
        _open_prompts_sql(),
        [rows.prepare(Prompt, "instance", instance.pk), PromptState.OPEN],
        _OPEN_PROMPT_COLUMNS,
    )
    # The instance is the one asked for: its id is not read back and converted per prompt.
    names = [*(name for _, name in _OPEN_PROMPT_COLUMNS), "instance_id"]
    return [rows.instance_of(Prompt, [*row, instance.pk], names) for row in found]


_SLOT_COLUMNS = rows.concrete(Slot)


@cache
def _declared_slots_sql() -> str:
    col = rows.column
    return (
        f"SELECT {', '.join(col(m, n) for m, n in _SLOT_COLUMNS)} FROM {rows.table(Slot)}"
        f" WHERE {col(Slot, 'task_class')} = %s AND {col(Slot, 'declared')}"
        f" AND {col(Slot, 'retired_at')} IS NULL"
        f" ORDER BY {col(Slot, 'position')}, {col(Slot, 'id')}"
    )


def declared_slots(task_class_id: int) -> dict[str, Slot]:
    """The class's declared slots not retired, in order, by key: the action of an open that
    names none (every open without its own list reads them; `tests.oracles.declared_slots`
    is the same read through the ORM)."""
    found = rows.fetch(_declared_slots_sql(), [task_class_id], _SLOT_COLUMNS)
    return {slot.key: slot for slot in (rows.instance_of(Slot, values) for values in found)}


def slot_states(
    instance: TaskInstance,
    now: datetime | None = None,
    raw: Sequence[Sequence[Any]] | None = None,
) -> list[SlotState]:
    """Every slot of the instance's action, in order: its risk, chosen belief and route (as of
    `now`, by default the present: meanings expire and dates pass).

    One query (`slot_rows`), whatever the number of slots; none where the caller has read it
    (`raw`, `slot_rows_raw`).
    """
    now = now if now is not None else timezone.now()
    states = []
    # Risk and route are pure functions of a few plain values that most slots share: each
    # combination is worked out once per call (their results are immutable).
    risks: dict[tuple[Any, ...], policy.EffectiveRisk] = {}
    routes: dict[tuple[Any, ...], policy.Routing] = {}
    for row in slot_rows(instance, raw):
        slot, belief, carried = row.slot, row.belief, row.carried
        risk_key = (slot.risk_class, tuple(row.fed), slot.monotonic)
        effective = risks.get(risk_key)
        if effective is None:
            effective = risks[risk_key] = policy.effective_risk(
                RiskClass(slot.risk_class), row.fed, monotonic=slot.monotonic
            )
        facts_key = _facts_of(belief, carried, slot, now)
        route_key = (effective.risk, slot.monotonic, row.person_required, facts_key)
        routing = routes.get(route_key)
        if routing is None:
            facts = _facts_from(facts_key)  # read once: expiry is not worked out again
            routing = routes[route_key] = policy.route(
                effective.risk,
                monotonic=slot.monotonic,
                belief=facts,
                person_required=row.person_required,
            )
        world_now = instance.world.get(slot.key) if isinstance(instance.world, dict) else None
        diff = world_diff_json(belief.world_ref if belief is not None else None, world_now)
        states.append(SlotState(slot, effective, belief, carried, routing, world_now, diff))
    return states


def belief_body(
    id: int,
    source: str,
    recorded_via: str,
    runtime: str | None,
    instance: str,
    run_number: int,
    turn: int,
    acquired_at: datetime,
    carried: bool,
    world_ref: Any,
) -> BeliefSummaryJSON:
    """A belief as a plan item and a prompt show it, from plain values: the one builder of that
    body. `runtime` is the name of its instance's runtime, `instance` that instance's id."""
    return {
        "id": id,
        "source": source,
        "recorded_via": recorded_via,
        "runtime": runtime,
        "instance": instance,
        "run_number": run_number,
        "turn": turn,
        "acquired_at": acquired_at.isoformat(),
        "carried": carried,
        "world_ref": world_ref,
    }


def belief_summary(belief: Belief | None, carried: bool) -> BeliefSummaryJSON | None:
    """`belief_body` of a belief read with its instance and that instance's runtime."""
    if belief is None:
        return None
    runtime = belief.instance.runtime
    return belief_body(
        belief.pk,
        belief.source,
        belief.recorded_via,
        runtime.name if runtime is not None else None,
        str(belief.instance_id),
        belief.instance.run_number,
        belief.turn,
        belief.acquired_at,
        carried,
        belief.world_ref,
    )
