"""Sweeps on beat: work whose task was lost is sent again, or the stream says why it is not.

A task can be lost: the embedded (filesystem) broker removes a message when a worker
takes it, so a worker killed mid-task takes it along; any broker loses a task whose
worker dies before acknowledging it if it is not redelivered. Reads are recovered by
scheduling (an expired lease, partitions.pipeline.leases); draining streams by
scheduling too (maybe_finish_drain on every pass). This module recovers the start:

- a STARTING stream whose start claim lapsed (its task died mid-start), or that no task
  claimed within ``START_GRACE_SECONDS`` (its message was lost), gets another start
  task (starting.start_stream claims, so a duplicate does nothing);
- one STARTING for longer than CDC_START_TIMEOUT_SECONDS with no start task holding it
  moves to FAILED saying so (and retries from there with the usual backoff).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from partitions.kinds import read_streams
from streams.models import Stream
from streams.transitions import TransitionNotAllowed, transition

from .failures import backoff_seconds
from .queue import Queue

S = Stream.State
BY = "partitions.pipeline.tasks.sweep_streams_task"
# A start task normally claims its stream within a second of the move to STARTING; one
# that has not after this long is taken as lost (a duplicate costs one no-op task).
START_GRACE_SECONDS = 30


def sweep_starting(queue: Queue) -> dict[str, int]:
    """Send another start task to STARTING streams nobody starts; fail those stuck too long."""
    now = timezone.now()
    never_claimed = Q(
        start_claimed_until__isnull=True, state_changed_at__lt=now - timedelta(seconds=START_GRACE_SECONDS)
    )
    lost = read_streams().filter(state=S.STARTING).filter(never_claimed | Q(start_claimed_until__lt=Now()))
    counts = {"restarted": 0, "failed": 0}
    timeout = timedelta(seconds=settings.CDC_START_TIMEOUT_SECONDS)
    for stream in lost:
        if stream.state_changed_at < now - timeout:
            counts["failed"] += _fail(stream, timeout)
        else:
            queue.start(stream.pk)
            counts["restarted"] += 1
    return counts


def _fail(stream: Stream, timeout: timedelta) -> int:
    reason = (
        f"no start task ran for {timeout.total_seconds():.0f} s (CDC_START_TIMEOUT_SECONDS): is a worker "
        "serving the housekeeping queue? Retrying."
    )
    retry = timezone.now() + timedelta(seconds=backoff_seconds(settings.CDC_MAX_CONSECUTIVE_FAILURES))
    try:
        transition(stream, S.FAILED, by=BY, reason=reason, next_retry_at=retry)
    except TransitionNotAllowed:
        return 0  # started or moved meanwhile
    return 1
