"""Who may see an instance, defined once: the runtime that opened it (through any of its keys)
or the person it is for (its principal). Everyone else is told there is no such instance.

Every read that checks ownership takes an `Owner`: the ORM's reads filter with `Owner.q`, the
fixed SQL of the hot reads (`selectors.rows`) with `Owner.sql`, so the rule is written here
only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import Q

from beliefs.models import TaskInstance
from beliefs.selectors import rows


@dataclass(frozen=True)
class Owner:
    """One who may see an instance: `field` is the instance's column that must name `id`."""

    field: Literal["runtime", "principal"]
    id: int

    @classmethod
    def of(cls, *, runtime_id: int | None = None, principal_id: int | None = None) -> Owner:
        """The runtime or the principal: exactly one of the two."""
        if runtime_id is not None and principal_id is None:
            return cls("runtime", runtime_id)
        if principal_id is not None and runtime_id is None:
            return cls("principal", principal_id)
        raise ValueError("give exactly one of runtime_id and principal_id")

    def q(self, path: str = "") -> Q:
        """The instance at `path` (`""` for an instance, `"instance__"` from a prompt) is
        this owner's."""
        return Q(**{f"{path}{self.field}_id": self.id})

    def sql(self, alias: str | None = None) -> str:
        """`Owner.q` in SQL, of the instance table (under `alias`, when given): one parameter,
        `self.id`."""
        return f"{rows.column(TaskInstance, self.field, alias)} = %s"


def owned_instance(instance_id: Any, owner: Owner) -> TaskInstance | None:
    """The instance, with its task class and principal, if it is `owner`'s; else None."""
    return (
        TaskInstance.objects.select_related("task_class", "principal")
        .filter(owner.q(), pk=instance_id)
        .first()
    )


def owned_rows(
    sql: Callable[[str], str], instance_id: Any, owner: Owner, columns: rows.Fields
) -> list[list[Any]]:
    """The rows of `sql(owner.sql())` (fixed SQL of an instance that must be `owner`'s), whose
    parameters are the instance's id, then the owner's."""
    params = [rows.prepare(TaskInstance, "id", instance_id), owner.id]
    return rows.fetch(sql(owner.sql()), params, columns)
