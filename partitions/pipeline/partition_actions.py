"""Operator actions on one partition: end a lease that is held, and read the partition again from a time.

Each runs in one transaction with the partition's row locked, writes its audit entry
(streams/audit.py) there, and queues the partition's next read once it commits, so a
released or re-read partition is read again at once rather than after beat's next pass.
A reader that held the lease finds it gone (its keeper's renewal, or its checkpoint
refused) and stops; what it read is read again. Landing files are one per read attempt
and reports dedupe on the order key, so reading again never counts a record twice.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import OperationalError, connection, transaction
from django.db.models.functions import Now

from partitions import states
from partitions.models import Partition
from partitions.sources import KINDS
from partitions.sources.kinds import ReadKind
from streams import audit
from streams.models import Stream
from streams.times import format_time

from . import scheduling
from .leases import READING_STATES
from .queue import Queue

P = Partition.State
LOCK_WAIT_MS = 5_000  # a checkpoint holds the row for milliseconds; a hung one is refused after this


class ActionRefused(Exception):
    """The action does not apply to the partition as it is now (the API answers 409 with this)."""

    def __init__(self, message: str, state: str):
        super().__init__(message)
        self.state = state


def _locked(partition_id: int) -> tuple[Partition, datetime]:
    """Return the partition locked for this transaction, with the database's time.

    A reader's checkpoint holds the row for milliseconds; one that holds it for longer (a
    reader hung inside its transaction) makes the action refuse rather than wait with it.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'")
    rows = Partition.objects.filter(pk=partition_id).order_by().annotate(db_now=Now())
    try:
        partition = rows.select_for_update(no_key=True, of=("self",)).select_related("stream").get()
    except OperationalError as error:
        state = Partition.objects.filter(pk=partition_id).values_list("state", flat=True).first() or ""
        raise ActionRefused(
            f"partition {partition_id} is held by a reader's transaction that has not ended within "
            f"{LOCK_WAIT_MS / 1000:g} s: try again ({error})".strip(),
            state,
        ) from None
    return partition, partition.db_now


def _before(partition: Partition) -> dict[str, Any]:
    """Return what an action changes, as it was."""
    return {
        "state": partition.state,
        "watermark": format_time(partition.watermark),
        "lease_owner": partition.lease_owner,
        "lease_expires_at": format_time(partition.lease_expires_at) if partition.lease_expires_at else None,
    }


def _read_soon(partition: Partition, stream: Stream, queue: Queue) -> bool:
    """Queue the partition's read now if its stream reads on; return whether one was queued."""
    if stream.state not in READING_STATES:
        return False  # read when the stream resumes
    return scheduling.reserve_and_enqueue([partition.pk], queue, urgent=True) == 1


def release_lease(partition_id: int, by: str, queue: Queue) -> Partition:
    """End the lease a reader holds on the partition and queue its read for another reader."""
    with transaction.atomic():
        partition, now = _locked(partition_id)
        held = partition.lease_owner and partition.lease_expires_at and partition.lease_expires_at > now
        if partition.state == P.FINISHED or not held:
            why = "it is FINISHED" if partition.state == P.FINISHED else "no reader holds its lease"
            raise ActionRefused(
                f"cannot release the lease of partition {partition.pk}: {why}", partition.state
            )
        before = _before(partition)
        Partition.objects.filter(pk=partition.pk).update(lease_owner="", lease_expires_at=None)
        queued = _read_soon(partition, partition.stream, queue)
        detail = f"released the lease of {before['lease_owner']}" + (", read queued" if queued else "")
        audit.record(partition.stream, "release-lease", by, detail, before, partition.pk, partition.token)
    partition.refresh_from_db()
    return partition


def reread(partition_id: int, at: datetime, by: str, queue: Queue) -> Partition:
    """Read the partition again from `at` (not before its start, nor after its watermark), finished or not."""
    with transaction.atomic():
        partition, now = _locked(partition_id)
        stream = partition.stream
        cursor = _reread_cursor(partition, stream, at, now)
        before = _before(partition)
        fields: dict[str, Any] = {
            "watermark": at, "cursor": cursor, "lease_owner": "", "lease_expires_at": None,
            "last_progress_at": now, "stalled": False, "stall_rule": "", "stall_evidence": {},
        }  # fmt: skip
        rows = Partition.objects.filter(pk=partition.pk)
        if partition.state == P.FINISHED:
            states.check(P.FINISHED, P.SCHEDULED)
            fields.update(state=P.SCHEDULED, scheduled_at=now, finished_at=None)
        rows.update(**fields)
        if stream.reached_end_at is not None:
            # A stream that reached its end has an unfinished partition again: resume may read it.
            Stream.objects.filter(pk=stream.pk).update(reached_end_at=None)
        queued = _read_soon(partition, stream, queue)
        detail = f"re-read from {format_time(at)}" + (
            ", read queued" if queued else f"; the stream is {stream.state}: resume it to read"
        )
        audit.record(stream, "reread", by, detail, before, partition.pk, partition.token)
    partition.refresh_from_db()
    return partition


def _reread_cursor(partition: Partition, stream: Stream, at: datetime, now: datetime) -> dict[str, Any]:
    """Return the cursor to read again from `at`, or raise ActionRefused saying why it cannot."""
    kind = KINDS.get(stream.source_kind)
    state = partition.state
    if not isinstance(kind, ReadKind):
        raise ActionRefused(f"cdcweb does not read streams of kind {stream.source_kind}", state)
    cursor = kind.reread_cursor(dict(partition.cursor), at)
    if cursor is None:
        raise ActionRefused(f"a {kind.label} partition cannot be read again from a time", state)
    if at < partition.start_at:
        raise ActionRefused(
            f"{format_time(at)} is before the partition's start {format_time(partition.start_at)}", state
        )
    if at > partition.watermark:
        raise ActionRefused(
            f"{format_time(at)} is after the partition's watermark {format_time(partition.watermark)}: "
            "nothing after it has been read yet",
            state,
        )
    retention = kind.retention(stream.connection)
    if retention is not None and at < now - retention:
        raise ActionRefused(
            f"{format_time(at)} is older than the source keeps changes ({format_time(now - retention)} on)",
            state,
        )
    return cursor
