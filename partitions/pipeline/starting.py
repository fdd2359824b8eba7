"""Start (or resume, or recover) a stream: find its root partitions and queue their reads.

One start task at a time holds a stream's start: it claims it with a conditional
UPDATE (``Stream.start_claimed_until``, the database's now plus two leases: the initial
query's deadline is one), asks the source for the roots with no lock held, then stores
them and moves the stream to RUNNING only if its claim still stands. A recover or a
pause meanwhile takes the claim away, so a late task never overwrites them. A task lost
with its worker leaves the claim to lapse, and the beat sweep (partitions.pipeline.sweeps)
sends another.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from partitions import states
from partitions.models import Partition, PartitionEdge
from partitions.sources.base import NewPartition, SourceError
from streams.models import Stream
from streams.transitions import transition

from . import readers, scheduling
from .failures import fail_permanently, fail_retryably
from .queue import Queue

log = logging.getLogger(__name__)
P = Partition.State
S = Stream.State
BY = "partitions.pipeline.tasks.start_stream_task"


def find_roots(stream: Stream, at: datetime) -> list[NewPartition]:
    """Ask the stream's source for the partitions that start it at `at` (Spanner: the initial query)."""
    # The initial query returns the roots at once; a deadline of one lease bounds a hang.
    options = readers.options(stream, timeout=float(settings.CDC_LEASE_SECONDS))
    return readers.source_for(stream).roots(at, stream.end_at, options)


def create_roots(stream: Stream, at: datetime, roots: list[NewPartition]) -> None:
    """Insert the root partitions if absent, SCHEDULED, with their watermark at `at`."""
    now = timezone.now()
    state = states.INITIAL["root"]
    Partition.objects.bulk_create(
        [
            Partition(
                stream=stream, token=root.token, start_at=at, watermark=at, cursor=root.cursor,
                label=root.label, state=state, scheduled_at=now,
            )
            for root in roots
        ],
        ignore_conflicts=True,
    )  # fmt: skip


def discard_unfinished(stream: Stream) -> int:
    """Delete the partitions a recover from now / a timestamp no longer reads; return how many."""
    unfinished = Partition.objects.filter(stream=stream).exclude(state=P.FINISHED)
    PartitionEdge.objects.filter(Q(child__in=unfinished) | Q(parent__in=unfinished)).delete()
    deleted, _ = unfinished.delete()
    return deleted


def _until(seconds: float):
    return Now() + timedelta(seconds=seconds)


def claim_start(stream_id: int) -> datetime | None:
    """Claim the start of a STARTING stream nobody else holds; return the claim, or None."""
    free = Q(start_claimed_until__isnull=True) | Q(start_claimed_until__lt=Now())
    rows = Stream.objects.filter(pk=stream_id, state=S.STARTING).filter(free)
    if not rows.update(start_claimed_until=_until(2 * settings.CDC_LEASE_SECONDS)):
        return None
    return Stream.objects.values_list("start_claimed_until", flat=True).get(pk=stream_id)


def _roots_needed(stream: Stream) -> datetime | None:
    """Return where the roots must be found (a recover's point, or the start), or None: keep them."""
    if stream.resume_from is not None:
        return stream.resume_from
    return None if stream.partitions.exists() else stream.start_at


def start_stream(stream: Stream, queue: Queue) -> str:
    """Find or keep the stream's partitions, move STARTING to RUNNING and queue the reads."""
    claim = claim_start(stream.pk)
    if claim is None:
        stream.refresh_from_db(fields=["state"])
        if stream.state != S.STARTING:
            return f"not starting: stream is {stream.state}"
        return "started elsewhere"
    stream.refresh_from_db()
    at = _roots_needed(stream)
    try:
        readers.read_kind(stream)  # a kind cdcweb cannot read fails here, saying why
        roots = find_roots(stream, at) if at is not None else []
    except SourceError as error:
        return _start_failed(stream, claim, error, queue)
    with transaction.atomic():
        locked = Stream.objects.select_for_update(no_key=True).get(pk=stream.pk)
        if locked.state != S.STARTING or locked.start_claimed_until != claim:
            return "not starting: paused or recovered meanwhile"
        _store_roots(locked, at, roots)
        transition(
            locked, S.RUNNING, by=BY, reason="root partitions found", consecutive_failures=0,
            start_claimed_until=None,
        )  # fmt: skip
        # Resume / recover from the watermark: existing partitions continue where they are.
        Partition.objects.filter(stream=locked).exclude(state=P.FINISHED).update(
            lease_owner="", lease_expires_at=None
        )
    counts = scheduling.schedule_partitions(stream, queue)
    return f"running: {counts}"


def _store_roots(stream: Stream, at: datetime | None, roots: list[NewPartition]) -> None:
    if at is None:
        return
    if stream.resume_from is not None:
        discard_unfinished(stream)
        Stream.objects.filter(pk=stream.pk).update(resume_from=None)
    create_roots(stream, at, roots)


def _start_failed(stream: Stream, claim: datetime, error: SourceError, queue: Queue) -> str:
    log.warning("starting %s failed: %s", stream.name, error)
    if error.retryable:
        delay = fail_retryably(stream, None, error)
        stream.refresh_from_db(fields=["state"])
        if stream.state == S.STARTING:
            # Below the failure budget: try again after the backoff, still STARTING. The claim
            # lapses just before the retry is due, so the sweep sends none meanwhile.
            mine = Stream.objects.filter(pk=stream.pk, start_claimed_until=claim)
            mine.update(start_claimed_until=_until(max(0.0, delay - 1)))
            queue.start(stream.pk, countdown=delay)
        return "retrying"
    fail_permanently(stream, None, error)
    return "failed permanently"
