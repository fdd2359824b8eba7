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
from django.db.models.functions import Now

from partitions import states
from partitions.models import Partition
from partitions.sources.base import Ended
from streams.models import Stream
from streams.transitions import TransitionNotAllowed, transition

from . import lineage, readers
from .leases import lease_delta

P = Partition.State


@dataclass
class Progress:
    """What a stretch of one partition's read delivered since the last checkpoint."""

    start: datetime
    watermark: datetime
    data: list = field(default_factory=list)  # the records not yet landed
    records: int = 0
    mods: int = 0
    bytes: int = 0
    heartbeats: int = 0
    ended: Ended | None = None  # the read ended the partition (with its children)
    finish_at: datetime | None = None  # set when the partition ends here
    cursor: dict | None = None  # the source's resume state at the watermark (None: unchanged)

    def next(self) -> Progress:
        """Return an empty progress that starts where this one's watermark is."""
        return Progress(start=self.watermark, watermark=self.watermark)


def apply_progress(locked: Partition, progress: Progress, now: datetime, keep_lease: bool) -> None:
    """Apply a checkpoint to its locked row: never backwards; ending it stores its children."""
    if progress.watermark > locked.watermark:  # never backwards
        locked.watermark = progress.watermark
        locked.last_progress_at = now
        if locked.stall_rule or locked.stalled:
            locked.stalled, locked.stall_rule, locked.stall_evidence = False, "", {}
    if progress.cursor is not None:
        locked.cursor = progress.cursor
    locked.data_records += progress.records
    locked.mods += progress.mods
    locked.bytes += progress.bytes
    locked.heartbeats += progress.heartbeats
    if progress.finish_at is not None:
        if progress.ended is not None:
            lineage.store_children(locked, progress.ended, readers.read_kind(locked.stream))
        states.check(locked.state, P.FINISHED)
        locked.state, locked.end_at, locked.finished_at = P.FINISHED, progress.finish_at, now
        locked.watermark = max(locked.watermark, progress.finish_at)
        locked.lease_owner, locked.lease_expires_at = "", None
    elif keep_lease:
        locked.lease_expires_at = now + lease_delta()
    else:
        locked.lease_owner, locked.lease_expires_at = "", None


def save_progress(partition_id: int, owner: str, progress: Progress, keep_lease: bool) -> Partition | None:
    """Checkpoint the progress if `owner` still holds the lease; return the partition or None."""
    with transaction.atomic():
        # FOR NO KEY UPDATE, not FOR UPDATE: the two parents of a merge finish at once,
        # each holding its own row while inserting the child's edge to the other, and
        # an edge's foreign key takes FOR KEY SHARE on its parent, which FOR UPDATE
        # blocks: PostgreSQL reported that deadlock between two readers under load.
        rows = Partition.objects.select_for_update(no_key=True, of=("self",))
        # The database's clock, read with the row: lease times are never a worker's.
        locked = rows.annotate(db_now=Now()).filter(pk=partition_id, lease_owner=owner).first()
        if locked is None or locked.state == P.FINISHED:
            return None
        apply_progress(locked, progress, locked.db_now, keep_lease)
        locked.save()
        mark_stream_healthy(locked.stream_id)
    return locked


def mark_stream_healthy(stream_id: int) -> None:
    """Reset the failure count after a good read, and bring a FAILED stream back to RUNNING."""
    mark_streams_healthy({stream_id})


def mark_streams_healthy(stream_ids: set[int]) -> None:
    """Reset the streams' failure counts after good reads, and bring FAILED ones back to RUNNING."""
    # Every checkpoint passes here: one read in the usual case (no failures, not FAILED).
    rows = list(Stream.objects.filter(pk__in=stream_ids).values_list("pk", "state", "consecutive_failures"))
    failing = [pk for pk, _, failures in rows if failures]
    if failing:
        Stream.objects.filter(pk__in=failing, consecutive_failures__gt=0).update(consecutive_failures=0)
    for stream in Stream.objects.filter(pk__in=[pk for pk, state, _ in rows if state == Stream.State.FAILED]):
        # Suppressed: another reader may have brought it back first.
        with contextlib.suppress(TransitionNotAllowed):
            transition(
                stream,
                Stream.State.RUNNING,
                by="partitions.pipeline.tasks.read_partition_task",
                reason="a retry succeeded",
                next_retry_at=None,
            )


def count_failure(stream_id: int) -> int:
    """Add one consecutive failure to the stream and return the new count."""
    Stream.objects.filter(pk=stream_id).update(consecutive_failures=F("consecutive_failures") + 1)
    return Stream.objects.values_list("consecutive_failures", flat=True).get(pk=stream_id)
