"""Start (or resume, or recover) a stream: find its root partitions and queue their reads."""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from partitions import states
from partitions.models import Partition, PartitionEdge
from partitions.sources.base import NewPartition, SourceError
from streams.models import Stream
from streams.transitions import TransitionNotAllowed, transition

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


def _begin(stream: Stream) -> None:
    at = stream.resume_from
    if at is not None:
        with transaction.atomic():
            discard_unfinished(stream)
            create_roots(stream, at, find_roots(stream, at))
            Stream.objects.filter(pk=stream.pk).update(resume_from=None)
        return
    if not stream.partitions.exists():
        create_roots(stream, stream.start_at, find_roots(stream, stream.start_at))


def start_stream(stream: Stream, queue: Queue) -> str:
    """Find or keep the stream's partitions, move STARTING to RUNNING and queue the reads."""
    stream.refresh_from_db()
    if stream.state != S.STARTING:
        return f"not starting: stream is {stream.state}"
    try:
        readers.read_kind(stream)  # a kind cdcweb cannot read fails here, saying why
        _begin(stream)
    except SourceError as error:
        return _start_failed(stream, error, queue)
    try:
        transition(stream, S.RUNNING, by=BY, reason="root partitions found", consecutive_failures=0)
    except TransitionNotAllowed:
        return "not starting: moved meanwhile"
    # Resume / recover from the watermark: existing partitions continue where they are.
    Partition.objects.filter(stream=stream).exclude(state=P.FINISHED).update(
        lease_owner="", lease_expires_at=None
    )
    counts = scheduling.schedule_partitions(stream, queue)
    return f"running: {counts}"


def _start_failed(stream: Stream, error: SourceError, queue: Queue) -> str:
    log.warning("starting %s failed: %s", stream.name, error)
    if error.retryable:
        delay = fail_retryably(stream, None, error)
        stream.refresh_from_db(fields=["state"])
        if stream.state == S.STARTING:
            # Below the failure budget: try again after the backoff, still STARTING.
            queue.start(stream.pk, countdown=delay)
        return "retrying"
    fail_permanently(stream, None, error)
    return "failed permanently"
