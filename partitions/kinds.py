"""Which streams cdcweb reads and which it watches, asked of the kinds (never by a kind's name).

Beat's read-pipeline tasks (scheduling, retries, sweeps, lag samples, stall rules) take
``read_streams()``; the watch tasks take ``watched_streams()``.
"""

from __future__ import annotations

from django.db.models import QuerySet

from partitions.sources import KINDS
from partitions.sources.kinds import ReadKind, WatchedKind
from streams.models import Stream


def watched_kinds() -> list[str]:
    """Return the names of the kinds whose streams their source runs."""
    return [name for name, kind in KINDS.items() if isinstance(kind, WatchedKind)]


def read_streams() -> QuerySet[Stream]:
    """Return every stream of a kind cdcweb's workers read."""
    return Stream.objects.filter(source_kind__in=[n for n, k in KINDS.items() if isinstance(k, ReadKind)])


def watched_streams() -> QuerySet[Stream]:
    """Return every stream of a watched kind."""
    return Stream.objects.filter(source_kind__in=watched_kinds())


def handle(stream: Stream):
    """Return the kind's handle on the one stream (watch it, operate it)."""
    kind = KINDS[stream.source_kind]
    if not isinstance(kind, WatchedKind):
        raise TypeError(f"stream '{stream.name}' is read by cdcweb, not watched")
    return kind.connect(stream.connection)
