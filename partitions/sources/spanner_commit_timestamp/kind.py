"""The source kind "spanner_commit_timestamp": a Spanner table watched by its commit timestamp column."""

from __future__ import annotations

from typing import Any

from partitions.sources.kinds import Advice, OwnTokens, ReadKind
from partitions.sources.spanner_change_stream.query import GOOGLESQL
from partitions.sources.spanner_change_stream.reader import connect

from . import settings as settings_module
from .advisor import advise
from .landing import READ_METHOD
from .source import CommitTimestampSource


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
