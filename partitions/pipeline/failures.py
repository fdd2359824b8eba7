"""What a failed read does to its stream: an error row, a backoff, FAILED or FAILED_PERMANENTLY.

Nothing here moves a watermark: the window that failed is read again from where the
last checkpoint left it, so no data is skipped.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from partitions.models import Partition
from partitions.sources.base import MalformedRecordError, PermanentSourceError, SourceError
from streams.models import Stream, StreamError
from streams.transitions import TransitionNotAllowed, transition

from . import leases, readers, scheduling
from .checkpoint import count_failure
from .queue import Queue

log = logging.getLogger(__name__)
S = Stream.State
BY = "partitions.pipeline.tasks.read_partition_task"


def backoff_seconds(failures: int) -> float:
    """Return the capped exponential delay before retry number `failures` (1, 2, 4, ...)."""
    return float(min(2 ** max(failures - 1, 0), settings.CDC_RETRY_BACKOFF_MAX))


def is_retryable(error: Exception) -> bool:
    """Return whether retrying the same read may succeed (a transient source error)."""
    return isinstance(error, SourceError) and error.retryable


def _error_kind(error: Exception) -> str:
    if isinstance(error, MalformedRecordError):
        return StreamError.Kind.RECORD
    if is_retryable(error):
        return StreamError.Kind.RETRYABLE
    if isinstance(error, SourceError):
        return StreamError.Kind.PERMANENT
    if isinstance(error, OSError):
        return StreamError.Kind.LANDING  # the landing zone refused a write (full, unwritable)
    return StreamError.Kind.INTERNAL


def record_error(stream: Stream, partition: Partition | None, error: Exception, attempt: int) -> StreamError:
    """Store one StreamError row for the error."""
    return StreamError.objects.create(
        stream=stream,
        partition_token=partition.token if partition is not None else "",
        kind=_error_kind(error),
        code=(error.code if isinstance(error, SourceError) else "") or type(error).__name__,
        message=str(error),
        attempt=attempt,
    )


def _move(stream: Stream, to_state: str, reason: str, **fields) -> None:
    # Suppressed: it may be there already, or an operator moved it meanwhile.
    with contextlib.suppress(TransitionNotAllowed):
        transition(stream, to_state, by=BY, reason=reason, **fields)


def fail_permanently(stream: Stream, partition: Partition | None, error: Exception) -> None:
    """Record the error and stop the stream with the reason; an operator must recover it."""
    record_error(stream, partition, error, attempt=stream.consecutive_failures + 1)
    where = f" in partition {partition.token}" if partition is not None else ""
    stream.refresh_from_db(fields=["state"])
    _move(stream, S.FAILED_PERMANENTLY, f"{_error_kind(error)} error{where}: {error}")


def stop_if_refused(stream: Stream) -> bool:
    """Stop a stream whose kind may not run (unknown, or not available yet), saying why; return if so.

    The state machine refuses such a stream every move to STARTING or RUNNING, but a row
    made through the ORM or a fixture can be in one already: it shows FAILED_PERMANENTLY
    with the reason instead of waiting in STARTING (or RUNNING) for reads that never come.
    """
    reason = readers.refusal(stream)
    if not reason or stream.state not in (S.STARTING, S.RUNNING, S.FAILED, S.DRAINING):
        return bool(reason)
    fail_permanently(stream, None, PermanentSourceError(reason, code="KIND_NOT_AVAILABLE"))
    return True


def fail_retryably(stream: Stream, partition: Partition | None, error: Exception) -> float:
    """Record the error, count it, move to FAILED once the budget is spent; return the backoff."""
    failures = count_failure(stream.pk)
    record_error(stream, partition, error, attempt=failures)
    delay = backoff_seconds(failures)
    stream.refresh_from_db(fields=["state", "consecutive_failures"])
    next_retry = timezone.now() + timedelta(seconds=delay)
    if failures >= settings.CDC_MAX_CONSECUTIVE_FAILURES and stream.state in (S.RUNNING, S.STARTING):
        reason = f"{failures} consecutive retryable errors, retrying in {delay:.0f}s; last: {error}"
        _move(stream, S.FAILED, reason, next_retry_at=next_retry)
    elif stream.state == S.FAILED:
        Stream.objects.filter(pk=stream.pk).update(next_retry_at=next_retry)
    return delay


def _passed_on(stream: Stream, partition: Partition, owner: str, error: Exception) -> bool:
    """Return whether the read's lease passed on meanwhile; if so, log its failure, which nobody counts on.

    A read in a process that stood still past its lease (SIGSTOP, a frozen VM) fails when
    it wakes (its connection's keepalive timed out meanwhile: DEADLINE_EXCEEDED), while
    another reader reads the partition on. Recorded, such a failure showed on a stream that
    reads fine, counted toward FAILED, and a permanent one would stop the stream.
    """
    if not leases.passed_on(partition.pk, owner):
        return False
    log.warning(
        "reading %s of %s failed after its lease passed to another read, not counted: %s",
        partition.token, stream.name, error,
    )  # fmt: skip
    return True


def handle_read_error(
    stream: Stream, partition: Partition, owner: str, error: Exception, queue: Queue
) -> None:
    """Record a failed window and either queue its retry after a backoff or stop the stream.

    The failure of a read whose lease passed on meanwhile is logged only (``_passed_on``).
    """
    if _passed_on(stream, partition, owner, error):
        return
    log.warning("reading %s of %s failed: %s", partition.token, stream.name, error)
    if not is_retryable(error):
        leases.release(partition.pk, owner)
        fail_permanently(stream, partition, error)
        scheduling.maybe_finish_drain(stream)
        return
    _retry_later(stream, partition, owner, fail_retryably(stream, partition, error), queue)


def _retry_later(stream: Stream, partition: Partition, owner: str, delay: float, queue: Queue) -> None:
    stream.refresh_from_db(fields=["state"])
    if stream.state in leases.READING_STATES and leases.reserve(partition.pk, owner, countdown=delay):
        queue.read(partition.pk, countdown=delay)
        return
    leases.release(partition.pk, owner)
    scheduling.maybe_finish_drain(stream)


def handle_unexpected_error(
    stream: Stream, partition: Partition, owner: str, error: Exception, queue: Queue
) -> None:
    """Record an error no reader classified (landing, a bug) and retry the window after a backoff.

    It counts toward FAILED like a retryable source error: a landing zone that stays
    unwritable, or a bug that every retry meets, must show on the stream, not only in
    a worker's log while the stream looks RUNNING. The failure of a read whose lease
    passed on meanwhile is logged only, as in ``handle_read_error``.
    """
    if _passed_on(stream, partition, owner, error):
        return
    _retry_later(stream, partition, owner, fail_retryably(stream, partition, error), queue)
