"""The deterministic sequence of records one change stream query returns.

A query's output is a pure function of (config, query), so a position in it is all a
resume token must carry: the timestamp of the last item sent and how many items with
that timestamp were sent (several data records can share a commit timestamp; a
heartbeat never shares one with anything). Generation restarts from that position
without replaying what came before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from partitions.simulator.core.clock import to_datetime
from partitions.simulator.core.topology import Partition, Topology
from partitions.sources.spanner_change_stream.records import ChildPartition, ChildPartitionsRecord

from .workload import Workload

DATA, HEARTBEAT, CHILD = "data", "heartbeat", "child"


class Position(NamedTuple):
    """Where a query stands: items sent, last item's timestamp, items sent at it."""

    count: int
    last_us: int
    skip: int

    def encode(self) -> bytes:
        """Return the position as a resume token."""
        return b"sim1:%d:%d:%d" % self

    @classmethod
    def decode(cls, token: bytes) -> Position:
        """Return the position a resume token stands for; ValueError if it is not one."""
        prefix, *fields = token.split(b":")
        if prefix != b"sim1" or len(fields) != 3:
            raise ValueError("not a resume token of this simulator")
        return cls(*(int(f) for f in fields))


class Item(NamedTuple):
    """One record of the output, with the position after it."""

    ts_us: int
    kind: str
    payload: object  # Entry, a ChildPartitionsRecord, or None for a heartbeat
    position: Position


def initial_items(topology: Topology, start_us: int, position: Position) -> Iterator[Item]:
    """Yield one child partitions record per partition live at start, parents empty."""
    start = to_datetime(start_us)
    for i, part in enumerate(topology.live_at(start_us)):
        if i < position.skip:
            continue
        record = ChildPartitionsRecord(start, f"{i:08d}", (ChildPartition(part.token, ()),))
        yield Item(start_us, CHILD, record, Position(i + 1, start_us, i + 1))


def child_record(part: Partition) -> ChildPartitionsRecord:
    """Return the record announcing the partition's children (a merged child names all parents)."""
    children = tuple(ChildPartition(c.token, c.parents) for c in part.children)
    return ChildPartitionsRecord(to_datetime(part.end_us), "00000000", children)


def partition_items(
    workload: Workload, part: Partition, end_us: int | None, heartbeat_ms: int, position: Position
) -> Iterator[Item]:
    """Yield a partition's records from position on, as Spanner orders them.

    1. Data records with commit timestamp in [start, min(end, partition end)) come in
       commit order (records of one timestamp in the order the second lists them).
    2. A heartbeat comes whenever heartbeat_ms pass after the last item with no record.
    3. If the partition ends at or before end (or end is open), its child partitions
       record ends the output; otherwise the output ends with the last item <= end.
    """
    topology = workload.topology
    hb_us = heartbeat_ms * 1000
    count, last, sent_at_last = position
    to_skip = sent_at_last  # items at `last` the client already has
    second = last // 1_000_000
    while True:
        second_end = (second + 1) * 1_000_000
        topology.ensure(second_end)
        part_end = part.end_us
        if part_end is not None and last == part_end and sent_at_last:
            return  # the child record was already sent
        limit = second_end  # exclusive bound of this step
        if part_end is not None:
            limit = min(limit, part_end)
        if end_us is not None:
            limit = min(limit, end_us + 1)
        for entry in workload.second(second).by_token.get(part.token, ()):
            ts = entry.ts_us
            if ts >= limit:
                break
            if ts < last:
                continue
            if ts == last and to_skip:
                to_skip -= 1
                continue
            while last + hb_us < ts:
                last, sent_at_last, count = last + hb_us, 1, count + 1
                yield Item(last, HEARTBEAT, None, Position(count, last, 1))
            sent_at_last = sent_at_last + 1 if ts == last else 1
            last, count, to_skip = ts, count + 1, 0
            yield Item(ts, DATA, entry, Position(count, last, sent_at_last))
        while last + hb_us < limit:
            last, sent_at_last, count = last + hb_us, 1, count + 1
            yield Item(last, HEARTBEAT, None, Position(count, last, 1))
        if part_end is not None and part_end < second_end and (end_us is None or end_us >= part_end):
            yield Item(part_end, CHILD, child_record(part), Position(count + 1, part_end, 1))
            return
        if limit < second_end:
            return  # end_timestamp reached before the partition ends
        second += 1
