"""Checks of a table watched by commit timestamp before a stream of it exists (pure Python, no Django).

In order: the database answers, its dialect is the one given, the table exists
(INFORMATION_SCHEMA.TABLES), its commit timestamp column exists and allows commit
timestamps (COLUMN_OPTIONS' allow_commit_timestamp in GoogleSQL, the type
spanner.commit_timestamp in PostgreSQL), the key columns and the shard column exist,
the index exists (INDEXES), and the poll query's plan reads that index (PLAN mode:
the poll the reader will send, planned and not run).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from partitions.sources.checks import Check, CheckFailed
from partitions.sources.spanner_change_stream.query import GOOGLESQL
from partitions.sources.spanner_checks import SpannerProbe, database_checks, find_name

from .query import Cursor, TableSpec, page_query


class _Table:
    """What the checks learnt of the table: its declared name and columns (name -> type)."""

    def __init__(self, probe: SpannerProbe, values: dict[str, Any]):
        self.probe, self.values = probe, values
        self._name = ""
        self._columns: dict[str, str] | None = None

    @property
    def name(self) -> str:
        if not self._name:
            names = [row[0] for row in self.probe.schema("TABLES", ("TABLE_NAME",))]
            self._name = find_name(self.probe, names, self.values["table"], "table")
        return self._name

    def column(self, given: str, what: str) -> tuple[str, str]:
        """Return (declared name, Spanner type) of a column of the table; CheckFailed if it has none."""
        if self._columns is None:
            rows = self.probe.schema("COLUMNS", ("COLUMN_NAME", "SPANNER_TYPE"), TABLE_NAME=self.name)
            self._columns = {row[0]: row[1] for row in rows}
        declared = find_name(self.probe, list(self._columns), given, what, f" in table {self.name}")
        return declared, self._columns[declared]


def checks(values: dict[str, Any], start: datetime | None = None) -> list[Check]:
    """Return the checks of a watched table's cleaned settings."""
    probe = SpannerProbe(values)
    table = _Table(probe, values)

    def table_exists() -> str:
        return f"table {table.name} exists"

    def commit_column() -> str:
        name, spanner_type = table.column(values["timestamp_column"], "column")
        if probe.dialect == GOOGLESQL:
            if spanner_type.upper() != "TIMESTAMP":
                raise CheckFailed(f"column {name} is {spanner_type}, not a TIMESTAMP")
            rows = probe.schema(
                "COLUMN_OPTIONS", ("OPTION_VALUE",),
                TABLE_NAME=table.name, COLUMN_NAME=name, OPTION_NAME="allow_commit_timestamp",
            )  # fmt: skip
            if not rows or rows[0][0].upper() != "TRUE":
                raise CheckFailed(
                    f"column {name} does not allow commit timestamps: "
                    f"ALTER TABLE {table.name} ALTER COLUMN {name} SET OPTIONS (allow_commit_timestamp=true)"
                )
        elif spanner_type.lower() != "spanner.commit_timestamp":
            raise CheckFailed(f"column {name} is {spanner_type}, not spanner.commit_timestamp")
        return f"column {name} holds commit timestamps"

    def key_columns() -> str:
        names = [table.column(key, "key column")[0] for key in values["key_columns"]]
        return f"key columns {', '.join(names)} exist"

    def shard_column() -> str:
        if not values.get("shard_column"):
            return "not set: the table is read as one partition"
        name, spanner_type = table.column(values["shard_column"], "shard column")
        return f"column {name} ({spanner_type}) exists"

    def index() -> str:
        if not values.get("index"):
            return "not set: each poll scans the table"
        rows = probe.schema("INDEXES", ("INDEX_NAME",), TABLE_NAME=table.name)
        name = find_name(probe, [r[0] for r in rows], values["index"], "index", f" on table {table.name}")
        return f"index {name} exists"

    def plan() -> str:
        shards = values.get("shards") or [None]
        cursor = Cursor.starting_at(start or datetime.now(UTC))
        query = page_query(TableSpec.from_settings(values), probe.dialect, cursor, shards[0], None, 1)
        scans = probe.plan_scans(query.sql, query.params, query.param_types)
        shown = ", ".join(f"{kind} of {target}" for kind, target in scans) or "no scan"
        if values.get("index") and not any(probe.same(target, values["index"]) for _, target in scans):
            raise CheckFailed(f"the poll query's plan does not read index {values['index']}: {shown}")
        return f"the poll query's plan: {shown}"

    return [
        *database_checks(probe),
        Check("table exists", "table", table_exists, needed=True),
        Check("commit timestamp column", "timestamp_column", commit_column),
        Check("key columns exist", "key_columns", key_columns),
        Check("shard column exists", "shard_column", shard_column),
        Check("index exists", "index", index),
        Check("poll query uses the index", "index", plan),
    ]
