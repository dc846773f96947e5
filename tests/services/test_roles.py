"""A role is held exactly as Django's `User.has_perm` says, over every combination of what
decides it: active or not, superuser or not, the permission granted to the person, to a group
of theirs, to both or neither (beside a permission that grants no role); and the person's
permissions are one query, read once for both roles."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, Group, Permission, User

from beliefs.roles import (
    CLASSIFY_PERMISSION,
    REVIEW_PERMISSION,
    ensure_role_groups,
    is_classifier,
    is_reviewer,
    role_names,
)

pytestmark = pytest.mark.django_db

ROLES = ((is_classifier, CLASSIFY_PERMISSION), (is_reviewer, REVIEW_PERMISSION))
GRANTS = (
    (),
    (CLASSIFY_PERMISSION,),
    (REVIEW_PERMISSION,),
    (CLASSIFY_PERMISSION, REVIEW_PERMISSION),
)


def _permission(name: str) -> Permission:
    app_label, codename = name.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def test_a_role_is_held_as_has_perm_says_over_every_combination() -> None:
    ensure_role_groups()
    other = Permission.objects.get(content_type__app_label="auth", codename="view_user")
    combos = itertools.product((True, False), (True, False), GRANTS, GRANTS)
    held = set()
    for n, (active, superuser, own, through_group) in enumerate(combos):
        user = User.objects.create_user(
            f"person{n}", password="x", is_active=active, is_superuser=superuser
        )
        user.user_permissions.add(other, *(_permission(p) for p in own))
        group = Group.objects.create(name=f"group{n}")
        group.permissions.add(other, *(_permission(p) for p in through_group))
        user.groups.add(group)
        for has_role, permission in ROLES:
            expected = User.objects.get(pk=user.pk).has_perm(permission)
            assert has_role(User.objects.get(pk=user.pk)) is expected, (
                active,
                superuser,
                own,
                through_group,
                permission,
            )
            held.add(expected)
    assert held == {True, False}
    # Another person's grants are not theirs.
    assert not is_classifier(User.objects.create_user("nobody", password="x"))


def test_an_anonymous_visitor_holds_no_role() -> None:
    assert not is_classifier(AnonymousUser())
    assert not is_reviewer(AnonymousUser())
    assert role_names(AnonymousUser()) == []


def test_both_roles_are_one_query(
    rita: User, django_assert_num_queries: Callable[[int], Any]
) -> None:
    person = User.objects.get(pk=rita.pk)  # a reviewer
    with django_assert_num_queries(1):
        assert role_names(person) == ["end user", "reviewer"]
        assert is_reviewer(person) and not is_classifier(person)
