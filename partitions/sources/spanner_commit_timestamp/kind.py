"""The source kind "spanner_commit_timestamp": a Spanner table watched by its commit timestamp column."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from partitions.sources import costs
from partitions.sources.checks import Check
from partitions.sources.kinds import Advice, Assumption, OwnTokens, ReadKind
from partitions.sources.spanner_change_stream.query import GOOGLESQL
from partitions.sources.spanner_change_stream.reader import connect

from . import checks as source_checks
from . import settings as settings_module
from .advisor import advise
from .landing import READ_METHOD
from .source import CommitTimestampSource

# Each poll is one indexed query per shard; Google publishes no CPU figure for it.
POLL_CPU = (0.0, 0.0, 0.05)
POLL_CPU_WHY = "polling queries on an indexed table: 0-5 % of CPU, an assumption to set"


class SpannerCommitTimestampKind(OwnTokens, ReadKind):
    """Spanner tables polled by commit timestamp, as Spanner Change Watcher does (fixed shards)."""

    name = "spanner_commit_timestamp"
    label = "Spanner table (commit timestamp)"
    read_method = READ_METHOD
    settings = settings_module.SETTINGS
    lineage = False
    windows = False  # a read is one poll up to the stream's end; the next waits a poll interval

    def clean(self, values: dict[str, Any]) -> dict[str, Any]:
        """Return the settings cleaned (types, defaults), or raise SettingsError naming each bad one."""
        return settings_module.clean(values)

    def connect(self, values: dict[str, Any]) -> CommitTimestampSource:
        """Return a Source for cleaned settings (SPANNER_EMULATOR_HOST applies when no host is set)."""
        database = connect(
            values["project"], values["instance"], values["database"], values.get("emulator_host") or None
        )
        return CommitTimestampSource(database, values)

    def checks(self, values: dict[str, Any], start: datetime | None = None) -> list[Check]:
        """Return the database, table, column, index and query plan checks."""
        return source_checks.checks(values, start)

    def reread_cursor(self, cursor: dict[str, Any], at: datetime) -> dict[str, Any]:
        """Return {}: a read with no cursor starts at the partition's watermark."""
        return {}

    def describe(self, values: dict[str, Any]) -> str:
        """Return one line naming the source, as pages show it."""
        shards = values.get("shards") or ()
        where = f"{values.get('project')}/{values.get('instance')}/{values.get('database')}"
        sharding = f", {len(shards)} shards of {values.get('shard_column')}" if shards else ""
        return f"{where}: table {values.get('table')} by {values.get('timestamp_column')}{sharding}"

    def notes(self, values: dict[str, Any]) -> list[str]:
        """Return the limits of watching a table by commit timestamp."""
        return [
            "Deletes are invisible to this method: a deleted row simply stops appearing. Use a change "
            "stream (or soft deletes) if deletes matter.",
            "An insert and an update look the same: every row read lands as one UPSERT with the row's "
            "values at that moment.",
            "A row written twice between two polls is seen once, with its newer values.",
        ]

    def cost_model(self, values: dict[str, Any]) -> tuple[Assumption, ...]:
        """Return Spanner's prices with nothing retained: the table is the data; reading is the polls' CPU."""
        return costs.spanner(
            0.0, "none: no change records are kept, the table itself is read", POLL_CPU, POLL_CPU_WHY
        )

    def reading_assumptions(
        self, values: dict[str, Any], partitions: float, window_seconds: int, heartbeat_ms: int
    ) -> tuple[Assumption, ...]:
        """Return the poll queries a day: one per shard every poll interval."""
        every = heartbeat_ms / 1000
        polls = partitions * costs.DAY_SECONDS / every
        return (
            costs.per_day(
                "poll_queries_per_day", polls, "queries", f"shards x 86,400 / poll every {every:g} s"
            ),
        )

    def advice(self, values: dict[str, Any]) -> Advice:
        """Return the shard column and null-filtered index DDL for the table, and hotspot warnings."""
        return advise(
            values["table"],
            values["timestamp_column"],
            values["key_columns"],
            values.get("dialect") or GOOGLESQL,
            shard_column=values.get("shard_column", ""),
            shard_column_exists=bool(values.get("shard_column")),
        )


KIND = SpannerCommitTimestampKind()
