"""Lag samples over many (stream, window) pairs at once: the one query behind "for N minutes".

A rule such as "lag above 300 s for 5 minutes" asks, of each stream it watches, whether
every lag sample of the last 5 minutes was above 300 s. Rules differ in their windows,
so one query joins a VALUES list of (stream, window start) pairs to the samples through
the (stream, at) index: it reads only the samples inside each pair's window (plus a
short lookback, to tell a covered window from a young stream) and answers one row per
pair. The rows read are bounded by pairs x samples per window (at most 6 hours of raw
samples; MAX_WINDOW_MINUTES), never by a stream's whole history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.utils.dateparse import parse_datetime

from partitions.models import LagSample

# Pairs per query: SQLite binds at most 32,766 parameters, four a pair (PostgreSQL binds client-side).
MAX_PAIRS = 8000


@dataclass(frozen=True)
class WindowStats:
    """One stream's samples around one window [since, now]."""

    inside: int  # samples at or after since
    min_lag: float | None  # the least lag among them
    oldest: datetime | None  # the oldest sample from the lookback on
    records_before: int | None  # the cumulative records of the last sample at or before since

    def lag_held_above(self, threshold: float, since: datetime) -> bool:
        """Return True if the samples cover the window and every one inside it was above threshold."""
        covered = self.oldest is not None and self.oldest <= since
        return covered and self.inside > 0 and self.min_lag is not None and self.min_lag > threshold


def _sql(pairs: int) -> str:
    table = connection.ops.quote_name(LagSample._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s)"] * pairs)
    return f"""
        WITH w (n, stream_id, since, look) AS (VALUES {values})
        SELECT w.n,
               SUM(CASE WHEN s.at >= w.since THEN 1 ELSE 0 END),
               MIN(CASE WHEN s.at >= w.since THEN s.lag_seconds END),
               MIN(s.at),
               MAX(CASE WHEN s.at <= w.since THEN s.data_records END)
        FROM w JOIN {table} s ON s.stream_id = w.stream_id AND s.at >= w.look
        GROUP BY w.n
    """


def _moment(value) -> datetime | None:
    """Return a timestamp read back from either backend as an aware UTC datetime."""
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    parsed = parse_datetime(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def window_stats(
    pairs: set[tuple[int, datetime]], lookback: timedelta
) -> dict[tuple[int, datetime], WindowStats]:
    """Return the stats of each (stream id, window start) pair; absent pairs had no samples.

    One query, or one per MAX_PAIRS pairs beyond that.
    """
    ordered = sorted(pairs)
    found: dict[tuple[int, datetime], WindowStats] = {}
    for start in range(0, len(ordered), MAX_PAIRS):
        found.update(_query(ordered[start : start + MAX_PAIRS], lookback))
    return found


def _query(pairs: list[tuple[int, datetime]], lookback: timedelta) -> dict:
    adapt = connection.ops.adapt_datetimefield_value
    params: list = []
    for n, (stream_id, since) in enumerate(pairs):
        params += [n, stream_id, adapt(since), adapt(since - lookback)]
    with connection.cursor() as cursor:
        cursor.execute(_sql(len(pairs)), params)
        rows = cursor.fetchall()
    return {
        pairs[n]: WindowStats(int(inside or 0), min_lag, _moment(oldest), before)
        for n, inside, min_lag, oldest, before in rows
    }
