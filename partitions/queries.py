"""Read models of a stream's partitions for the pages and the API: a fixed number of queries each.

Each function reads with values() (no model instances) and returns JSON-ready
dicts, so 10,000 partitions cost two queries and a few tens of milliseconds,
not one query per partition.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import CharField, F, FloatField, Func, Q

from streams.models import Stream
from streams.times import format_time

from .models import LagSample, Partition, PartitionEdge
from .progress import horizon, partition_lag

NODE_FIELDS = ("id", "token", "label", "state", "data_records", "mods", "heartbeats", "bytes", "stalled")
LAG_FIELDS = (
    "lag_seconds", "p95_partition_lag", "max_partition_lag",
    "data_records", "resolution_seconds", "holding_partition_id", "holding_partition__token",
)  # fmt: skip


class IsoTime(Func):
    """A timestamp column formatted as RFC 3339 text by the database.

    Measured at 10,000 partitions on PostgreSQL: turning 30,000 timestamptz values
    into Python datetimes and back into text cost about 250 ms; letting the
    database print them costs a few milliseconds.
    """

    output_field = CharField()

    def as_postgresql(self, compiler, connection, **extra):
        """Print microseconds and 'Z', like changestream.times.format_time."""
        template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sql(self, compiler, connection, template=None, **extra):
        """Elsewhere (SQLite stores UTC text) turn 'YYYY-MM-DD HH:MM:SS.ffffff' into RFC 3339."""
        template = template or "(replace(%(expressions)s, ' ', 'T') || 'Z')"
        return super().as_sql(compiler, connection, template=template, **extra)


class EpochSeconds(Func):
    """A timestamp column as float seconds since 1970 (for lag arithmetic without datetimes)."""

    output_field = FloatField()

    def as_postgresql(self, compiler, connection, **extra):
        """Use date_part, which returns double precision."""
        return self.as_sql(compiler, connection, template="date_part('epoch', %(expressions)s)", **extra)

    def as_sql(self, compiler, connection, template=None, **extra):
        """Elsewhere (SQLite) convert from the Julian day."""
        template = template or "((julianday(%(expressions)s) - 2440587.5) * 86400.0)"
        return super().as_sql(compiler, connection, template=template, **extra)


def _iso(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _times(*names: str) -> dict:
    """Return values() expressions printing each timestamp column as text."""
    return {f"{name}_iso": IsoTime(F(name)) for name in names}


def _overlapping(queryset, since: datetime | None, until: datetime | None):
    """Keep the rows whose [start_at, end_at or open) interval meets [since, until]."""
    if since is not None:
        queryset = queryset.filter(Q(end_at__isnull=True) | Q(end_at__gte=since))
    if until is not None:
        queryset = queryset.filter(start_at__lte=until)
    return queryset


def _node(row: dict, parents: int, until: float) -> dict:
    """Return one lineage node from a partition's values() row (times as text, lag from epochs)."""
    return {
        "id": row["id"],
        "token": row["token"],
        "label": row["label"],
        "state": row["state"],
        "start_at": row["start_at_iso"],
        "end_at": row["end_at_iso"],
        "watermark": row["watermark_iso"],
        "lag_seconds": partition_lag(row["state"], row["watermark_epoch"], until) or 0.0,
        "data_records": row["data_records"],
        "mods": row["mods"],
        "heartbeats": row["heartbeats"],
        "bytes": row["bytes"],
        "stalled": row["stalled"],
        "parents": parents,
    }


class TooManyRows(ValueError):
    """A window holds more rows than the caller allows: it should ask for a narrower one."""


def _at_most(rows, limit: int | None, what: str) -> list:
    """Return the rows as a list, reading one more than limit to tell a full window from a larger one."""
    found = list(rows if limit is None else rows[: limit + 1])
    if limit is not None and len(found) > limit:
        raise TooManyRows(f"the window holds more than {limit:,} {what}: narrow it with since and until")
    return found


def lineage(
    stream: Stream, since: datetime | None = None, until: datetime | None = None, max_nodes: int | None = None
) -> dict:
    """Return {"nodes": [...], "edges": [...]} of the partitions alive in [since, until] (two queries).

    A node carries its token, state, interval, watermark, lag, counters, stall flag
    and how many parents it has (a merge has more than one); an edge is
    {"parent": id, "child": id} with both ends among the nodes. More than max_nodes
    partitions raise TooManyRows.
    """
    alive = _overlapping(Partition.objects.filter(stream=stream), since, until)
    times = _times("start_at", "end_at", "watermark")
    epoch = EpochSeconds(F("watermark"))
    nodes = alive.order_by("start_at", "id").values(*NODE_FIELDS, **times, watermark_epoch=epoch)
    rows = _at_most(nodes, max_nodes, "partitions")
    links = PartitionEdge.objects.filter(stream=stream)
    if since is not None or until is not None:
        # Only the edges into the window's nodes: all a node's parents are counted, and a
        # 10-minute window of a 10,000-partition stream reads dozens of edges, not 10,000.
        # A short list of ids uses the child index; a long one stays a subquery (SQLite
        # limits the parameters of one statement).
        ids = [row["id"] for row in rows]
        links = links.filter(child_id__in=ids if len(ids) <= 1000 else alive.values("id"))
    links = list(links.order_by("id").values_list("parent_id", "child_id"))
    parents = Counter(child for _, child in links)
    now = horizon(stream).timestamp()
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
        "at": row["at_iso"],
        "lag_seconds": row["lag_seconds"],
        "low_watermark": row["low_watermark_iso"],
        "p95_partition_lag": row["p95_partition_lag"],
        "max_partition_lag": row["max_partition_lag"],
        "data_records": row["data_records"],
        "resolution_seconds": row["resolution_seconds"],
        "holding_partition": row["holding_partition__token"],
        "holding_partition_id": row["holding_partition_id"],
    }


def lag_series(
    stream: Stream,
    since: datetime | None = None,
    until: datetime | None = None,
    max_points: int | None = None,
) -> list[dict]:
    """Return the stream's lag samples in [since, until], oldest first (one query).

    Older samples are downsampled (partitions/pipeline/lag_samples.py): `resolution_seconds` says
    whether a point is a raw 10 s sample or the worst of a 1 or 10 minute span.
    More than max_points samples raise TooManyRows.
    """
    rows = LagSample.objects.filter(stream=stream)
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lte=until)
    rows = rows.order_by("at", "id").values(*LAG_FIELDS, **_times("at", "low_watermark"))
    return [_sample(row) for row in _at_most(rows, max_points, "lag samples")]
