"""Carry out an operator's action on a watched stream through its source, and follow it to its end.

The action was recorded as a StreamOperation (streams/actions.py); this runs it: pause,
resume (which also starts a stream that never ran), recover with a CDC strategy, or start
or stop one object's backfill. Each progress report of the source's long-running operation
is written to the row as it comes (status message, time so far); a refusal is stored in
the source's own words (REFUSED), a transient failure as FAILED. Either way the stream is
polled once at the end, before the operation is marked finished, so whoever sees it finished
sees the state it left.
"""

from __future__ import annotations

from django.utils import timezone

from partitions.kinds import handle
from partitions.sources.base import PermanentSourceError, SourceError
from partitions.sources.datastream.operations import Progress
from streams.models import StreamOperation

from .polling import poll_watched

OP = StreamOperation.Status
# How often the operation is asked how it stands while it runs (one GetOperation each).
FOLLOW_INTERVAL_S = 0.5


def run_operation(operation: StreamOperation) -> StreamOperation:
    """Run a PENDING operation once (a second task finds it taken and does nothing); return it."""
    taken = StreamOperation.objects.filter(pk=operation.pk, status=OP.PENDING).update(status=OP.RUNNING)
    if not taken:
        return operation
    stream = operation.stream
    target = handle(stream)

    def report(progress: Progress) -> None:
        StreamOperation.objects.filter(pk=operation.pk).update(
            message=progress.message or ("done" if progress.done else "running"),
            elapsed_seconds=progress.elapsed,
            operation=progress.operation[:500],
        )

    status, message, code = OP.DONE, "", ""
    try:
        result = _call(target, operation, report)
        message = _outcome(result)
    except PermanentSourceError as refused:
        status, message, code = OP.REFUSED, str(refused), refused.code or ""
    except SourceError as failed:
        status, message, code = OP.FAILED, str(failed), getattr(failed, "code", "") or ""
    # Poll before the operation is marked finished: whoever sees it finished (the CLI, the
    # page) then reads the state it left the stream in, not the one before.
    poll_watched([stream], objects=bool(operation.target))
    StreamOperation.objects.filter(pk=operation.pk).update(
        status=status, message=message, code=code[:100], finished_at=timezone.now()
    )
    operation.refresh_from_db()
    return operation


def _call(target, operation: StreamOperation, report):
    """Call the handle's method for the operation's action, following it to its end."""
    follow = {"interval": FOLLOW_INTERVAL_S}
    args = operation.arguments
    if operation.action == "pause":
        return target.pause(report, **follow)
    if operation.action == "resume":
        return target.resume(report, **follow)
    if operation.action == "recover":
        return target.recover(args["start"], args.get("position"), report, **follow)
    if operation.action == "start_backfill":
        return target.start_backfill(operation.target, report, **follow)
    if operation.action == "stop_backfill":
        return target.stop_backfill(operation.target, report, **follow)
    raise PermanentSourceError(f"unknown action {operation.action!r}", code="INVALID_ARGUMENT")


def _outcome(result) -> str:
    """Return one line saying how the operation left the stream or object."""
    if result.stream is not None:
        return f"done in {result.elapsed:.1f} s: the stream is {result.stream.state}"
    state = result.object.backfill.state if result.object and result.object.backfill else "NOT_STARTED"
    return f"done in {result.elapsed:.1f} s: the backfill is {state}"
