"""One window read in-process, through the real client over gRPC: checkpoints, ends and failures."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from partitions.models import Partition, PartitionEdge
from partitions.pipeline import checkpoint, landing, services, window
from partitions.simulator.core.clock import to_datetime
from partitions.simulator.spanner.groundtruth import ground_truth
from partitions.simulator.spanner.server import start_server
from partitions.sources.base import Ended, PartitionState
from partitions.sources.landing import DEDUPE_KEY
from partitions.sources.spanner_change_stream.read import ChangeStreamRead
from partitions.sources.spanner_change_stream.reader import ChangeStreamReader, connect
from streams.models import Stream, StreamError
from streams.transitions import transition
from tests.factories import make_stream, wait_for
from tests.partitions.pipeline.fake_spanner import DATABASE, FakeSpanner

P, S = Partition.State, Stream.State
# Transactional: the lease keeper renews from a thread of its own, which sees only committed rows.
pytestmark = pytest.mark.django_db(transaction=True)


def running_stream(simulator, start, heartbeat_ms=1000, window=5) -> Stream:
    stream = make_stream(
        "w", database="demo-db", change_stream=simulator.config.stream, dialect="googlesql", start_at=start,
        heartbeat_ms=heartbeat_ms, window_seconds=window, emulator_host=simulator.emulator_host,
    )  # fmt: skip
    transition(stream, S.STARTING, by="test")
    return transition(stream, S.RUNNING, by="test")


def live_partition(simulator, stream, at) -> Partition:
    """Return a SCHEDULED partition of the simulator live at `at`, the one that lives on longest.

    (The first one live at `at` sometimes ended within a second, in a split or merge, and a
    window read of it ended there.)
    """
    at_us = int(at.timestamp() * 1e6)
    simulator.topology.ensure(at_us + 60_000_000)  # it grows as queried: each end is known
    live = simulator.topology.live_at(at_us)
    token = max(live, key=lambda p: p.end_us or float("inf")).token
    return Partition.objects.create(stream=stream, token=token, state=P.SCHEDULED, start_at=at, watermark=at)


def busy_partition(simulator, stream, at) -> Partition:
    """Return a SCHEDULED partition with the most data change records in the 5 s after `at`."""
    records = ground_truth(simulator.config, "demo-db", at, at + timedelta(seconds=5))
    token = Counter(token for token, _ in records).most_common(1)[0][0]
    simulator.topology.ensure(int((at + timedelta(seconds=5)).timestamp() * 1e6))  # it grows as queried
    start = max(at, to_datetime(simulator.topology.get(token).start_us))
    return Partition.objects.create(
        stream=stream, token=token, state=P.SCHEDULED, start_at=start, watermark=start
    )


def splitting_partition(simulator, stream, at) -> Partition:
    """Return a SCHEDULED partition, live at `at`, that ends within 30 s in a split (not a merge)."""
    at_us = int(at.timestamp() * 1e6)
    simulator.topology.ensure(at_us + 60_000_000)
    for live in simulator.topology.live_at(at_us):
        children = live.children
        if (
            live.end_us
            and live.end_us < at_us + 30_000_000
            and children
            and all(c.parents == (live.token,) for c in children)
        ):
            return Partition.objects.create(stream=stream, token=live.token, state=P.SCHEDULED, start_at=at,
                                            watermark=at)  # fmt: skip
    raise AssertionError("the simulator splits no partition live at the start within 30 s")


def test_a_live_window_checkpoints_every_interval_while_it_reads(simulator, settings, monkeypatch, queued):
    # given a partition read at the live edge with a 1 s heartbeat (2 s checkpoints, the default)
    settings.CDC_LANDING_URI = str(settings.VAR_DIR / "landing-live")
    now = timezone.now().replace(microsecond=0)
    stream = running_stream(simulator, now, heartbeat_ms=1000, window=12)
    partition = live_partition(simulator, stream, now)
    stored = []
    save = checkpoint.save_progress
    monkeypatch.setattr(window, "save_progress", lambda *a, **k: stored.append(save(*a, **k)) or stored[-1])
    # when one window is read (at least 6 s: a first window is 0.5-1.5 windows long)
    services.read_next_window(partition, queued)
    # then its watermark was stored every two seconds or so, not only at the window's end,
    # moving on and never back
    marks = [p.watermark for p in stored if p is not None]
    assert len(marks) >= 3
    assert all(b >= a for a, b in zip(marks, marks[1:], strict=False))
    assert marks[-2] > marks[0]


def test_an_unwritable_landing_zone_is_an_error_on_the_stream_and_frees_the_lease(
    simulator, settings, queued
):
    # given a landing zone that is a file, not a directory
    blocker = settings.VAR_DIR / "not-a-directory"
    blocker.write_text("x")
    settings.CDC_LANDING_URI = str(blocker)
    start = (timezone.now() - timedelta(minutes=10)).replace(microsecond=0)
    stream = running_stream(simulator, start)
    partition = busy_partition(simulator, stream, start)
    # when a window is read
    outcome = services.read_next_window(partition, queued)
    # then the failure is on the stream, as a landing error, and the watermark did not move
    assert outcome == "error"
    error = StreamError.objects.get(stream=stream)
    assert error.kind == StreamError.Kind.LANDING
    partition.refresh_from_db()
    assert partition.watermark == partition.start_at
    # and nobody holds the lease: a retry is queued after a backoff, not after a lease
    assert partition.lease_owner == ""
    assert [pk for pk, _ in queued.reads] == [partition.pk]


def test_a_query_that_ends_before_its_end_proves_only_what_it_sent(make_stream, make_partition):
    # given a read of a window that ends in the future (by the database's clock), over
    # before then, with no children
    stream = make_stream("s", start_at=datetime(2026, 1, 1, tzinfo=UTC))
    partition = make_partition(stream)
    seen = timezone.now() - timedelta(seconds=3)
    read = SimpleNamespace(watermark=seen, cursor={})
    progress = checkpoint.Progress(start=seen, watermark=seen)
    # when it settles
    end = timezone.now() + timedelta(seconds=50)
    window._settle(window.Window(stream, None, partition, "r", read, None, end), progress)
    # then the watermark stays at what the read delivered, not at the window's end
    assert progress.watermark == seen
    assert progress.finish_at is None


def test_a_last_window_that_ends_before_the_streams_end_does_not_finish_the_partition(
    make_stream, make_partition
):
    # given the read of a stream's last window, over (with no children) before the
    # stream's end has come by the database's clock
    end = timezone.now() + timedelta(seconds=50)
    stream = make_stream("s", start_at=datetime(2026, 1, 1, tzinfo=UTC), end_at=end)
    partition = make_partition(stream)
    seen = timezone.now() - timedelta(seconds=3)
    read = SimpleNamespace(watermark=seen, cursor={})
    progress = checkpoint.Progress(start=seen, watermark=seen)
    # when it settles
    window._settle(window.Window(stream, None, partition, "r", read, None, end), progress)
    # then the partition is not finished: its watermark stays at what the read delivered
    assert progress.finish_at is None
    assert progress.watermark == seen


def test_a_split_announced_in_one_record_per_child_keeps_every_child():
    # given a source that announces each child of a split in a record of its own
    epoch = datetime.now(UTC) - timedelta(minutes=2)
    fake = FakeSpanner(epoch, record_per_child=True).start()
    try:
        database = connect("p", "i", DATABASE, emulator_host=fake.emulator_host)
        reader = ChangeStreamReader(database, "Changes", "postgresql", 1000)
        root = PartitionState("fake-0-0-0", epoch, epoch)
        # when the root's window is read to its end
        items = list(ChangeStreamRead(reader, root, epoch + timedelta(seconds=30)))
    finally:
        fake.stop()
    # then the read ends once, with both children
    ended = [i for i in items if isinstance(i, Ended)]
    assert len(ended) == 1
    assert {c.token for c in ended[0].children} == {"fake-0-1-0", "fake-0-1-1"}
    assert ended[0].at == epoch + timedelta(seconds=20)


def test_a_read_task_reads_one_window_and_queues_the_next(simulator, settings, queued):
    # given a partition ten minutes back that splits within 30 s
    settings.CDC_LANDING_URI = str(settings.VAR_DIR / "landing-no-slice")
    start = (timezone.now() - timedelta(minutes=10)).replace(microsecond=0)
    stream = running_stream(simulator, start)
    partition = splitting_partition(simulator, stream, start)
    queries_before = len(simulator.queries())
    # when its read task runs
    outcome = services.read_next_window(partition, queued)
    # then one window was read and the next read (or every child's first) went to the queue
    assert len(simulator.queries()) - queries_before == 1
    children = PartitionEdge.objects.filter(parent=partition).values_list("child_id", flat=True)
    expected = [partition.pk] if outcome == "continued" else sorted(children)
    assert sorted(pk for pk, _ in queued.reads) == expected
    assert expected


def test_a_read_that_reaches_its_deadline_while_moving_reads_on_and_counts_no_failure(
    simulator, settings, monkeypatch, queued, caplog
):
    # given a partition at the live edge that lives on, read with 1 s heartbeats in a 12 s window,
    # whose query's deadline comes 4 s in: as a read in a process that fell that far behind
    # its window's end would meet it (the deadline moved, not the process slowed)
    settings.CDC_LANDING_URI = str(settings.VAR_DIR / "landing-behind")
    now = timezone.now().replace(microsecond=0)
    stream = running_stream(simulator, now, heartbeat_ms=1000, window=12)
    partition = lasting_partition(simulator, stream, now, now + timedelta(seconds=30))
    monkeypatch.setattr(window, "query_timeout", lambda end, windows=1: 4.0)
    # when its window is read
    with caplog.at_level("WARNING", logger="partitions.pipeline.window"):
        outcome = services.read_next_window(partition, queued)
    # then the query ended at its deadline with the watermark moved, and the read goes on from
    # there: no error on the stream, nothing counted toward FAILED, the next read queued
    partition.refresh_from_db()
    stream.refresh_from_db()
    assert "reached its deadline while moving" in caplog.text
    assert outcome == "continued"
    assert partition.watermark > now
    assert not StreamError.objects.filter(stream=stream).exists()
    assert stream.consecutive_failures == 0
    assert stream.state == S.RUNNING
    assert [pk for pk, _ in queued.reads] == [partition.pk]


def test_a_read_that_reaches_its_deadline_without_moving_fails_as_before(
    simulator, settings, monkeypatch, queued
):
    # given a read whose deadline comes before its first checkpoint could store anything
    settings.CDC_LANDING_URI = str(settings.VAR_DIR / "landing-hung")
    now = timezone.now().replace(microsecond=0)
    stream = running_stream(simulator, now, heartbeat_ms=1000, window=12)
    partition = lasting_partition(simulator, stream, now, now + timedelta(seconds=30))
    monkeypatch.setattr(window, "query_timeout", lambda end, windows=1: 0.5)
    # when its window is read
    outcome = services.read_next_window(partition, queued)
    # then it failed: recorded, counted, and retried after a backoff
    stream.refresh_from_db()
    partition.refresh_from_db()
    assert outcome == "error"
    assert list(StreamError.objects.filter(stream=stream).values_list("code", flat=True)) == [
        "DEADLINE_EXCEEDED"
    ]
    assert stream.consecutive_failures == 1
    assert partition.watermark == now
    assert [pk for pk, _ in queued.reads] == [partition.pk]


def lasting_start(simulator, around: datetime) -> datetime:
    """Return the first start from `around` on (by 5 s) at which some partition lives for a minute more.

    The simulator splits and merges on a schedule of its own: at some minutes every partition
    live at `around` ended within the minute, and the test found none to read.
    """
    for step in range(60):
        start = around + timedelta(seconds=5 * step)
        end_us = int((start + timedelta(minutes=1)).timestamp() * 1e6)
        simulator.topology.ensure(end_us)
        live = simulator.topology.live_at(int(start.timestamp() * 1e6))
        if any(p.end_us is None or p.end_us > end_us for p in live):
            return start
    raise AssertionError(f"no partition of the simulator lives a whole minute in the 5 minutes from {around}")


def lasting_partition(simulator, stream, start, end) -> Partition:
    """Return a SCHEDULED partition live over all of [start, end], the one with most records in it."""
    simulator.topology.ensure(int(end.timestamp() * 1e6))
    start_us, end_us = int(start.timestamp() * 1e6), int(end.timestamp() * 1e6)
    lasting = {p.token for p in simulator.topology.live_at(start_us) if p.end_us is None or p.end_us > end_us}
    counts = Counter(token for token, _ in ground_truth(simulator.config, "demo-db", start, end))
    token = max(lasting, key=lambda t: counts[t])
    return Partition.objects.create(
        stream=stream, token=token, state=P.SCHEDULED, start_at=start, watermark=start
    )


def test_a_source_stopped_mid_window_and_back_after_its_end_loses_nothing(
    simulator, settings, queued, tmp_path
):
    # given the last window of a stream that ends 3 s from now, read from a simulator of its own
    settings.CDC_LANDING_URI = str(tmp_path)
    servers = [start_server(simulator.config)]
    now = timezone.now().replace(microsecond=0)
    start, end = now - timedelta(seconds=2), now + timedelta(seconds=3)
    stream = running_stream(servers[0], start, window=60)
    Stream.objects.filter(pk=stream.pk).update(end_at=end)
    partition = lasting_partition(servers[0], stream, start, end)

    def outage():
        wait_for("the read's first rows", lambda: any(q.rows for q in servers[0].queries(partition.token)))
        servers[0].stop(0)
        # down until a second after the window's end: the pace of the outage, not a wait for a state
        time.sleep(max(0.0, (end - timezone.now()).total_seconds()) + 1)
        servers.append(start_server(simulator.config, port=servers[0].port))

    down = threading.Thread(target=outage)
    down.start()
    try:
        # when the simulator stops mid-read and comes back on its port once the window's end has passed
        outcome = services.read_next_window(partition, queued)
    finally:
        down.join()
        servers[-1].stop(0)
    # then the read resumed where it was: the partition reached the stream's end with every record landed
    partition.refresh_from_db()
    stream.refresh_from_db()
    why = (
        outcome,
        partition.watermark,
        end,
        stream.consecutive_failures,
        list(stream.errors.values_list("code", "message")),
    )
    assert partition.state == P.FINISHED, why
    table = landing.read_landing(settings.CDC_LANDING_URI, stream.pk)
    landed = set(zip(*(table.column(c).to_pylist() for c in DEDUPE_KEY), strict=True))
    truth = {
        (token, r.commit_timestamp, r.server_transaction_id, r.record_sequence, i)
        for token, r in ground_truth(simulator.config, "demo-db", start, end)
        if token == partition.token
        for i in range(len(r.mods))
    }
    assert truth
    assert landed == truth


@pytest.mark.parametrize("catch_up", [1, 10])
def test_a_partition_far_behind_reads_several_windows_in_one_query(simulator, settings, queued, catch_up):
    # given a partition ten minutes back that lives on for a minute, windows of 5 s
    settings.CDC_CATCH_UP_WINDOWS = catch_up
    start = lasting_start(simulator, (timezone.now() - timedelta(minutes=10)).replace(microsecond=0))
    stream = running_stream(simulator, start)
    partition = lasting_partition(simulator, stream, start, start + timedelta(minutes=1))
    before = len(simulator.queries(partition.token))
    # when its read task runs
    assert services.read_next_window(partition, queued) == "continued"
    # then one query read `catch_up` windows (one: a window on the partition's own grid),
    # and the watermark stands at their end
    (query,) = simulator.queries(partition.token)[before:]
    if catch_up == 1:
        assert timedelta(seconds=2.5) <= query.end - query.start < timedelta(seconds=7.5)
    else:
        assert query.end - query.start == timedelta(seconds=5 * catch_up)
    partition.refresh_from_db()
    assert query.start == start
    assert partition.watermark == query.end


def test_window_end_reads_the_live_edge_window_by_window():
    # given windows of 60 s and up to 10 of them in a catch-up read
    stream = make_stream("ends", window_seconds=60)
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

    def end(behind_s: float, end_at=None, token="t"):
        stream.end_at = end_at
        partition = Partition(
            stream=stream, token=token, start_at=now, watermark=now - timedelta(seconds=behind_s)
        )
        return window.window_end(partition, stream, now) - partition.watermark

    # then a partition at most two windows behind reads one window, half to one and a half long
    for behind in (0, 0.5, 17, 90, 120):
        assert timedelta(seconds=30) <= end(behind) < timedelta(seconds=90)
    # one further behind reads up to a window short of now, at most ten windows
    assert end(150) == timedelta(seconds=90)
    assert end(400) == timedelta(seconds=340)
    assert end(3600) == timedelta(seconds=600)
    # never past the stream's end
    assert end(3600, end_at=now - timedelta(seconds=3400)) == timedelta(seconds=200)
    # and without the database's clock, one window
    partition = Partition(stream=stream, token="t", start_at=now, watermark=now - timedelta(hours=1))
    stream.end_at = None
    assert (
        timedelta(seconds=30)
        <= window.window_end(partition, stream) - partition.watermark
        < timedelta(seconds=90)
    )


def test_live_windows_end_on_a_grid_of_each_partition_spread_over_the_window():
    # given 1,000 partitions of one stream, all at the same watermark (started together)
    stream = make_stream("spread", window_seconds=60)
    watermark = datetime(2026, 11, 27, 12, 0, 0, 123456, tzinfo=UTC)
    partitions = [
        Partition(stream=stream, token=f"token-{i}", start_at=watermark, watermark=watermark)
        for i in range(1000)
    ]
    # when each reads window after window, each starting where its last one ended
    ends = []
    for partition in partitions:
        own = []
        for _ in range(4):
            own.append(window.window_end(partition, stream))
            partition.watermark = own[-1]
        ends.append(own)
    # then after the first, a partition's windows are exactly one window long
    assert all(b - a == timedelta(seconds=60) for own in ends for a, b in itertools.pairwise(own))
    # and their ends are spread over the minute: no second holds more than 4% of them
    seconds = [own[1].second for own in ends]
    assert max(seconds.count(s) for s in set(seconds)) <= 40
    assert len(set(seconds)) == 60
    # and a partition's grid does not depend on where its read began
    later = Partition(
        stream=stream, token="token-7", start_at=watermark, watermark=ends[7][2] - timedelta(seconds=45)
    )
    assert window.window_end(later, stream) == ends[7][2]


def test_a_catch_up_read_has_a_lease_of_time_per_window(settings):
    settings.CDC_LEASE_SECONDS = 60
    stream = make_stream("spans", window_seconds=60)
    start = timezone.now() - timedelta(hours=1)
    partition = Partition(stream=stream, token="t", start_at=start, watermark=start)

    def timeout(end):
        return window.query_timeout(end, window.windows_spanned(partition, stream, end))

    assert timeout(start + timedelta(seconds=60)) == pytest.approx(60)
    assert timeout(start + timedelta(seconds=600)) == pytest.approx(600)
    assert timeout(start + timedelta(seconds=90)) == pytest.approx(120)
    live_end = timezone.now() + timedelta(seconds=30)
    partition.watermark = live_end - timedelta(seconds=60)
    assert timeout(live_end) == pytest.approx(90, abs=1)


def test_a_poll_has_one_lease_of_time_whatever_the_streams_end():
    # given a table watched by commit timestamp, bounded by an end a day after its watermark
    stream = make_stream("poll", source_kind="spanner_commit_timestamp", window_seconds=60)
    start = timezone.now() - timedelta(days=2)
    partition = Partition(stream=stream, token="t", start_at=start, watermark=start)
    # then its read spans one window: a poll reads once, whatever its end
    assert window.windows_spanned(partition, stream, start + timedelta(days=1)) == 1
