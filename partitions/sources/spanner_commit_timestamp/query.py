"""The poll query: one page of a table's rows after a cursor, in both SQL dialects.

Names (table, columns, index) come from settings that passed the identifier check and
are quoted besides, so a reserved word still works; every value (shard, cursor, end,
page size) is a typed parameter. The cursor comparison (commit timestamp, key...) >
(@after, @k0, ...) is expanded by hand, since neither dialect compares rows with ``>``
on Spanner, and written as ``ts >= @after AND (ts > @after OR (ts = @after AND ...))``:
the leading ``>=`` is the plain comparison with a constant that Spanner's commit
timestamp optimisation needs, which a bare ``OR`` at the top would rule out (seed 002).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from google.cloud.spanner_v1 import param_types

from partitions.sources.spanner_change_stream.query import GOOGLESQL, POSTGRESQL
from streams.times import format_time

from .settings import check_identifier
from .values import PARAM_TYPES, bind

ONE_US = timedelta(microseconds=1)


@dataclass(frozen=True)
class TableSpec:
    """The watched table as the settings name it; every name a checked identifier."""

    table: str
    timestamp_column: str
    key_columns: tuple[str, ...]
    shard_column: str = ""
    index: str = ""

    def __post_init__(self):
        for name, what in [
            (self.table, "table name"),
            (self.timestamp_column, "timestamp column"),
            *((k, "key column") for k in self.key_columns),
        ]:
            check_identifier(name, what)
        if not self.key_columns:
            raise ValueError("at least one key column is needed")
        for name, what in [(self.shard_column, "shard column"), (self.index, "index name")]:
            if name:
                check_identifier(name, what)

    @classmethod
    def from_settings(cls, values: dict[str, Any]) -> TableSpec:
        """Return the spec of cleaned settings."""
        return cls(
            values["table"],
            values["timestamp_column"],
            tuple(values["key_columns"]),
            values.get("shard_column", ""),
            values.get("index", ""),
        )


@dataclass(frozen=True)
class Cursor:
    """Where reading continues: after the row (after, key...); with key None, after every row at ``after``."""

    after: datetime
    key: tuple | None = None
    types: tuple[str, ...] = field(default=())

    @classmethod
    def starting_at(cls, at: datetime) -> Cursor:
        """Return the cursor of a partition not read yet: rows committed at ``at`` or later."""
        # Commit timestamps have microsecond precision (seed 002), so "after at - 1 us"
        # is exactly "at or after at".
        return cls(at.astimezone(UTC) - ONE_US)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cursor:
        """Return the cursor stored as ``to_json`` wrote it; ValueError if it is not one."""
        try:
            after = datetime.fromisoformat(data["after"].replace("Z", "+00:00")).astimezone(UTC)
            key = data.get("key")
            types = tuple(data.get("types") or ())
        except (KeyError, AttributeError, TypeError) as error:
            raise ValueError(f"not a cursor of this kind: {data!r:.200}") from error
        if key is not None and len(key) != len(types):
            raise ValueError(f"cursor key and types differ in length: {data!r:.200}")
        return cls(after, None if key is None else tuple(key), types)

    def to_json(self) -> dict[str, Any]:
        """Return the cursor as JSON-able values (the pipeline stores it)."""
        key = None if self.key is None else list(self.key)
        return {"after": format_time(self.after), "key": key, "types": list(self.types)}


@dataclass(frozen=True)
class PageQuery:
    """One page's SQL text with its parameters and their Spanner types."""

    sql: str
    params: dict[str, Any]
    param_types: dict[str, Any]


class _Binder:
    """Bind each named value once: @name in GoogleSQL, $n (parameter pn) in PostgreSQL."""

    def __init__(self, dialect: str):
        self.dialect = dialect
        self.params: dict[str, Any] = {}
        self.types: dict[str, Any] = {}
        self._placeholders: dict[str, str] = {}

    def __call__(self, name: str, value: Any, type_) -> str:
        found = self._placeholders.get(name)
        if found is not None:
            return found
        if self.dialect == GOOGLESQL:
            key, placeholder = name, f"@{name}"
        else:
            number = len(self._placeholders) + 1
            key, placeholder = f"p{number}", f"${number}"
        self._placeholders[name] = placeholder
        self.params[key], self.types[key] = value, type_
        return placeholder


def quote(name: str, dialect: str) -> str:
    """Return a checked identifier quoted for the dialect (it can hold no quote to escape)."""
    check_identifier(name, "name")
    return f"`{name}`" if dialect == GOOGLESQL else f'"{name}"'


def shard_type(shard: int | str):
    """Return the parameter type of a shard value: INT64 for an int, else STRING."""
    return param_types.INT64 if isinstance(shard, int) else param_types.STRING


def page_query(
    spec: TableSpec, dialect: str, cursor: Cursor, shard: int | str | None, end: datetime | None, limit: int
) -> PageQuery:
    """Return the query for the next page of rows after cursor (of one shard), up to end."""
    if dialect not in (GOOGLESQL, POSTGRESQL):
        raise ValueError(f"unknown dialect {dialect!r}")
    q = lambda name: quote(name, dialect)  # noqa: E731 - a local shorthand
    bind_ = _Binder(dialect)
    ts = q(spec.timestamp_column)
    where = []
    if spec.shard_column:
        if shard is None:
            raise ValueError("a sharded table is read one shard at a time")
        column = q(spec.shard_column)
        # IS NOT NULL as Spanner Change Watcher writes it (seed 004): it tells the
        # planner the NULL_FILTERED index holds every row the query can return.
        where += [f"{column} IS NOT NULL", f"{column} = {bind_('shard', shard, shard_type(shard))}"]
    where.append(_after_cursor(ts, [q(k) for k in spec.key_columns], cursor, bind_))
    if end is not None:
        where.append(f"{ts} <= {bind_('end', end.astimezone(UTC), param_types.TIMESTAMP)}")
    nulls = "" if dialect == GOOGLESQL else " NULLS FIRST"  # GoogleSQL's order, in both
    order = ", ".join([ts, *(f"{q(k)}{nulls}" for k in spec.key_columns)])
    sql = (
        f"SELECT * FROM {q(spec.table)}{_hint(spec.index, dialect)} WHERE {' AND '.join(where)} "
        f"ORDER BY {order} LIMIT {bind_('limit', limit, param_types.INT64)}"
    )
    return PageQuery(sql, bind_.params, bind_.types)


def _hint(index: str, dialect: str) -> str:
    """Return the FORCE_INDEX table hint for an index ("" for none), as the dialect writes it."""
    if not index:
        return ""
    check_identifier(index, "index name")
    return f"@{{FORCE_INDEX={index}}}" if dialect == GOOGLESQL else f" /*@ FORCE_INDEX = {index} */"


def _after_cursor(ts: str, keys: list[str], cursor: Cursor, bind_: _Binder) -> str:
    """Return the predicate (ts, keys...) > cursor, expanded column by column."""
    after = bind_("after", cursor.after, param_types.TIMESTAMP)
    if cursor.key is None:
        return f"{ts} > {after}"
    if len(cursor.key) != len(keys):
        raise ValueError(f"the cursor has {len(cursor.key)} key values for {len(keys)} key columns")
    keys_after = _key_after(keys, cursor, bind_, 0)
    return f"{ts} >= {after} AND ({ts} > {after} OR ({ts} = {after} AND {keys_after}))"


def _key_after(keys: list[str], cursor: Cursor, bind_: _Binder, i: int) -> str:
    """Return (keys[i:]) > (cursor.key[i:]); NULL sorts first, as GoogleSQL orders it."""
    column, value, type_ = keys[i], cursor.key[i], cursor.types[i]
    if value is None:
        greater, equal = f"{column} IS NOT NULL", f"{column} IS NULL"
    else:
        placeholder = bind_(f"k{i}", bind(value, type_), PARAM_TYPES[type_])
        greater, equal = f"{column} > {placeholder}", f"{column} = {placeholder}"
    if i == len(keys) - 1:
        return greater
    return f"({greater} OR ({equal} AND {_key_after(keys, cursor, bind_, i + 1)}))"
