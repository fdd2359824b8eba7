"""Recognise the two change stream query forms and check their arguments as Spanner does.

Only the read functions are understood: the GoogleSQL form with named arguments and
the PostgreSQL form with positional ones, each taking bound parameters, literal NULL,
quoted literals or numbers (as in the seed document's examples). Anything else is
INVALID_ARGUMENT, like a statement Spanner cannot resolve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import grpc

from partitions.simulator.core.clock import to_us
from partitions.simulator.core.config import parse_timestamp
from partitions.simulator.core.server import Refusal
from partitions.sources.spanner_change_stream.query import (
    GOOGLESQL,
    MAX_HEARTBEAT_MS,
    MIN_HEARTBEAT_MS,
    POSTGRESQL,
)

from .config import SimulatorConfig
from .tables import format_ts

_ARG = r"(@\w+|\$\d+|NULL|'[^']*'|\"[^\"]*\"|-?\d+)"
_GOOGLESQL = re.compile(
    r"\s*SELECT\s+ChangeRecord\s+FROM\s+READ_(?P<stream>\w+)\s*\(\s*"
    rf"start_timestamp\s*=>\s*{_ARG}\s*,\s*end_timestamp\s*=>\s*{_ARG}\s*,\s*"
    rf"partition_token\s*=>\s*{_ARG}\s*,\s*heartbeat_milliseconds\s*=>\s*{_ARG}\s*"
    r"(?:,\s*read_options\s*=>\s*NULL\s*)?\)\s*;?\s*",
    re.IGNORECASE,
)
_POSTGRESQL = re.compile(
    r"\s*SELECT\s+\*\s+FROM\s+\"spanner\"\s*\.\s*\"read_json_(?P<stream>\w+)\"\s*\(\s*"
    rf"{_ARG}\s*,\s*{_ARG}\s*,\s*{_ARG}\s*,\s*{_ARG}\s*,\s*NULL\s*\)\s*;?\s*",
    re.IGNORECASE,
)


class QueryError(Refusal):
    """A query Spanner would refuse: a gRPC status code and a message."""


@dataclass(frozen=True)
class QuerySpec:
    """One parsed change stream query; times in microseconds since 1970."""

    dialect: str
    stream: str
    start_us: int
    end_us: int | None
    token: str | None
    heartbeat_ms: int


def _invalid(message: str) -> QueryError:
    return QueryError(grpc.StatusCode.INVALID_ARGUMENT, message)


def _argument(raw: str, params, name: str):
    """Return the Python value of one argument: a bound parameter or a literal."""
    if raw.upper() == "NULL":
        return None
    if raw[0] in "'\"":
        return raw[1:-1]
    if raw[0] not in "@$":
        return int(raw)
    key = raw[1:] if raw[0] == "@" else f"p{raw[1:]}"
    if key not in params:
        raise _invalid(f"No parameter found for binding: {key} ({name})")
    value = params[key]
    kind = value.WhichOneof("kind")
    if kind in (None, "null_value"):
        return None
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        return int(value.number_value)
    raise _invalid(f"invalid value for {name}")


def _timestamp(value, name: str) -> int | None:
    if value is None:
        return None
    try:
        return to_us(parse_timestamp(str(value)))
    except ValueError:
        raise _invalid(f"Invalid value for {name}: {value!r} is not a timestamp") from None


def is_change_stream_query(sql: str) -> bool:
    """Return whether the statement reads a change stream (else it may poll a table)."""
    return _GOOGLESQL.fullmatch(sql) is not None or _POSTGRESQL.fullmatch(sql) is not None


def parse_query(sql: str, params) -> QuerySpec:
    """Return the query spec of a change stream query, or raise QueryError."""
    dialect, match = GOOGLESQL, _GOOGLESQL.fullmatch(sql)
    if match is None:
        dialect, match = POSTGRESQL, _POSTGRESQL.fullmatch(sql)
    if match is None:
        raise _invalid(f"Statement is not a change stream query this server understands: {sql[:200]!r}")
    names = ("start_timestamp", "end_timestamp", "partition_token", "heartbeat_milliseconds")
    start, end, token, heartbeat = (
        _argument(raw, params, n) for raw, n in zip(match.groups()[1:], names, strict=True)
    )
    if start is None:
        raise _invalid("start_timestamp must not be NULL")
    if heartbeat is None:
        raise _invalid("heartbeat_milliseconds must not be NULL")
    try:
        heartbeat = int(heartbeat)
    except ValueError:
        raise _invalid(f"heartbeat_milliseconds must be an integer, got {heartbeat!r}") from None
    return QuerySpec(
        dialect=dialect,
        stream=match["stream"],
        start_us=_timestamp(start, "start_timestamp"),
        end_us=_timestamp(end, "end_timestamp"),
        token=None if token is None else str(token),
        heartbeat_ms=heartbeat,
    )


def check_retention(at_us: int, config: SimulatorConfig, now_us: int, what: str) -> None:
    """Raise QueryError if ``at_us`` is older than the change stream keeps its records."""
    oldest = now_us - int(config.retention * 1_000_000)
    if at_us < oldest:
        raise _invalid(
            f"{what} {format_ts(at_us)} is outside the change stream's retention period: "
            f"it must be at or after {format_ts(oldest)}"
        )


def check_query(spec: QuerySpec, config: SimulatorConfig, database: str, now_us: int) -> None:
    """Raise QueryError if Spanner would refuse this query on this database now."""
    dialect = config.dialect_of(database)
    if spec.dialect != dialect:
        raise _invalid(
            f"Database {database} uses the {dialect} dialect; this is a {spec.dialect} change stream query"
        )
    if spec.stream != config.stream:
        function = f"READ_{spec.stream}" if spec.dialect == GOOGLESQL else f"spanner.read_json_{spec.stream}"
        raise _invalid(f"Function not found: {function} (change stream {spec.stream} does not exist)")
    if not MIN_HEARTBEAT_MS <= spec.heartbeat_ms <= MAX_HEARTBEAT_MS:
        raise _invalid(
            f"heartbeat_milliseconds must be between {MIN_HEARTBEAT_MS} and {MAX_HEARTBEAT_MS}, "
            f"got {spec.heartbeat_ms}"
        )
    if spec.end_us is not None and spec.end_us < spec.start_us:
        raise _invalid(
            f"end_timestamp {format_ts(spec.end_us)} is before start_timestamp {format_ts(spec.start_us)}"
        )
    check_retention(spec.start_us, config, now_us, "start_timestamp")
    epoch_us = to_us(config.epoch)
    if spec.start_us < epoch_us:
        raise _invalid(
            f"start_timestamp {format_ts(spec.start_us)} is before the change stream was created "
            f"({format_ts(epoch_us)})"
        )
    if spec.start_us > now_us:
        raise _invalid(
            f"start_timestamp {format_ts(spec.start_us)} is in the future (now {format_ts(now_us)})"
        )
