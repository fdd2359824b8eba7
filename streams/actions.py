"""Operator actions on a stream: start, pause, resume, recover (and backfills of watched streams).

Each one moves the stream through transition() and, once the move is committed,
hands the work to the pipeline's Celery task, by its name: streams knows nothing of
the pipeline that reads them. Views, the API, the admin and the cdc_stream command
all call these; none of them sets Stream.state.

A stream of a watched kind (Datastream) is run by its source: the same actions record a
StreamOperation and send the task that asks the source to do it and follows it to its
end (partitions/watch/operating.py). The stream's state then moves as the source reports.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from . import audit, dispatch, kinds
from .models import Stream, StreamOperation
from .times import format_time
from .transitions import TransitionNotAllowed, transition

S = Stream.State
# "position" is a watched stream's: a log position its source keeps (Datastream's specific start).
RECOVERY_STRATEGIES = ("watermark", "now", "timestamp", "position")


class InvalidAction(ValueError):
    """An action's arguments are wrong (a missing or impossible timestamp, an unknown strategy)."""


def _enqueue(task_name: str, stream_id: int) -> None:
    """Send the pipeline's task <task_name>(stream_id) by its name once the transaction commits."""
    dispatch.send_after_commit(f"partitions.pipeline.tasks.{task_name}", stream_id)


def start(stream: Stream, by: str, reason: str = "") -> Stream:
    """Start a stream that has never run: STARTING, then the start task finds the roots."""
    if kinds.watched(stream.source_kind):
        return _operate(stream, "resume", by)  # the source starts a stream that never ran by resuming it
    before = audit.stream_before(stream)
    with transaction.atomic():
        stream = transition(stream, S.STARTING, by=by, reason=reason or f"started by {by}", action="start")
        audit.record(stream, "start", by, reason, before)
        _enqueue("start_stream_task", stream.pk)
    return stream


def pause(stream: Stream, by: str, reason: str = "") -> Stream:
    """Pause a stream: DRAINING while readers close their windows, then PAUSED."""
    if kinds.watched(stream.source_kind):
        return _operate(stream, "pause", by)
    before = audit.stream_before(stream)
    with transaction.atomic():
        stream = transition(
            stream,
            S.DRAINING,
            by=by,
            reason=reason or f"paused by {by}",
            action="pause",
            paused_at=timezone.now(),
        )
        audit.record(stream, "pause", by, reason, before)
        _enqueue("drain_stream_task", stream.pk)
    return stream


def resume(stream: Stream, by: str, reason: str = "") -> Stream:
    """Resume a paused stream from its partitions' watermarks (through STARTING)."""
    if kinds.watched(stream.source_kind):
        return _operate(stream, "resume", by)
    if stream.reached_end_at is not None:
        raise TransitionNotAllowed(
            f"cannot resume stream '{stream.name}': it finished at its end timestamp "
            f"{format_time(stream.end_at)}; create a new stream starting there to read further",
            current=stream.state,
            to_state=S.STARTING,
        )
    before = audit.stream_before(stream)
    with transaction.atomic():
        stream = transition(
            stream,
            S.STARTING,
            by=by,
            reason=reason or f"resumed by {by}",
            action="resume",
            resume_from=None,
        )
        audit.record(stream, "resume", by, reason, before)
        _enqueue("start_stream_task", stream.pk)
    return stream


def recover(
    stream: Stream,
    strategy: str,
    timestamp: datetime | None = None,
    *,
    by: str,
    reason: str = "",
    position: Any = None,
) -> Stream:
    """Recover a FAILED_PERMANENTLY stream from its watermarks, from now, or from a timestamp.

    "watermark" keeps every partition and continues where each stopped; "now" and
    "timestamp" set Stream.resume_from, and the start task drops the unfinished
    partitions and re-runs the initial query there (records in between are skipped).
    A watched stream recovers where its source can (``watched_start``), "position" from
    a log position its source keeps (``position``: the API's JSON or an operator's text).
    """
    if kinds.watched(stream.source_kind):
        start = watched_start(strategy, timestamp, position is not None)
        if start != "specific":
            return _operate(stream, "recover", by, start=start)
        try:
            checked = kinds.start_position(stream.source_kind, position)
        except ValueError as refused:
            raise InvalidAction(f"position: {refused}") from None
        return _operate(stream, "recover", by, start=start, position=checked)
    if strategy == "position" or position is not None:
        raise InvalidAction(
            f"stream '{stream.name}' is read by cdcweb: it recovers from its watermarks, now or a "
            "timestamp, not from a position of its source"
        )
    resume_from = recovery_point(stream, strategy, timestamp)
    where = "watermarks" if resume_from is None else format_time(resume_from)
    before = audit.stream_before(stream)
    with transaction.atomic():
        stream = transition(
            stream,
            S.STARTING,
            by=by,
            reason=reason or f"recovered by {by} from {strategy} ({where})",
            action="recover",
            resume_from=resume_from,
            reached_end_at=None,
            consecutive_failures=0,
            next_retry_at=None,
        )
        audit.record(
            stream, "recover", by, f"from {strategy} ({where})" + (f": {reason}" if reason else ""), before
        )
        _enqueue("start_stream_task", stream.pk)
    return stream


def recovery_point(stream: Stream, strategy: str, timestamp: datetime | None) -> datetime | None:
    """Return where a recovery starts reading (None: from the watermarks), or raise InvalidAction."""
    if strategy not in RECOVERY_STRATEGIES:
        raise InvalidAction(
            f"unknown recovery strategy {strategy!r}: use one of {', '.join(RECOVERY_STRATEGIES)}"
        )
    if strategy != "timestamp":
        if timestamp is not None:
            raise InvalidAction(f"a timestamp is only used with strategy 'timestamp', not {strategy!r}")
        return None if strategy == "watermark" else _before_end(stream, timezone.now())
    if timestamp is None:
        raise InvalidAction("strategy 'timestamp' needs a timestamp")
    if timezone.is_naive(timestamp):
        raise InvalidAction(f"timestamp {timestamp.isoformat()} has no time zone: add 'Z' or an offset")
    if timestamp > timezone.now():
        raise InvalidAction(f"timestamp {format_time(timestamp)} is in the future")
    return _before_end(stream, timestamp)


def _before_end(stream: Stream, point: datetime) -> datetime:
    """Return point, or raise InvalidAction if the stream's end comes before it."""
    if stream.end_at is not None and point >= stream.end_at:
        raise InvalidAction(
            f"cannot recover stream '{stream.name}' from {format_time(point)}: "
            f"it ends at {format_time(stream.end_at)}"
        )
    return point


# A watched stream recovers where its source can: "watermark" is the next position the source
# still has (Datastream's next available), "now" the most recent one, "position" one given.
WATCHED_STARTS = {"watermark": "next_available", "now": "most_recent", "position": "specific"}
BACKFILL_ACTIONS = ("start", "stop")


def watched_start(strategy: str, timestamp: datetime | None, positioned: bool = False) -> str:
    """Return the source's CDC start for a recovery strategy, or raise InvalidAction."""
    if strategy == "timestamp" or timestamp is not None:
        raise InvalidAction(
            "a watched stream recovers from a log position its source keeps, not from a timestamp: "
            "use strategy 'watermark' (the next available position), 'now' (the most recent) or "
            "'position' with a position"
        )
    if strategy not in WATCHED_STARTS:
        raise InvalidAction(f"unknown recovery strategy {strategy!r}: use one of {', '.join(WATCHED_STARTS)}")
    if (strategy == "position") != positioned:
        raise InvalidAction(
            "strategy 'position' needs a position"
            if strategy == "position"
            else f"a position is only used with strategy 'position', not {strategy!r}"
        )
    return WATCHED_STARTS[strategy]


def backfill(stream: Stream, object_id: str, what: str, *, by: str) -> Stream:
    """Start or stop the backfill of one object (source table) of a watched stream."""
    if not kinds.watched(stream.source_kind):
        raise InvalidAction(f"stream '{stream.name}' is read by cdcweb: it has no source objects to backfill")
    if what not in BACKFILL_ACTIONS:
        raise InvalidAction(f"a backfill is started or stopped ('start' or 'stop'), not {what!r}")
    if not object_id or "/" in object_id:
        raise InvalidAction("name the object by its ID (the last part of its name)")
    return _operate(stream, f"{what}_backfill", by, target=object_id)


def _operate(stream: Stream, action: str, by: str, target: str = "", **arguments) -> Stream:
    """Record an operation on a watched stream and send the task that asks the source to do it.

    Return the stream, carrying the operation recorded as ``sent_operation`` (the API answers
    with it, the CLI follows it to its end).
    """
    with transaction.atomic():
        locked = Stream.objects.select_for_update(no_key=True).get(pk=stream.pk)
        running = locked.operations.filter(
            status__in=(StreamOperation.Status.PENDING, StreamOperation.Status.RUNNING)
        )
        busy = running.first()
        if busy is not None:
            raise TransitionNotAllowed(
                f"cannot {action.replace('_', ' ')} stream '{stream.name}': "
                f"its {busy.action.replace('_', ' ')} by {busy.by} is still running; wait for it to end",
                current=locked.state,
                to_state=locked.state,
            )
        operation = StreamOperation.objects.create(
            stream=locked, action=action, target=target, arguments=arguments, by=by
        )
        # Audited like a read stream's action; the source's answer shows on the operation.
        audit.record(locked, action, by, target, audit.stream_before(locked))
        dispatch.send_after_commit("partitions.watch.tasks.operate_stream_task", operation.pk)
    locked.sent_operation = operation
    return locked
