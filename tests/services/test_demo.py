"""`python manage.py demo`: idempotent, and its run-2 plans show every route and rule."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from beliefs.domain.policy import Route, Rule
from beliefs.models import (
    Belief,
    InstanceStatus,
    Prompt,
    ProposalValidation,
    RuntimeAPIKey,
    TaskInstance,
)
from beliefs.roles import is_classifier, is_reviewer
from demo.data import DEMO_USERS, SCENARIOS

pytestmark = pytest.mark.django_db

# `demo` (tests/conftest.py) is the demo loaded once for this module; each test starts from it.


def run_demo() -> str:
    out = StringIO()
    call_command("demo", stdout=out)
    return out.getvalue()


def test_it_prints_every_login_and_a_working_runtime_key(demo: str) -> None:
    output = demo
    for username, password, _, _ in DEMO_USERS:
        assert username in output and password in output
        assert User.objects.get(username=username).check_password(password)
    key = output.split("Runtime API key (shown once): ")[1].split()[0]
    assert RuntimeAPIKey.objects.is_valid(key)
    assert "http://localhost:8000/" in output  # passkeys need a host name, not an IP


def test_it_gives_each_demo_user_their_role(demo: str) -> None:
    assert is_classifier(User.objects.get(username="carol"))
    assert not is_classifier(User.objects.get(username="alice"))
    assert is_reviewer(User.objects.get(username="rita"))
    assert not is_reviewer(User.objects.get(username="carol"))


def _counts() -> tuple[int, ...]:
    return (
        TaskInstance.objects.count(),
        Belief.objects.count(),
        Prompt.objects.count(),
        ProposalValidation.objects.count(),
    )


def test_it_is_idempotent(demo: str) -> None:
    counts = _counts()
    assert counts[3] > 0  # the proposal validations for rita are loaded too
    run_demo()
    assert _counts() == counts
    # Only the newest demo key works: earlier ones are revoked, never left lying around.
    assert RuntimeAPIKey.objects.filter(name="demo-runtime", revoked=False).count() == 1


def test_it_finishes_run_1_and_leaves_run_2_open_for_every_task_class(demo: str) -> None:
    for scenario in SCENARIOS:
        runs = {i.run_number: i for i in TaskInstance.objects.filter(task_class__key=scenario.key)}
        assert runs[1].status == InstanceStatus.READY, scenario.key
        assert runs[1].bindings_digest
        assert runs[2].status == InstanceStatus.AWAITING_USER, scenario.key


def test_it_shows_every_route_and_every_rule_across_the_run_2_plans(demo: str) -> None:
    seen = set()
    for instance in TaskInstance.objects.filter(run_number=2):
        for item in instance.plan_items:
            seen.add((item["route"], item["rule"]))
    assert {rule for _, rule in seen} == {r.value for r in Rule}
    assert {route for route, _ in seen} == {r.value for r in Route}


def test_each_instance_keeps_the_count_of_its_blocking_prompts(demo: str) -> None:
    # Planning keeps `blocking_asked`; the demo plans, re-plans, answers and re-classifies.
    counted = {i.pk: i.prompts.filter(blocking=True).count() for i in TaskInstance.objects.all()}
    kept = dict(TaskInstance.objects.values_list("pk", "blocking_asked"))
    assert kept == counted
    assert any(counted.values())
