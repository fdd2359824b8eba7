"""Start (or resume, or recover) a stream: find its root partitions and queue their reads."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from streams.models import Stream
from streams.transitions import TransitionNotAllowed, transition

from . import readers, scheduling
from .changestream.errors import ChangeRecordError, QueryValidationError, SpannerError
from .changestream.records import ChildPartitionsRecord
from .failures import fail_permanently, fail_retryably
from .models import Partition, PartitionEdge

log = logging.getLogger(__name__)
P = Partition.State
S = Stream.State
BY = "partitions.tasks.start_stream_task"


def find_roots(stream: Stream, at: datetime) -> list[str]:
    """Run the initial query (token NULL) at `at` and return the root partition tokens."""
    end = at + timedelta(seconds=stream.window_seconds)
    if stream.end_at is not None:
        end = min(end, stream.end_at)
    tokens: list[str] = []
    # The initial query returns the roots at once; bound it like a window (see services).
    timeout = max(0.0, (end - timezone.now()).total_seconds()) + settings.CDC_LEASE_SECONDS
    for record in readers.reader_for(stream, timeout=timeout).read(None, at, end):
        if isinstance(record, ChildPartitionsRecord):
            tokens.extend(child.token for child in record.child_partitions)
    return tokens


def create_roots(stream: Stream, at: datetime, tokens: list[str]) -> None:
    """Insert the root partitions if absent, SCHEDULED, with their watermark at `at`."""
    now = timezone.now()
    Partition.objects.bulk_create(
        [
            Partition(stream=stream, token=t, start_at=at, watermark=at, state=P.SCHEDULED, scheduled_at=now)
            for t in tokens
        ],
        ignore_conflicts=True,
    )


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


def start_stream(stream: Stream) -> str:
    """Find or keep the stream's partitions, move STARTING to RUNNING and queue the reads."""
    stream.refresh_from_db()
    if stream.state != S.STARTING:
        return f"not starting: stream is {stream.state}"
    try:
        _begin(stream)
    except (SpannerError, ChangeRecordError, QueryValidationError) as error:
        return _start_failed(stream, error)
    try:
        transition(stream, S.RUNNING, by=BY, reason="root partitions found", consecutive_failures=0)
    except TransitionNotAllowed:
        return "not starting: moved meanwhile"
    # Resume / recover from the watermark: existing partitions continue where they are.
    Partition.objects.filter(stream=stream).exclude(state=P.FINISHED).update(
        lease_owner="", lease_expires_at=None
    )
    counts = scheduling.schedule_partitions(stream)
    return f"running: {counts}"


def _start_failed(stream: Stream, error: Exception) -> str:
    log.warning("starting %s failed: %s", stream.name, error)
    if isinstance(error, SpannerError) and error.retryable:
        delay = fail_retryably(stream, None, error)
        stream.refresh_from_db(fields=["state"])
        if stream.state == S.STARTING:
            # Below the failure budget: try again after the backoff, still STARTING.
            from .tasks import start_stream_task

            start_stream_task.apply_async((stream.pk,), countdown=delay)
        return "retrying"
    fail_permanently(stream, None, error)
    return "failed permanently"
