"""A stream's state and progress as plain JSON-ready values, for `cdc_stream status`."""

from __future__ import annotations

from datetime import datetime

from partitions.progress import StreamProgress, progress_of
from partitions.sources import kind_of
from streams.models import Stream
from streams.times import format_time


def _iso(value: datetime | None) -> str | None:
    return format_time(value) if value else None


def settings_of(stream: Stream) -> dict:
    """Return the stream's connection settings, every setting of its kind present."""
    return {s.name: stream.connection.get(s.name, s.default) for s in kind_of(stream.source_kind).settings}


def stream_status(stream: Stream, progress: StreamProgress) -> dict:
    """Return the stream's state and progress as JSON-ready values."""
    return {
        "name": stream.name,
        "state": stream.state,
        "state_reason": stream.state_reason,
        "state_changed_at": _iso(stream.state_changed_at),
        "source_kind": stream.source_kind,
        "source": kind_of(stream.source_kind).describe(stream.connection),
        **settings_of(stream),
        "start_at": _iso(stream.start_at),
        "end_at": _iso(stream.end_at),
        "partitions": progress.partitions,
        "partitions_by_state": progress.by_state,
        "data_records": progress.data_records,
        "low_watermark": _iso(progress.low_watermark),
        "lag_seconds": progress.lag_seconds,
        "holding_partition": progress.holding_token,
        "consecutive_failures": stream.consecutive_failures,
    }


def statuses(streams: list[Stream], now: datetime | None = None) -> list[dict]:
    """Return the status of each stream (one query for their progress)."""
    progress = progress_of(streams, now)
    return [stream_status(stream, progress[stream.pk]) for stream in streams]
