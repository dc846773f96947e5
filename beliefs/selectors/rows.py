"""Fixed SQL for the hottest reads, with each column converted exactly as the ORM converts it.

An authenticated instance read answers with a few dozen columns from four small queries; the
ORM spent several times the database's own time building, compiling and decoding those
queries, and then initialising a model instance per row, on every request. The reads here are
written once as SQL (from the models' own table and column names, so a renamed column fails
loudly) and their rows decoded with the converters the ORM itself would apply (the backend's,
then the field's), so a value reads back the same as through a queryset.

Only the read layer (`beliefs.selectors`) uses these helpers, for the few reads that its
docstring names: every read written with them has a straightforward ORM version of the same
name and signature in `tests/oracles.py`, and `tests/services/test_read_parity.py` holds the two
equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Field, Model, UUIDField
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

Converter = Callable[[Any, Any, Any], Any]
M = TypeVar("M", bound=Model)


def column(model: type[Model], name: str, alias: str | None = None) -> str:
    """`"alias"."column"` of a model's field, for writing SQL by hand."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    return f'"{alias or model._meta.db_table}"."{field.column}"'


def table(model: type[Model], alias: str | None = None) -> str:
    name = f'"{model._meta.db_table}"'
    return f'{name} AS "{alias}"' if alias else name


@cache
def _converters(vendor: str, fields: tuple[tuple[type[Model], str], ...]) -> list[Any]:
    """Per column: (field expression, its converters, whether a value is converted once per
    read) as the ORM's compiler chooses them; one list per database vendor and column list,
    built once per process.

    A UUID (an id or a reference to an instance) is immutable and the same few recur down a
    read (the beliefs of one earlier run name one instance): each is converted once per read.
    """
    chosen = []
    for model, name in fields:
        field = model._meta.get_field(name)
        assert isinstance(field, Field)
        col = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        chosen.append((col, found, isinstance(col.output_field, UUIDField)))
    return chosen


Fields = tuple[tuple[type[Model], str], ...]


def fetch(sql: str, params: Sequence[Any], fields: Fields) -> list[list[Any]]:
    """Rows of `sql`, each value converted as the ORM would read the field named beside it
    (one (model, field name) per selected column, in order)."""
    return convert(fetch_raw(sql, params), fields)


def fetch_raw(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Rows of `sql` as the database driver gives them, before any conversion (`convert`):
    plain values, JSON as its text, equal exactly when the stored values are."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def convert(rows: Sequence[Sequence[Any]], fields: Fields) -> list[list[Any]]:
    """`fetch`'s rows from `fetch_raw`'s."""
    db = connections[DEFAULT_DB_ALIAS]  # the connection itself: the proxy costs per lookup
    # Looked up once per call, only the columns that have converters; a UUID column gets a
    # dict of the values it has converted in this read.
    converters: list[tuple[int, Any, list[Converter], dict[Any, Any] | None]] = [
        (index, col, found, {} if once else None)
        for index, (col, found, once) in enumerate(_converters(db.vendor, fields))
        if found
    ]
    out = []
    for row in rows:
        values = list(row)
        for index, col, found, seen in converters:
            raw = value = values[index]
            if seen is not None and raw in seen:
                values[index] = seen[raw]
                continue
            for converter in found:
                value = converter(value, col, db)
            values[index] = value
            if seen is not None:
                seen[raw] = value
        out.append(values)
    return out


def concrete(model: type[Model]) -> tuple[tuple[type[Model], str], ...]:
    """Every concrete column of a model, in the order `Model.from_db` takes them."""
    return tuple((model, field.attname) for field in model._meta.concrete_fields)


@cache
def _attnames(model: type[Model]) -> tuple[str, ...]:
    return tuple(field.attname for field in model._meta.concrete_fields)


def instance_of(model: type[M], values: Sequence[Any], names: Sequence[str] | None = None) -> M:
    """A model instance from a row's `concrete(model)` values, as a queryset would make it.

    `Model.from_db` runs `__init__`, which sets each field through its descriptor and sends the
    init signals: planning makes a few model instances per slot, and that was most of a slot's
    cost. With no init signal receiver for the model (no field here needs one), the instance is
    the same when its attributes are set directly; with one, `from_db` is used. `names`: the
    attribute names of `values` when they are only some columns (the others are deferred).
    """
    names = _attnames(model) if names is None else names
    # No receiver at all (this project connects none) is the common case, and cheaper to see
    # than whether any of them listens for this model.
    if (pre_init.receivers or post_init.receivers) and (
        pre_init.has_listeners(model) or post_init.has_listeners(model)
    ):
        return model.from_db(DEFAULT_DB_ALIAS, list(names), values)
    instance = model.__new__(model)
    instance.__dict__.update(zip(names, values, strict=True))
    state = instance._state = ModelState()
    state.adding = False
    state.db = DEFAULT_DB_ALIAS
    return instance


def models_of(values: Sequence[Any], models: Sequence[type[Model]]) -> list[Any]:
    """The model instances of a row that read each of `models`' `concrete` columns in turn (an
    outer join's that found nothing is None), then whatever the row read after them."""
    found: list[Any] = []
    start = 0
    for model in models:
        end = start + len(concrete(model))
        part = values[start:end]
        found.append(instance_of(model, part) if part[0] is not None else None)
        start = end
    return [*found, *values[start:]]


def vendor() -> str:
    """The default database's vendor ("postgresql", "sqlite"): where fixed SQL differs."""
    return connections[DEFAULT_DB_ALIAS].vendor


def named_in(key: str, vendor: str) -> str:
    """SQL: `key` is one of the keys of a JSON list given as a parameter (`keys_param`)."""
    if vendor == "postgresql":
        # An array, read once: as `IN (SELECT ...)`, PostgreSQL could compare every key with
        # every element (a nested loop, quadratic in the action's slots).
        return f"{key} = ANY (ARRAY(SELECT jsonb_array_elements_text(CAST(%s AS jsonb))))"
    return f"{key} IN (SELECT value FROM json_each(%s))"


def keys_param(keys: Iterable[str]) -> str:
    """The parameter of `named_in`: the keys as a JSON list."""
    return json.dumps(list(keys))


def placeholders(count: int) -> str:
    """`%s, %s, …`: the parameters of an `IN (…)` list of `count` values."""
    return ", ".join(["%s"] * count)


def prepare(model: type[Model], name: str, value: Any) -> Any:
    """A parameter as the ORM would send it for the field (a UUID as 32 hex digits on SQLite)."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    return field.get_db_prep_value(value, connection, prepared=False)
