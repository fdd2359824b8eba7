"""Build change stream requests and read the partitions and tokens the responses name.

Requests are proto-plus (built once per call); responses are read as raw protobuf.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from google.cloud.bigtable_v2 import types as bt
from google.protobuf import duration_pb2, timestamp_pb2

from partitions.sources.base import NewPartition, ReadOptions

from .cursor import Token, tokens_cursor
from .ranges import RowRange, label, range_token


def stream_partition(row_range: RowRange) -> bt.StreamPartition:
    """Return the request form of a partition; unbounded ends stay unset."""
    proto = bt.RowRange()
    if row_range.start:
        proto.start_key_closed = row_range.start
    if row_range.end:
        proto.end_key_open = row_range.end
    return bt.StreamPartition(row_range=proto)


def read_request(
    table_name: str,
    app_profile: str,
    row_range: RowRange,
    tokens: Sequence[Token],
    start: datetime | None,
    end: datetime | None,
    options: ReadOptions,
) -> bt.ReadChangeStreamRequest:
    """Return a ReadChangeStream request from the tokens, or from start when there are none."""
    request = bt.ReadChangeStreamRequest(
        table_name=table_name,
        app_profile_id=app_profile,
        partition=stream_partition(row_range),
        heartbeat_duration=duration_pb2.Duration(
            seconds=options.heartbeat_ms // 1000, nanos=options.heartbeat_ms % 1000 * 1_000_000
        ),
    )
    if tokens:
        request.continuation_tokens = bt.StreamContinuationTokens(
            tokens=[
                bt.StreamContinuationToken(partition=stream_partition(t.row_range), token=t.token)
                for t in tokens
            ]
        )
    else:
        request.start_time = _timestamp(start)
    if end is not None:
        request.end_time = _timestamp(end)
    return request


def _timestamp(value: datetime) -> timestamp_pb2.Timestamp:
    """Return a datetime as a protobuf Timestamp."""
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    return stamp


def partition_range(partition) -> RowRange:
    """Return the row range of a raw StreamPartition; ValueError for a shape partitions never have."""
    row_range = partition.row_range
    start_kind, end_kind = row_range.WhichOneof("start_key"), row_range.WhichOneof("end_key")
    if start_kind == "start_key_open" or end_kind == "end_key_closed":
        raise ValueError(f"a partition's range must be [closed start, open end), got {row_range}")
    start = row_range.start_key_closed if start_kind else b""
    end = row_range.end_key_open if end_kind else b""
    return RowRange(start, end)


def children_of(
    tokens: Sequence[Token], partitions: Sequence[RowRange], at: datetime
) -> tuple[NewPartition, ...]:
    """Return the new partitions a CloseStream names, each with this parent's tokens inside it.

    The server lists new partitions and tokens in parallel (token i resumes into new
    partition i); when the counts differ, each token goes to the new partition that
    holds it, or stands for its own range if none does. A new partition may be wider
    than the tokens handed over with it: it starts only once other parents have handed
    over the rest (``cursor.child_ready``).
    """
    if partitions and len(partitions) == len(tokens):
        pairs = list(zip(tokens, partitions, strict=True))
    else:
        pairs = [(t, next((p for p in partitions if t.row_range.within(p)), t.row_range)) for t in tokens]
    grouped: dict[RowRange, list[Token]] = {}
    for token, partition in pairs:
        if not token.row_range.within(partition):
            raise ValueError(
                f"a token for {label(token.row_range)} lies outside its new partition {label(partition)}"
            )
        grouped.setdefault(partition, []).append(token)
    return tuple(
        NewPartition(
            token=range_token(partition),
            start=at,
            cursor=tokens_cursor(partition, grouped[partition], low_watermark=at),
            label=label(partition),
        )
        for partition in sorted(grouped, key=lambda p: p.start)
    )
