"""Celery tasks: thin wrappers that take ids, return early if the row is gone, call a service.

Tasks may run twice, late, or concurrently with themselves: the services make that
harmless (leases by conditional UPDATE, insert-if-absent, conditional transitions).
Only transient database errors are retried here; change stream errors are recorded
and retried by the services, which own the backoff and the stream's state.
"""

from __future__ import annotations

import threading

from celery import shared_task
from celery.signals import worker_shutting_down
from django.db import OperationalError, transaction

from partitions import stalls
from partitions.models import Partition
from streams.models import Stream

from . import failures, readers, scheduling, services, starting, sweeps
from . import lag_samples as lag
from .live import LIVE

# A locked SQLite file or a dropped PostgreSQL connection: the same call may succeed later.
TRANSIENT = (OperationalError,)
RETRY = {"autoretry_for": TRANSIENT, "retry_backoff": True, "retry_backoff_max": 30, "max_retries": 8}


@shared_task(bind=True, acks_late=True, **RETRY)
def start_stream_task(self, stream_id: int) -> str | None:
    """Find the stream's root partitions (or keep its partitions) and start reading."""
    stream = Stream.objects.filter(pk=stream_id).first()
    if stream is None:
        return None  # deleted after this was queued
    return starting.start_stream(stream, QUEUE)


@shared_task(bind=True, acks_late=True, **RETRY)
def read_partition_task(self, partition_id: int) -> str | None:
    """Read the partition's next window."""
    partition = Partition.objects.filter(pk=partition_id).first()
    if partition is None:
        return None
    attempt = services.Attempt(
        self.request.id or "", self.request.hostname or "local", self.request.retries or 0
    )
    return services.read_next_window(partition, QUEUE, attempt, live=LIVE)


@worker_shutting_down.connect
def stop_live_reads(**kwargs) -> None:
    """Let this worker's live reads checkpoint and give their leases back before it exits."""
    LIVE.stop_all()


# Beat sends these on a timer: a run that takes longer than the period must not be
# joined by the next one on another housekeeping thread (they would only repeat each
# other's work and crowd out the lag samples), so a run already going in this process
# makes the next one return at once.
_running = {name: threading.Lock() for name in ("schedule", "stalls")}


def _alone(name: str, work):
    lock = _running[name]
    if not lock.acquire(blocking=False):
        return "busy"
    try:
        return work()
    finally:
        lock.release()


@shared_task(bind=True, acks_late=True, **RETRY)
def schedule_partitions_task(self, stream_id: int | None = None) -> dict | str | None:
    """Schedule ready children and recover lost reads, of one stream or of all."""
    if stream_id:
        return _schedule(Stream.objects.filter(pk=stream_id))
    return _alone("schedule", lambda: _schedule(Stream.objects.all()))


def _schedule(streams) -> dict:
    return {
        stream.name: scheduling.schedule_partitions(stream, QUEUE)
        for stream in streams
        if readers.reads(stream) and not failures.stop_if_refused(stream)
    }


@shared_task(bind=True, acks_late=True, **RETRY)
def drain_stream_task(self, stream_id: int) -> bool | None:
    """Move a DRAINING stream to PAUSED once its readers have let go."""
    stream = Stream.objects.filter(pk=stream_id).first()
    if stream is None:
        return None
    return scheduling.maybe_finish_drain(stream, by="partitions.pipeline.tasks.drain_stream_task")


@shared_task(bind=True, acks_late=True, **RETRY)
def retry_failed_streams_task(self) -> int:
    """Restart FAILED streams whose backoff has passed."""
    return scheduling.retry_failed_streams(QUEUE)


@shared_task(bind=True, acks_late=True, **RETRY)
def sweep_streams_task(self) -> dict:
    """Start again the STARTING streams whose start task was lost (FAILED after too long)."""
    return sweeps.sweep_starting(QUEUE)


@shared_task(bind=True, acks_late=True, **RETRY)
def sample_lag_task(self) -> int:
    """Store one lag sample per reading stream."""
    return lag.sample_all()


@shared_task(bind=True, acks_late=True, **RETRY)
def detect_stalls_task(self) -> dict | str:
    """Apply the stall rules to every running stream."""
    return _alone("stalls", stalls.detect_stalls)


@shared_task(bind=True, acks_late=True, **RETRY)
def cleanup_lag_samples_task(self) -> dict:
    """Downsample old lag samples and delete those beyond the retention."""
    return lag.cleanup()


class CeleryQueue:
    """The pipeline's Queue (partitions.pipeline.queue): these tasks, sent once the transaction commits."""

    def read(self, partition_id: int, countdown: float = 0, urgent: bool = False) -> None:
        """Queue one read; a first read goes to "urgent", ahead of every other partition's next window."""
        options = {"countdown": countdown} if countdown else {}
        if urgent:
            options["queue"] = "urgent"
        transaction.on_commit(lambda: read_partition_task.apply_async((partition_id,), **options))

    def start(self, stream_id: int, countdown: float = 0) -> None:
        """Queue the stream's start task."""
        transaction.on_commit(lambda: start_stream_task.apply_async((stream_id,), countdown=countdown))


QUEUE = CeleryQueue()
