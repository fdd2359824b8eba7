"""The reading pipeline's one task-level service: read a partition's next window, then hand over.

Reading one window of one partition follows DESIGN §5, for every kind of source:

1. take the lease with a conditional UPDATE (leases.take; the row count says who won);
2. read the window through the stream's source (window.read_window);
3. land its records (temp file, fsync, atomic rename) BEFORE step 4;
4. checkpoint in one transaction (checkpoint.save_progress), during the read as well;
5. queue the next read while the stream reads on (after the source's poll interval, for a
   polling kind); release the lease otherwise. A partition that ended schedules its children.

Any failure records a StreamError and retries after a backoff: the lease is never left
to expire with nobody told.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from partitions.models import Partition
from partitions.sources.base import SourceError
from streams.models import Stream

from . import leases, readers, scheduling
from .leases import log_lease
from .live import LiveReads
from .queue import Queue
from .settle import read_and_settle
from .window import Outcome, stream_reads_on, window_end


@dataclass(frozen=True)
class Attempt:
    """Who reads: a task (its id, the worker that runs it) and which retry of it this is."""

    task_id: str = ""
    worker: str = "local"
    retries: int = 0

    def owner(self) -> str:
        """Return a lease owner unique to this attempt (a queue may deliver one task twice)."""
        return f"{self.task_id or uuid.uuid4().hex}.{self.retries}.{uuid.uuid4().hex[:6]}@{self.worker}"

    def reclaim(self) -> str:
        """Return the owner prefix of this task's earlier attempts, whose lease a retry takes back."""
        return f"{self.task_id}." if self.task_id and self.retries else ""


def read_next_window(
    partition: Partition, queue: Queue, attempt: Attempt | None = None, live: LiveReads | None = None
) -> str:
    """Read the partition's next window if we win its lease; return what happened.

    With `live` (the worker's), a partition whose next read reaches the live edge is handed
    to a live read of its own, which reads on window after window (live.py); otherwise the
    window is read here, in the caller's thread, and handed to a live read if that brought
    it to the live edge.

    A database error of our own (the checkpoint already retried it for a lease) is not
    the source's: it is raised for the task's retry, which takes this attempt's lease
    back at once; it never counts toward FAILED.
    """
    attempt = attempt or Attempt()
    owner = attempt.owner()
    if not leases.take(partition, owner, reclaim=attempt.reclaim()):
        _settle_unleased(partition)
        return "not leased"
    partition.refresh_from_db()
    log_lease("start", partition.pk, owner, partition.lease_expires_at)
    stream = Stream.objects.get(pk=partition.stream_id)
    if live is not None and at_live_edge(partition, stream) and live.adopt(partition, stream, owner, queue):
        return "live"
    done, outcome = read_and_settle(stream, partition, owner, queue)
    if done:
        return done
    if live is not None and _caught_up(stream, outcome) and live.adopt(outcome.stored, stream, owner, queue):
        return "live"  # read on from here under the same lease, not from the back of the queue
    return _continue_or_stop(stream, outcome, owner, queue)


def _caught_up(stream: Stream, outcome: Outcome) -> bool:
    """Return whether a read that goes on at once has brought its partition to the live edge.

    A catch-up read ends a window short of now, so its next read is a live one. Queued, it
    waited behind every other partition's reads and fell behind again: at 2,000 partitions
    started a minute back on one reader, 1,454 reads went back to the queue, and beat queued
    copies of those whose wait outlived their reservation (docs/benchmarks.md, issue 22).
    """
    return (
        outcome.go_on
        and not outcome.delay
        and at_live_edge(outcome.stored, stream)
        and stream_reads_on(stream)
    )


def at_live_edge(partition: Partition, stream: Stream) -> bool:
    """Return whether the partition is at the live edge, or one window short of it (a poll always is).

    A partition a window or two behind is caught up by its live read in its own thread, window
    after window: sent back to the pool's queue after each window, behind every other
    partition's reads, it fell further behind while it waited (2,000 partitions started a
    minute back never reached the edge: docs/benchmarks.md, issue 22). Longer backlogs stay
    with the pool, whose size bounds how many catch up at once.
    The database's clock is the lease's: take() has just set its expiry one lease from now.
    """
    try:
        end = window_end(partition, stream)
    except SourceError:
        return False  # the read below fails and records why
    if end is None or not readers.read_kind(stream).windows:
        return True
    return end > leases.db_now_of(partition) - timedelta(seconds=stream.window_seconds)


def _continue_or_stop(stream: Stream, outcome: Outcome, owner: str, queue: Queue) -> str:
    partition = outcome.stored
    log_lease("end", partition.pk, owner)
    if outcome.go_on and stream_reads_on(stream) and leases.reserve(partition.pk, owner, outcome.delay):
        queue.read(partition.pk, countdown=outcome.delay)
        return "continued"
    leases.release(partition.pk, owner)
    scheduling.maybe_finish_drain(stream)
    return "stopped"


def _settle_unleased(partition: Partition) -> None:
    # A queued read that finds its stream stopped gives back the reservation, so
    # that draining can complete.
    stream = Stream.objects.filter(pk=partition.stream_id).first()
    if stream is not None and stream.state not in leases.READING_STATES:
        leases.release(partition.pk)
        scheduling.maybe_finish_drain(stream)
