"""Store what one read of a partition proved, in one database transaction (DESIGN §5 step 4).

The landing file is already durable when this runs, so the watermark may move up to
the newest record it holds; a partition FINISHES only in the transaction that stores
its children, and only the lease holder may write (a reader that lost its lease to
an expiry drops its checkpoint: the next holder re-reads the same window).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from streams.models import Stream
from streams.transitions import TransitionNotAllowed, transition

from .changestream.records import ChildPartitionsRecord
from .models import Partition, PartitionEdge
from .scheduling import lease_delta

P = Partition.State


@dataclass
class Progress:
    """What a stretch of one partition's query delivered since the last checkpoint."""

    start: datetime
    watermark: datetime
    data: list = field(default_factory=list)
    mods: int = 0
    bytes: int = 0
    heartbeats: int = 0
    children: ChildPartitionsRecord | None = None
    finish_at: datetime | None = None  # set when the query ended the partition


def _store_children(partition: Partition, record: ChildPartitionsRecord) -> None:
    """Insert the announced children and their edges if absent (each parent announces a merge).

    A child is stored only once every parent it names exists here: a parent that does
    not exist yet (its own parent has not finished) will announce the same child when
    it finishes, and only then could the child have all its edges. Storing it earlier
    would let the parent-wait rule see one parent, finished, and schedule it too soon.
    """
    stream_id, start = partition.stream_id, record.start_timestamp
    named = {t for c in record.child_partitions for t in c.parent_partition_tokens} | {partition.token}
    known = dict(Partition.objects.filter(stream_id=stream_id, token__in=named).values_list("token", "pk"))
    ready = [
        c for c in record.child_partitions if {*c.parent_partition_tokens, partition.token} <= known.keys()
    ]
    Partition.objects.bulk_create(
        [Partition(stream_id=stream_id, token=c.token, start_at=start, watermark=start) for c in ready],
        ignore_conflicts=True,
    )
    children = Partition.objects.filter(stream_id=stream_id, token__in=[c.token for c in ready])
    by_token = dict(children.values_list("token", "pk"))
    edges = [
        PartitionEdge(stream_id=stream_id, parent_id=known[parent], child_id=by_token[c.token])
        for c in ready
        for parent in {*c.parent_partition_tokens, partition.token}
    ]
    PartitionEdge.objects.bulk_create(edges, ignore_conflicts=True)


def _apply(locked: Partition, progress: Progress, now: datetime, keep_lease: bool) -> None:
    if progress.watermark > locked.watermark:  # never backwards
        locked.watermark = progress.watermark
        locked.last_progress_at = now
        if locked.stall_rule or locked.stalled:
            locked.stalled, locked.stall_rule, locked.stall_evidence = False, "", {}
    locked.data_records += len(progress.data)
    locked.mods += progress.mods
    locked.bytes += progress.bytes
    locked.heartbeats += progress.heartbeats
    if progress.finish_at is not None:
        if progress.children is not None:
            _store_children(locked, progress.children)
        locked.state, locked.end_at, locked.finished_at = P.FINISHED, progress.finish_at, now
        locked.watermark = max(locked.watermark, progress.finish_at)
        locked.lease_owner, locked.lease_expires_at = "", None
    elif keep_lease:
        locked.lease_expires_at = now + lease_delta()
    else:
        locked.lease_owner, locked.lease_expires_at = "", None


def save_progress(partition_id: int, owner: str, progress: Progress, keep_lease: bool) -> Partition | None:
    """Checkpoint the progress if `owner` still holds the lease; return the partition or None."""
    now = timezone.now()
    with transaction.atomic():
        # FOR NO KEY UPDATE, not FOR UPDATE: the two parents of a merge finish at once,
        # each holding its own row while inserting the child's edge to the other, and
        # an edge's foreign key takes FOR KEY SHARE on its parent, which FOR UPDATE
        # blocks: PostgreSQL reported that deadlock between two readers under load.
        rows = Partition.objects.select_for_update(no_key=True)
        locked = rows.filter(pk=partition_id, lease_owner=owner).first()
        if locked is None or locked.state == P.FINISHED:
            return None
        _apply(locked, progress, now, keep_lease)
        locked.save()
        mark_stream_healthy(locked.stream_id)
    return locked


def mark_stream_healthy(stream_id: int) -> None:
    """Reset the failure count after a good read, and bring a FAILED stream back to RUNNING."""
    Stream.objects.filter(pk=stream_id, consecutive_failures__gt=0).update(consecutive_failures=0)
    stream = Stream.objects.filter(pk=stream_id, state=Stream.State.FAILED).first()
    if stream is None:
        return
    # Suppressed: another reader may have brought it back first.
    with contextlib.suppress(TransitionNotAllowed):
        transition(
            stream,
            Stream.State.RUNNING,
            by="partitions.tasks.read_partition_task",
            reason="a retry succeeded",
            next_retry_at=None,
        )


def release_lease(partition_id: int, owner: str | None = None) -> bool:
    """Give up the lease (or the reservation when owner is None); return whether it was ours."""
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner or "")
    return bool(rows.update(lease_owner="", lease_expires_at=None))


def reserve_for_next(partition_id: int, owner: str, countdown: float = 0) -> bool:
    """Turn our lease into a reservation for the queued next read; return whether it was ours."""
    expires = timezone.now() + lease_delta(countdown)
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner)
    return bool(rows.update(lease_owner="", lease_expires_at=expires))


def count_failure(stream_id: int) -> int:
    """Add one consecutive failure to the stream and return the new count."""
    Stream.objects.filter(pk=stream_id).update(consecutive_failures=F("consecutive_failures") + 1)
    return Stream.objects.values_list("consecutive_failures", flat=True).get(pk=stream_id)
