"""Operate Datastream streams: pause, resume, recover, and start or stop one object's backfill.

Pause and resume are UpdateStream with the update mask ``state`` (PAUSED, RUNNING; RUNNING
also starts a NOT_STARTED stream). Recover is RunStream with a CDC strategy: the most
recent start position (cdcweb's "from now"), the next available one (skip what cannot be
read: "from the watermark" as closely as Datastream allows) or a specific one (a log
position or SCN: "from a timestamp" for sources that have one). Each returns a
long-running operation, followed here to its end: one GetOperation every ``interval``
seconds until done or ``timeout``, with ``progress`` called after the request and after
every poll (Datastream's status message, elapsed time, done).

StartBackfillJob and StopBackfillJob are not long-running operations in v1: they answer
with the object at once. Their "operation" is the backfill job itself, followed by
GetStreamObject until it is running (or, with ``until="finished"``, has ended).

A refusal, immediate or at the operation's end, raises PermanentSourceError carrying
Datastream's message; UNAVAILABLE and the like raise RetryableSourceError; a timeout
raises RetryableSourceError (DEADLINE_EXCEEDED) while the operation may still finish.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.api_core import retry as api_retry
from google.cloud import datastream_v1 as ds
from google.protobuf import field_mask_pb2

from partitions.sources.base import PermanentSourceError, RetryableSourceError

from .client import DatastreamApi
from .errors import classify
from .snapshots import ObjectSnapshot, StreamSnapshot, object_snapshot, stream_snapshot

DEFAULT_TIMEOUT_S = 600.0  # Datastream's own operations usually end within minutes
DEFAULT_INTERVAL_S = 1.0  # one GetOperation a second while following
STARTS = ("most_recent", "next_available", "specific")
_RUNNING_JOBS = ("PENDING",)
_UNFINISHED_JOBS = ("PENDING", "ACTIVE")


@dataclass(frozen=True)
class Progress:
    """Where an operation stands: Datastream's status message, time so far, and whether it ended."""

    action: str  # pause, resume, run, recover, start_backfill, stop_backfill
    target: str  # the stream's or object's name
    message: str
    elapsed: float
    done: bool
    operation: str = ""  # the long-running operation's name ("" for backfills)


@dataclass(frozen=True)
class OperationResult:
    """How an operation ended: the stream (or object) as it left it, and what following it cost."""

    action: str
    target: str
    operation: str
    elapsed: float
    polls: int
    stream: StreamSnapshot | None = None
    object: ObjectSnapshot | None = None


ProgressFn = Callable[[Progress], None]


def _ignore(_: Progress) -> None:
    """Drop progress reports (no callback given)."""


def pause(api: DatastreamApi, name: str, progress: ProgressFn = _ignore, **follow) -> OperationResult:
    """Pause a stream (it drains first) and follow the operation to its end."""
    return _update_state(api, "pause", name, ds.Stream.State.PAUSED, progress, **follow)


def resume(api: DatastreamApi, name: str, progress: ProgressFn = _ignore, **follow) -> OperationResult:
    """Resume a paused stream, or start a NOT_STARTED one, and follow the operation to its end."""
    return _update_state(api, "resume", name, ds.Stream.State.RUNNING, progress, **follow)


def run(api: DatastreamApi, name: str, progress: ProgressFn = _ignore, **follow) -> OperationResult:
    """Run a stream with no CDC strategy (from where it left off) and follow the operation to its end.

    Datastream accepts this for a NOT_STARTED, PAUSED or FAILED stream; a FAILED_PERMANENTLY
    one it refuses (it needs ``recover`` and a strategy).
    """
    started = time.monotonic()
    op = api.call(api.datastream.run_stream, request=ds.RunStreamRequest(name=name))
    return follow_operation(api, op, "run", name, progress, started=started, **follow)


def recover(
    api: DatastreamApi,
    name: str,
    start: str,
    position: dict | None = None,
    progress: ProgressFn = _ignore,
    **follow,
) -> OperationResult:
    """Run a stream with a CDC strategy and follow the operation to its end.

    ``start`` is most_recent, next_available or specific; a specific start needs
    ``position``, one field of v1 SpecificStartPosition, e.g.
    ``{"mysql_log_position": {"log_file": "mysql-bin.000123", "log_position": 4}}`` or
    ``{"oracle_scn_position": {"scn": 123456789}}``.
    """
    strategy = cdc_strategy(start, position)
    request = ds.RunStreamRequest(name=name, cdc_strategy=strategy)
    started = time.monotonic()
    op = api.call(api.datastream.run_stream, request=request)
    return follow_operation(api, op, "recover", name, progress, started=started, **follow)


def cdc_strategy(start: str, position: dict | None = None) -> ds.CdcStrategy:
    """Return the v1 CdcStrategy of a start kind, refusing a bad one before anything is sent."""
    if start not in STARTS:
        raise PermanentSourceError(
            f"start must be one of {', '.join(STARTS)}, not {start!r}", code="INVALID_ARGUMENT"
        )
    if (start == "specific") != bool(position):
        raise PermanentSourceError(
            "a specific start needs a position, and only a specific start takes one", code="INVALID_ARGUMENT"
        )
    if start == "most_recent":
        return ds.CdcStrategy(most_recent_start_position=ds.CdcStrategy.MostRecentStartPosition())
    if start == "next_available":
        return ds.CdcStrategy(next_available_start_position=ds.CdcStrategy.NextAvailableStartPosition())
    try:
        specific = ds.CdcStrategy.SpecificStartPosition(**position)
    except (TypeError, ValueError, KeyError) as exc:
        raise PermanentSourceError(
            f"invalid specific start position {position!r}: {exc}", code="INVALID_ARGUMENT"
        ) from exc
    return ds.CdcStrategy(specific_start_position=specific)


# The short text forms of a specific start position (cdc_stream recover --position, the page's
# recover form): a source prefix, then the position as the source writes it.
POSITION_FORMS = {
    "mysql": "mysql:FILE:POSITION (binary log file and offset, e.g. mysql:mysql-bin.000123:4)",
    "gtid": "gtid:SET (a MySQL GTID set, e.g. gtid:3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5)",
    "oracle": "oracle:SCN (e.g. oracle:123456789)",
    "sqlserver": "sqlserver:LSN (e.g. sqlserver:0000002A:00000190:0001)",
}
_POSITION_FIELDS = {
    "mysql_log_position": ("log_file", "log_position"),
    "mysql_gtid_position": ("gtid_set",),
    "oracle_scn_position": ("scn",),
    "sql_server_lsn_position": ("lsn",),
    "mongodb_change_stream_position": ("start_time",),
    "spanner_change_stream_position": ("start_time",),
}


def parse_position(value: Any) -> dict:
    """Return a specific start position as RunStream takes it, from a dict or its text; raise ValueError.

    A dict (the API's JSON) names one field of v1 SpecificStartPosition, e.g.
    ``{"oracle_scn_position": {"scn": 123}}``; text is that JSON, or a short form of
    POSITION_FORMS (``mysql:mysql-bin.000123:4``). The result is checked as the request
    would be built, so a bad position is refused before anything is sent.
    """
    if isinstance(value, str):
        value = _position_text(value.strip())
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(f"a position names exactly one of {', '.join(_POSITION_FIELDS)}")
    [(field, inner)] = value.items()
    if field not in _POSITION_FIELDS:
        raise ValueError(f"unknown position {field!r}: use one of {', '.join(_POSITION_FIELDS)}")
    needed = _POSITION_FIELDS[field]
    if (
        not isinstance(inner, dict)
        or set(inner) != set(needed)
        or any(inner[k] in ("", None) for k in needed)
    ):
        raise ValueError(f"{field} needs {' and '.join(needed)}, each given")
    if any(isinstance(v, str) and not v.isprintable() for v in inner.values()):
        raise ValueError(f"{field} holds a control character")
    for name in ("log_position", "scn"):
        number = inner.get(name)
        if name in inner and (isinstance(number, bool) or not isinstance(number, int) or number < 0):
            raise ValueError(f"{field}'s {name} must be a whole number of 0 or more, not {number!r}")
    try:
        cdc_strategy("specific", value)
    except PermanentSourceError as refused:
        raise ValueError(str(refused).removeprefix("INVALID_ARGUMENT: ")) from None
    return value


def _position_text(text: str) -> Any:
    """Return the position a text gives: JSON, or a short form such as oracle:123."""
    if text.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the position is not valid JSON: {exc}") from None
    prefix, _, rest = text.partition(":")
    forms = "; ".join(POSITION_FORMS.values())
    if not rest:
        raise ValueError(f"give a position as {forms}, or as JSON")
    if prefix == "mysql":
        log_file, _, offset = rest.rpartition(":")
        if not log_file or not offset.isdigit():
            raise ValueError(f"a MySQL position is {POSITION_FORMS['mysql']}")
        return {"mysql_log_position": {"log_file": log_file, "log_position": int(offset)}}
    if prefix == "oracle":
        if not rest.isdigit():
            raise ValueError(f"an Oracle position is {POSITION_FORMS['oracle']}")
        return {"oracle_scn_position": {"scn": int(rest)}}
    if prefix == "gtid":
        return {"mysql_gtid_position": {"gtid_set": rest}}
    if prefix == "sqlserver":
        return {"sql_server_lsn_position": {"lsn": rest}}
    raise ValueError(f"unknown position kind {prefix!r}: give a position as {forms}, or as JSON")


def _update_state(api, action, name, state, progress, **follow) -> OperationResult:
    """Send UpdateStream with only ``state`` in the mask, and follow its operation."""
    request = ds.UpdateStreamRequest(
        stream=ds.Stream(name=name, state=state), update_mask=field_mask_pb2.FieldMask(paths=["state"])
    )
    started = time.monotonic()
    op = api.call(api.datastream.update_stream, request=request)
    return follow_operation(api, op, action, name, progress, started=started, **follow)


def follow_operation(
    api: DatastreamApi,
    op,
    action: str,
    target: str,
    progress: ProgressFn = _ignore,
    timeout: float = DEFAULT_TIMEOUT_S,
    interval: float = DEFAULT_INTERVAL_S,
    started: float | None = None,
) -> OperationResult:
    """Poll a long-running operation until it ends; return the stream it left, or raise its error."""
    started = time.monotonic() if started is None else started
    deadline, polls, name = started + timeout, 0, op.operation.name
    report = _reporter(progress, action, target, name, started)
    report(_status(op), op.operation.done)
    while not op.operation.done:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RetryableSourceError(
                f"{action} of {target} did not finish within {timeout:g} s; operation {name} may still end",
                code="DEADLINE_EXCEEDED",
            )
        time.sleep(min(interval, remaining))
        _refresh(api, op, deadline)
        polls += 1
        report(_status(op), op.operation.done)
    error = op.exception()
    if error is not None:
        raise classify(error) from error
    stream = stream_snapshot(op.result())
    return OperationResult(action, target, name, time.monotonic() - started, polls, stream=stream)


def _refresh(api: DatastreamApi, op, deadline: float) -> None:
    """Fetch the operation once more (one GetOperation), counted and classified."""
    api.count()
    try:
        op.done(retry=_poll_retry(deadline - time.monotonic()))
    except Exception as exc:
        raise classify(exc) from exc


def _poll_retry(remaining: float) -> api_retry.Retry:
    """Return how one poll retries a transient failure: briefly, never past the deadline."""
    return api_retry.Retry(
        predicate=api_retry.if_transient_error, initial=0.1, maximum=1.0, timeout=max(remaining, 0.1)
    )


def _status(op) -> str:
    """Return the operation's status message, or "" when its metadata says none."""
    try:
        metadata = op.metadata
    except Exception:  # metadata of another type: the operation still runs, say nothing
        return ""
    return metadata.status_message if metadata is not None else ""


def _reporter(progress: ProgressFn, action: str, target: str, operation: str, started: float):
    """Return report(message, done), which calls ``progress`` with the time elapsed so far."""

    def report(message: str, done: bool) -> None:
        """Call the progress callback with where the operation stands now."""
        progress(Progress(action, target, message, time.monotonic() - started, done, operation))

    return report


def start_backfill(
    api: DatastreamApi, object_name: str, progress: ProgressFn = _ignore, until: str = "running", **follow
) -> OperationResult:
    """Start one object's backfill; follow it until it runs (or, until="finished", has ended)."""
    if until not in ("running", "finished"):
        raise ValueError("until must be 'running' or 'finished'")
    started = time.monotonic()
    response = api.call(api.datastream.start_backfill_job, object_=object_name)
    waiting = _RUNNING_JOBS if until == "running" else _UNFINISHED_JOBS
    return _follow_job(
        api, "start_backfill", object_snapshot(response.object_), waiting, progress, started, **follow
    )


def stop_backfill(
    api: DatastreamApi, object_name: str, progress: ProgressFn = _ignore, **follow
) -> OperationResult:
    """Stop one object's running backfill and follow it until it is no longer running."""
    started = time.monotonic()
    response = api.call(api.datastream.stop_backfill_job, object_=object_name)
    return _follow_job(
        api, "stop_backfill", object_snapshot(response.object_), _UNFINISHED_JOBS, progress, started, **follow
    )


def _follow_job(
    api, action, obj, waiting, progress, started, timeout=DEFAULT_TIMEOUT_S, interval=DEFAULT_INTERVAL_S
):
    """Poll an object until its backfill job leaves the ``waiting`` states; return how it stands."""
    report, polls = _reporter(progress, action, obj.name, "", started), 0
    state = obj.backfill.state if obj.backfill else "NOT_STARTED"
    report(f"Backfill job {state}", state not in waiting)
    while state in waiting:
        remaining = started + timeout - time.monotonic()
        if remaining <= 0:
            raise RetryableSourceError(
                f"the backfill of {obj.name} is still {state} after {timeout:g} s", code="DEADLINE_EXCEEDED"
            )
        time.sleep(min(interval, remaining))
        obj, polls = api.get_stream_object(obj.name), polls + 1
        state = obj.backfill.state if obj.backfill else "NOT_STARTED"
        report(f"Backfill job {state}", state not in waiting)
    return OperationResult(action, obj.name, "", time.monotonic() - started, polls, object=obj)
