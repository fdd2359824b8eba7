"""Read models of a stream's partitions for the pages and the API: a fixed number of queries each.

Each function reads with values() (no model instances) and returns JSON-ready
dicts, so 10,000 partitions cost two queries and a few tens of milliseconds,
not one query per partition.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from partitions.changestream.times import format_time
from streams.models import Stream

from .models import LagSample, Partition, PartitionEdge

NODE_FIELDS = (
    "id", "token", "state", "start_at", "end_at", "watermark",
    "data_records", "mods", "heartbeats", "bytes", "stalled",
)  # fmt: skip
LAG_FIELDS = (
    "at", "lag_seconds", "low_watermark", "p95_partition_lag", "max_partition_lag",
    "data_records", "resolution_seconds", "holding_partition_id", "holding_partition__token",
)  # fmt: skip


def _iso(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def horizon(stream: Stream, now: datetime | None = None) -> datetime:
    """Return the moment lag is measured against: now, or the stream's end if that is earlier."""
    now = now or timezone.now()
    return min(now, stream.end_at) if stream.end_at else now


def partition_lag(state: str, watermark: datetime, until: datetime) -> float:
    """Return a partition's lag in seconds: how far its watermark is behind; 0 once finished."""
    if state == Partition.State.FINISHED:
        return 0.0
    return max(0.0, (until - watermark).total_seconds())


def _overlapping(queryset, since: datetime | None, until: datetime | None):
    """Keep the rows whose [start_at, end_at or open) interval meets [since, until]."""
    if since is not None:
        queryset = queryset.filter(Q(end_at__isnull=True) | Q(end_at__gte=since))
    if until is not None:
        queryset = queryset.filter(start_at__lte=until)
    return queryset


def _node(row: dict, parents: int, until: datetime) -> dict:
    """Return one lineage node from a partition's values() row."""
    return {
        **row,
        "start_at": _iso(row["start_at"]),
        "end_at": _iso(row["end_at"]),
        "watermark": _iso(row["watermark"]),
        "lag_seconds": partition_lag(row["state"], row["watermark"], until),
        "parents": parents,
    }


def lineage(stream: Stream, since: datetime | None = None, until: datetime | None = None) -> dict:
    """Return {"nodes": [...], "edges": [...]} of the partitions alive in [since, until] (two queries).

    A node carries its token, state, interval, watermark, lag, counters, stall flag
    and how many parents it has (a merge has more than one); an edge is
    {"parent": id, "child": id} with both ends among the nodes.
    """
    rows = _overlapping(Partition.objects.filter(stream=stream), since, until)
    rows = list(rows.order_by("start_at", "id").values(*NODE_FIELDS))
    links = list(
        PartitionEdge.objects.filter(stream=stream).order_by("id").values_list("parent_id", "child_id")
    )
    parents = Counter(child for _, child in links)
    now = horizon(stream)
    nodes = [_node(row, parents[row["id"]], now) for row in rows]
    if since is None and until is None:
        edges = [{"parent": p, "child": c} for p, c in links]
    else:
        ids = {row["id"] for row in rows}
        edges = [{"parent": p, "child": c} for p, c in links if p in ids and c in ids]
    return {"nodes": nodes, "edges": edges}


def _sample(row: dict) -> dict:
    """Return one lag point from a LagSample values() row."""
    return {
        "at": _iso(row["at"]),
        "lag_seconds": row["lag_seconds"],
        "low_watermark": _iso(row["low_watermark"]),
        "p95_partition_lag": row["p95_partition_lag"],
        "max_partition_lag": row["max_partition_lag"],
        "data_records": row["data_records"],
        "resolution_seconds": row["resolution_seconds"],
        "holding_partition": row["holding_partition__token"],
        "holding_partition_id": row["holding_partition_id"],
    }


def lag_series(stream: Stream, since: datetime | None = None, until: datetime | None = None) -> list[dict]:
    """Return the stream's lag samples in [since, until], oldest first (one query).

    Older samples are downsampled (partitions/lag.py): `resolution_seconds` says
    whether a point is a raw 10 s sample or the worst of a 1 or 10 minute span.
    """
    rows = LagSample.objects.filter(stream=stream)
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lte=until)
    return [_sample(row) for row in rows.order_by("at", "id").values(*LAG_FIELDS)]
