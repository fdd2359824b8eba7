"""Query text and typed parameters for change stream reads in both SQL dialects.

The stream name becomes part of the SQL text (a table-valued function cannot be a
parameter), so it is checked against a strict identifier pattern before any text is
built; everything else is bound as a typed parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.cloud.spanner_v1 import param_types

from .errors import QueryValidationError

GOOGLESQL = "googlesql"
POSTGRESQL = "postgresql"
DIALECTS = (GOOGLESQL, POSTGRESQL)

MIN_HEARTBEAT_MS = 1_000
MAX_HEARTBEAT_MS = 300_000

# Spanner schema object names: a letter, then letters, digits or underscores, at most
# 128 characters. Anything else (quotes, spaces, semicolons, comment markers) is refused.
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")

_GOOGLESQL_TEMPLATE = (
    "SELECT ChangeRecord FROM READ_{name} ("
    "start_timestamp => @startTimestamp, "
    "end_timestamp => @endTimestamp, "
    "partition_token => @partitionToken, "
    "heartbeat_milliseconds => @heartbeatMillis)"
)
_POSTGRESQL_TEMPLATE = 'SELECT * FROM "spanner"."read_json_{name}" ($1, $2, $3, $4, null)'


@dataclass(frozen=True)
class ChangeStreamQuery:
    """One change stream read: SQL text plus parameters and their Spanner types."""

    sql: str
    params: dict[str, Any]
    param_types: dict[str, Any]
    dialect: str
    partition_token: str | None
    start: datetime
    end: datetime | None


def validate_stream_name(name: str) -> str:
    """Return the name if it is a valid change stream identifier, else raise."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise QueryValidationError(
            f"invalid change stream name {name!r}: use a letter followed by letters, "
            "digits or underscores (at most 128 characters)"
        )
    return name


def validate_heartbeat(heartbeat_ms: int) -> int:
    """Return heartbeat_ms if it lies within Spanner's 1,000-300,000 ms, else raise."""
    if isinstance(heartbeat_ms, bool) or not isinstance(heartbeat_ms, int):
        raise QueryValidationError(f"heartbeat_milliseconds must be an integer, got {heartbeat_ms!r}")
    if not MIN_HEARTBEAT_MS <= heartbeat_ms <= MAX_HEARTBEAT_MS:
        raise QueryValidationError(
            f"heartbeat_milliseconds must be between {MIN_HEARTBEAT_MS:,} and "
            f"{MAX_HEARTBEAT_MS:,}, got {heartbeat_ms:,}"
        )
    return heartbeat_ms


def _utc(value: datetime, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise QueryValidationError(f"{what} must be a datetime, got {value!r}")
    if value.tzinfo is None:
        raise QueryValidationError(f"{what} must be timezone-aware (UTC), got {value.isoformat()}")
    return value.astimezone(UTC)


def build_query(
    dialect: str,
    stream_name: str,
    start: datetime,
    end: datetime | None,
    partition_token: str | None,
    heartbeat_ms: int,
) -> ChangeStreamQuery:
    """Return the change stream query for one partition (or the initial query)."""
    if dialect not in DIALECTS:
        raise QueryValidationError(f"unknown dialect {dialect!r}: use one of {', '.join(DIALECTS)}")
    name = validate_stream_name(stream_name)
    heartbeat_ms = validate_heartbeat(heartbeat_ms)
    start = _utc(start, "start_timestamp")
    if end is not None:
        end = _utc(end, "end_timestamp")
        if end < start:
            raise QueryValidationError(
                f"end_timestamp {end.isoformat()} is before start_timestamp {start.isoformat()}"
            )
    if partition_token is not None and (not isinstance(partition_token, str) or not partition_token):
        raise QueryValidationError(
            f"partition_token must be a non-empty string or None, got {partition_token!r}"
        )
    if dialect == GOOGLESQL:
        sql = _GOOGLESQL_TEMPLATE.format(name=name)
        keys = ("startTimestamp", "endTimestamp", "partitionToken", "heartbeatMillis")
    else:
        sql = _POSTGRESQL_TEMPLATE.format(name=name)
        keys = ("p1", "p2", "p3", "p4")
    values = (start, end, partition_token, heartbeat_ms)
    types = (param_types.TIMESTAMP, param_types.TIMESTAMP, param_types.STRING, param_types.INT64)
    return ChangeStreamQuery(
        sql=sql,
        params=dict(zip(keys, values, strict=True)),
        param_types=dict(zip(keys, types, strict=True)),
        dialect=dialect,
        partition_token=partition_token,
        start=start,
        end=end,
    )
