"""What the dashboard shows about a stream: lag, throughput, sparkline and warnings.

Every function here runs a fixed number of queries, whatever the partition count: the
progress comes from the read model (partitions.progress, one grouped query for all the
streams shown), and lag samples are read through the (stream, at) index.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from partitions.models import LagSample
from partitions.progress import StreamProgress, progress_of, retention
from partitions.stalls import LAG_WINDOW, lag_grew_throughout
from streams import kinds
from streams.models import Stream
from streams.retention import resume_deadline
from streams.times import human_duration

from . import watched

SPARKLINE_WINDOW = timedelta(hours=1)
# Samples the throughput is averaged over (a minute at the default 10 s sampling).
THROUGHPUT_SAMPLES = 7
RETENTION_WARN_FRACTION = 0.25


def sparkline_points(values: list[float], width: int = 120, height: int = 28) -> str:
    """Return an SVG polyline's points for values scaled into a width × height box."""
    if len(values) < 2:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = width / (len(values) - 1)
    points = (
        f"{i * step:.1f},{height - 1 - (v - low) / span * (height - 2):.1f}" for i, v in enumerate(values)
    )
    return " ".join(points)


def throughput(samples: list[LagSample]) -> float | None:
    """Return records per second between the first and last of samples (oldest first)."""
    recent = samples[-THROUGHPUT_SAMPLES:]
    if len(recent) < 2:
        return None
    seconds = (recent[-1].at - recent[0].at).total_seconds()
    if seconds <= 0:
        return None
    # A recover can drop partitions and their counters: never show negative throughput.
    return max(0.0, (recent[-1].data_records - recent[0].data_records) / seconds)


def retention_warning(stream: Stream, low: datetime | None, now: datetime) -> str | None:
    """Warn when a paused stream nears the end of its source's retention."""
    if stream.state not in (Stream.State.PAUSED, Stream.State.DRAINING) or stream.paused_at is None:
        return None
    kept = retention(stream)
    if kept is None:
        return None  # the source keeps its changes: a pause can last
    left = resume_deadline(stream, low, kept) - now
    if left <= timedelta(0):
        return (
            f"paused beyond the source's retention ({human_duration(kept.total_seconds())}): "
            "resuming from the watermark will fail; recover from now or a timestamp"
        )
    if left < kept * RETENTION_WARN_FRACTION:
        return (
            f"paused: resume within {human_duration(left.total_seconds())}, before the low watermark "
            f"leaves the source's {human_duration(kept.total_seconds())} retention"
        )
    return None


def warnings_for(stream: Stream, stalled: int, samples: list[LagSample], low, now) -> list[str]:
    """Return the stream's warnings: stalled partitions, growing lag, retention."""
    found = []
    if stalled:
        found.append(f"{stalled} stalled partition{'s' if stalled != 1 else ''}: watermark not moving")
    raw = [s for s in samples if s.resolution_seconds == 10][-LAG_WINDOW:]
    if stream.state == Stream.State.RUNNING and lag_grew_throughout(raw):
        found.append(f"lag growing: it rose in each of the last {LAG_WINDOW} samples")
    retention = retention_warning(stream, low, now)
    if retention:
        found.append(retention)
    return found


def _recent_samples(stream_ids: list[int], now: datetime) -> dict[int, list[LagSample]]:
    """Return each stream's lag samples of the last hour, oldest first (one query)."""
    by_stream: dict[int, list[LagSample]] = {sid: [] for sid in stream_ids}
    rows = LagSample.objects.filter(stream_id__in=stream_ids, at__gte=now - SPARKLINE_WINDOW).order_by(
        "stream_id", "at"
    )
    for sample in rows.only("stream_id", "at", "lag_seconds", "data_records", "resolution_seconds"):
        by_stream[sample.stream_id].append(sample)
    return by_stream


def summarize(
    stream: Stream, progress: StreamProgress, samples: list[LagSample], now: datetime, rows=None
) -> dict:
    """Return what a row or panel shows for one stream from its progress and lag samples."""
    if kinds.watched(stream.source_kind):
        row = (rows or {}).get(stream.pk)
        return {
            "stream": stream,
            "progress": progress,
            "lag_seconds": watched.lag_of(samples),
            "low_watermark": None,
            "partitions": progress.partitions,
            "by_state": progress.by_state,
            "stalled": 0,
            "data_records": row.events_total if row else 0,
            "throughput": throughput(samples),
            "sparkline": sparkline_points([s.lag_seconds for s in samples]),
            "warnings": watched.warnings_for(stream, row, now),
            "watched": row,
        }
    return {
        "stream": stream,
        "progress": progress,
        "lag_seconds": progress.lag_seconds,
        "low_watermark": progress.low_watermark,
        "partitions": progress.partitions,
        "by_state": progress.by_state,
        "stalled": progress.stalled,
        "data_records": progress.data_records,
        "throughput": throughput(samples),
        "sparkline": sparkline_points([s.lag_seconds for s in samples]),
        "warnings": warnings_for(stream, progress.stalled, samples, progress.low_watermark, now),
    }


def overview(streams: list[Stream], now: datetime | None = None) -> list[dict]:
    """Return one summary per stream (two queries for any number of streams)."""
    now = now or timezone.now()
    ids = [s.pk for s in streams]
    progress, samples = progress_of(streams, now), _recent_samples(ids, now)
    rows = watched.rows_of([s.pk for s in streams if kinds.watched(s.source_kind)])
    return [summarize(s, progress[s.pk], samples[s.pk], now, rows) for s in streams]
