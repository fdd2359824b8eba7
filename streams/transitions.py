"""The stream state machine: every change of Stream.state goes through transition().

The moves follow Datastream's stream states (DESIGN.md §5). Each allowed move has
a label; operator actions (streams/actions.py) pass theirs as `action`, so that
"start" cannot do what "resume" or "recover" does, and a refusal names the action.

    from                to                  label           who
    NOT_STARTED         STARTING            start           operator
    STARTING            RUNNING             roots found     start task
    STARTING            FAILED              fail            start task (retryable error)
    STARTING            FAILED_PERMANENTLY  fail            start task (invalid config / permanent)
    STARTING            DRAINING            pause           operator (a start stuck or not wanted)
    STARTING            STARTING            recover         operator, with a strategy (a start stuck)
    RUNNING             DRAINING            pause           operator
    RUNNING             FAILED              fail            reader (retryable error)
    RUNNING             FAILED_PERMANENTLY  fail            reader (permanent error)
    RUNNING             PAUSED              end reached     pipeline: every partition FINISHED
    FAILED              RUNNING             retry           pipeline: a retry succeeded
    FAILED              STARTING            retry           pipeline: the failure was before roots
    FAILED              FAILED_PERMANENTLY  fail            a permanent error while retrying
    FAILED              DRAINING            pause           operator (stops automatic retries)
    DRAINING            PAUSED              drained         drain task: no lease is held
    DRAINING            FAILED_PERMANENTLY  fail            permanent error while draining
    PAUSED              STARTING            resume          operator
    FAILED_PERMANENTLY  STARTING            recover         operator, with a strategy

Decisions:
- The seven states are fixed. A stream with an end timestamp whose partitions have
  all FINISHED there moves to PAUSED with the reason "reached end timestamp ...";
  it is complete, so resume refuses it (actions.resume) and says to create a new
  stream starting at that end instead. A paused stream uses no worker, which is
  what a finished one should look like.
- A move to the same state is refused: it would hide a double click or a race. The one
  exception is recover from STARTING: a start that cannot succeed (a start point out of
  retention, say) can be pointed elsewhere without waiting for it to fail.
- A stream whose kind cannot run (streams/kinds.py: unknown, or not available yet) never
  moves to STARTING or RUNNING, whoever asks (admin, API, CLI, the pipeline's retries).
- DRAINING cannot be resumed directly: readers are still closing their windows;
  resume once it is PAUSED (usually within one window).
- STARTING can be paused: the start task then finds the stream moved and stops
  (partitions/pipeline/starting.py), and with no read running the drain ends at once.
- FAILED has no retry budget: errors the source's reader calls retryable retry for as
  long as they happen, the backoff capped at CDC_RETRY_BACKOFF_MAX, because a source
  that comes back must be read on without an operator; only an error it calls
  permanent moves to FAILED_PERMANENTLY (partitions/pipeline/failures.py). Alerts
  (stream_failed, retention) tell people meanwhile.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from . import kinds
from .models import Stream, StreamTransition

S = Stream.State

ALLOWED_MOVES: dict[tuple[str, str], str] = {
    (S.NOT_STARTED, S.STARTING): "start",
    (S.STARTING, S.RUNNING): "roots found",
    (S.STARTING, S.FAILED): "fail",
    (S.STARTING, S.FAILED_PERMANENTLY): "fail",
    (S.STARTING, S.DRAINING): "pause",
    (S.STARTING, S.STARTING): "recover",
    (S.RUNNING, S.DRAINING): "pause",
    (S.RUNNING, S.FAILED): "fail",
    (S.RUNNING, S.FAILED_PERMANENTLY): "fail",
    (S.RUNNING, S.PAUSED): "end reached",
    (S.FAILED, S.RUNNING): "retry",
    (S.FAILED, S.STARTING): "retry",
    (S.FAILED, S.FAILED_PERMANENTLY): "fail",
    (S.FAILED, S.DRAINING): "pause",
    (S.DRAINING, S.PAUSED): "drained",
    (S.DRAINING, S.FAILED_PERMANENTLY): "fail",
    (S.PAUSED, S.STARTING): "resume",
    (S.FAILED_PERMANENTLY, S.STARTING): "recover",
}


class TransitionNotAllowed(ValueError):
    """A move the state machine forbids; the message names the current state."""

    def __init__(self, message: str, *, current: str, to_state: str) -> None:
        super().__init__(message)
        self.current = current
        self.to_state = to_state


def allowed_from(action: str) -> list[str]:
    """Return the states from which the labelled move `action` may start."""
    return sorted({src for (src, _), label in ALLOWED_MOVES.items() if label == action})


def allowed_moves(state: str) -> dict[str, str]:
    """Return {to_state: label} for every move allowed from `state`."""
    return {dst: label for (src, dst), label in ALLOWED_MOVES.items() if src == state}


def check_move(stream: Stream, current: str, to_state: str, action: str | None = None) -> None:
    """Raise TransitionNotAllowed unless `current -> to_state` (labelled `action`) is allowed."""
    refused = kinds.refusal(stream.source_kind) if to_state in (S.STARTING, S.RUNNING) else ""
    if refused:
        raise TransitionNotAllowed(
            f"cannot {action or 'start'} stream '{stream.name}': {refused}",
            current=current,
            to_state=to_state,
        )
    label = ALLOWED_MOVES.get((current, to_state))
    if action is not None and label != action:
        froms = ", ".join(allowed_from(action)) or "no state"
        raise TransitionNotAllowed(
            f"cannot {action} stream '{stream.name}': it is {current} ({action} is allowed from {froms})",
            current=current,
            to_state=to_state,
        )
    if label is None:
        moves = ", ".join(f"{dst} ({lbl})" for dst, lbl in allowed_moves(current).items())
        raise TransitionNotAllowed(
            f"cannot move stream '{stream.name}' from {current} to {to_state}: "
            f"from {current} it may move to {moves or 'no other state'}",
            current=current,
            to_state=to_state,
        )


def transition(
    stream: Stream, to_state: str, *, by: str, reason: str = "", action: str | None = None, **fields
) -> Stream:
    """Move the stream to `to_state`, log the move, and return the stream as stored.

    The row is locked and re-read so that two concurrent callers cannot both
    move from the same state. `fields` are other Stream fields to set in the same
    update (e.g. consecutive_failures, paused_at, resume_from).
    """
    with transaction.atomic():
        # NO KEY: inserts that reference the stream (partitions, lag samples, errors)
        # need not wait for a transition, which never changes the stream's key.
        locked = Stream.objects.select_for_update(no_key=True).get(pk=stream.pk)
        current = locked.state
        check_move(locked, current, to_state, action)
        now = timezone.now()
        locked.state, locked.state_reason, locked.state_changed_at = to_state, reason, now
        if S.STARTING in (current, to_state):
            # A new start (or a recover from STARTING) is a new task's to claim; an older
            # task's claim no longer counts (partitions/pipeline/starting.py).
            fields.setdefault("start_claimed_until", None)
        for name, value in fields.items():
            setattr(locked, name, value)
        locked.save(update_fields=["state", "state_reason", "state_changed_at", "updated_at", *fields])
        StreamTransition.objects.create(
            stream=locked, from_state=current, to_state=to_state, at=now, by=by, reason=reason
        )
    _refresh(stream, locked)
    return locked


def record_source_move(stream: Stream, to_state: str, *, at, by: str, reason: str = "") -> bool:
    """Record a move its source reports for a watched stream, at the source's time; True if it moved.

    A watched stream (Datastream) is run by its source, which moves it as it will: the
    allowed-moves table is cdcweb's own pipeline's and does not apply, but every move is
    logged the same way. ``at`` is when the source says it moved (its update time; now when
    it says none), kept as the source gives it. A report of the state already stored records
    nothing.
    """
    if not kinds.watched(stream.source_kind):
        raise TransitionNotAllowed(
            f"stream '{stream.name}' is read by cdcweb: its states move through transition()",
            current=stream.state,
            to_state=to_state,
        )
    with transaction.atomic():
        locked = Stream.objects.select_for_update(no_key=True).get(pk=stream.pk)
        current = locked.state
        if current == to_state:
            return False
        at = at or timezone.now()
        locked.state, locked.state_reason, locked.state_changed_at = to_state, reason, at
        fields = ["state", "state_reason", "state_changed_at", "updated_at"]
        if to_state == S.PAUSED:
            locked.paused_at = at
            fields.append("paused_at")
        locked.save(update_fields=fields)
        StreamTransition.objects.create(
            stream=locked, from_state=current, to_state=to_state, at=at, by=by, reason=reason
        )
    _refresh(stream, locked)
    return True


def _refresh(stream: Stream, stored: Stream) -> None:
    """Copy the stored fields onto the caller's instance so it does not go stale."""
    for field in Stream._meta.concrete_fields:
        setattr(stream, field.attname, getattr(stored, field.attname))
