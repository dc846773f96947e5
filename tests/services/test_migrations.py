"""Data migrations fill what they add from the rows already there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.apps.registry import Apps
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from beliefs.domain.canonical import legacy_canonical_json, text_digest
from beliefs.services.audit import digest_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.migrations]

BEFORE = ("beliefs", "0010_insights_early_runs_index")
AFTER = ("beliefs", "0011_instance_blocking_asked")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _migrate(*targets: tuple[str, str]) -> Apps:
    """Migrate to `targets` (the latest migrations when none) and return the models there."""
    executor = MigrationExecutor(connection)
    chosen = list(targets) or executor.loader.graph.leaf_nodes()
    executor.migrate(chosen)
    return MigrationExecutor(connection).loader.project_state(chosen).apps


@pytest.fixture(scope="module")
def at_the_latest_afterwards(django_db_blocker: Any) -> Iterator[None]:  # noqa: ANN401
    """Back to the latest migrations once the module is done. Each test migrates to the state it
    starts from, forwards from where the one before left the schema (the tests run oldest
    first): going all the way back and forward again for each of them cost seconds a test."""
    yield
    with django_db_blocker.unblock():
        _migrate()


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_blocking_asked_starts_as_the_count_of_each_instances_blocking_prompts() -> None:
    old = _migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="p")
    task_class = old.get_model("beliefs", "TaskClass").objects.create(key="c", name="c")
    slots = [
        old.get_model("beliefs", "Slot").objects.create(task_class=task_class, key=k, label=k)
        for k in ("a", "b", "c")
    ]
    Instance = old.get_model("beliefs", "TaskInstance")
    Prompt = old.get_model("beliefs", "Prompt")
    asked = {}
    for run, blocking in enumerate([(True, True, False), (False, False), (True,), ()], 1):
        instance = Instance.objects.create(task_class=task_class, principal=user, run_number=run)
        for slot, flag in zip(slots, blocking, strict=False):
            Prompt.objects.create(
                instance=instance, slot=slot, route="ASK", rule="R1", reason="", blocking=flag,
                effective_risk="irreversible", risk_reason="", state="superseded",
            )  # fmt: skip
        asked[instance.pk] = sum(blocking)

    new = _migrate(AFTER)
    kept = new.get_model("beliefs", "TaskInstance").objects.values_list("pk", "blocking_asked")
    assert dict(kept) == asked
    assert sorted(asked.values()) == [0, 0, 1, 2]


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_plan_digest_starts_as_the_digest_planning_would_write() -> None:
    before, after = AFTER, ("beliefs", "0012_instance_plan_digest")
    old = _migrate(before)
    user = old.get_model("auth", "User").objects.create(username="p")
    task_class = old.get_model("beliefs", "TaskClass").objects.create(key="c", name="c")
    Instance = old.get_model("beliefs", "TaskInstance")
    plan = [{"slot": "é", "value": 1.0, "prompt": None, "route": "SILENT"}, {"slot": "b"}]
    planned = Instance.objects.create(
        task_class=task_class, principal=user, run_number=1, plan_items=plan, planned_at=T0
    )
    never = Instance.objects.create(task_class=task_class, principal=user, run_number=2)

    new = _migrate(after)
    digests = dict(
        new.get_model("beliefs", "TaskInstance").objects.values_list("pk", "plan_digest")
    )
    # In the form planning wrote then (Python's JSON): since digests are RFC 8785, a plan
    # holding a float gets its new digest the next time it is planned.
    assert digests == {planned.pk: text_digest(legacy_canonical_json(plan)), never.pk: ""}


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_content_digest_starts_as_the_digest_planning_would_write() -> None:
    from beliefs.services.planning import DESIRED_FIELDS

    before, after = (
        ("beliefs", "0012_instance_plan_digest"),
        ("beliefs", "0013_prompt_content_digest"),
    )
    old = _migrate(before)
    user = old.get_model("auth", "User").objects.create(username="p")
    task_class = old.get_model("beliefs", "TaskClass").objects.create(key="c", name="c")
    slot = old.get_model("beliefs", "Slot").objects.create(
        task_class=task_class, key="a", label="a"
    )
    instance = old.get_model("beliefs", "TaskInstance").objects.create(
        task_class=task_class, principal=user, run_number=1
    )
    belief = old.get_model("beliefs", "Belief").objects.create(
        instance=instance, principal=user, slot=slot, value="é", source="user", acquired_at=T0
    )
    Prompt = old.get_model("beliefs", "Prompt")
    common = {"instance": instance, "slot": slot, "effective_risk": "irreversible"}
    confirm = Prompt.objects.create(
        **common, route="CONFIRM", rule="R5", reason="carried", risk_reason="feeds act",
        blocking=True, belief=belief, prefill={"n": 1.0, "s": "é"}, world_ref={"v": 1},
        world_now={"v": 2}, world_diff=[{"path": "v", "before": 1, "after": 2}],
    )  # fmt: skip
    ask = Prompt.objects.create(
        **common, route="ASK", rule="R1", reason="", risk_reason="", blocking=True,
        state="answered",
    )  # fmt: skip

    new = _migrate(after)
    NewPrompt = new.get_model("beliefs", "Prompt")
    digests = dict(NewPrompt.objects.values_list("pk", "content_digest"))
    stored = {p.pk: {f: getattr(p, f) for f in DESIRED_FIELDS} for p in NewPrompt.objects.all()}
    # In the form planning wrote then (Python's JSON); since digests are RFC 8785, a prompt
    # holding a float is re-versioned once, the next time its instance is planned.
    assert digests == {
        pk: text_digest(legacy_canonical_json([content[f] for f in DESIRED_FIELDS]))
        for pk, content in stored.items()
    }
    assert stored[confirm.pk]["prefill"] == {"n": 1.0, "s": "é"}
    assert stored[ask.pk]["world_diff"] == [] and digests[ask.pk] != digests[confirm.pk]


TASKS_TABLE = "django_tasks_database_dbtaskresult"


def _tasks_table(*jobs: tuple[str, str]) -> None:
    """django-tasks' table as an upgraded database still has it, holding `jobs` (status, path)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {TASKS_TABLE} "
            "(id integer PRIMARY KEY, status varchar(10), task_path text)"
        )
        for pk, (status, path) in enumerate(jobs, 1):
            cursor.execute(f"INSERT INTO {TASKS_TABLE} VALUES (%s, %s, %s)", [pk, status, path])
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, %s)",
            ["django_tasks_database", "0021_conditional_partial_index_ordering", T0],
        )


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_django_tasks_queue_of_the_consoles_own_jobs_is_let_go_with_its_table() -> None:
    """Its jobs named outbox rows, which the outbox sends by itself."""
    _migrate(("beliefs", "0031_task_class_subject_key"))
    _tasks_table(
        ("READY", "beliefs.services.webhooks.deliver_webhook"),
        ("RUNNING", "beliefs.services.notify.deliver_email"),
        ("FAILED", "some.other.task"),  # finished: nothing left to run
    )
    _migrate(("beliefs", "0032_drain_django_tasks"))
    with connection.cursor() as cursor:
        assert TASKS_TABLE not in connection.introspection.table_names(cursor)
        cursor.execute("SELECT count(*) FROM django_migrations WHERE app = 'django_tasks_database'")
        assert cursor.fetchone() == (0,)


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_django_tasks_unfinished_jobs_of_another_kind_stop_the_migration() -> None:
    _migrate(("beliefs", "0031_task_class_subject_key"))
    _tasks_table(("READY", "elsewhere.tasks.report"))
    try:
        with pytest.raises(RuntimeError, match="elsewhere.tasks.report"):
            _migrate(("beliefs", "0032_drain_django_tasks"))
        with connection.cursor() as cursor:  # the job is still there for its worker
            assert TASKS_TABLE in connection.introspection.table_names(cursor)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {TASKS_TABLE}")
            cursor.execute("DELETE FROM django_migrations WHERE app = 'django_tasks_database'")


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_the_audit_s_values_become_digests_and_the_log_stays_append_only() -> None:
    """Events written before 0035 held a person's values; after it, only their digests."""
    old = _migrate(("beliefs", "0034_webhook_event_traceparent"))
    Event = old.get_model("beliefs", "AuditEvent")
    world = {"bank": {"owner": "A. Person"}}
    written = {
        "belief.recorded": {"belief": 1, "value": "NL91-SECRET", "world_ref": world, "turn": 1},
        "prompt.edit": {
            "action": "edit",
            "value": "NL91-TYPED",
            "world_ref": None,
            "reason": "typed SECRET",
            "acknowledged": [{"key": "owner", "change": "changed", "old": "A", "new": "B"}],
        },
        "prompt.confirm": {"action": "confirm", "value": 250, "reason": ""},
        "prompt.reasked": {"before": "OLD-SECRET", "value": "NEW-SECRET", "belief": 2},
        "instance.opened": {"principal": "p", "world": world, "slots": ["a"]},
        "instance.world_set": {"before": {}, "after": world},
        "classification.slot_risk": {"before": "unclassified", "after": "irreversible"},
    }
    for kind, data in written.items():
        Event.objects.create(kind=kind, actor="p", data=data)

    new = _migrate(("beliefs", "0035_erasure_and_retention"))
    kept = dict(new.get_model("beliefs", "AuditEvent").objects.values_list("kind", "data"))
    assert kept["belief.recorded"] == {
        "belief": 1,
        "value_digest": digest_of("NL91-SECRET"),
        "world_ref_digest": digest_of(world),
        "turn": 1,
    }
    assert kept["prompt.edit"] == {
        "action": "edit",
        "value_digest": digest_of("NL91-TYPED"),
        "world_ref_digest": digest_of(None),
        "reason_digest": digest_of("typed SECRET"),
        "acknowledged": [
            {
                "key": "owner",
                "change": "changed",
                "old_digest": digest_of("A"),
                "new_digest": digest_of("B"),
            }
        ],
    }
    assert kept["prompt.confirm"] == {"action": "confirm", "value_digest": digest_of(250)}
    assert kept["prompt.reasked"] == {
        "before": digest_of("OLD-SECRET"),
        "after": digest_of("NEW-SECRET"),
        "belief": 2,
    }
    assert kept["instance.opened"] == {
        "principal": "p",
        "world_digest": digest_of(world),
        "slots": ["a"],
    }
    assert kept["instance.world_set"] == {"before": digest_of({}), "after": digest_of(world)}
    # A classifier's change is not a person's value: as it was.
    assert kept["classification.slot_risk"] == written["classification.slot_risk"]
    assert "SECRET" not in json.dumps(list(kept.values()))
    # The trigger is back: the log refuses an UPDATE again.
    with pytest.raises(DatabaseError), transaction.atomic():
        new.get_model("beliefs", "AuditEvent").objects.update(data={})


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_each_belief_takes_its_instance_s_runtime() -> None:
    """0038 fills a belief's runtime from its instance: a runtime's, or none for an instance
    opened without one."""
    old = _migrate(("beliefs", "0037_sign_in_identity"))
    user = old.get_model("auth", "User").objects.create(username="p-0038")
    task_class = old.get_model("beliefs", "TaskClass").objects.create(key="c38", name="c38")
    slot = old.get_model("beliefs", "Slot").objects.create(
        task_class=task_class, key="a", label="a"
    )
    Runtime = old.get_model("beliefs", "Runtime")
    runtimes = [Runtime.objects.create(name="r1"), Runtime.objects.create(name="r2"), None]
    Instance = old.get_model("beliefs", "TaskInstance")
    Belief = old.get_model("beliefs", "Belief")
    expected = {}
    for run, runtime in enumerate(runtimes, 1):
        instance = Instance.objects.create(
            task_class=task_class, principal=user, run_number=run, runtime=runtime
        )
        belief = Belief.objects.create(
            instance=instance, principal=user, slot=slot, value=run, source="user", acquired_at=T0
        )
        expected[belief.pk] = runtime.pk if runtime else None

    new = _migrate(("beliefs", "0038_belief_runtime"))
    filled = dict(new.get_model("beliefs", "Belief").objects.values_list("pk", "runtime_id"))
    assert filled == expected
