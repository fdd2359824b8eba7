"""Which partition reads next: the parent-wait rule, lease recovery, drain and end of stream.

A partition's lease fields say who is responsible for it:

- ``lease_owner`` set and ``lease_expires_at`` in the future: a reader holds it;
- ``lease_owner`` empty and ``lease_expires_at`` in the future: a read task is queued
  (a reservation), so nobody enqueues another one;
- otherwise nobody does, and ``schedule_partitions`` enqueues a read (this is how a
  task lost with a crashed worker, or never delivered, is recovered).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from streams.models import Stream
from streams.transitions import TransitionNotAllowed, transition

from .models import Partition, PartitionEdge

P = Partition.State
S = Stream.State
# States in which readers keep reading; FAILED retries by itself (DESIGN §5).
READING_STATES = (S.RUNNING, S.FAILED)
BY = "partitions.scheduling"


def lease_delta(extra_seconds: float = 0) -> timedelta:
    """Return how long a lease (or a reservation) lives."""
    return timedelta(seconds=settings.CDC_LEASE_SECONDS + extra_seconds)


def free_q(now) -> Q:
    """Return the filter of partitions that nobody holds and for which no read is queued."""
    return Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)


def enqueue_read(partition_id: int, countdown: float = 0, urgent: bool = False) -> None:
    """Queue one read of the partition once the current transaction commits.

    An urgent read (a partition's first, once its parents finished) goes to the
    "urgent" queue, which workers serve in turn with the queue of next windows.
    """
    from .tasks import read_partition_task  # the tasks module imports the services

    options = {"countdown": countdown} if countdown else {}
    if urgent:
        options["queue"] = "urgent"
    transaction.on_commit(lambda: read_partition_task.apply_async((partition_id,), **options))


def reserve_and_enqueue(partition_ids, countdown: float = 0, urgent: bool = False) -> int:
    """Reserve and queue a read of every free partition among the ids; return how many."""
    now = timezone.now()
    queued = 0
    for pk in partition_ids:
        won = (
            Partition.objects.filter(pk=pk)
            .exclude(state=P.FINISHED)
            .filter(free_q(now))
            .update(lease_owner="", lease_expires_at=now + lease_delta(countdown))
        )
        if won:  # the row count says this caller, and no other, queues the read
            enqueue_read(pk, countdown, urgent)
            queued += 1
    return queued


def _parents_finished_q() -> Q:
    unfinished_parent = PartitionEdge.objects.filter(child=OuterRef("pk")).exclude(parent__state=P.FINISHED)
    return ~Q(Exists(unfinished_parent))


def schedule_ready(stream_id: int, candidates=None) -> int:
    """Move CREATED partitions whose parents have all FINISHED to SCHEDULED and queue them."""
    now = timezone.now()
    ready = Partition.objects.filter(stream_id=stream_id, state=P.CREATED).filter(_parents_finished_q())
    if candidates is not None:
        ready = ready.filter(pk__in=candidates)
    scheduled = []
    for pk in ready.values_list("pk", flat=True):
        with transaction.atomic():
            if Partition.objects.filter(pk=pk, state=P.CREATED).update(state=P.SCHEDULED, scheduled_at=now):
                scheduled.append(pk)
                reserve_and_enqueue([pk], urgent=True)
    return len(scheduled)


def schedule_children(partition: Partition) -> int:
    """Schedule the children of a partition that just finished, if all their parents have."""
    child_ids = list(PartitionEdge.objects.filter(parent=partition).values_list("child_id", flat=True))
    if not child_ids:
        return 0
    return schedule_ready(partition.stream_id, child_ids)


def requeue_orphans(stream_id: int) -> int:
    """Queue a read of every SCHEDULED or RUNNING partition that nobody holds or awaits."""
    now = timezone.now()
    orphans = Partition.objects.filter(stream_id=stream_id, state__in=[P.SCHEDULED, P.RUNNING]).filter(
        free_q(now)
    )
    return reserve_and_enqueue(list(orphans.values_list("pk", flat=True)))


def schedule_partitions(stream: Stream) -> dict[str, int]:
    """Apply the parent-wait rule, recover lost reads, and settle draining streams."""
    stream.refresh_from_db(fields=["state", "next_retry_at"])
    if stream.state == S.DRAINING:
        maybe_finish_drain(stream)
        return {"scheduled": 0, "requeued": 0}
    if stream.state not in READING_STATES:
        return {"scheduled": 0, "requeued": 0}
    if stream.state == S.FAILED and stream.next_retry_at and stream.next_retry_at > timezone.now():
        return {"scheduled": 0, "requeued": 0}  # the backoff decides when failed reads retry
    return {"scheduled": schedule_ready(stream.pk), "requeued": requeue_orphans(stream.pk)}


def live_leases(stream: Stream):
    """Return the stream's partitions held by a reader or awaiting a queued read."""
    return Partition.objects.filter(stream=stream, lease_expires_at__gt=timezone.now())


def maybe_finish_drain(stream: Stream, by: str = BY) -> bool:
    """Move a DRAINING stream to PAUSED once no reader holds or awaits a partition."""
    stream.refresh_from_db(fields=["state"])
    if stream.state != S.DRAINING or live_leases(stream).exists():
        return False
    try:
        transition(stream, S.PAUSED, by=by, reason="drained: every reader closed its window")
    except TransitionNotAllowed:
        return False  # another reader settled it first
    return True


def maybe_finish_stream(stream: Stream, by: str = BY) -> bool:
    """Move a stream whose partitions all FINISHED at its end timestamp to PAUSED, saying so."""
    stream.refresh_from_db(fields=["state", "end_at"])
    if stream.end_at is None or stream.state != S.RUNNING:
        return False
    partitions = Partition.objects.filter(stream=stream)
    if not partitions.exists() or partitions.exclude(state=P.FINISHED).exists():
        return False
    reason = f"reached end timestamp {stream.end_at.isoformat()}: every partition FINISHED"
    try:
        transition(stream, S.PAUSED, by=by, reason=reason, paused_at=timezone.now())
    except TransitionNotAllowed:
        return False
    return True


def retry_failed_streams(by: str = "partitions.tasks.retry_failed_streams_task") -> int:
    """Restart the retries of FAILED streams whose backoff has passed; return how many."""
    now = timezone.now()
    due = Stream.objects.filter(state=S.FAILED).filter(
        Q(next_retry_at__isnull=True) | Q(next_retry_at__lte=now)
    )
    count = 0
    for stream in due:
        if not stream.partitions.exists() or stream.resume_from is not None:
            # It failed before its roots were found: the start task tries again.
            from .tasks import start_stream_task

            try:
                transition(stream, S.STARTING, by=by, reason="retrying the initial query")
            except TransitionNotAllowed:
                continue
            transaction.on_commit(lambda pk=stream.pk: start_stream_task.delay(pk))
        else:
            requeue_orphans(stream.pk)
        count += 1
    return count
