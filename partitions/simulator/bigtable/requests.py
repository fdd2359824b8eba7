"""Check a simulator request and turn it into what to serve, or refuse it as Bigtable would."""

from __future__ import annotations

import re
from dataclasses import dataclass

import grpc

from partitions.simulator.core.clock import to_datetime
from partitions.simulator.core.server import Refusal
from partitions.sources.bigtable.ranges import RowRange

from .config import MULTI_CLUSTER_PROFILES, SINGLE_CLUSTER_PROFILES, BigtableSimulatorConfig
from .keys import range_bounds
from .model import TableModel
from .progress import Progress

_TABLE = re.compile(r"projects/[^/]+/instances/[^/]+/tables/(?P<table>[^/]+)")
DEFAULT_HEARTBEAT_US = 5_000_000  # the API's default heartbeat_duration


@dataclass
class ReadPlan:
    """A checked ReadChangeStream request: what to serve and from where."""

    model: TableModel
    row_range: RowRange
    lo: int
    hi: int
    progress: Progress
    end_us: int | None
    heartbeat_us: int
    from_tokens: bool


def check_table(tables: dict[str, TableModel], config: BigtableSimulatorConfig, name: str) -> TableModel:
    """Return the model of a table whose change stream may be read; Refusal otherwise."""
    match = _TABLE.fullmatch(name)
    table = match["table"] if match else ""
    if table in config.plain_tables:
        raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, f"Change stream is not enabled for table {name}")
    if table not in tables:
        raise Refusal(grpc.StatusCode.NOT_FOUND, f"Table not found: {name}")
    return tables[table]


def check_app_profile(profile: str) -> None:
    """Refuse an unknown app profile and one that routes to several clusters."""
    profile = profile or "default"  # the API's default when none is given
    if profile in MULTI_CLUSTER_PROFILES:
        raise Refusal(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"Change streams must be read with an app profile that uses single cluster routing; "
            f"app profile {profile} uses multi-cluster routing",
        )
    if profile not in SINGLE_CLUSTER_PROFILES:
        raise Refusal(grpc.StatusCode.NOT_FOUND, f"App profile not found: {profile}")


def plan_request(model: TableModel, request, now_us: int) -> ReadPlan:
    """Return the plan of a raw ReadChangeStreamRequest for a checked table; Refusal otherwise."""
    row_range = _row_range(request.partition.row_range)
    lo, hi = _bounds(row_range)
    kind = request.WhichOneof("start_from")
    if kind == "continuation_tokens":
        progress = _token_progress(request.continuation_tokens.tokens, lo, hi)
    elif kind == "start_time":
        start_us = _us(request.start_time)
        if start_us > now_us:
            raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, "start_time must not be in the future")
        progress = Progress.at(lo, hi, start_us - 1)
    else:
        raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, "start_time or continuation_tokens is required")
    _check_retention(
        model, progress.low() + 1, now_us, "start_time" if kind == "start_time" else "the tokens"
    )
    end_us = _us(request.end_time) if request.HasField("end_time") else None
    if end_us is not None and end_us < progress.low():
        raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, "end_time must not be before the start")
    heartbeat = request.heartbeat_duration
    heartbeat_us = (
        heartbeat.seconds * 1_000_000 + heartbeat.nanos // 1000
        if request.HasField("heartbeat_duration")
        else 0
    )
    heartbeat_us = heartbeat_us or DEFAULT_HEARTBEAT_US
    return ReadPlan(model, row_range, lo, hi, progress, end_us, heartbeat_us, kind == "continuation_tokens")


def _us(ts) -> int:
    """Return a protobuf Timestamp as microseconds since 1970."""
    return ts.seconds * 1_000_000 + ts.nanos // 1000


def _row_range(proto) -> RowRange:
    """Return a request's row range; Refusal for a shape partitions never have."""
    if proto.WhichOneof("start_key") == "start_key_open" or proto.WhichOneof("end_key") == "end_key_closed":
        raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, "a partition is a [closed start, open end) row range")
    return RowRange(proto.start_key_closed, proto.end_key_open)


def _bounds(row_range: RowRange) -> tuple[int, int]:
    """Return the integer keys of a row range; Refusal if its keys are not this table's."""
    try:
        return range_bounds(row_range)
    except ValueError as error:
        raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid partition: {error}") from None


def _token_progress(tokens, lo: int, hi: int) -> Progress:
    """Return the progress of the request's tokens, which must tile [lo, hi) exactly."""
    progresses = []
    for token in tokens:
        try:
            progress = Progress.decode(token.token)
        except ValueError as error:
            raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid continuation token: {error}") from None
        if progress.bounds != _bounds(_row_range(token.partition.row_range)):
            raise Refusal(
                grpc.StatusCode.INVALID_ARGUMENT, "A continuation token does not belong to its partition"
            )
        progresses.append(progress)
    try:
        combined = Progress.combine(progresses)
    except ValueError as error:
        raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid continuation tokens: {error}") from None
    if combined.bounds != (lo, hi):
        raise Refusal(
            grpc.StatusCode.INVALID_ARGUMENT,
            "The continuation tokens must exactly cover the requested partition",
        )
    return combined


def _check_retention(model: TableModel, start_us: int, now_us: int, what: str) -> None:
    """Refuse a start older than the retention period or than the change stream itself."""
    earliest = max(model.epoch_us, now_us - int(model.config.retention * 1_000_000))
    if start_us < earliest:
        raise Refusal(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{what} ({to_datetime(start_us).isoformat()}) is outside the change stream retention period: "
            f"the earliest readable time is {to_datetime(earliest).isoformat()}",
        )
