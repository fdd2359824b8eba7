"""At the live edge, at production defaults, against an independent Spanner fake.

Nothing is shortened here: the lease is CDC_LEASE_SECONDS's default (60 s), beat runs
at its default intervals, and the workers are the Procfile's (a reader with its 32
threads, the housekeeping worker, beat). The source is tests.partitions.pipeline.fake_spanner.py,
which shares no code with the simulator: partitions live 20 s, even generations split
in two (announcing each child in a record of its own), the siblings merge back, both
parents of a merge end at the same timestamp and report the child. Three families keep
six partitions live at once, more than a worker of processes has.

Before this, a live window held its worker for its whole length and checkpointed
every quarter lease: the watermark lagged 15 s and more, merge parents waited for a
free worker, the stream fell further behind every minute, and the first child of
every split that came in its own record was lost.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Count
from django.utils import timezone

from partitions.models import LagSample, Partition, PartitionEdge
from partitions.pipeline import landing
from streams.models import Stream
from tests.partitions.pipeline.conftest import _wait_for
from tests.partitions.pipeline.fake_spanner import DATABASE, FakeSpanner

pytestmark = pytest.mark.slow
P = Partition.State
HEARTBEAT_S = 2.0
READER_THREADS = 128  # the Procfile's default


@pytest.fixture(scope="module")
def pipeline_env() -> dict[str, str]:
    """Return production defaults: nothing shortened."""
    return {"SPANNER_DISABLE_BUILTIN_METRICS": "true", "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def fake():
    """Yield the independent fake, its epoch a minute and a half back (a short backlog)."""
    now = datetime.now(UTC)
    server = FakeSpanner(now - timedelta(seconds=90), families=3, record_per_child=True).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def live(pipeline, fake):
    """Start a stream 70 s back and read it with the Procfile's workers until it is live."""
    pipeline.beat()
    pipeline.worker("reader", threads=READER_THREADS)
    start = (timezone.now() - timedelta(seconds=70)).replace(microsecond=0)
    pipeline.manage(
        "cdc_stream", "create", "live", "--project", "p", "--instance", "i", "--database", DATABASE,
        "--dialect", "postgresql", "--change-stream", "Changes", "--start", start.isoformat(),
        "--heartbeat-ms", str(int(HEARTBEAT_S * 1000)), "--emulator-host", fake.emulator_host,
    )  # fmt: skip
    pipeline.manage("cdc_stream", "start", "live")
    stream = Stream.objects.get(name="live")
    _wait_for("the stream to catch up", lambda: _lag(stream) is not None and _lag(stream) < 3, timeout=60)
    return stream


def _lag(stream) -> float | None:
    low = Partition.objects.filter(stream=stream).exclude(state=P.FINISHED).order_by("watermark").first()
    return None if low is None else (timezone.now() - low.watermark).total_seconds()


def test_catch_up_finishes_both_parents_of_every_merge_at_once(live):
    # given a stream that caught up through splits and merges at the default lease
    edges = PartitionEdge.objects.filter(stream=live).values("child").annotate(n=Count("id")).order_by()
    merged = [row["child"] for row in edges if row["n"] > 1]
    parents = Partition.objects.filter(child_edges__child__in=merged, state=P.FINISHED).distinct()
    # then each parent of a merge finished as soon as it could, never a lease late: within
    # seconds of being taken if it had ended by then (the first ones share a cold worker's
    # start), within moments of its end if it was read live
    past = {
        p.token: (p.finished_at - p.running_at).total_seconds() for p in parents if p.end_at <= p.running_at
    }
    live_ = {p.token: (p.finished_at - p.end_at).total_seconds() for p in parents if p.end_at > p.running_at}
    assert len(past) >= 6
    assert max(past.values()) < 5, past
    assert all(seconds < 1.5 for seconds in live_.values()), live_


def test_every_partition_stays_within_three_heartbeats_of_the_live_edge(live):
    # when the stream is followed live for two generations and a half
    worst, began = 0.0, timezone.now()
    deadline = time.monotonic() + 50
    while time.monotonic() < deadline:
        now = timezone.now()
        running = Partition.objects.filter(stream=live, state=P.RUNNING).values_list("watermark", flat=True)
        worst = max([worst, *((now - wm).total_seconds() for wm in running)])
        time.sleep(0.25)  # sampling the watermarks through a 50 s watch: not a wait for a state
    # then no running partition's watermark was ever more than three heartbeats old
    assert worst <= 3 * HEARTBEAT_S, f"a partition was {worst:.1f}s behind"
    # and each partition that ended meanwhile finished within a second and a half of its end
    ended = Partition.objects.filter(stream=live, state=P.FINISHED, end_at__gte=began)
    assert ended.count() >= 9
    late = {p.token: (p.finished_at - p.end_at).total_seconds() for p in ended}
    assert max(late.values()) < 1.5, late
    # and every child of those began reading within a second of its last parent finishing
    for child in Partition.objects.filter(stream=live, parent_edges__parent__in=ended).distinct():
        last_parent = max(e.parent.finished_at for e in child.parent_edges.select_related("parent"))
        assert child.running_at is not None
        assert (child.running_at - last_parent).total_seconds() < 1.0, (
            child.token,
            str(last_parent),
            str(child.scheduled_at),
            str(child.running_at),
            str(child.created_at),
        )
    # and the stored lag samples say the same
    samples = LagSample.objects.filter(stream=live, at__gte=began)
    assert samples.count() >= 4
    assert max(samples.values_list("lag_seconds", flat=True)) <= 3 * HEARTBEAT_S


def test_landing_zone_holds_exactly_the_fakes_records_up_to_the_low_watermark(pipeline, live, fake):
    # given the stream read live
    low = Partition.objects.filter(stream=live).exclude(state=P.FINISHED).order_by("watermark").first()
    table = landing.read_landing(str(pipeline.landing), live.pk)
    landed = set(
        zip(
            table.column("partition_token").to_pylist(),
            table.column("commit_timestamp").to_pylist(),
            strict=True,
        )
    )
    # then every record up to the low watermark landed (each split's first child was read too)
    assert fake.ground_truth(live.start_at, low.watermark) <= landed
    # and nothing landed that the fake never committed
    assert landed <= fake.ground_truth(live.start_at, timezone.now())
