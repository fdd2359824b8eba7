"""Assemble raw ReadChangeStreamResponse protobufs into typed changes: the reader's hot path.

Works on the raw protobuf messages (``ReadChangeStreamResponse.pb(...)``), never on the
proto-plus wrappers: every proto-plus field access converts the value again, which makes
a plain walk over a change several times slower than this one.

A change may arrive in several DataChange messages: the first carries the row key,
commit timestamp, tiebreaker, type and source cluster; the rest are CONTINUATION
messages with more chunks; the last is marked ``done`` and carries the token and the
estimated low watermark. A SetCell value may itself be cut into chunks (ChunkInfo with
the total size and each chunk's offset), each but the last ending its message.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from partitions.sources.base import MalformedRecordError

from .records import (
    GARBAGE_COLLECTION,
    USER,
    Change,
    DeleteFromColumn,
    DeleteFromFamily,
    DeleteFromRow,
    SetCell,
)

# google.bigtable.v2.ReadChangeStreamResponse.DataChange.Type (the field is ``type_`` in the
# descriptor proto-plus builds, for raw messages too)
_TYPES = {1: USER, 2: GARBAGE_COLLECTION}
_CONTINUATION = 3
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TimestampCache:
    """Convert protobuf Timestamps to aware UTC datetimes, reusing the last second's base."""

    __slots__ = ("_second", "_base")

    def __init__(self):
        self._second = None
        self._base = _EPOCH

    def convert(self, ts) -> datetime:
        """Return the datetime of a google.protobuf.Timestamp, truncated to microseconds."""
        seconds = ts.seconds
        if seconds != self._second:
            self._base = _EPOCH + timedelta(seconds=seconds)
            self._second = seconds
        return self._base.replace(microsecond=ts.nanos // 1000)


class _Pending:
    """A change whose last message has not arrived yet."""

    __slots__ = (
        "row_key", "commit", "tiebreaker", "type", "cluster", "mods", "cell", "parts", "size", "received"
    )  # fmt: skip

    def __init__(self, row_key, commit, tiebreaker, type_, cluster):
        self.row_key, self.commit, self.tiebreaker = row_key, commit, tiebreaker
        self.type, self.cluster = type_, cluster
        self.mods: list = []
        self.cell = None  # the raw SetCell whose value is being reassembled
        self.parts: list[bytes] = []
        self.size = 0  # the chunked value's announced total size
        self.received = 0  # bytes of it received so far


class ChangeAssembler:
    """Feed DataChange messages in stream order; get each change once its last one arrived."""

    __slots__ = ("_pending", "_times", "where")

    def __init__(self, where: str = ""):
        self._pending: _Pending | None = None
        self._times = TimestampCache()
        self.where = where  # named in errors: the partition being read

    @property
    def in_progress(self) -> bool:
        """Return whether part of a change arrived and the rest is awaited."""
        return self._pending is not None

    def reset(self) -> None:
        """Drop a partly received change (the stream broke; it is sent again on resume)."""
        self._pending = None

    def convert_time(self, ts) -> datetime:
        """Return a protobuf Timestamp as a datetime (shares the assembler's cache)."""
        return self._times.convert(ts)

    def feed(self, dc) -> Change | None:
        """Take one raw DataChange; return the finished Change when it is the last (``done``)."""
        pending = self._pending
        if pending is None:
            pending = self._pending = self._start(dc)
        elif dc.type_ != _CONTINUATION:
            self._fail(f"a new change (type {dc.type_}) began before the last one was done")
        for chunk in dc.chunks:
            if pending.cell is not None:
                self._value_chunk(pending, chunk)
            else:
                self._mutation(pending, chunk)
        if not dc.done:
            return None
        if pending.cell is not None:
            self._fail("the change ended inside a chunked value")
        if not dc.token:
            self._fail("the change's last message has no token")
        self._pending = None
        low = dc.estimated_low_watermark if dc.HasField("estimated_low_watermark") else None
        return Change(
            pending.row_key,
            pending.commit,
            pending.tiebreaker,
            pending.type,
            pending.cluster,
            tuple(pending.mods),
            dc.token,
            None if low is None else self._times.convert(low),
        )

    def _start(self, dc) -> _Pending:
        """Return the pending change begun by its first message, after checking what it must carry."""
        type_ = _TYPES.get(dc.type_)
        if type_ is None:
            self._fail(f"a change must begin with type USER or GARBAGE_COLLECTION, not {dc.type_}")
        if not dc.HasField("commit_timestamp"):
            self._fail("the change's first message has no commit timestamp")
        if not dc.chunks:
            self._fail("the change's first message has no mods")
        cluster = dc.source_cluster_id
        if (type_ == USER) != bool(cluster):
            self._fail(f"a {type_} change must {'' if type_ == USER else 'not '}name a source cluster")
        return _Pending(dc.row_key, self._times.convert(dc.commit_timestamp), dc.tiebreaker, type_, cluster)

    def _mutation(self, pending: _Pending, chunk) -> None:
        """Add the mod of a chunk that starts a new mutation."""
        mutation = chunk.mutation
        kind = mutation.WhichOneof("mutation")
        if kind == "set_cell":
            cell = mutation.set_cell
            if chunk.HasField("chunk_info"):
                self._first_value_chunk(pending, cell, chunk.chunk_info)
            else:
                pending.mods.append(
                    SetCell(cell.family_name, cell.column_qualifier, cell.timestamp_micros, cell.value)
                )
        elif kind == "delete_from_column":
            d = mutation.delete_from_column
            r = d.time_range
            pending.mods.append(
                DeleteFromColumn(
                    d.family_name, d.column_qualifier, r.start_timestamp_micros, r.end_timestamp_micros
                )
            )
        elif kind == "delete_from_family":
            pending.mods.append(DeleteFromFamily(mutation.delete_from_family.family_name))
        elif kind == "delete_from_row":
            pending.mods.append(DeleteFromRow())
        else:
            self._fail(f"mutation {kind or 'none'} is not one a change stream reader understands")

    def _first_value_chunk(self, pending: _Pending, cell, info) -> None:
        """Begin reassembling a SetCell value that comes in chunks."""
        if info.chunked_value_offset != 0:
            self._fail(f"a chunked value began at offset {info.chunked_value_offset}, not 0")
        if info.chunked_value_size <= 0:
            self._fail("a chunked value announced no size")
        pending.cell, pending.parts, pending.size = cell, [cell.value], info.chunked_value_size
        pending.received = len(cell.value)
        self._check_chunk(pending, info)

    def _value_chunk(self, pending: _Pending, chunk) -> None:
        """Add the next chunk of the value being reassembled."""
        info = chunk.chunk_info
        if not chunk.HasField("chunk_info") or chunk.mutation.WhichOneof("mutation") != "set_cell":
            self._fail("a chunked value was interrupted by another mod")
        if info.chunked_value_offset != pending.received:
            got, expected = info.chunked_value_offset, pending.received
            self._fail(f"a value chunk came at offset {got}, expected {expected}")
        value = chunk.mutation.set_cell.value
        pending.parts.append(value)
        pending.received += len(value)
        self._check_chunk(pending, info)

    def _check_chunk(self, pending: _Pending, info) -> None:
        """Check the bytes received against the announced size; finish the cell after its last chunk."""
        received = pending.received
        if received > pending.size:
            self._fail(f"a chunked value grew to {received} bytes, beyond its size {pending.size}")
        if not info.last_chunk:
            return
        if received != pending.size:
            self._fail(f"a chunked value ended at {received} bytes, not its size {pending.size}")
        cell = pending.cell
        value = b"".join(pending.parts)
        pending.mods.append(SetCell(cell.family_name, cell.column_qualifier, cell.timestamp_micros, value))
        pending.cell, pending.parts = None, []

    def _fail(self, message: str):
        """Drop the pending change and raise MalformedRecordError naming the partition."""
        self._pending = None
        where = f" (partition {self.where})" if self.where else ""
        raise MalformedRecordError(f"malformed change stream data: {message}{where}")
