"""Who may do what. People are end users by default; classifiers and reviewers hold a permission
(granted through the groups of the same name).

A role is held as `User.has_perm` would say (every backend this project signs in with grants
permissions as Django's `ModelBackend` does: an active superuser holds every one, an inactive
person none, anyone else those granted to them or to a group of theirs), from one read of the
person's permissions, kept on the user object for the request as Django keeps its own."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from beliefs.selectors.permissions import permissions_of

CLASSIFY_PERMISSION = "beliefs.classify"
REVIEW_PERMISSION = "beliefs.review_proposals"
CLASSIFIERS_GROUP = "classifiers"
REVIEWERS_GROUP = "reviewers"


def _holds(user: User | AnonymousUser, permission: str) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    held: frozenset[str] | None = getattr(user, "_console_permissions", None)
    if held is None:
        held = permissions_of(user.pk)
        setattr(user, "_console_permissions", held)  # noqa: B010 - kept for the request
    return permission in held


def is_classifier(user: User | AnonymousUser) -> bool:
    return _holds(user, CLASSIFY_PERMISSION)


def is_reviewer(user: User | AnonymousUser) -> bool:
    return _holds(user, REVIEW_PERMISSION)


def role_names(user: User | AnonymousUser) -> list[str]:
    if not user.is_authenticated:
        return []
    roles = ["end user"]
    if is_classifier(user):
        roles.append("classifier")
    if is_reviewer(user):
        roles.append("reviewer")
    return roles


def ensure_role_groups() -> None:
    """Create the classifiers and reviewers groups with their permissions (idempotent)."""
    from django.contrib.auth.models import Group, Permission

    for group_name, perm in (
        (CLASSIFIERS_GROUP, CLASSIFY_PERMISSION),
        (REVIEWERS_GROUP, REVIEW_PERMISSION),
    ):
        app_label, codename = perm.split(".")
        group, _ = Group.objects.get_or_create(name=group_name)
        group.permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )


def grant_role(user: User, group_name: str) -> None:
    from django.contrib.auth.models import Group

    ensure_role_groups()
    user.groups.add(Group.objects.get(name=group_name))


def set_mapped_groups(user: User, mapped: set[str], given: set[str]) -> None:
    """Make `user` a member of exactly the groups of `given` among the groups of `mapped` (the
    ones single sign-on decides: `OIDC_GROUP_ROLES`); groups outside `mapped` are left as they
    are, so a group granted by hand in the console survives every sign-in. The classifiers and
    reviewers groups are created with their permissions, any other group (an approver group)
    bare."""
    from django.contrib.auth.models import Group

    if mapped & {CLASSIFIERS_GROUP, REVIEWERS_GROUP}:
        ensure_role_groups()
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in mapped}
    user.groups.remove(*(groups[name] for name in mapped - given))
    user.groups.add(*(groups[name] for name in mapped & given))
