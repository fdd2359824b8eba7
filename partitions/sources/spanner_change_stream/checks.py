"""Checks of a Spanner change stream before a stream of it exists (pure Python, no Django).

In order: the database answers, its dialect is the one given, the change stream exists
(INFORMATION_SCHEMA.CHANGE_STREAMS), the start is inside its retention_period
(CHANGE_STREAM_OPTIONS; one day when unset), and the credentials may run the change
stream's initial query (run over one past second: it reads nothing but the roots).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from partitions.sources.base import SourceError
from partitions.sources.checks import CHECK_TIMEOUT_S, Check, CheckFailed
from partitions.sources.spanner_checks import SpannerProbe, database_checks, find_name, parse_duration, reason
from streams.times import format_time

from .query import GOOGLESQL
from .reader import ChangeStreamReader
from .records import ChildPartitionsRecord

DEFAULT_RETENTION = timedelta(days=1)  # Spanner's, when the change stream sets none


def checks(values: dict[str, Any], start: datetime | None = None) -> list[Check]:
    """Return the checks of a change stream's cleaned settings, from `start` (None: now)."""
    probe = SpannerProbe(values)
    found: dict[str, str] = {}

    def exists() -> str:
        names = [row[0] for row in probe.schema("CHANGE_STREAMS", ("CHANGE_STREAM_NAME",))]
        found["name"] = find_name(probe, names, values["change_stream"], "change stream")
        return f"change stream {found['name']} exists"

    def retention() -> str:
        name = found.get("name") or find_name(
            probe, [r[0] for r in probe.schema("CHANGE_STREAMS", ("CHANGE_STREAM_NAME",))],
            values["change_stream"], "change stream",
        )  # fmt: skip
        rows = probe.schema(
            "CHANGE_STREAM_OPTIONS",
            ("OPTION_VALUE",),
            CHANGE_STREAM_NAME=name,
            OPTION_NAME="retention_period",
        )
        kept = parse_duration(rows[0][0]) if rows else DEFAULT_RETENTION
        now = datetime.now(UTC)
        oldest = now - kept
        at = start or now
        if at < oldest:
            raise CheckFailed(
                f"the start {format_time(at)} is older than the change stream keeps records "
                f"(retention {_hours(kept)}: from {format_time(oldest)} on)"
            )
        return f"retention {_hours(kept)}: the start {format_time(at)} is inside it"

    def query() -> str:
        reader = ChangeStreamReader(
            probe.database,
            values["change_stream"],
            probe.dialect,
            10_000,
            timeout=CHECK_TIMEOUT_S,
            unavailable_s=CHECK_TIMEOUT_S,
        )
        end = datetime.now(UTC) - timedelta(seconds=1)
        roots = 0
        try:
            for record in reader.read(None, end - timedelta(seconds=1), end):
                if isinstance(record, ChildPartitionsRecord):
                    roots += len(record.child_partitions)
        except SourceError as error:
            raise CheckFailed(_query_refused(error, values["change_stream"], probe.dialect)) from error
        return f"the initial query ran: {roots} root partitions"

    return [
        *database_checks(probe),
        Check("change stream exists", "change_stream", exists),
        Check("start inside retention", "start_at", retention),
        Check("change stream query allowed", "", query),
    ]


def _query_refused(error: SourceError, stream: str, dialect: str) -> str:
    """Return why the change stream query failed; for a permission, what the credentials need."""
    if error.code != "PERMISSION_DENIED":
        return reason(error)
    google = dialect == GOOGLESQL
    function = f"TABLE FUNCTION READ_{stream}" if google else f"FUNCTION spanner.read_json_{stream}"
    return (
        f"{reason(error)}; the credentials may not read the change stream: give them "
        f"spanner.databases.select on the database (IAM), or, with a database role, SELECT ON CHANGE "
        f"STREAM {stream} and EXECUTE ON {function}"
    )


def _hours(span: timedelta) -> str:
    hours = span.total_seconds() / 3600
    return f"{hours:g} h"
