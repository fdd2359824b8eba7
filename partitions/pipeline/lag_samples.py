"""Lag samples: one per stream every CDC_LAG_SAMPLE_SECONDS, downsampled so the table stays bounded.

Tiers (a sample's ``resolution_seconds`` says which it is in):

    age           resolution   rows per stream-day (at a 10 s sample period)
    < 6 hours     10 s         8,640 written, at most 2,160 kept
    < 7 days      60 s         1,440
    older         600 s        144, deleted after CDC_LAG_RETENTION_DAYS

A downsampled row keeps the worst of its span (highest lag, oldest low watermark),
because an alert on lag must not lose a spike to averaging.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from partitions.kinds import read_streams
from partitions.models import LagSample, Partition
from partitions.progress import horizon, partition_lag, progress
from streams.models import Stream

# (samples older than this, are folded from resolution a into resolution b)
TIERS = ((timedelta(hours=6), 10, 60), (timedelta(days=7), 60, 600))
# Streams that still produce samples: a paused or failed-permanently stream's lag is not news.
SAMPLED_STATES = (Stream.State.RUNNING, Stream.State.FAILED, Stream.State.DRAINING)
# One fold handles at most this many source rows per stream and tier (a few MB of memory).
FOLD_BATCH = 20_000


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def sample_lag(stream: Stream, now: datetime | None = None) -> LagSample:
    """Store one lag sample of the stream: low watermark, who holds it, partition lags, records."""
    now = now or timezone.now()
    found = progress(stream, now)
    until = horizon(stream, now)
    unfinished = Partition.objects.filter(stream=stream).exclude(state=Partition.State.FINISHED)
    lags = [partition_lag(state, wm, until) for state, wm in unfinished.values_list("state", "watermark")]
    return LagSample.objects.create(
        stream=stream,
        at=now,
        lag_seconds=found.lag_seconds or 0.0,
        low_watermark=found.low_watermark,
        holding_partition_id=found.holding_partition_id,
        p95_partition_lag=_percentile(lags, 0.95),
        max_partition_lag=max(lags) if lags else None,
        data_records=found.data_records,
        resolution_seconds=10,
    )


def sample_all(now: datetime | None = None) -> int:
    """Sample every stream that is reading; return how many samples were stored."""
    streams = read_streams().filter(state__in=SAMPLED_STATES)  # watched ones: from their metrics
    return sum(1 for stream in streams if sample_lag(stream, now))


def _bucket(at: datetime, seconds: int) -> datetime:
    epoch = int(at.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, tz=at.tzinfo)


def _fold(rows: list[LagSample], at: datetime, resolution: int) -> LagSample:
    worst = max(rows, key=lambda r: r.lag_seconds)
    lows = [r.low_watermark for r in rows if r.low_watermark is not None]
    p95s = [r.p95_partition_lag for r in rows if r.p95_partition_lag is not None]
    maxes = [r.max_partition_lag for r in rows if r.max_partition_lag is not None]
    return LagSample(
        stream_id=worst.stream_id,
        at=at,
        lag_seconds=worst.lag_seconds,
        low_watermark=min(lows) if lows else None,
        holding_partition_id=worst.holding_partition_id,
        p95_partition_lag=max(p95s) if p95s else None,
        max_partition_lag=max(maxes) if maxes else None,
        data_records=max(r.data_records for r in rows),
        resolution_seconds=resolution,
    )


def downsample(stream_id: int, now: datetime | None = None) -> int:
    """Fold the stream's old samples into the coarser tiers; return how many rows were removed."""
    now = now or timezone.now()
    removed = 0
    for age, source, target in TIERS:
        # Only whole buckets that lie entirely beyond the age are folded, so a bucket is folded once.
        cutoff = _bucket(now - age, target)
        old = LagSample.objects.filter(stream_id=stream_id, resolution_seconds=source, at__lt=cutoff)
        rows = list(old.order_by("at")[:FOLD_BATCH])
        buckets: dict[datetime, list[LagSample]] = {}
        for row in rows:
            buckets.setdefault(_bucket(row.at, target), []).append(row)
        with transaction.atomic():
            LagSample.objects.bulk_create([_fold(b, at, target) for at, b in buckets.items()])
            LagSample.objects.filter(pk__in=[r.pk for r in rows]).delete()
        removed += len(rows) - len(buckets)
    return removed


def cleanup(now: datetime | None = None) -> dict[str, int]:
    """Downsample every stream's samples and delete those beyond the retention; return counts."""
    now = now or timezone.now()
    folded = sum(downsample(pk, now) for pk in Stream.objects.values_list("pk", flat=True))
    expired = now - timedelta(days=settings.CDC_LAG_RETENTION_DAYS)
    deleted, _ = LagSample.objects.filter(Q(at__lt=expired)).delete()
    return {"folded": folded, "deleted": deleted}
