"""The reading pipeline: the one place that joins the change stream reader with the ORM.

Reading one window of one partition follows DESIGN §5:

1. take the lease with a conditional UPDATE (the row count says who won);
2. query [watermark, min(watermark + window, stream end)] for the partition;
3. land the data change records (temp file, fsync, atomic rename) BEFORE step 4;
4. checkpoint in one transaction (``checkpoint.save_progress``);
5. queue the next window while the stream reads on; release the lease otherwise.

A live window can take its whole length to arrive, so the loop also lands and
checkpoints at a record once ``flush_seconds`` have passed; the file is named after
the new watermark, which is where a re-read after a crash would start.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime, timedelta

import pyarrow.compute as pc
from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from streams.models import Stream

from . import landing, readers, scheduling
from .changestream.errors import ChangeRecordError, SpannerError
from .changestream.records import ChildPartitionsRecord, DataChangeRecord, HeartbeatRecord
from .checkpoint import Progress, release_lease, reserve_for_next, save_progress
from .failures import handle_read_error
from .models import Partition
from .starting import start_stream  # noqa: F401  (part of this module's interface)

log = logging.getLogger(__name__)
# Lease audit lines (at INFO): the tests read them to prove no two readers overlap.
lease_log = logging.getLogger("partitions.lease")
P = Partition.State
S = Stream.State


def new_owner(worker: str | None) -> str:
    """Return a lease owner unique to this attempt (a queue may deliver one task twice)."""
    return f"{worker or 'local'}:{uuid.uuid4().hex[:12]}"


def acquire_lease(partition: Partition, owner: str) -> bool:
    """Take the partition's lease if nobody holds a live one and its stream reads on."""
    if not Stream.objects.filter(pk=partition.stream_id, state__in=scheduling.READING_STATES).exists():
        return False  # a pause racing this check is seen again after the window
    now = timezone.now()
    # Only the row's own columns in the WHERE: PostgreSQL re-checks them on the row a
    # concurrent winner committed, but a join would turn them into an `id IN (subquery)`
    # that is not re-checked, and two readers would both "win" (the pipeline tests saw it).
    rows = (
        Partition.objects.filter(pk=partition.pk, state__in=[P.SCHEDULED, P.RUNNING])
        .filter(Q(lease_owner="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .update(
            lease_owner=owner,
            lease_expires_at=now + scheduling.lease_delta(),
            state=P.RUNNING,
            running_at=Coalesce("running_at", now),
            last_progress_at=Coalesce("last_progress_at", now),
        )
    )
    return rows == 1


def log_lease(event: str, partition_id: int, owner: str, expires: datetime | None = None) -> None:
    """Log a lease event with a wall-clock time; "end" is logged before the lease is given up."""
    until = expires.timestamp() if expires else 0.0
    lease_log.info(
        "LEASE %s partition=%s owner=%s at=%.6f until=%.6f", event, partition_id, owner, time.time(), until
    )


def window_end(partition: Partition, stream: Stream) -> datetime:
    """Return the end of the partition's next window, bounded by the stream's end."""
    end = partition.watermark + timedelta(seconds=stream.window_seconds)
    return min(end, stream.end_at) if stream.end_at else end


def query_timeout(end: datetime) -> float:
    """Return a window query's deadline: until its end, plus one lease.

    A query that hangs past that would have lost its lease anyway; ending it with
    DEADLINE_EXCEEDED (retryable) lets the failure count and the backoff see it.
    """
    return max(0.0, (end - timezone.now()).total_seconds()) + settings.CDC_LEASE_SECONDS


def flush_seconds() -> float:
    """Return how often a long (live) window lands and checkpoints what it has so far."""
    return max(0.5, settings.CDC_LEASE_SECONDS / 4)


def land(stream: Stream, partition: Partition, progress: Progress) -> None:
    """Write the progress's data records to the landing zone, durably, and count their bytes."""
    if not progress.data:
        return
    table = landing.build_table(stream.name, partition.token, progress.data, timezone.now())
    landing.write_table(settings.CDC_LANDING_URI, stream.name, partition.token, progress.start, table)
    progress.bytes = pc.sum(table["mod_bytes"]).as_py() or 0


def _add(progress: Progress, record) -> None:
    if isinstance(record, DataChangeRecord):
        progress.data.append(record)
        progress.mods += len(record.mods)
        progress.watermark = max(progress.watermark, record.commit_timestamp)
    elif isinstance(record, HeartbeatRecord):
        progress.heartbeats += 1
        progress.watermark = max(progress.watermark, record.timestamp)
    elif isinstance(record, ChildPartitionsRecord):
        progress.children = record
        progress.watermark = max(progress.watermark, record.start_timestamp)


def _stream_reads_on(stream: Stream) -> bool:
    stream.refresh_from_db(fields=["state"])
    return stream.state in scheduling.READING_STATES


def _flush(stream, partition, owner, progress) -> Partition | None:
    land(stream, partition, progress)
    stored = save_progress(partition.pk, owner, progress, keep_lease=True)
    if stored is not None and stored.lease_expires_at is not None:
        log_lease("renew", partition.pk, owner, stored.lease_expires_at)
    return stored


def read_window(stream: Stream, partition: Partition, owner: str) -> tuple[Partition | None, bool]:
    """Read, land and checkpoint one window; return (stored partition, whether to go on)."""
    end = window_end(partition, stream)
    progress = Progress(start=partition.watermark, watermark=partition.watermark)
    # Queried even when watermark == end: both bounds are inclusive, and a child that
    # starts exactly at the stream's end still owns the records committed there.
    flushed_at = time.monotonic()
    reader = readers.reader_for(stream, timeout=query_timeout(end))
    for record in reader.read(partition.token, partition.watermark, end):
        _add(progress, record)
        if progress.children is None and time.monotonic() - flushed_at >= flush_seconds():
            stored = _flush(stream, partition, owner, progress)
            if stored is None or not _stream_reads_on(stream):
                return stored, False  # lease lost, or asked to stop: leave mid-window
            partition, flushed_at = stored, time.monotonic()
            progress = Progress(start=stored.watermark, watermark=stored.watermark)
    if progress.children is not None:
        progress.finish_at = progress.children.start_timestamp
    elif stream.end_at is not None and end >= stream.end_at:
        progress.finish_at = stream.end_at  # bounded by the stream's end, with no child
    progress.watermark = max(progress.watermark, progress.finish_at or end)
    if progress.finish_at is not None:
        log_lease("end", partition.pk, owner)  # the checkpoint that finishes it gives it up
    stored = _flush(stream, partition, owner, progress)
    return stored, stored is not None and stored.state != P.FINISHED


def read_next_window(partition: Partition, worker: str | None = None) -> str:
    """Read the partition's next window if we win its lease; return what happened."""
    owner = new_owner(worker)
    if not acquire_lease(partition, owner):
        _settle_unleased(partition)
        return "not leased"
    partition.refresh_from_db()
    log_lease("start", partition.pk, owner, partition.lease_expires_at)
    stream = Stream.objects.get(pk=partition.stream_id)
    try:
        stored, go_on = read_window(stream, partition, owner)
    except (SpannerError, ChangeRecordError) as error:
        log_lease("end", partition.pk, owner)
        handle_read_error(stream, partition, owner, error)
        return "error"
    if stored is None:
        return "lease lost"
    if stored.state == P.FINISHED:
        scheduling.schedule_children(stored)
        scheduling.maybe_finish_stream(stream)
        return "finished"
    return _continue_or_stop(stream, stored, owner, go_on)


def _continue_or_stop(stream: Stream, partition: Partition, owner: str, go_on: bool) -> str:
    log_lease("end", partition.pk, owner)
    if go_on and _stream_reads_on(stream) and reserve_for_next(partition.pk, owner):
        scheduling.enqueue_read(partition.pk)
        return "continued"
    release_lease(partition.pk, owner)
    scheduling.maybe_finish_drain(stream)
    return "stopped"


def _settle_unleased(partition: Partition) -> None:
    # A queued read that finds its stream stopped gives back the reservation, so
    # that draining can complete.
    stream = Stream.objects.filter(pk=partition.stream_id).first()
    if stream is not None and stream.state not in scheduling.READING_STATES:
        release_lease(partition.pk)
        scheduling.maybe_finish_drain(stream)
