"""/insights/: convergence per run and confirmation fatigue, for classifiers and reviewers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs.models import Prompt, PromptState, RuntimeAPIKey, Slot, TaskInstance
from beliefs.selectors import insights
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond, prompts_mark_shown
from tests.builders import changed_keys, open_instance, register_task_class

pytestmark = pytest.mark.django_db


def _transfer(actor: Actor) -> None:
    register_task_class(
        key="t.transfer",
        name="Transfer",
        slots=[{"key": "iban"}, {"key": "note"}],
        decisions=[],
        actor=actor,
    )
    Slot.objects.filter(key="iban").update(risk_class="irreversible")
    Slot.objects.filter(key="note").update(risk_class="reversible")


def _run(actor: Actor, user: User, *, world: dict, keep: bool = True) -> TaskInstance:
    """Open, plan, and answer every blocking prompt (confirm when pre-filled, else answer)."""
    instance = open_instance(
        task_class_key="t.transfer", principal=user.username, world=world, actor=actor
    )
    instance_plan(instance=instance, actor=actor)
    for prompt in instance.prompts.filter(state=PromptState.OPEN, blocking=True):
        prompts_mark_shown(instance=prompt.instance, prompts=[prompt], user=user)
        Prompt.objects.filter(pk=prompt.pk).update(shown_at=timezone.now() - timedelta(seconds=5))
        if prompt.route == "CONFIRM" and keep:
            prompt_respond(
                prompt_id=prompt.pk,
                user=user,
                action="confirm",
                version=prompt.version,
                acknowledged=changed_keys(prompt),  # read, and kept all the same
            )
        else:
            prompt_respond(
                prompt_id=prompt.pk,
                user=user,
                action="edit" if prompt.route == "CONFIRM" else "answer",
                version=prompt.version,
                value=f"value-{prompt.slot.key}-{instance.run_number}",
                value_confirmation=f"value-{prompt.slot.key}-{instance.run_number}",
            )
    return instance


@pytest.fixture
def history(alice: User, runtime_key: tuple[RuntimeAPIKey, str]) -> None:
    actor = Actor(key=runtime_key[0])
    _transfer(actor)
    _run(actor, alice, world={"iban": {"holder": "Bob"}})  # run 1: both slots asked
    _run(actor, alice, world={"iban": {"holder": "Bob"}})  # run 2: iban confirmed, note surfaced
    _run(actor, alice, world={"iban": {"holder": "Eve"}})  # run 3: world changed, still kept


def test_it_shows_blocking_prompts_falling_to_one_per_irreversible_slot(history: None) -> None:
    (series,) = insights.convergence()
    assert [(p.run_number, p.blocking_per_instance) for p in series.points] == [
        (1, 2.0),
        (2, 1.0),
        (3, 1.0),
    ]


def test_it_counts_confirmations_kept_although_the_world_changed(history: None) -> None:
    fatigue = insights.fatigue()
    assert fatigue.answered_blocking == 4
    assert fatigue.confirms == 2 and fatigue.confirms_unchanged == 2
    assert fatigue.confirms_world_changed == 1
    assert fatigue.confirms_world_changed_unchanged == 1
    assert fatigue.dwell_median_s is not None and 4 <= fatigue.dwell_median_s <= 60
    assert fatigue.unchanged_confirm_rate == 1.0


def test_it_summarises_only_the_latest_window(
    history: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs 2 and 3 are the two latest planned instances; run 3's iban and run 2's iban the two
    # latest answered blocking prompts (both kept by "confirm").
    monkeypatch.setattr(insights, "WINDOW", 2)
    (series,) = insights.convergence()
    assert [(p.run_number, p.blocking_per_instance) for p in series.points] == [(2, 1.0), (3, 1.0)]
    fatigue = insights.fatigue()
    assert fatigue.answered_blocking == 2
    assert fatigue.confirms == 2 and fatigue.confirms_world_changed == 1


def test_it_reports_nothing_rather_than_dividing_by_zero(db: None) -> None:
    fatigue = insights.fatigue()
    assert fatigue.dwell_median_s is None
    assert fatigue.unchanged_confirm_rate is None
    assert fatigue.kept_despite_change_rate is None
    assert insights.convergence() == []


@pytest.mark.parametrize("who", ["carol", "rita"])
def test_it_shows_the_page_to_classifiers_and_reviewers(
    who: str, request: pytest.FixtureRequest, history: None
) -> None:
    client = Client()
    client.force_login(request.getfixturevalue(who))
    response = client.get("/insights/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "t.transfer" in body and "<svg" in body
    assert "Kept the old value although the world had changed" in body
    assert "1 of 1 (100 %)" in body


def test_it_refuses_end_users_and_sends_anonymous_users_to_sign_in(alice: User) -> None:
    client = Client()
    assert client.get("/insights/").status_code == 302
    client.force_login(alice)
    assert client.get("/insights/").status_code == 403


def test_it_runs_the_same_number_of_queries_for_more_history(
    carol: User,
    history: None,
    alice: User,
    runtime_key: tuple[RuntimeAPIKey, str],
    django_assert_max_num_queries: object,
) -> None:
    client = Client()
    client.force_login(carol)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        client.get("/insights/")
    actor = Actor(key=runtime_key[0])
    for _ in range(5):
        _run(actor, alice, world={"iban": {"holder": "Eve"}})
    with CaptureQueriesContext(connection) as large:
        client.get("/insights/")
    assert len(large.captured_queries) == len(small.captured_queries)


def test_the_databases_dwell_and_world_change_are_pythons(history: None) -> None:
    """The dwell seconds and "the world changed" that the database computes for each answered
    prompt are what Python reads off the same rows, to the microsecond, whole seconds and
    diffs without a "change" included."""
    answered = list(Prompt.objects.filter(state=PromptState.ANSWERED, blocking=True))
    base = timezone.now().replace(microsecond=0)
    shapes = [
        (timedelta(0), timedelta(seconds=3)),  # whole seconds on both sides
        (timedelta(microseconds=999_999), timedelta(seconds=1, microseconds=1)),
        (timedelta(microseconds=123_456), timedelta(days=1, microseconds=654_321)),
        (timedelta(seconds=7), timedelta(seconds=7, microseconds=1)),
    ]
    diffs: list[list[dict[str, str]] | None] = [
        [{"path": "a", "change": "unchanged"}],
        [{"path": "a"}],
        [],
        [{"path": "a", "change": "unchanged"}, {"path": "b", "change": "changed"}],
    ]
    for prompt, (shown, responded), diff in zip(answered, shapes, diffs, strict=True):
        Prompt.objects.filter(pk=prompt.pk).update(
            shown_at=base + shown,
            responded_at=base + responded,
            route="CONFIRM",
            action="confirm",
            world_diff=diff,
        )
    expected = sorted((r - s).total_seconds() for s, r in shapes)
    fatigue = insights.fatigue()
    assert fatigue.dwell_median_s == (expected[1] + expected[2]) / 2
    assert fatigue.dwell_p90_s == expected[3]
    assert fatigue.fast_answers == sum(1 for d in expected if d < insights.FAST_SECONDS)
    assert fatigue.confirms_world_changed == 2  # the entry without "change", and "changed"
