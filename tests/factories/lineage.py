"""Build a stream with a realistic partition lineage and lag history straight through the ORM.

Used by the API benchmarks (10,000 partitions, 30 days of samples) and by the API
tests (a few dozen partitions). Deterministic for a given seed.

The lineage grows like Spanner's: from a few roots, at each event one partition
splits into two or three children, or two neighbouring partitions merge into one.
Every parent finishes when its children start; the live partitions (the current
leaves) are RUNNING, a few stalled, a few still CREATED.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from partitions.models import LagSample, Partition, PartitionEdge
from streams.models import Stream
from tests import factories

# (age limit, spacing) of the lag sample tiers that partitions/pipeline/lag_samples.py keeps.
LAG_TIERS = ((timedelta(hours=6), 10), (timedelta(days=7), 60), (timedelta(days=30), 600))
BATCH = 2_000


@dataclass
class _Node:
    start: datetime
    parents: list[int] = field(default_factory=list)
    end: datetime | None = None


def _grow(count: int, roots: int, since: datetime, until: datetime, rng: random.Random) -> list[_Node]:
    """Return `count` nodes (list index = node id) grown by splits and merges between since and until."""
    nodes = [_Node(since) for _ in range(roots)]
    leaves = list(range(roots))  # in key order
    step = (until - since) / max(1, count)
    at = since
    while len(nodes) < count:
        at += step
        i = rng.randrange(len(leaves))
        if len(leaves) > 1 and (rng.random() < 0.45 or len(leaves) > 40):
            i = min(i, len(leaves) - 2)
            parents = leaves[i : i + 2]
            width = 1
        else:
            parents = [leaves[i]]
            width = min(rng.choice((2, 2, 3)), count - len(nodes))
        for p in parents:
            nodes[p].end = at
        children = list(range(len(nodes), len(nodes) + width))
        nodes.extend(_Node(at, parents=list(parents)) for _ in children)
        leaves[i : i + len(parents)] = children
    return nodes


def _partition(stream: Stream, index: int, node: _Node, now: datetime, rng: random.Random) -> Partition:
    """Return an unsaved Partition for one node: finished if it has an end, else live."""
    records = rng.randrange(0, 50_000)
    started = node.start + timedelta(milliseconds=rng.randrange(20, 3_000))
    finished = node.end is not None
    live_state = rng.choice(
        (Partition.State.RUNNING,) * 8 + (Partition.State.SCHEDULED, Partition.State.CREATED)
    )
    watermark = node.end if finished else now - timedelta(seconds=rng.uniform(0.5, 30) if index % 97 else 900)
    return Partition(
        stream=stream,
        token=f"{stream.name}-{index:06d}-{rng.getrandbits(48):012x}",
        state=Partition.State.FINISHED if finished else live_state,
        start_at=node.start,
        end_at=node.end,
        watermark=max(watermark, node.start),
        data_records=records,
        mods=records * 2,
        heartbeats=rng.randrange(0, 500),
        bytes=records * 180,
        created_at=node.start,
        scheduled_at=node.start,
        running_at=started,
        finished_at=node.end + timedelta(milliseconds=rng.randrange(5, 500)) if finished else None,
        last_progress_at=node.end if finished else now,
        stalled=not finished and index % 97 == 0,
        stall_rule="" if finished or index % 97 else "watermark_stalled",
    )


def build_lineage(stream: Stream, count: int, *, roots: int = 4, days: float = 30, seed: int = 7) -> int:
    """Create `count` partitions and their edges for the stream; return how many edges were made."""
    rng = random.Random(seed)
    now = timezone.now()
    nodes = _grow(count, roots, now - timedelta(days=days), now - timedelta(seconds=30), rng)
    rows = [_partition(stream, i, node, now, rng) for i, node in enumerate(nodes)]
    with transaction.atomic():
        Partition.objects.bulk_create(rows, batch_size=BATCH)
        edges = [
            PartitionEdge(stream=stream, parent_id=rows[p].pk, child_id=rows[c].pk)
            for c, node in enumerate(nodes)
            for p in node.parents
        ]
        PartitionEdge.objects.bulk_create(edges, batch_size=BATCH)
    return len(edges)


def _sample_times(now: datetime, days: float) -> list[tuple[datetime, int]]:
    """Return (at, resolution) of every kept sample over `days`, oldest first."""
    times, newer = [], now
    for age, spacing in LAG_TIERS:
        limit = now - min(age, timedelta(days=days))
        at = newer
        while at > limit:
            times.append((at, spacing))
            at -= timedelta(seconds=spacing)
        newer = at
    return sorted(times)


def build_lag_samples(stream: Stream, *, days: float = 30, seed: int = 7) -> int:
    """Create the stream's downsampled lag history over `days`; return how many samples."""
    rng = random.Random(seed)
    now = timezone.now()
    holders = list(
        Partition.objects.filter(stream=stream)
        .exclude(state=Partition.State.FINISHED)
        .values_list("pk", flat=True)
    )
    lag, records, samples = 5.0, 0, []
    for at, resolution in _sample_times(now, days):
        lag = max(0.5, lag + rng.gauss(0, 2))
        records += rng.randrange(0, 50 * resolution)
        samples.append(
            LagSample(
                stream=stream,
                at=at,
                lag_seconds=lag,
                low_watermark=at - timedelta(seconds=lag),
                holding_partition_id=rng.choice(holders) if holders else None,
                p95_partition_lag=lag * 0.8,
                max_partition_lag=lag,
                data_records=records,
                resolution_seconds=resolution,
            )  # fmt: skip
        )
    LagSample.objects.bulk_create(samples, batch_size=BATCH)
    return len(samples)


def make_lineage_stream(
    name: str, partitions: int, *, lag_days: float = 0, seed: int = 7, **fields
) -> Stream:
    """Create a RUNNING stream with `partitions` partitions and, if lag_days, its lag history."""
    start = timezone.now() - timedelta(days=30)
    fields = {"project": "bench", "instance": "inst", "database": "db", "start_at": start, **fields}
    stream = factories.make_stream(name, Stream.State.RUNNING, **fields)  # test data: no pipeline
    if partitions:
        build_lineage(stream, partitions, seed=seed)
    if lag_days:
        build_lag_samples(stream, days=lag_days, seed=seed)
    return stream
