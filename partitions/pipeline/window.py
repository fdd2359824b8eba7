"""Read one window of one partition through its stream's source: land, checkpoint, settle.

A read yields the kind's records, PROGRESS and at most one Ended (partitions/sources/
base.py). The loop lands and checkpoints every ``checkpoint_seconds`` while it reads
(steps 3 and 4 of DESIGN §5), so at the live edge the watermark keeps up within
seconds, with one checkpoint per interval whatever the record rate; each checkpoint
rewrites the read's landing segment with the new records added (landing.Segment),
so a live window still lands in one file.

A windowed kind (change streams) reads [watermark, end], a window long on average (each
partition's ends on a grid of its own: staggered_end); a polling kind
(a table watched by commit timestamp) reads once up to now, bounded by the stream's end,
and its source says how long to wait before the next poll.
"""

from __future__ import annotations

import logging
import math
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow.compute as pc
from django.conf import settings
from django.db import connections
from django.utils import timezone

from partitions.models import Partition
from partitions.sources.base import PROGRESS, Ended, Source, SourceError
from streams.models import Stream

from . import batch, landing, leases, readers
from .checkpoint import Progress, save_progress
from .dbretry import retrying
from .leases import log_lease

log = logging.getLogger(__name__)
P = Partition.State
# One line per checkpoint that landed records: its landed rows' read_timestamp and when the
# checkpoint committed, so benchmarks/freshness.py can time each record from its commit.
checkpoint_log = logging.getLogger("partitions.pipeline.checkpoint")
# A read holding this many records not yet landed checkpoints at once: it bounds a
# catch-up read's memory (some 20 MB of records) however much its window holds.
MAX_PENDING_RECORDS = 20_000


@dataclass(frozen=True)
class Outcome:
    """What a window's read left: the stored partition (None: lease lost), go on?, and when."""

    stored: Partition | None
    go_on: bool
    delay: float = 0.0


def window_end(partition: Partition, stream: Stream, db_now: datetime | None = None) -> datetime | None:
    """Return where the partition's next read ends: its window's end, or the stream's end for a poll.

    With `db_now` (the database's clock), a partition more than two windows behind it reads
    up to CDC_CATCH_UP_WINDOWS windows in one query, ending a window short of now: each
    window otherwise costs a query, a task's hand-over and a checkpoint of its own, which
    in a backlog of few records cost more than reading them (docs/benchmarks.md, issue 22:
    the demo's 30-minute backlog). The live edge is still read window by window.
    """
    if not readers.read_kind(stream).windows:
        return stream.end_at
    span = timedelta(seconds=stream.window_seconds)
    end = staggered_end(partition, span)
    if db_now is not None:
        end = max(end, min(partition.watermark + span * settings.CDC_CATCH_UP_WINDOWS, db_now - span))
    return min(end, stream.end_at) if stream.end_at else end


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def staggered_end(partition: Partition, span: timedelta) -> datetime:
    """Return the end of the partition's next window: a point of its own grid, span/2 to 1.5 span ahead.

    Each partition's window ends lie a span apart, at a phase taken from its token, so
    the live partitions of a stream end their windows spread over the span. Ending at
    watermark + span, partitions started together stayed in step forever: every window,
    all of them ended, checkpointed and queried again in the same instant. At 2,000
    partitions that burst held heartbeats back up to 6.1 s even with no pipeline behind
    the reads (benchmarks/loop_reads.py; docs/benchmarks.md, issue 22). A window that
    ended on the grid starts the next one there, which then ends exactly a span later.
    """
    span_us = max(1, span // _MICROSECOND)
    phase = zlib.crc32((partition.token or "").encode()) % span_us
    earliest = (partition.watermark - _EPOCH) // _MICROSECOND + span_us // 2
    return _EPOCH + _MICROSECOND * (earliest + (phase - earliest) % span_us)


def windows_spanned(partition: Partition, stream: Stream, end: datetime | None) -> int:
    """Return how many windows a read from the partition's watermark to `end` spans (a poll: one)."""
    if end is None or not readers.read_kind(stream).windows:
        return 1
    return max(1, math.ceil((end - partition.watermark).total_seconds() / stream.window_seconds))


def query_timeout(end: datetime | None, windows: int = 1) -> float:
    """Return a read's deadline: until its end (a poll: now), plus one lease per window it spans.

    A query that hangs past that would have lost its lease anyway; ending it with
    DEADLINE_EXCEEDED (retryable) lets the failure count and the backoff see it. A read
    whose checkpoints still moved its watermark only fell behind, and reads on
    (_behind_or_raise). A catch-up read of several windows has a lease for each: it has
    that much more to read.
    """
    until_end = (end - timezone.now()).total_seconds() if end is not None else 0.0
    return max(0.0, until_end) + settings.CDC_LEASE_SECONDS * windows


# The share of a checkpoint interval by which a heartbeat may come early and still be stored.
HEARTBEAT_SLACK = 0.25


def checkpoint_seconds(stream: Stream) -> float:
    """Return how often a read checkpoints: each heartbeat interval, or CDC_CHECKPOINT_SECONDS if longer.

    A heartbeat is what moves an idle partition's watermark, so checkpointing more
    often would store the same watermark again; checkpointing less often would leave
    the stored watermark (and the dashboard's lag) behind what the reader already has.
    """
    return max(stream.heartbeat_ms / 1000, settings.CDC_CHECKPOINT_SECONDS)


def stream_reads_on(stream: Stream) -> bool:
    """Return whether the stream (read afresh) is still in a state in which readers read."""
    retrying(f"reading the state of {stream.name}", lambda: stream.refresh_from_db(fields=["state"]))
    return stream.state in leases.READING_STATES


class InPlace:
    """Checkpoints stored by the reading thread itself, on its own connection (a Celery task's read)."""

    data_seconds: float | None = None  # records wait for the next checkpoint at its cadence

    def save(
        self, partition: Partition, owner: str, progress: Progress, keep_lease: bool
    ) -> Partition | None:
        """Store the read's checkpoint (its records are landed: a database error retries it alone)."""
        return retrying(
            f"checkpoint of partition {partition.pk}",
            lambda: save_progress(partition.pk, owner, progress, keep_lease=keep_lease),
        )

    def reads_on(self, stream: Stream) -> bool:
        """Return whether the stream (read afresh) still reads."""
        return stream_reads_on(stream)

    def passed(self, end: datetime, partition_id: int) -> bool:
        """Return whether `end` has passed by the database's clock (a worker's may be skewed)."""
        now = retrying("reading the database's clock", lambda: leases.database_now(partition_id))
        return now is not None and end <= now


class Batched(InPlace):
    """Checkpoints handed to the process's batch writer (batch.py): the read needs no connection.

    Each stored checkpoint brings back the stream as stored and the database's clock, which
    answer whether the stream still reads and whether a window's end has passed.
    """

    def __init__(self) -> None:
        self.stream: Stream | None = None
        self._db_now: datetime | None = None
        self._seen = 0.0
        # A live record is landed and stored within about this long of arriving.
        self.data_seconds = settings.CDC_CHECKPOINT_DATA_SECONDS

    def save(
        self, partition: Partition, owner: str, progress: Progress, keep_lease: bool
    ) -> Partition | None:
        """Store the checkpoint with the next batch; keep what it read back."""
        ticket = batch.WRITER.checkpoint(partition.pk, owner, progress, keep_lease, current=partition)
        return self._stored(ticket)

    async def save_async(
        self, partition: Partition, owner: str, progress: Progress, keep_lease: bool
    ) -> Partition | None:
        """The same, awaited on an event loop (a multiplexed live read)."""
        ticket = await batch.WRITER.checkpoint_async(
            partition.pk, owner, progress, keep_lease, current=partition
        )
        return self._stored(ticket)

    def seed(self, stream: Stream, partition: Partition) -> None:
        """Start from the stream and the database's clock as the lease was taken: no query until stored."""
        self.stream, self._db_now, self._seen = stream, leases.db_now_of(partition), time.monotonic()

    def _stored(self, ticket: batch.Ticket) -> Partition | None:
        self.stream, self._db_now, self._seen = ticket.stream, ticket.db_now, time.monotonic()
        return ticket.stored

    def reads_on(self, stream: Stream) -> bool:
        """Return whether the stream, as the last checkpoint read it, still reads."""
        if self.stream is None:
            return _closing(lambda: super(Batched, self).reads_on(stream))
        stream.state = self.stream.state
        return stream.state in leases.READING_STATES

    def passed(self, end: datetime, partition_id: int) -> bool:
        """Return whether `end` has passed by the database's clock, as of the last checkpoint."""
        if self._db_now is None:
            return _closing(lambda: super(Batched, self).passed(end, partition_id))
        return end <= self._db_now + timedelta(seconds=time.monotonic() - self._seen)


def _closing(ask):
    """Return ask(), closing the connection it opened: a live read's thread keeps none (thousands)."""
    try:
        return ask()
    finally:
        connections.close_all()


def read_window(
    stream: Stream, partition: Partition, owner: str, store: InPlace | None = None, stop=None
) -> Outcome:
    """Read, land and checkpoint one window of the partition (`stop`, an Event, ends it early)."""
    source, end, options = _plan(stream, partition)
    # Read even when watermark == end: both bounds are inclusive, and a child that starts
    # exactly at the stream's end still owns the records committed there.
    read = source.read(readers.state_of(partition), end, options)
    window = _window(stream, source, partition, owner, read, end, store or InPlace(), stop)
    try:
        stored, go_on = _read_all(window)
    except SourceError as error:
        stored, go_on = _behind_or_raise(window, partition, error)
    finally:
        leases.KEEPER.drop(partition.pk, owner)
        read.close()
    return Outcome(stored, go_on, source.next_read_delay(read) if go_on else 0.0)


async def read_window_async(
    stream: Stream, partition: Partition, owner: str, store: Batched, stop, offload
) -> Outcome:
    """read_window on an event loop, through the source's read_async (live.py: a multiplexed live read).

    `offload(fn, *args)` runs blocking work (landing a file) off the loop and is awaited.
    """
    source, end, options = _plan(stream, partition)
    read = await source.read_async(readers.state_of(partition), end, options)
    window = _window(stream, source, partition, owner, read, end, store, stop)
    try:
        stored, go_on = await _read_all_async(window, offload)
    except SourceError as error:
        stored, go_on = _behind_or_raise(window, partition, error)
    finally:
        leases.KEEPER.drop(partition.pk, owner)
        await read.aclose()
    return Outcome(stored, go_on, source.next_read_delay(read) if go_on else 0.0)


def _behind_or_raise(w: Window, started: Partition, error: SourceError) -> tuple[Partition, bool]:
    """Read on from the last checkpoint if the read only fell behind its deadline; else raise `error`.

    A read that reached its deadline (its window's end plus a lease) while its checkpoints
    still moved the watermark was being served, only slower than the source sent: a busy
    process (at 2,000 live partitions on one core, 553 of them in 8 minutes). Counted as a
    failure, three in a row showed the stream FAILED, and each gave its lease back and went
    through the queue, adding work to the process that was behind. It goes on instead with
    the next read from its last checkpoint, under the same lease (the records after it are
    read again, as after any failure). A read that stored no progress is failing or hung,
    and fails as before.
    """
    if error.code != "DEADLINE_EXCEEDED" or w.partition.watermark <= started.watermark:
        raise error
    log.warning(
        "reading %s of %s reached its deadline while moving (watermark %s): reading on from there",
        w.partition.token, w.stream.name, w.partition.watermark.isoformat(),
    )  # fmt: skip
    return w.partition, True


def _plan(stream: Stream, partition: Partition):
    source = readers.source_for(stream)
    end = window_end(partition, stream, leases.db_now_of(partition))
    timeout = query_timeout(end, windows_spanned(partition, stream, end))
    return source, end, readers.options(stream, timeout)


def _window(stream, source, partition, owner, read, end, store, stop) -> Window:
    segment = landing.Segment(
        settings.CDC_LANDING_URI, stream.pk, partition.token, landing.attempt_name(owner)
    )
    leases.KEEPER.hold(partition.pk, owner)
    return Window(stream, source, partition, owner, read, segment, end, store, stop)


@dataclass
class Window:
    """One read in progress: the stream and its source, the partition as stored, the read."""

    stream: Stream
    source: Source
    partition: Partition
    owner: str
    read: object
    segment: landing.Segment
    end: datetime | None
    store: InPlace = field(default_factory=InPlace)
    stop: object = None  # an Event: stop reading at the next item, checkpointed


class _Pace:
    """What a window's read holds since its last checkpoint, and when the next checkpoint is due."""

    def __init__(self, w: Window) -> None:
        self.w = w
        self.progress = Progress(start=w.partition.watermark, watermark=w.partition.watermark)
        # Due a little before the next heartbeat is: one that comes a hair early still stores
        # its watermark, rather than waiting a whole interval more (a lag of two heartbeats).
        self.cadence = checkpoint_seconds(w.stream) * (1 - HEARTBEAT_SLACK)
        self.last = time.monotonic()
        self.due = self.last + self.cadence
        self.quick = w.store.data_seconds
        self.stopping = False

    def lost(self) -> bool:
        """Return whether the lease lapsed (this process stood still) and is someone else's."""
        return leases.KEEPER.lost(self.w.partition.pk, self.w.owner)

    def take(self, item) -> bool:
        """Add one item of the read; return whether to checkpoint now."""
        progress = self.progress
        if item is PROGRESS:
            progress.heartbeats += 1
        elif type(item) is Ended:
            progress.ended = item
        else:
            if self.quick is not None and not progress.data:
                # A record after a quiet spell is stored at once; more of them, at most
                # every `quick` seconds (each checkpoint rewrites the segment's file).
                self.due = min(self.due, max(time.monotonic(), self.last + self.quick))
            progress.data.append(item)
        self.stopping = self.w.stop is not None and self.w.stop.is_set()
        return progress.ended is None and (
            self.stopping or time.monotonic() >= self.due or len(progress.data) >= MAX_PENDING_RECORDS
        )

    def goes_on(self, stored: Partition | None) -> bool:
        """After a checkpoint mid-window: return whether the read goes on (False: lease lost, or stopping)."""
        if stored is None or self.stopping or not self.w.store.reads_on(self.w.stream):
            return False
        self.last = time.monotonic()
        self.w.partition, self.progress, self.due = stored, self.progress.next(), self.last + self.cadence
        return True

    def settle(self) -> None:
        """The read is over: set where it left the partition (_settle) before the last checkpoint."""
        _settle(self.w, self.progress)
        if self.progress.finish_at is not None:
            log_lease("end", self.w.partition.pk, self.w.owner)  # the checkpoint that finishes it gives it up


def _read_all(w: Window) -> tuple[Partition | None, bool]:
    pace = _Pace(w)
    for item in w.read:
        if pace.lost():
            return None, False
        if pace.take(item):
            stored = _flush(w, pace.progress)
            if not pace.goes_on(stored):
                return stored, False
    pace.settle()
    stored = _flush(w, pace.progress)
    return stored, stored is not None and stored.state != P.FINISHED


async def _read_all_async(w: Window, offload) -> tuple[Partition | None, bool]:
    pace = _Pace(w)
    async for item in w.read:
        if pace.lost():
            return None, False
        if pace.take(item):
            stored = await _flush_async(w, pace.progress, offload)
            if not pace.goes_on(stored):
                return stored, False
    pace.settle()
    stored = await _flush_async(w, pace.progress, offload)
    return stored, stored is not None and stored.state != P.FINISHED


def _settle(w: Window, progress: Progress) -> None:
    """Set where the read left the partition once it is over: ended, at the end, or short of it."""
    progress.watermark = max(progress.watermark, w.read.watermark)
    windows, stream_end, end = readers.read_kind(w.stream).windows, w.stream.end_at, w.end
    if progress.ended is not None:
        progress.finish_at = progress.ended.at
    elif windows and w.store.passed(end, w.partition.pk):
        # A query over a past window returned everything up to its end. One that ended
        # before its end came (a server that closed early) proves only what it sent,
        # even in the stream's last window: the next read goes on from there.
        progress.watermark = max(progress.watermark, end)
        if stream_end is not None and end >= stream_end:
            progress.finish_at = stream_end  # bounded by the stream's end, with no child
    if progress.finish_at is not None:
        progress.watermark = max(progress.watermark, progress.finish_at)


def _flush(w: Window, progress: Progress) -> Partition | None:
    """Land the progress's records durably, then checkpoint it; return the stored partition or None."""
    read_at = _land(w, progress)
    # The records are landed: a database error here retries the checkpoint alone.
    return _stored(w, progress, read_at, w.store.save(w.partition, w.owner, progress, keep_lease=True))


async def _flush_async(w: Window, progress: Progress, offload) -> Partition | None:
    """_flush on an event loop: the landing offloaded, the checkpoint awaited."""
    read_at = await offload(_land, w, progress) if progress.data else _land(w, progress)
    stored = await w.store.save_async(w.partition, w.owner, progress, keep_lease=True)
    return _stored(w, progress, read_at, stored)


def _land(w: Window, progress: Progress) -> datetime:
    """Land the progress's records (if any) durably in the read's segment; return when they were read."""
    progress.watermark = max(progress.watermark, w.read.watermark)
    progress.cursor = w.read.cursor
    read_at = timezone.now()
    if progress.data:
        table = w.source.landing_table(w.stream.name, w.partition.token, progress.data, read_at)
        w.segment.land(progress.start, table)
        progress.records, progress.mods = len(progress.data), table.num_rows
        progress.bytes = pc.sum(table["mod_bytes"]).as_py() or 0
    return read_at


def _stored(w: Window, progress: Progress, read_at: datetime, stored: Partition | None) -> Partition | None:
    if stored is not None and progress.data:
        checkpoint_log.info(
            "CHECKPOINT partition=%s read_at=%.6f committed=%.6f records=%d",
            w.partition.pk, read_at.timestamp(), time.time(), progress.records,
        )  # fmt: skip
    if stored is not None and stored.lease_expires_at is not None:
        log_lease("renew", w.partition.pk, w.owner, stored.lease_expires_at)
    return stored
