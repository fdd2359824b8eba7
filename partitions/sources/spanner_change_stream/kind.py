"""The source kind "spanner_change_stream": a Spanner change stream, read partition by partition."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from partitions.sources import costs
from partitions.sources import spanner_settings as common
from partitions.sources.base import Setting, whole_hours
from partitions.sources.checks import Check
from partitions.sources.kinds import Assumption, OwnTokens, ReadKind

from . import checks as source_checks
from .landing import READ_METHOD
from .query import validate_stream_name
from .reader import connect
from .source import ChangeStreamSource

DIALECT_NAMES = {"googlesql": ", GoogleSQL", "postgresql": ", PostgreSQL"}
# Spanner keeps a change stream's records for its retention period: 1 to 7 days, 1 by default.
RETENTION_HOURS = (24, 168)
SETTINGS = (
    *common.DATABASE_SETTINGS,
    Setting("change_stream", "Change stream", help="the change stream's name", cli="--change-stream"),
    Setting(
        "retention_hours",
        "Retention (hours)",
        type="int",
        required=False,
        default=24,
        help="the change stream's retention_period, 24 to 168 hours: a stopped stream must resume within it",
        cli="--retention-hours",
        editable=True,
    ),
    common.EMULATOR_HOST,
)
# Google publishes no figure for the CPU a Spanner change stream costs (DESIGN §10).
SPANNER_CPU = (0.0, 0.0, 0.10)
SPANNER_CPU_WHY = "Google publishes no figure for Spanner change streams: 0-10 % of CPU, an assumption to set"


def _retention(value: Any) -> int:
    return whole_hours(value, *RETENTION_HOURS, default=24)


def _change_stream(value: Any) -> str:
    try:
        return validate_stream_name(str(value or "").strip())
    except ValueError as error:
        raise ValueError(str(error)) from None


class SpannerChangeStreamKind(OwnTokens, ReadKind):
    """Spanner change streams: partitions that split and merge, read window by window."""

    name = "spanner_change_stream"
    label = "Spanner change stream"
    read_method = READ_METHOD
    settings = SETTINGS
    lineage = True
    windows = True  # a read covers [watermark, watermark + window]; the next one starts at once

    def clean(self, values: dict[str, Any]) -> dict[str, Any]:
        """Return the settings cleaned, or raise SettingsError naming each bad one."""
        checks = (*common.DATABASE_CHECKS, ("change_stream", _change_stream), ("retention_hours", _retention))
        cleaned, errors = common.run_checks(values, checks, SETTINGS)
        common.raise_if(errors)
        return cleaned

    def connect(self, values: dict[str, Any]) -> ChangeStreamSource:
        """Return a Source for cleaned settings (SPANNER_EMULATOR_HOST applies when no host is set)."""
        database = connect(
            values["project"], values["instance"], values["database"], values.get("emulator_host") or None
        )
        return ChangeStreamSource(database, values)

    def checks(self, values: dict[str, Any], start: datetime | None = None) -> list[Check]:
        """Return the database, dialect, change stream, retention and permission checks."""
        return source_checks.checks(values, start)

    def reread_cursor(self, cursor: dict[str, Any], at: datetime) -> dict[str, Any]:
        """Return {}: a read with no cursor starts at the partition's watermark."""
        return {}

    def describe(self, values: dict[str, Any]) -> str:
        """Return one line naming the source, as pages show it."""
        dialect = DIALECT_NAMES.get(values.get("dialect", ""), "")
        where = f"{values.get('project')}/{values.get('instance')}/{values.get('database')}"
        return f"{where}: change stream {values.get('change_stream')}{dialect}"

    def retention(self, values: dict[str, Any]) -> timedelta:
        """Return the change stream's retention period (its records older than that are gone)."""
        return timedelta(hours=values.get("retention_hours") or 24)

    def cost_model(self, values: dict[str, Any]) -> tuple[Assumption, ...]:
        """Return Spanner's prices: records retained as storage, and a CPU share that is an assumption."""
        days = self.retention(values).total_seconds() / costs.DAY_SECONDS
        where = "the change stream's retention_period (this stream's setting); retained records are storage"
        return costs.spanner(days, where, SPANNER_CPU, SPANNER_CPU_WHY)

    def reading_assumptions(
        self, values: dict[str, Any], partitions: float, window_seconds: int, heartbeat_ms: int
    ) -> tuple[Assumption, ...]:
        """Return the change stream queries a day (one per partition window) and idle heartbeats."""
        return (
            costs.per_day(
                "reader_queries_per_day", partitions * costs.DAY_SECONDS / window_seconds, "queries",
                f"partitions x 86,400 / window of {window_seconds} s",
            ),
            costs.per_day(
                "idle_heartbeats_per_day", partitions * costs.DAY_SECONDS * 1000 / heartbeat_ms, "heartbeats",
                f"partitions x 86,400 / heartbeat of {heartbeat_ms / 1000:g} s on an idle stream",
                "apache/beam#38707: idle polling grows with partitions",
            ),
        )  # fmt: skip


KIND = SpannerChangeStreamKind()
