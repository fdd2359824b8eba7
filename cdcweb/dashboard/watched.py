"""What the pages show of a watched (Datastream) stream beside what every stream shows.

Its lag is the source's data freshness (the last lag sample beat took from the metrics),
not a low watermark of partitions: its partitions are the source's objects. Its warnings
are the source's: a paused or failing stream nearing the source's log retention, Google's
MAINTENANCE, events Datastream could not process, and a poll that could not read it.
Its actions are those Datastream accepts in the state it reports.
"""

from __future__ import annotations

from datetime import datetime

from partitions.models import LagSample, Partition, WatchedStream
from partitions.sources import KINDS
from partitions.sources.datastream import metrics
from partitions.sources.datastream.states import allowed_actions, retention_risk
from streams.models import Stream, StreamOperation

OPERATIONS_SHOWN = 5
# What the page loses when a metric has no descriptor (partitions/sources/datastream/metrics.py).
MISSING_METRIC = {
    metrics.FRESHNESS: "the lag (data freshness)",
    metrics.EVENT_COUNT: "the event throughput",
    metrics.BYTES_COUNT: "the byte throughput",
    metrics.UNSUPPORTED_EVENT_COUNT: "the unsupported-events warning",
}


def rows_of(stream_ids: list[int]) -> dict[int, WatchedStream]:
    """Return the watched rows of the streams given (one query)."""
    return {row.stream_id: row for row in WatchedStream.objects.filter(stream_id__in=stream_ids)}


def lag_of(samples: list[LagSample]) -> float | None:
    """Return the latest freshness beat recorded (None before the first metrics)."""
    return samples[-1].lag_seconds if samples else None


def warnings_for(stream: Stream, row: WatchedStream | None, now: datetime) -> list[str]:
    """Return the source's warnings for the stream."""
    if row is None:
        return ["not polled yet: beat reads it within one polling interval"]
    found = []
    if row.poll_failure:
        found.append(f"the last poll could not read it: {row.poll_failure}")
    if row.maintenance:
        found.append(
            "MAINTENANCE: Google is maintaining this stream; Datastream refuses every change meanwhile"
        )
    hours = KINDS[stream.source_kind].retention(stream.connection).total_seconds() / 3600
    risk = retention_risk(row.source_state, stream.state_changed_at, int(hours), now)
    if risk is not None:
        found.append(risk.message)
    for metric_type in row.missing_metrics:
        found.append(
            f"Cloud Monitoring has no descriptor of {metric_type} in this project: "
            f"{MISSING_METRIC.get(metric_type, 'it')} is not charted"
        )
    if row.unsupported_events:
        found.append(
            f"{row.unsupported_events:,} unsupported events in the last metrics window: "
            "Datastream could not process them (see its errors and the source's schema)"
        )
    return found


def available_actions(stream: Stream, row: WatchedStream | None) -> dict[str, bool]:
    """Return {action: allowed} for the page's buttons, as Datastream accepts them now."""
    accepted = allowed_actions(row.source_state if row else "")
    busy = stream.operations.filter(
        status__in=(StreamOperation.Status.PENDING, StreamOperation.Status.RUNNING)
    ).exists()
    if busy:
        accepted = frozenset()
    return {
        "start": "resume" in accepted and stream.state == Stream.State.NOT_STARTED,
        "pause": "pause" in accepted,
        "resume": "resume" in accepted and stream.state != Stream.State.NOT_STARTED,
        "recover": "recover" in accepted,
    }


def operations_of(stream: Stream) -> list[StreamOperation]:
    """Return the stream's latest operations, newest first."""
    return list(stream.operations.all()[:OPERATIONS_SHOWN])


def objects_of(stream: Stream) -> list[tuple[str, str, str]]:
    """Return (object ID, table, backfill state) of each object of the stream, for the backfill form."""
    rows = Partition.objects.filter(stream=stream).order_by("label").values_list("token", "label", "cursor")
    return [(token, label, (cursor or {}).get("backfill_state", "")) for token, label, cursor in rows]
