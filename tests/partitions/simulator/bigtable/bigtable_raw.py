"""Call the Bigtable simulator with the official low-level client and read its raw responses."""

from __future__ import annotations

from datetime import datetime

from google.cloud.bigtable_v2 import types as bt

from partitions.sources.base import ReadOptions
from partitions.sources.bigtable.client import data_client
from partitions.sources.bigtable.cursor import Token
from partitions.sources.bigtable.ranges import RowRange
from partitions.sources.bigtable.requests import read_request

TABLE = "projects/p/instances/i/tables/events"


def read_raw(
    simulator,
    row_range: RowRange,
    *,
    start: datetime | None = None,
    tokens: list[Token] = (),
    end: datetime | None = None,
    heartbeat_ms: int = 1000,
    profile: str = "default",
) -> list:
    """Return every raw ReadChangeStreamResponse of one call, in order."""
    client = data_client(simulator.emulator_host)
    request = read_request(TABLE, profile, row_range, list(tokens), start, end, ReadOptions(heartbeat_ms))
    return [bt.ReadChangeStreamResponse.pb(r) for r in client.read_change_stream(request=request)]


def initial_ranges(simulator) -> list[RowRange]:
    """Return the row ranges GenerateInitialChangeStreamPartitions names now."""
    client = data_client(simulator.emulator_host)
    responses = client.generate_initial_change_stream_partitions(
        request={"table_name": TABLE, "app_profile_id": "default"}
    )
    return [
        _range(bt.GenerateInitialChangeStreamPartitionsResponse.pb(r).partition.row_range) for r in responses
    ]


def _range(proto) -> RowRange:
    return RowRange(proto.start_key_closed, proto.end_key_open)


def token_of(raw) -> Token:
    """Return the continuation token after a heartbeat or a finished data change of a read."""
    kind = raw.WhichOneof("stream_record")
    if kind == "heartbeat":
        token = raw.heartbeat.continuation_token
        return Token(_range(token.partition.row_range), token.token)
    raise ValueError(f"no stand-alone token in a {kind}")


def close_of(raw) -> tuple[int, list[Token], list[RowRange]]:
    """Return (status code, tokens, new partitions) of a CloseStream."""
    close = raw.close_stream
    tokens = [Token(_range(t.partition.row_range), t.token) for t in close.continuation_tokens]
    return close.status.code, tokens, [_range(p.row_range) for p in close.new_partitions]
