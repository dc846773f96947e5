"""The permissions a person holds, their own and their groups', in one query of fixed SQL:
every person page's navigation reads them (the classifiers' and reviewers' links), where
Django's `ModelBackend` reads the two apart through the ORM (named, with its figure, in the
read layer's docstring; `tests/services/test_roles.py` holds `beliefs.roles` equal to
`User.has_perm` over every combination)."""

from __future__ import annotations

from functools import cache

from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType

from beliefs.selectors import rows


@cache
def _held_sql() -> str:
    col = rows.column
    own = User.user_permissions.through
    member = User.groups.through
    granted = Group.permissions.through
    return (
        f"SELECT {col(ContentType, 'app_label')}, {col(Permission, 'codename')}"
        f" FROM {rows.table(Permission)} INNER JOIN {rows.table(ContentType)}"
        f" ON {col(ContentType, 'id')} = {col(Permission, 'content_type')}"
        f" WHERE {col(Permission, 'id')} IN ("
        f"SELECT {col(own, 'permission')} FROM {rows.table(own)} WHERE {col(own, 'user')} = %s"
        f" UNION SELECT {col(granted, 'permission')} FROM {rows.table(granted)}"
        f" INNER JOIN {rows.table(member)} ON {col(member, 'group')} = {col(granted, 'group')}"
        f" WHERE {col(member, 'user')} = %s)"
    )


def permissions_of(user_id: int) -> frozenset[str]:
    """Every permission ("app_label.codename") granted to the person or to a group of theirs
    (whether they are active or a superuser is the caller's to weigh, as `ModelBackend`
    does)."""
    columns = ((ContentType, "app_label"), (Permission, "codename"))
    found = rows.fetch(_held_sql(), [user_id, user_id], columns)
    return frozenset(f"{app_label}.{codename}" for app_label, codename in found)
