"""Celery tasks: thin wrappers that take ids, return early if the row is gone, call a service.

Tasks may run twice, late, or concurrently with themselves: the services make that
harmless (leases by conditional UPDATE, insert-if-absent, conditional transitions).
Only transient database errors are retried here; change stream errors are recorded
and retried by the services, which own the backoff and the stream's state.
"""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from streams.models import Stream

from . import lag, scheduling, services, stalls
from .models import Partition

# A locked SQLite file or a dropped PostgreSQL connection: the same call may succeed later.
TRANSIENT = (OperationalError,)
RETRY = {"autoretry_for": TRANSIENT, "retry_backoff": True, "retry_backoff_max": 30, "max_retries": 8}


@shared_task(bind=True, acks_late=True, **RETRY)
def start_stream_task(self, stream_id: int) -> str | None:
    """Find the stream's root partitions (or keep its partitions) and start reading."""
    stream = Stream.objects.filter(pk=stream_id).first()
    if stream is None:
        return None  # deleted after this was queued
    return services.start_stream(stream)


@shared_task(bind=True, acks_late=True, **RETRY)
def read_partition_task(self, partition_id: int) -> str | None:
    """Read the partition's next window."""
    partition = Partition.objects.filter(pk=partition_id).first()
    if partition is None:
        return None
    return services.read_next_window(partition, worker=self.request.hostname or self.request.id)


@shared_task(bind=True, acks_late=True, **RETRY)
def schedule_partitions_task(self, stream_id: int | None = None) -> dict | None:
    """Schedule ready children and recover lost reads, of one stream or of all."""
    streams = Stream.objects.filter(pk=stream_id) if stream_id else Stream.objects.all()
    return {s.name: scheduling.schedule_partitions(s) for s in streams}


@shared_task(bind=True, acks_late=True, **RETRY)
def drain_stream_task(self, stream_id: int) -> bool | None:
    """Move a DRAINING stream to PAUSED once its readers have let go."""
    stream = Stream.objects.filter(pk=stream_id).first()
    if stream is None:
        return None
    return scheduling.maybe_finish_drain(stream, by="partitions.tasks.drain_stream_task")


@shared_task(bind=True, acks_late=True, **RETRY)
def retry_failed_streams_task(self) -> int:
    """Restart FAILED streams whose backoff has passed."""
    return scheduling.retry_failed_streams()


@shared_task(bind=True, acks_late=True, **RETRY)
def sample_lag_task(self) -> int:
    """Store one lag sample per reading stream."""
    return lag.sample_all()


@shared_task(bind=True, acks_late=True, **RETRY)
def detect_stalls_task(self) -> dict:
    """Apply the stall rules to every running stream."""
    return stalls.detect_stalls()


@shared_task(bind=True, acks_late=True, **RETRY)
def cleanup_lag_samples_task(self) -> dict:
    """Downsample old lag samples and delete those beyond the retention."""
    return lag.cleanup()
