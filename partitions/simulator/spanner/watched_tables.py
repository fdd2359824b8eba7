"""The tables with a commit-timestamp column that every simulated database serves.

Two histories, each shown under GoogleSQL and PostgreSQL names: ``events`` (no shard
column) and ``sharded_events`` (a stored shard column and a NULL_FILTERED index on
(shard, commit timestamp), as seed 004 builds one). Both dialects show the same rows;
only the names differ, the way a database migrated from one dialect to the other would.
The shard values are 0..shards-1 (the DDL shows a FARM_FINGERPRINT column folded into
that range; the simulator's own values come from its deterministic hash instead).
"""

from __future__ import annotations

from dataclasses import dataclass

from partitions.sources.spanner_change_stream.query import GOOGLESQL

# Row values are tuples in this order in every table; a sharded table adds the shard last.
TENANT, EVENT, KIND, QUANTITY, ACTIVE, COMMITTED, SHARD = range(7)
_CODES = ("INT64", "STRING", "STRING", "INT64", "BOOL", "TIMESTAMP", "INT64")


@dataclass(frozen=True)
class WatchedTable:
    """One table as one dialect names it: columns in row order, key, commit timestamp, shard, index."""

    history: str  # which generated history it shows: "events" or "sharded_events"
    dialect: str
    name: str
    columns: tuple[str, ...]
    index: str | None = None

    @property
    def sharded(self) -> bool:
        """Return whether the table has a shard column (the last one)."""
        return len(self.columns) > SHARD

    @property
    def key(self) -> tuple[str, str]:
        """Return the primary key columns, in key order."""
        return self.columns[TENANT], self.columns[EVENT]

    @property
    def timestamp(self) -> str:
        """Return the commit timestamp column."""
        return self.columns[COMMITTED]

    @property
    def shard(self) -> str | None:
        """Return the shard column, or None."""
        return self.columns[SHARD] if self.sharded else None

    def codes(self) -> tuple[str, ...]:
        """Return the Spanner type code of each column, in row order."""
        return _CODES[: len(self.columns)]

    def position(self, name: str) -> int | None:
        """Return the column's position, matching names as the dialect does; None if unknown."""
        for i, column in enumerate(self.columns):
            if same_name(column, name, self.dialect):
                return i
        return None

    def ddl(self, shards: int) -> list[str]:
        """Return the CREATE statements of the table (and its index) in its dialect."""
        if self.dialect == GOOGLESQL:
            return _googlesql_ddl(self, shards)
        return _postgresql_ddl(self, shards)


def same_name(declared: str, used: str, dialect: str) -> bool:
    """Return whether a name in a query refers to a declared one (GoogleSQL ignores case)."""
    return declared.lower() == used.lower() if dialect == GOOGLESQL else declared == used


_G_COLUMNS = ("TenantId", "EventId", "Kind", "Quantity", "Active", "LastModified")
_P_COLUMNS = ("tenant_id", "event_id", "kind", "quantity", "active", "last_modified")
TABLES = (
    WatchedTable("events", GOOGLESQL, "Events", _G_COLUMNS),
    WatchedTable(
        "sharded_events",
        GOOGLESQL,
        "ShardedEvents",
        (*_G_COLUMNS, "ShardId"),
        "ShardedEventsByShardLastModified",
    ),
    WatchedTable("events", "postgresql", "events", _P_COLUMNS),
    WatchedTable(
        "sharded_events",
        "postgresql",
        "sharded_events",
        (*_P_COLUMNS, "shard_id"),
        "sharded_events_by_shard_last_modified",
    ),
)


def find_table(dialect: str, name: str) -> WatchedTable | None:
    """Return the table of a dialect a query names, or None."""
    for table in TABLES:
        if table.dialect == dialect and same_name(table.name, name, dialect):
            return table
    return None


def _googlesql_ddl(t: WatchedTable, shards: int) -> list[str]:
    """Return the GoogleSQL CREATE statements of a table and its index."""
    c = t.columns
    shard = (
        f",\n  {c[SHARD]} INT64 AS "
        f"(MOD(MOD(FARM_FINGERPRINT({c[EVENT]}), {shards}) + {shards}, {shards})) STORED"
        if t.sharded
        else ""
    )
    statements = [
        f"CREATE TABLE {t.name} (\n  {c[TENANT]} INT64 NOT NULL,\n  {c[EVENT]} STRING(64) NOT NULL,\n"
        f"  {c[KIND]} STRING(16),\n  {c[QUANTITY]} INT64,\n  {c[ACTIVE]} BOOL,\n"
        f"  {c[COMMITTED]} TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true){shard}\n"
        f") PRIMARY KEY ({c[TENANT]}, {c[EVENT]})"
    ]
    if t.index:
        statements.append(f"CREATE NULL_FILTERED INDEX {t.index} ON {t.name} ({c[SHARD]}, {c[COMMITTED]})")
    return statements


def _postgresql_ddl(t: WatchedTable, shards: int) -> list[str]:
    """Return the PostgreSQL CREATE statements of a table and its index."""
    c = t.columns
    shard = (
        f",\n  {c[SHARD]} bigint GENERATED ALWAYS AS "
        f"(mod(mod(spanner.farm_fingerprint({c[EVENT]}), {shards}) + {shards}, {shards})) STORED"
        if t.sharded
        else ""
    )
    statements = [
        f"CREATE TABLE {t.name} (\n  {c[TENANT]} bigint NOT NULL,\n  {c[EVENT]} varchar(64) NOT NULL,\n"
        f"  {c[KIND]} varchar(16),\n  {c[QUANTITY]} bigint,\n  {c[ACTIVE]} boolean,\n"
        f"  {c[COMMITTED]} spanner.commit_timestamp NOT NULL{shard},\n"
        f"  PRIMARY KEY ({c[TENANT]}, {c[EVENT]})\n)"
    ]
    if t.index:
        statements.append(
            f"CREATE INDEX {t.index} ON {t.name} ({c[SHARD]}, {c[COMMITTED]}) "
            f"WHERE {c[SHARD]} IS NOT NULL AND {c[COMMITTED]} IS NOT NULL"
        )
    return statements
