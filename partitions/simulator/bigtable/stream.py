"""The deterministic sequence of messages one ReadChangeStream call returns.

A read names a row range and where to start (tokens, or a start time that stands for a
position just before it). If a partition with exactly that range is live at the start,
the read serves it: its changes in commit order, a heartbeat whenever the requested
interval passes without one, and at its end a CloseStream: OUT_OF_RANGE with a token
per child piece and the children (a split or merge), or OK once end_time is passed.
If no partition has that range then (the table was cut differently), the read closes at
once with tokens for each live partition's share of the range and those partitions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from . import encode
from .keys import bounds_range, partition_range
from .model import TableModel
from .progress import Progress

DATA, HEARTBEAT, CLOSE = "data", "heartbeat", "close"
OK, OUT_OF_RANGE = 0, 11  # google.rpc.Code


class Item(NamedTuple):
    """Messages to send once the clock reaches ``release_us``."""

    release_us: int
    kind: str
    messages: list[bytes]
    status: int = OK  # a CLOSE's status code


def lag_us(t_us: int) -> int:
    """Return how far the estimated low watermark trails at t: 0-40 ms, so it sometimes steps back."""
    return (t_us * 2654435761 >> 11) % 40_000


def plan_read(
    model: TableModel, lo: int, hi: int, progress: Progress, end_us: int | None, heartbeat_us: int
) -> Iterator[Item]:
    """Yield the items of a read of [lo, hi) from ``progress`` to ``end_us`` (None: open-ended)."""
    # Tokens from a merge's parents may stand at different positions (a parent that ran on
    # to the stream's end without closing): the merged child is the partition after the newest.
    partition = model.exact(lo, hi, progress.high() + 1)
    if partition is None:
        yield _redirect(model, lo, hi, progress, progress.low() + 1)
        return
    yield from _PartitionPlan(model, partition, progress, end_us, heartbeat_us).items()


def _redirect(model: TableModel, lo: int, hi: int, progress: Progress, instant: int) -> Item:
    """Return the CloseStream that sends a reader to the partitions live at ``instant`` instead."""
    tokens, partitions = [], []
    for partition in model.overlapping(lo, hi, instant):
        a, b = max(lo, partition.lo), min(hi, partition.hi)
        tokens.append((bounds_range(a, b), progress.restrict(a, b).encode()))
        partitions.append(partition_range(partition))
    message = "the requested range is not a partition at its start: read these partitions instead"
    return Item(
        instant, CLOSE, [encode.close_stream(OUT_OF_RANGE, message, tokens, partitions)], OUT_OF_RANGE
    )


class _PartitionPlan:
    """The items of one live partition's read."""

    def __init__(
        self, model: TableModel, partition, progress: Progress, end_us: int | None, heartbeat_us: int
    ):
        self.model, self.partition, self.progress = model, partition, progress
        self.row_range = partition_range(partition)
        self.end_limit = None if end_us is None else end_us + 1
        self.heartbeat_us = heartbeat_us
        self.wide_tokens = model.config.wide_merge_tokens
        self.last = progress.low()  # time of the last item sent, or the start position

    def items(self) -> Iterator[Item]:
        """Yield changes and heartbeats second by second, then the CloseStream."""
        second = (self.last + 1) // 1_000_000
        while True:
            second_end = (second + 1) * 1_000_000
            self.model.topology.ensure(second_end)  # learn whether the partition ends in this second
            close_us = self.model.close_us(self.partition)
            bounds = (second_end, close_us, self.end_limit)
            limit = min(b for b in bounds if b is not None)
            for entry in self._entries(second):
                if entry.ts_us >= limit:
                    break
                if entry.ts_us > self.progress.position_of(entry.key):  # not delivered before a resume
                    yield from self._heartbeats_until(entry.ts_us)
                    yield self._data(entry)
            yield from self._heartbeats_until(limit)
            if limit == close_us:
                yield self._split_or_merge()
                return
            if limit == self.end_limit:
                yield Item(limit, CLOSE, [encode.close_stream(OK, "", [], [])])
                return
            second += 1

    def _entries(self, second: int) -> list:
        """Return the second's changes this read serves, in commit order.

        A merge parent that closes late (``merge_stagger``) goes on serving its own rows
        until it closes, though they belong to the merged child from the merge on.
        """
        by_token = self.model.workload.second(second).by_token
        own = by_token.get(self.partition.token, ())
        if self.model.close_us(self.partition) == self.partition.end_us:
            return own
        (child,) = self.partition.children
        lo, hi = self.partition.lo, self.partition.hi
        late = [e for e in by_token.get(child.token, ()) if lo <= e.key < hi]
        return sorted([*own, *late], key=lambda e: e.ts_us) if late else own

    def _heartbeats_until(self, t_us: int) -> Iterator[Item]:
        """Yield a heartbeat each interval that passes before t_us without a change."""
        while self.last + self.heartbeat_us < t_us:
            self.last += self.heartbeat_us
            self.progress.advance(self.last)
            watermark = self.progress.low() - lag_us(self.last)
            yield Item(
                self.last, HEARTBEAT, [encode.heartbeat(self.row_range, self.progress.encode(), watermark)]
            )

    def _data(self, entry) -> Item:
        """Return the messages of one change, its token and low watermark appended."""
        self.last = entry.ts_us
        if entry.twin_follows:
            # The token stays before the shared timestamp (a resume sends this change again,
            # and its twin); the estimate claims the timestamp, as a server's estimate may.
            self.progress.advance(entry.ts_us - 1)
            watermark = entry.ts_us
        else:
            self.progress.advance(entry.ts_us)
            watermark = self.progress.low() - 1 - lag_us(entry.ts_us)
        head, last = self.model.wire(entry)
        tail = encode.data_tail(self.progress.encode(), watermark)
        return Item(entry.ts_us, DATA, [*head, last + tail])

    def _split_or_merge(self) -> Item:
        """Return the CloseStream at the partition's end: a token and new partition per child."""
        end = self.model.close_us(self.partition)
        self.progress.advance(end - 1)
        lo, hi = self.partition.lo, self.partition.hi
        tokens, partitions = [], []
        kind = "split" if len(self.partition.children) > 1 else "merge"
        for child in self.partition.children:
            a, b = max(lo, child.lo), min(hi, child.hi)
            named = partition_range(child) if kind == "merge" and self.wide_tokens else bounds_range(a, b)
            tokens.append((named, self.progress.restrict(a, b).encode()))
            partitions.append(partition_range(child))
        message = f"the partition ended in a {kind}: continue with the new partitions"
        return Item(
            end, CLOSE, [encode.close_stream(OUT_OF_RANGE, message, tokens, partitions)], OUT_OF_RANGE
        )
