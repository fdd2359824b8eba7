"""Each stream's connected Source, made once per worker process and kept (partitions/sources).

Connecting costs a client, a channel and a session, so a Source is kept per (kind,
connection settings) for the life of the process; the reads on top of it are cheap
and made per window. gRPC channels do not survive a fork: a process makes its own.
"""

from __future__ import annotations

import json
import threading

from partitions.models import Partition
from partitions.sources import kind_of
from partitions.sources.base import PartitionState, ReadOptions, Source
from streams.models import Stream

_lock = threading.Lock()
_sources: dict[tuple[str, str], Source] = {}


def _key(stream: Stream) -> tuple[str, str]:
    return stream.source_kind, json.dumps(stream.connection, sort_keys=True, default=str)


def source_for(stream: Stream) -> Source:
    """Return the process-wide Source of the stream's kind and settings."""
    key = _key(stream)
    with _lock:
        source = _sources.get(key)
        if source is None:
            source = kind_of(stream.source_kind).connect(stream.connection)
            _sources[key] = source
        return source


def options(stream: Stream, timeout: float | None = None) -> ReadOptions:
    """Return how the stream is read: its heartbeat (or poll) interval and a deadline."""
    return ReadOptions(heartbeat_ms=stream.heartbeat_ms, timeout=timeout)


def state_of(partition: Partition) -> PartitionState:
    """Return the partition as a read continues it: watermark, cursor and label."""
    return PartitionState(
        partition.token, partition.start_at, partition.watermark, dict(partition.cursor), partition.label
    )


def forget(stream: Stream) -> None:
    """Drop the kept Source, e.g. after its endpoint changed or a connection broke for good."""
    with _lock:
        _sources.pop(_key(stream), None)
