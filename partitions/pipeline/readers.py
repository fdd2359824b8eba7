"""Each stream's connected Source, made once per worker process and kept (partitions/sources).

Connecting costs a client, a channel and a session, so a Source is kept per (kind,
connection settings) for the life of the process; the reads on top of it are cheap
and made per window. gRPC channels do not survive a fork: a process makes its own.
"""

from __future__ import annotations

import json
import threading

from partitions.models import Partition
from partitions.sources import KINDS
from partitions.sources.base import PartitionState, PermanentSourceError, ReadOptions, Source
from partitions.sources.kinds import ReadKind
from streams.models import Stream

_lock = threading.Lock()
_sources: dict[tuple[str, str], Source] = {}


def _key(stream: Stream) -> tuple[str, str]:
    return stream.source_kind, json.dumps(stream.connection, sort_keys=True, default=str)


def refusal(stream: Stream) -> str:
    """Return why no stream of this kind may run (unknown, or not available yet); "" when it may."""
    kind = KINDS.get(stream.source_kind)
    if kind is None:
        return f"unknown source kind {stream.source_kind!r}: use one of {', '.join(KINDS)}"
    return kind.unavailable


def read_kind(stream: Stream) -> ReadKind:
    """Return the stream's kind, or raise PermanentSourceError if cdcweb cannot read it (saying why)."""
    reason = refusal(stream)
    kind = KINDS.get(stream.source_kind)
    if not reason and isinstance(kind, ReadKind):
        return kind
    reason = reason or f"cdcweb watches streams of kind {stream.source_kind}; it does not read them"
    raise PermanentSourceError(reason, code="KIND_NOT_READABLE")


def reads(stream: Stream) -> bool:
    """Return whether cdcweb's workers read the stream (its kind is a ReadKind)."""
    return isinstance(KINDS.get(stream.source_kind), ReadKind)


def source_for(stream: Stream) -> Source:
    """Return the process-wide Source of the stream's kind and settings."""
    key = _key(stream)
    with _lock:
        source = _sources.get(key)
        if source is None:
            source = read_kind(stream).connect(stream.connection)
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
