"""Which partition reads next: the parent-wait rule, lost-read recovery, drain and end of stream.

Reads are queued through the ``Queue`` the caller hands in (partitions.pipeline.queue), after
a reservation (partitions.pipeline.leases) that makes sure each partition has one read queued.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from partitions import states
from partitions.kinds import read_streams
from partitions.models import Partition, PartitionEdge
from streams.models import Stream
from streams.transitions import TransitionNotAllowed, transition

from . import lineage, readers
from .leases import READING_STATES, expiry, free_q, live
from .queue import Queue

P = Partition.State
S = Stream.State
BY = "partitions.pipeline.scheduling"


def _lock_skipping(partitions):
    """Return the partitions locked (FOR NO KEY UPDATE SKIP LOCKED), their rows only.

    Partition's default ordering joins its stream; locked that way, the stream's row
    would be locked too, and skipped whenever any reader of the stream was checkpointing
    (each checkpoint updates it): children whose last parent had just finished were then
    left to beat's next pass, seconds later. Unordered and `of` self, only the partition
    rows count.
    """
    return partitions.order_by().select_for_update(skip_locked=True, no_key=True, of=("self",))


def reserve_and_enqueue(partition_ids, queue: Queue, countdown: float = 0, urgent: bool = False) -> int:
    """Reserve and queue a read of every free partition among the ids; return how many.

    One locked read and one UPDATE for the whole batch: the rows read FOR UPDATE are
    this caller's to reserve (a concurrent caller skips them, and finds them reserved
    once this commits), so a read is queued once per partition however many callers
    race, and a backlog of hundreds costs two statements, not hundreds.
    """
    with transaction.atomic():
        free = _lock_skipping(Partition.objects.filter(pk__in=list(partition_ids)))
        won = list(free.exclude(state=P.FINISHED).filter(free_q()).values_list("pk", flat=True))
        Partition.objects.filter(pk__in=won).update(lease_owner="", lease_expires_at=expiry(countdown))
        for pk in won:
            queue.read(pk, countdown, urgent)
    return len(won)


def _parents_finished_q() -> Q:
    unfinished_parent = PartitionEdge.objects.filter(child=OuterRef("pk")).exclude(parent__state=P.FINISHED)
    return ~Q(Exists(unfinished_parent))


def schedule_ready(stream_id: int, queue: Queue, candidates=None) -> int:
    """Move CREATED partitions whose parents have all FINISHED, and that their source finds
    ready (Bigtable: the handed-over tokens cover the range), to SCHEDULED and queue them."""
    now = timezone.now()
    ready = Partition.objects.filter(stream_id=stream_id, state=P.CREATED).filter(_parents_finished_q())
    if candidates is not None:
        ready = ready.filter(pk__in=candidates)
    with transaction.atomic():
        # Locked rows are this caller's: a concurrent scheduler skips them, then finds
        # them SCHEDULED, so each child is scheduled and queued once.
        locked = list(_lock_skipping(ready))
        if not locked:
            return 0
        stream = locked[0].stream
        kind = readers.read_kind(stream)
        if stream.end_at is not None:
            waiting = [p for p in locked if not kind.child_ready(readers.state_of(p), parents_finished=True)]
            if waiting:
                lineage.complete_at_end(stream, waiting, kind)
        won = [p.pk for p in locked if kind.child_ready(readers.state_of(p), parents_finished=True)]
        states.move(Partition.objects.filter(pk__in=won), P.SCHEDULED, scheduled_at=now)
        reserve_and_enqueue(won, queue, urgent=True)
    return len(won)


def schedule_children(partition: Partition, queue: Queue) -> int:
    """Schedule the children of a partition that just finished, if all their parents have."""
    child_ids = list(PartitionEdge.objects.filter(parent=partition).values_list("child_id", flat=True))
    if not child_ids:
        return 0
    return schedule_ready(partition.stream_id, queue, child_ids)


def requeue_orphans(stream_id: int, queue: Queue) -> int:
    """Queue a read of every SCHEDULED or RUNNING partition that nobody holds or awaits."""
    orphans = Partition.objects.filter(stream_id=stream_id, state__in=[P.SCHEDULED, P.RUNNING]).filter(
        free_q()
    )
    return reserve_and_enqueue(list(orphans.values_list("pk", flat=True)), queue)


def schedule_partitions(stream: Stream, queue: Queue) -> dict[str, int]:
    """Apply the parent-wait rule, recover lost reads, and settle draining streams."""
    stream.refresh_from_db(fields=["state", "next_retry_at"])
    if stream.state == S.DRAINING:
        maybe_finish_drain(stream)
        return {"scheduled": 0, "requeued": 0}
    if stream.state not in READING_STATES:
        return {"scheduled": 0, "requeued": 0}
    if stream.state == S.FAILED and stream.next_retry_at and stream.next_retry_at > timezone.now():
        return {"scheduled": 0, "requeued": 0}  # the backoff decides when failed reads retry
    return {"scheduled": schedule_ready(stream.pk, queue), "requeued": requeue_orphans(stream.pk, queue)}


def maybe_finish_drain(stream: Stream, by: str = BY) -> bool:
    """Move a DRAINING stream to PAUSED once no reader holds or awaits a partition."""
    stream.refresh_from_db(fields=["state"])
    if stream.state != S.DRAINING or live(stream).exists():
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
        now = timezone.now()
        transition(stream, S.PAUSED, by=by, reason=reason, paused_at=now, reached_end_at=now)
    except TransitionNotAllowed:
        return False
    return True


def retry_failed_streams(
    queue: Queue, by: str = "partitions.pipeline.tasks.retry_failed_streams_task"
) -> int:
    """Restart the retries of FAILED streams whose backoff has passed; return how many."""
    now = timezone.now()
    due = (
        read_streams()
        .filter(state=S.FAILED)
        .filter(Q(next_retry_at__isnull=True) | Q(next_retry_at__lte=now))
    )
    count = 0
    for stream in due:
        if not stream.partitions.exists() or stream.resume_from is not None:
            # It failed before its roots were found: the start task tries again.
            try:
                transition(stream, S.STARTING, by=by, reason="retrying the initial query")
            except TransitionNotAllowed:
                continue
            queue.start(stream.pk)
        else:
            requeue_orphans(stream.pk, queue)
        count += 1
    return count
