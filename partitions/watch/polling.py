"""One polling cycle over every watched stream, written to the database in a few batched statements.

What the source says becomes cdcweb's own rows:

- the source's state, mapped to cdcweb's seven (MAINTENANCE keeps the state before and
  sets a flag), is recorded as a StreamTransition at the source's update time when it moved;
- each error (the stream's, its objects' and their backfills') is one StreamError with
  Datastream's UUID, reason, message, time and details, stored once (a unique constraint
  on (stream, uuid), inserted if absent) and marked seen at each poll that reports it, so
  the retention job keeps it while Datastream still reports it;
- each object (source table) is a Partition: its backfill state as the partition's state,
  the backfill's times and errors in its cursor, its source name as its label;
- the metrics are one LagSample (freshness as lag, events counted as records, so the same
  lag and throughput charts draw them) and the latest rates on the WatchedStream row, with
  the metric types the project's descriptors lack (a warning on the page).

Cost per cycle: the Poller's (partitions/sources/datastream/poll.py): one ListStreams per
location (or one GetStream per stream of a location with a single watched stream), one
ListStreamObjects for every ``CDC_WATCH_OBJECTS_EVERY``-th stream, four ListTimeSeries per
location; then, in the database, a handful of statements for all the streams together
plus one transaction per stream that moved.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from partitions.kinds import handle, watched_streams
from partitions.models import LagSample, Partition, WatchedStream
from partitions.sources.base import PermanentSourceError, SourceError
from partitions.sources.datastream.client import DatastreamApi, shared_api
from partitions.sources.datastream.poll import PollCycle, Poller, StreamPoll
from partitions.sources.datastream.snapshots import ErrorSnapshot, ObjectSnapshot, StreamSnapshot
from partitions.sources.datastream.states import to_cdcweb
from streams.models import Stream, StreamError
from streams.transitions import record_source_move

BY = "partitions.watch.tasks.poll_watched_streams_task"
P = Partition.State
BACKFILL_STATES = {"PENDING": P.SCHEDULED, "ACTIVE": P.RUNNING, "COMPLETED": P.FINISHED}
ROW_FIELDS = (
    "source_state", "maintenance", "display_name", "source_type", "destination_type", "last_recovery_at",
    "source_updated_at", "polled_at", "poll_failure", "freshness_seconds", "events_per_second",
    "bytes_per_second", "unsupported_events", "events_total", "bytes_total", "metrics_until",
    "missing_metrics",
)  # fmt: skip
OBJECT_FIELDS = ("label", "state", "watermark", "cursor", "last_progress_at", "finished_at")

_pollers: dict[int, Poller] = {}
_pollers_lock = threading.Lock()


@dataclass(frozen=True)
class CycleReport:
    """What one cycle did: streams polled, moves and errors recorded, objects stored, calls made."""

    streams: int
    moved: int
    errors: int
    objects: int
    failures: int
    rpcs: int
    seconds: float


def poller(api: DatastreamApi) -> Poller:
    """Return this process's Poller on ``api`` (it staggers object reads across its cycles)."""
    with _pollers_lock:
        found = _pollers.get(id(api))
        if found is None or found.api is not api:
            found = _pollers[id(api)] = Poller(
                api,
                objects_every=settings.CDC_WATCH_OBJECTS_EVERY,
                metrics_every=1,
                metrics_window=settings.CDC_WATCH_METRICS_WINDOW_SECONDS,
            )
        return found


def poll_watched(streams: list[Stream] | None = None, objects: bool = False, api=None) -> CycleReport:
    """Poll the given watched streams (default: all) once and write what the source said."""
    started = timezone.now()
    streams = list(watched_streams()) if streams is None else streams
    if not streams:
        return CycleReport(0, 0, 0, 0, 0, 0, 0.0)
    by_name = {handle(stream).name: stream for stream in streams}
    cycle = poller(api or shared_api()).poll(list(by_name), objects=objects)
    report = write_cycle(cycle, by_name, timezone.now())
    seconds = (timezone.now() - started).total_seconds()
    return CycleReport(len(streams), *report, cycle.rpcs, seconds)


def write_cycle(cycle: PollCycle, by_name: dict[str, Stream], now: datetime) -> tuple[int, int, int, int]:
    """Write one cycle's polls; return (moves, new errors, objects stored, streams not read)."""
    ids = [stream.pk for stream in by_name.values()]
    rows = {row.stream_id: row for row in WatchedStream.objects.filter(stream_id__in=ids)}
    errors: list[StreamError] = []
    samples: list[LagSample] = []
    moved = objects = failures = 0
    for name, poll in cycle.streams.items():
        stream = by_name[name]
        row = rows.get(stream.pk) or WatchedStream(stream=stream)
        rows[stream.pk] = row
        row.polled_at = now
        row.poll_failure = str(poll.failure or "")
        if poll.failure is not None:
            failures += 1
            errors.append(_failure(stream, poll.failure, now))
        if poll.stream is not None:
            moved += _follow_state(stream, row, poll.stream)
            errors.extend(_errors(stream, poll.stream.errors, "", now))
        if poll.objects is not None:
            objects += _store_objects(stream, poll.objects, now)
            for obj in poll.objects:
                found = obj.errors + (obj.backfill.errors if obj.backfill else ())
                errors.extend(_errors(stream, found, obj.object_id, now))
        if poll.metrics is not None and poll.stream is not None:
            sample = _metrics(stream, row, poll, now)
            if sample is not None:
                samples.append(sample)
    _save_rows(rows.values())
    LagSample.objects.bulk_create(samples)
    return moved, _save_errors(errors, now), objects, failures


def _follow_state(stream: Stream, row: WatchedStream, snapshot: StreamSnapshot) -> int:
    """Copy the source's view onto the row; record a move if the state changed. Return 1 if it moved."""
    mapped = to_cdcweb(snapshot.state, previous=stream.state)
    row.source_state, row.maintenance = snapshot.state, mapped.maintenance
    row.display_name, row.source_type = snapshot.display_name[:200], snapshot.source_type
    row.destination_type, row.last_recovery_at = snapshot.destination_type, snapshot.last_recovery_time
    row.source_updated_at = snapshot.update_time
    reason = f"Datastream reports {snapshot.state}"
    if snapshot.errors and mapped.state in (Stream.State.FAILED, Stream.State.FAILED_PERMANENTLY):
        reason += f": {snapshot.errors[0].reason}: {snapshot.errors[0].message}"
    return int(record_source_move(stream, mapped.state, at=snapshot.update_time, by=BY, reason=reason))


def _errors(stream: Stream, found, object_id: str, now: datetime) -> list[StreamError]:
    """Return a StreamError per source error (its UUID the identity), not yet checked against the table."""
    kind = StreamError.Kind.PERMANENT
    if stream.state != Stream.State.FAILED_PERMANENTLY:
        kind = StreamError.Kind.RETRYABLE
    return [_error_row(stream, error, object_id, kind, now) for error in found]


def _error_row(stream, error: ErrorSnapshot, object_id: str, kind: str, now) -> StreamError:
    """Return one StreamError for a source error."""
    return StreamError(
        stream=stream,
        partition_token=object_id,
        at=error.error_time or now,
        kind=kind,
        code=error.reason[:100],
        message=error.message or error.reason,
        uuid=error.key[:200],
        details=dict(error.details),
    )


def _failure(stream: Stream, failure: SourceError, now: datetime) -> StreamError:
    """Return the StreamError of a stream the poll could not read (stored once per code and message)."""
    kind = (
        StreamError.Kind.PERMANENT
        if isinstance(failure, PermanentSourceError)
        else StreamError.Kind.RETRYABLE
    )
    code = getattr(failure, "code", "") or ""
    return StreamError(
        stream=stream,
        at=now,
        kind=kind,
        code=code[:100],
        message=f"could not poll the stream: {failure}",
        uuid=f"poll|{code}|{failure}"[:200],
    )


def _save_errors(errors: list[StreamError], now: datetime) -> int:
    """Insert the errors not stored yet (by stream and UUID) and mark the stored ones seen now.

    Return how many were new. ``last_seen_at`` is what keeps an error the source still
    reports from the retention job (cdcweb/retention/purge.py).
    """
    if not errors:
        return 0
    uuids = {error.uuid for error in errors}
    reported = {(error.stream_id, error.uuid) for error in errors}
    rows = StreamError.objects.filter(stream_id__in={e.stream_id for e in errors}, uuid__in=uuids)
    stored = {(sid, uuid): pk for pk, sid, uuid in rows.values_list("pk", "stream_id", "uuid")}
    seen = [pk for key, pk in stored.items() if key in reported]
    if seen:
        StreamError.objects.filter(pk__in=seen).update(last_seen_at=now)
    new = {}
    for error in errors:
        key = (error.stream_id, error.uuid)
        if key not in stored:
            error.last_seen_at = now
            new.setdefault(key, error)
    # A concurrent poll may have stored one meanwhile: the unique constraint keeps it once.
    StreamError.objects.bulk_create(list(new.values()), ignore_conflicts=True)
    return len(new)


def _save_rows(rows) -> None:
    """Update the watched rows that exist and create the others."""
    rows = list(rows)
    WatchedStream.objects.bulk_update([r for r in rows if r.pk], ROW_FIELDS)
    WatchedStream.objects.bulk_create([r for r in rows if not r.pk], ignore_conflicts=True)


def _store_objects(stream: Stream, found: tuple[ObjectSnapshot, ...], now: datetime) -> int:
    """Make the stream's partitions its objects: update those known, add new ones, drop those gone."""
    known = dict(Partition.objects.filter(stream=stream).values_list("token", "pk"))
    rows = [_object_partition(stream, obj, now) for obj in found]
    for row in rows:
        row.pk = known.get(row.token)
    Partition.objects.bulk_update([r for r in rows if r.pk], OBJECT_FIELDS)
    Partition.objects.bulk_create([r for r in rows if not r.pk], ignore_conflicts=True)
    gone = set(known) - {row.token for row in rows}
    if gone:
        Partition.objects.filter(stream=stream, token__in=gone).delete()
    return len(rows)


def _object_partition(stream: Stream, obj: ObjectSnapshot, now: datetime) -> Partition:
    """Return the partition of one object: its backfill job's state, times and errors."""
    job = obj.backfill
    started, ended = (job.last_start_time, job.last_end_time) if job else (None, None)
    errors = obj.errors + (job.errors if job else ())
    state = BACKFILL_STATES.get(job.state, P.CREATED) if job else P.CREATED
    return Partition(
        stream=stream,
        token=obj.object_id,
        label=(obj.source_object or obj.display_name)[:500],
        state=state,
        start_at=stream.start_at,
        watermark=ended or started or stream.start_at,
        cursor={
            "backfill_state": job.state if job else "NOT_STARTED",
            "backfill_trigger": job.trigger if job else "",
            "backfill_started_at": started.isoformat() if started else None,
            "backfill_ended_at": ended.isoformat() if ended else None,
            "errors": [f"{e.reason}: {e.message}" for e in errors],
        },
        last_progress_at=ended or started,
        finished_at=ended if state == P.FINISHED else None,
        created_at=now,
    )


def _metrics(stream: Stream, row: WatchedStream, poll: StreamPoll, now: datetime) -> LagSample | None:
    """Add the new metric points to the row's totals; return the lag sample (None: no freshness)."""
    metrics = poll.metrics
    since = row.metrics_until
    row.events_total += int(sum(p.value for p in metrics.events if since is None or p.time > since))
    row.bytes_total += int(sum(p.value for p in metrics.bytes if since is None or p.time > since))
    times = [p.time for p in (*metrics.events, *metrics.bytes, *metrics.freshness)]
    row.metrics_until = max([*times, *([since] if since else [])], default=None)
    row.freshness_seconds = metrics.lag_seconds
    row.events_per_second, row.bytes_per_second = metrics.events_per_second, metrics.bytes_per_second
    row.unsupported_events = metrics.unsupported_events
    row.missing_metrics = list(metrics.missing)
    if metrics.lag_seconds is None:
        return None  # a paused stream has no freshness: no point rather than a false zero
    return LagSample(
        stream=stream,
        at=now,
        lag_seconds=metrics.lag_seconds,
        data_records=row.events_total,
        resolution_seconds=10,
    )
