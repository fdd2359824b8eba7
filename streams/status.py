"""Aggregates over a stream's partitions: one query each, whatever the partition count."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Max, Min, Q, Sum
from django.utils import timezone

from partitions.changestream.times import format_time
from partitions.models import Partition
from streams.models import Stream

UNFINISHED = ~Q(state=Partition.State.FINISHED)


def _aggregate(stream: Stream) -> dict:
    """Return the counts, record total and watermark bounds of the stream's partitions."""
    return Partition.objects.filter(stream=stream).aggregate(
        total=Count("id"),
        unfinished=Count("id", filter=UNFINISHED),
        data_records=Sum("data_records"),
        low=Min("watermark", filter=UNFINISHED),
        last_end=Max("end_at"),
        last_watermark=Max("watermark"),
    )


def partition_totals(stream_ids) -> dict[int, dict]:
    """Return {stream id: totals} of the given streams' partitions, in one grouped query.

    Totals: total, unfinished, data_records (None without partitions), low, last_end,
    last_watermark (as _aggregate) and a count per state under its lower-case name.
    One row per (stream, state), combined here: at 10,000 partitions it costs half of
    the same figures as filtered aggregates over a join of streams and partitions.
    """
    totals = {pk: _empty_totals() for pk in stream_ids}
    rows = (
        Partition.objects.filter(stream_id__in=list(totals))
        .values_list("stream_id", "state")
        .annotate(Count("id"), Sum("data_records"), Min("watermark"), Max("end_at"), Max("watermark"))
        .order_by()
    )
    for stream_id, state, count, records, low, last_end, last_watermark in rows:
        found = totals[stream_id]
        found["total"] += count
        found[state.lower()] = found.get(state.lower(), 0) + count
        found["data_records"] = (found["data_records"] or 0) + (records or 0)
        found["last_end"] = _latest(found["last_end"], last_end)
        found["last_watermark"] = _latest(found["last_watermark"], last_watermark)
        if state != Partition.State.FINISHED:
            found["unfinished"] += count
            found["low"] = low if found["low"] is None else min(found["low"], low)
    return totals


def _empty_totals() -> dict:
    by_state = {state.lower(): 0 for state in Partition.State.values}
    return {"total": 0, "unfinished": 0, "data_records": None, "low": None, "last_end": None,
            "last_watermark": None, **by_state}  # fmt: skip


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def _low_watermark(stream: Stream, agg: dict) -> datetime | None:
    """Return the low watermark from an aggregate: a finished stream's is where it ended."""
    if agg["unfinished"]:
        return agg["low"]
    if agg["total"]:
        return agg["last_end"] or agg["last_watermark"]
    return None


def _lag(stream: Stream, low: datetime | None, now: datetime | None = None) -> float | None:
    """Return seconds from the low watermark to now, or to the end if the stream has one before now."""
    if low is None:
        return None
    now = now or timezone.now()
    horizon = min(now, stream.end_at) if stream.end_at else now
    return max(0.0, (horizon - low).total_seconds())


def low_watermark(stream: Stream) -> datetime | None:
    """Return the minimum watermark over unfinished partitions; the end once all finished."""
    return _low_watermark(stream, _aggregate(stream))


def lag_seconds(stream: Stream) -> float | None:
    """Return how far the low watermark is behind now (or behind the end, if that is earlier)."""
    return _lag(stream, low_watermark(stream))


def data_records(stream: Stream) -> int:
    """Return the data change records read over all the stream's partitions."""
    total = Partition.objects.filter(stream=stream).aggregate(n=Sum("data_records"))["n"]
    return total or 0


def holding_partition(stream: Stream) -> Partition | None:
    """Return the unfinished partition with the oldest watermark (the one holding lag up)."""
    unfinished = Partition.objects.filter(stream=stream).exclude(state=Partition.State.FINISHED)
    return unfinished.order_by("watermark", "id").first()


def partitions_by_state(stream: Stream) -> dict[str, int]:
    """Return {state: count} with every partition state present, zeros included."""
    counts = dict.fromkeys(Partition.State.values, 0)
    rows = Partition.objects.filter(stream=stream).values_list("state").annotate(n=Count("id")).order_by()
    for state, n in rows:
        counts[state] = n
    return counts


def reached_end(stream: Stream) -> bool:
    """Return True if the stream has an end timestamp and every partition finished there."""
    if stream.end_at is None:
        return False
    agg = Partition.objects.filter(stream=stream).aggregate(
        total=Count("id"), unfinished=Count("id", filter=UNFINISHED)
    )
    return bool(agg["total"]) and not agg["unfinished"]


def _iso(value: datetime | None) -> str | None:
    return format_time(value) if value else None


def stream_status(stream: Stream, now: datetime | None = None) -> dict:
    """Return the stream's state and progress as plain JSON-ready values (three queries)."""
    agg = _aggregate(stream)
    low = _low_watermark(stream, agg)
    holder = holding_partition(stream) if agg["unfinished"] else None
    return {
        "name": stream.name,
        "state": stream.state,
        "state_reason": stream.state_reason,
        "state_changed_at": _iso(stream.state_changed_at),
        "source_kind": stream.source_kind,
        "project": stream.project,
        "instance": stream.instance,
        "database": stream.database,
        "change_stream": stream.change_stream,
        "dialect": stream.dialect,
        "start_at": _iso(stream.start_at),
        "end_at": _iso(stream.end_at),
        "partitions": agg["total"],
        "partitions_by_state": partitions_by_state(stream),
        "data_records": agg["data_records"] or 0,
        "low_watermark": _iso(low),
        "lag_seconds": _lag(stream, low, now),
        "holding_partition": holder.token if holder else None,
        "consecutive_failures": stream.consecutive_failures,
    }
