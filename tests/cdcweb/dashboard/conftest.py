"""Fixtures for the dashboard tests: a stream with a real-looking lineage (users: tests/conftest.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from partitions.models import LagSample, Partition, PartitionEdge
from streams.models import Stream
from tests.factories import make_stream
from tests.factories.datastream import at_sim, ds_watch_sim, pick, without_freshness  # noqa: F401 - watched streams

P = Partition.State


def make_lineage(stream: Stream, now, splits: int = 3) -> dict[str, Partition]:
    """Create two roots; the first splits in two, the halves merge; return partitions by name."""
    start = now - timedelta(minutes=30)

    def part(name, state, begin, end=None, **fields):
        return Partition.objects.create(
            stream=stream, token=f"tok-{name}", state=state, start_at=begin, end_at=end,
            watermark=fields.pop("watermark", end or begin), **fields,
        )  # fmt: skip

    split_at, merge_at = start + timedelta(minutes=10), start + timedelta(minutes=20)
    parts = {
        "a": part("a", P.FINISHED, start, split_at, data_records=100),
        "b": part("b", P.RUNNING, start, watermark=now - timedelta(seconds=5), data_records=80),
        "a1": part("a1", P.FINISHED, split_at, merge_at, data_records=40),
        "a2": part("a2", P.FINISHED, split_at, merge_at, data_records=30),
        "m": part("m", P.RUNNING, merge_at, watermark=now - timedelta(seconds=75), data_records=20,
                  stalled=True, stall_rule="watermark_stalled", stall_evidence={"level": "STALLED"}),
    }  # fmt: skip
    for parent, child in (("a", "a1"), ("a", "a2"), ("a1", "m"), ("a2", "m")):
        PartitionEdge.objects.create(stream=stream, parent=parts[parent], child=parts[child])
    return parts


def make_samples(stream: Stream, now, count: int = 30, holder: Partition | None = None) -> None:
    """Create count raw lag samples, one every 10 s up to now, with a growing lag."""
    LagSample.objects.bulk_create(
        LagSample(
            stream=stream, at=now - timedelta(seconds=10 * (count - i)), lag_seconds=5.0 + i,
            p95_partition_lag=6.0 + i, max_partition_lag=8.0 + i, data_records=100 * i,
            low_watermark=now - timedelta(seconds=10 * (count - i) + 5 + i), holding_partition=holder,
        )
        for i in range(count)
    )  # fmt: skip


@pytest.fixture
def stream_with_parts(db):
    """Return a RUNNING stream with a split, a merge, a stalled partition and lag samples.

    Its partitions by name (a, b, a1, a2, m) are in `.parts`.
    """
    now = timezone.now()
    stream = make_stream("orders", database="shop", start_at=now - timedelta(minutes=30))
    Stream.objects.filter(pk=stream.pk).update(state=Stream.State.RUNNING, state_reason="roots found")
    stream.refresh_from_db()
    parts = make_lineage(stream, now)
    make_samples(stream, now, holder=parts["m"])
    stream.parts = parts
    return stream
