"""How each stream is doing: the one read model of partition totals, low watermark, holder and lag.

The dashboard's pages, the REST API, the admin, ``/metrics``, ``cdc_stream status`` and
the lag samples all read a stream's progress here, so they agree to the second. One
grouped query answers it for a whole page of streams: a row per (stream, partition
state) with its count, records, stalled count and watermark bounds, and, for each
unfinished state, the partition with the oldest watermark (through the (stream, state)
index; the FINISHED group never runs that subquery).

Lag is measured against the *horizon*: now, or the stream's end timestamp when that is
earlier (a stream that reads up to a past end is done, not forever behind).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.db.models import Count, Max, Min, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from streams import kinds
from streams.models import Stream

from .models import Partition, WatchedStream
from .sources import KINDS

P = Partition.State
STATES = tuple(P.values)


def horizon(stream: Stream, now: datetime | None = None) -> datetime:
    """Return the moment lag is measured against: now, or the stream's end if that is earlier."""
    now = now or timezone.now()
    return min(now, stream.end_at) if stream.end_at else now


def retention(stream: Stream) -> timedelta | None:
    """Return how long the stream's source keeps changes not read yet (None: it keeps them)."""
    kind = KINDS.get(stream.source_kind)
    return kind.retention(stream.connection) if kind is not None else None


def lag_seconds(watermark: datetime | float, until: datetime | float) -> float:
    """Return how far a watermark is behind `until`, in seconds, never below 0: the one lag formula.

    Both are datetimes, or both epoch seconds (the lineage query computes those for 10,000
    partitions at a time). A stream's lag is its low watermark's, a partition's its own.
    """
    behind = until - watermark
    return max(0.0, behind.total_seconds() if isinstance(behind, timedelta) else behind)


def partition_lag(state: str, watermark: datetime | float, until: datetime | float) -> float | None:
    """Return a partition's lag in seconds (its watermark behind `until`); None once it finished."""
    return None if state == P.FINISHED else lag_seconds(watermark, until)


@dataclass(frozen=True)
class StreamProgress:
    """One stream's progress: partitions by state, records, low watermark, who holds it, lag."""

    stream_id: int
    partitions: int = 0
    by_state: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    unfinished: int = 0
    stalled: int = 0
    data_records: int = 0
    low_watermark: datetime | None = None
    holding_partition_id: int | None = None
    holding_token: str | None = None
    lag_seconds: float | None = None
    reached_end: bool = False


@dataclass
class _Totals:
    """The grouped rows of one stream, summed up."""

    by_state: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    stalled: int = 0
    records: int = 0
    low: datetime | None = None
    holder: tuple[int, str] | None = None
    last_end: datetime | None = None
    last_watermark: datetime | None = None

    def add(self, row: dict) -> None:
        self.by_state[row["state"]] += row["n"]
        self.stalled += row["stalled"]
        self.records += row["records"] or 0
        self.last_end = _latest(self.last_end, row["last_end"])
        self.last_watermark = _latest(self.last_watermark, row["last_watermark"])
        if row["state"] != P.FINISHED and (self.low is None or row["low"] < self.low):
            self.low, self.holder = row["low"], (row["holder_id"], row["holder_token"])


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


class _PerStream(Subquery):
    """A subquery correlated on the stream only, which the rows are grouped by already.

    Django would otherwise add the subquery itself to the GROUP BY, and the database
    would then run it for every partition row instead of once per group.
    """

    def get_group_by_cols(self):
        return []


def _grouped_rows(stream_ids: list[int]):
    """Return one row per (stream, partition state), each with the stream's holding partition.

    The holder subquery is correlated on the stream alone, so the GROUP BY stays
    (stream, state) and it runs once per group, reading only the stream's unfinished
    partitions through the (stream, state) index, never its thousands of finished ones.
    """
    live = [state for state in STATES if state != P.FINISHED]
    oldest = Partition.objects.filter(stream_id=OuterRef("stream_id"), state__in=live)
    oldest = oldest.order_by("watermark", "id")
    unfinished = ~Q(state=P.FINISHED)
    return (
        Partition.objects.filter(stream_id__in=stream_ids)
        .values("stream_id", "state")
        .order_by()
        .annotate(
            n=Count("id"),
            stalled=Count("id", filter=Q(stalled=True) & unfinished),
            records=Sum("data_records"),
            low=Min("watermark"),
            last_end=Max("end_at"),
            last_watermark=Max("watermark"),
            holder_id=_PerStream(oldest.values("id")[:1]),
            holder_token=_PerStream(oldest.values("token")[:1]),
        )
    )


def _progress(stream: Stream, totals: _Totals, now: datetime) -> StreamProgress:
    total = sum(totals.by_state.values())
    unfinished = total - totals.by_state[P.FINISHED]
    if unfinished:
        low = totals.low
    elif total:
        low = totals.last_end or totals.last_watermark  # all finished: where the stream ended
    else:
        low = None
    lag = None if low is None else lag_seconds(low, horizon(stream, now))
    holder = totals.holder if unfinished else None
    return StreamProgress(
        stream_id=stream.pk,
        partitions=total,
        by_state=totals.by_state,
        unfinished=unfinished,
        stalled=totals.stalled,
        data_records=totals.records,
        low_watermark=low,
        holding_partition_id=holder[0] if holder else None,
        holding_token=holder[1] if holder else None,
        lag_seconds=lag,
        reached_end=stream.end_at is not None and total > 0 and unfinished == 0,
    )


def progress_of(streams: Iterable[Stream], now: datetime | None = None) -> dict[int, StreamProgress]:
    """Return {stream id: progress} of the given streams, in one query (two with watched streams)."""
    streams = list(streams)
    now = now or timezone.now()
    totals = {stream.pk: _Totals() for stream in streams}
    if totals:
        for row in _grouped_rows(list(totals)):
            totals[row["stream_id"]].add(row)
    found = {stream.pk: _progress(stream, totals[stream.pk], now) for stream in streams}
    watched = [stream.pk for stream in streams if kinds.watched(stream.source_kind)]
    if watched:
        _as_the_source_says(found, watched)
    return found


def _as_the_source_says(found: dict[int, StreamProgress], stream_ids: list[int]) -> None:
    """Give watched streams the source's lag (data freshness) and event count, not their objects'.

    A watched stream's partitions are the source's objects, whose watermarks are backfill
    times: no measure of how far behind the stream is. No holder, no low watermark.
    """
    rows = WatchedStream.objects.filter(stream_id__in=stream_ids).values_list(
        "stream_id", "freshness_seconds", "events_total"
    )
    by_stream = {sid: (lag, events) for sid, lag, events in rows}
    for sid in stream_ids:
        lag, events = by_stream.get(sid, (None, 0))
        found[sid] = replace(
            found[sid],
            lag_seconds=lag,
            low_watermark=None,
            holding_partition_id=None,
            holding_token=None,
            data_records=events,
            stalled=0,
        )


def progress(stream: Stream, now: datetime | None = None) -> StreamProgress:
    """Return one stream's progress (one query)."""
    return progress_of([stream], now)[stream.pk]
