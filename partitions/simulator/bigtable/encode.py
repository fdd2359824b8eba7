"""Wire encodings of the simulator's responses, built from raw protobuf classes.

A change is encoded once (cached on its entry): its DataChange messages, the last marked
``done`` but without the token and low watermark, which depend on the read. Those are
appended per delivery as a second ``data_change`` field of the same response: protobuf
merges repeated occurrences of a message field, so the client sees one DataChange with
every field set, and the simulator never re-encodes the change.
"""

from __future__ import annotations

from google.cloud.bigtable_v2 import types as bt
from google.protobuf import timestamp_pb2

from partitions.sources.bigtable.ranges import RowRange
from partitions.sources.bigtable.records import (
    GARBAGE_COLLECTION,
    Change,
    DeleteFromColumn,
    DeleteFromFamily,
    SetCell,
)

from .config import BigtableSimulatorConfig

_Response = bt.ReadChangeStreamResponse.pb()
_DataChange = bt.ReadChangeStreamResponse.DataChange.pb()
_Chunk = bt.ReadChangeStreamResponse.MutationChunk.pb()
_InitialResponse = bt.GenerateInitialChangeStreamPartitionsResponse.pb()
_RowRange = bt.RowRange.pb()
_USER, _GC, _CONTINUATION = 1, 2, 3


def timestamp(us: int) -> timestamp_pb2.Timestamp:
    """Return the protobuf Timestamp of microseconds since 1970."""
    return timestamp_pb2.Timestamp(seconds=us // 1_000_000, nanos=us % 1_000_000 * 1000)


def _row_range(row_range: RowRange):
    """Return a raw RowRange; unbounded ends stay unset."""
    proto = _RowRange()
    if row_range.start:
        proto.start_key_closed = row_range.start
    if row_range.end:
        proto.end_key_open = row_range.end
    return proto


def _set_mod(chunk, mod) -> int:
    """Fill a chunk's mutation from a mod; return its size in bytes (about)."""
    mutation = chunk.mutation
    if isinstance(mod, SetCell):
        cell = mutation.set_cell
        cell.family_name, cell.column_qualifier = mod.family, mod.qualifier
        cell.timestamp_micros, cell.value = mod.timestamp_micros, mod.value
        return 32 + len(mod.value)
    if isinstance(mod, DeleteFromColumn):
        delete = mutation.delete_from_column
        delete.family_name, delete.column_qualifier = mod.family, mod.qualifier
        delete.time_range.start_timestamp_micros = mod.start_timestamp_micros
        delete.time_range.end_timestamp_micros = mod.end_timestamp_micros
        return 40
    if isinstance(mod, DeleteFromFamily):
        mutation.delete_from_family.family_name = mod.family
        return 16
    mutation.delete_from_row.SetInParent()
    return 4


class _Messages:
    """The DataChange messages of one change, being filled."""

    def __init__(self, change: Change, ts_us: int):
        first = _Response()
        dc = first.data_change
        dc.type_ = _GC if change.type == GARBAGE_COLLECTION else _USER
        dc.source_cluster_id = change.source_cluster_id
        dc.row_key = change.row_key
        dc.commit_timestamp.CopyFrom(timestamp(ts_us))
        dc.tiebreaker = change.tiebreaker
        self.done: list = []
        self.current = first
        self.size = 0

    def chunk(self):
        """Return a new chunk in the current message."""
        return self.current.data_change.chunks.add()

    def next_message(self) -> None:
        """Close the current message and start a CONTINUATION message."""
        self.done.append(self.current)
        self.current = _Response()
        self.current.data_change.type_ = _CONTINUATION
        self.size = 0


def change_wire(change: Change, ts_us: int, config: BigtableSimulatorConfig) -> tuple[list[bytes], bytes]:
    """Return (messages before the last, the last message without token and watermark) of a change."""
    messages = _Messages(change, ts_us)
    for mod in change.mods:
        if isinstance(mod, SetCell) and len(mod.value) > config.chunk_bytes:
            _chunked_cell(messages, mod, config.chunk_bytes)
            continue
        if messages.size and messages.size >= config.message_bytes:
            messages.next_message()
        messages.size += _set_mod(messages.chunk(), mod)
    messages.current.data_change.done = True
    return [m.SerializeToString() for m in messages.done], messages.current.SerializeToString()


def _chunked_cell(messages: _Messages, mod: SetCell, chunk_bytes: int) -> None:
    """Add a value too long for one chunk: each chunk but the last ends its message."""
    value, total = mod.value, len(mod.value)
    for offset in range(0, total, chunk_bytes):
        piece = value[offset : offset + chunk_bytes]
        last = offset + chunk_bytes >= total
        chunk = messages.chunk()
        info = chunk.chunk_info
        info.chunked_value_size, info.chunked_value_offset, info.last_chunk = total, offset, last
        cell = chunk.mutation.set_cell
        if offset == 0:
            cell.family_name, cell.column_qualifier = mod.family, mod.qualifier
            cell.timestamp_micros = mod.timestamp_micros
        cell.value = piece
        messages.size += len(piece)
        if not last:
            messages.next_message()


def data_tail(token: str, watermark_us: int) -> bytes:
    """Return the token and low watermark of a change, to append to its last message."""
    response = _Response()
    response.data_change.token = token
    response.data_change.estimated_low_watermark.CopyFrom(timestamp(watermark_us))
    return response.SerializeToString()


def heartbeat(row_range: RowRange, token: str, watermark_us: int) -> bytes:
    """Return a Heartbeat message with the read's token and low watermark."""
    response = _Response()
    beat = response.heartbeat
    beat.continuation_token.partition.row_range.CopyFrom(_row_range(row_range))
    beat.continuation_token.token = token
    beat.estimated_low_watermark.CopyFrom(timestamp(watermark_us))
    return response.SerializeToString()


def close_stream(
    code: int, message: str, tokens: list[tuple[RowRange, str]], partitions: list[RowRange]
) -> bytes:
    """Return a CloseStream: the end (OK, nothing else) or a split/merge (tokens and new partitions)."""
    response = _Response()
    close = response.close_stream
    close.status.code, close.status.message = code, message
    for row_range, token in tokens:
        added = close.continuation_tokens.add()
        added.partition.row_range.CopyFrom(_row_range(row_range))
        added.token = token
    for row_range in partitions:
        close.new_partitions.add().row_range.CopyFrom(_row_range(row_range))
    return response.SerializeToString()


def initial_partition(row_range: RowRange) -> bytes:
    """Return one GenerateInitialChangeStreamPartitions response."""
    response = _InitialResponse()
    response.partition.row_range.CopyFrom(_row_range(row_range))
    return response.SerializeToString()
