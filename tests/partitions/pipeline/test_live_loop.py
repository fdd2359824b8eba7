"""A change stream's live reads on the process's event loop (live.py), over real gRPC to the simulator."""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from partitions.models import Partition
from partitions.pipeline import services
from partitions.pipeline.live import LiveReads
from partitions.simulator.spanner.server import start_server
from streams.models import Stream
from streams.transitions import transition
from tests.factories import make_stream

P, S = Partition.State, Stream.State
pytestmark = pytest.mark.django_db(transaction=True)  # the checkpoint writer stores on a thread of its own


@pytest.fixture
def steady(simulator):
    """Yield a simulator whose partitions neither split nor merge while a test watches them."""
    server = start_server(dataclasses.replace(simulator.config, split_every=3600, merge_every=3600))
    try:
        yield server
    finally:
        server.stop(grace=0)


def running_stream(server, name: str, start, window_seconds: int) -> Stream:
    """Return a RUNNING GoogleSQL stream of the simulator from `start`, with 1 s heartbeats."""
    stream = make_stream(
        name, database="demo-db", change_stream=server.config.stream, dialect="googlesql", start_at=start,
        heartbeat_ms=1000, window_seconds=window_seconds, emulator_host=server.emulator_host,
    )  # fmt: skip
    transition(stream, S.STARTING, by="test")
    return transition(stream, S.RUNNING, by="test")


def scheduled(stream: Stream, token: str, start) -> Partition:
    """Return a SCHEDULED partition of the stream, read from `start`."""
    return Partition.objects.create(
        stream=stream, token=token, state=P.SCHEDULED, start_at=start, watermark=start
    )


def test_live_partitions_share_the_loop_follow_the_edge_and_give_their_leases_back_on_stop(
    steady, queued, wait_for
):
    # given a running stream with 1 s heartbeats and every partition live now, scheduled from 3 s back
    start = timezone.now() - timedelta(seconds=3)
    stream = running_stream(steady, "loop", start, window_seconds=5)
    now_us = int(timezone.now().timestamp() * 1e6)
    steady.topology.ensure(now_us + 10_000_000)
    partitions = [scheduled(stream, p.token, start) for p in steady.topology.live_at(now_us)]
    ids = [p.pk for p in partitions]
    reads, before = LiveReads(), threading.active_count()

    # when a read task takes each of them
    outcomes = [services.read_next_window(p, queued, live=reads) for p in partitions]

    # then each went on as a live read on the loop, not in a thread of its own
    assert outcomes == ["live"] * len(ids)
    assert reads.count() == len(ids)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("live-") and t.name[5:].isdigit()]
    assert threading.active_count() - before < 10  # the loop, its helpers, the writer, the lease keeper
    # and every watermark follows the live edge, window after window (5 s windows)
    mark = timezone.now() + timedelta(seconds=6)
    wait_for(
        "every watermark past a window ahead",
        lambda: Partition.objects.filter(pk__in=ids, watermark__gte=mark).count() == len(ids),
        timeout=60,
    )
    assert Partition.objects.filter(pk__in=ids, state=P.RUNNING).count() == len(ids)
    assert not queued.reads  # nothing went back to the queue

    # when the worker stops
    assert reads.stop_all() == len(ids)
    # then every read stopped, checkpointed and gave its lease back (the next reader starts at once)
    assert reads.count() == 0
    held = Partition.objects.filter(pk__in=ids).exclude(lease_owner="", lease_expires_at=None)
    assert not held.exists(), list(held.values("pk", "lease_owner", "lease_expires_at"))


def test_a_live_read_that_reaches_its_deadline_while_moving_reads_on_under_its_lease(
    steady, queued, wait_for, monkeypatch, caplog
):
    # given a live partition read on the loop whose every query meets its deadline 4 s in (10 s
    # windows, each 5-15 s long; 1 s heartbeats): as a loop a lease behind its windows' ends would
    from partitions.pipeline import window

    monkeypatch.setattr(window, "query_timeout", lambda end, windows=1: 4.0)
    start = timezone.now() - timedelta(seconds=1)
    stream = running_stream(steady, "behind", start, window_seconds=10)
    now_us = int(timezone.now().timestamp() * 1e6)
    steady.topology.ensure(now_us + 30_000_000)
    partition = scheduled(stream, steady.topology.live_at(now_us)[0].token, start)
    reads = LiveReads()
    # when a read task hands it to a live read
    with caplog.at_level("WARNING", logger="partitions.pipeline.window"):
        assert services.read_next_window(partition, queued, live=reads) == "live"
        # then its watermark follows the edge past several deadlines, the read never leaving the loop
        mark = timezone.now() + timedelta(seconds=12)
        wait_for(
            "the watermark 12 s on",
            lambda: Partition.objects.get(pk=partition.pk).watermark >= mark,
            timeout=60,
        )
        reads.stop_all()
    assert caplog.text.count("reached its deadline while moving") >= 2
    assert not queued.reads  # never sent back through the queue
    stream.refresh_from_db()
    assert stream.consecutive_failures == 0
    assert stream.state == S.RUNNING
    assert not stream.errors.exists()


def test_a_read_that_catches_a_partition_up_hands_it_to_a_live_read_not_to_the_queue(
    steady, queued, wait_for
):
    # given a partition 30 s behind in 5 s windows (more than two windows: the pool catches it up)
    start = timezone.now() - timedelta(seconds=30)
    stream = running_stream(steady, "caught-up", start, window_seconds=5)
    steady.topology.ensure(int(timezone.now().timestamp() * 1e6) + 30_000_000)
    token = next(p.token for p in steady.topology.live_at(int(start.timestamp() * 1e6)) if p.end_us is None)
    partition = scheduled(stream, token, start)
    reads = LiveReads()
    # when its read task runs
    outcome = services.read_next_window(partition, queued, live=reads)
    # then it read the backlog here and went on as a live read under the same lease, not through the queue
    try:
        assert outcome == "live"
        assert not queued.reads
        assert reads.count() == 1
        mark = timezone.now() + timedelta(seconds=3)
        wait_for(
            "the watermark past now",
            lambda: Partition.objects.get(pk=partition.pk).watermark >= mark,
            timeout=60,
        )
    finally:
        reads.stop_all()
