"""A constant written into a query's text, for the partial indexes' conditions."""

from __future__ import annotations

from typing import Any

from django.db.models import CharField, Expression, Field, IntegerField


class Written(Expression):
    """A constant of the application's own (an int, or a str such as an enum's value) written
    into the query's text instead of passed as a parameter. A database uses a partial index only
    where the query's own text implies the index's condition, which a parameter never does
    (SQLite plans the statement once, PostgreSQL's generic plan of a prepared statement the
    same): `filter(run_number__lte=Written(3))` uses an index WHERE run_number <= 3.

    Never for a value that comes from a request: only ints and strings without a quote or a
    percent sign are accepted."""

    def __init__(self, value: int | str) -> None:
        output: Field[Any, Any] = IntegerField() if isinstance(value, int) else CharField()
        super().__init__(output_field=output)
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TypeError(f"Written takes an int or a str, not {type(value).__name__}")
        if isinstance(value, str) and ("'" in value or "%" in value or "\\" in value):
            raise ValueError(f"Written does not write {value!r}: a quote, % or \\")
        self.value = value

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[str | int, ...]]:  # noqa: ANN401
        if isinstance(self.value, int):
            return str(int(self.value)), ()
        return f"'{self.value}'", ()
