"""Live reads: heartbeats move the watermark, changes come as the clock reaches them, close() cancels."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from bigtable_support import OPTIONS, past_window, source_for

from partitions.simulator.bigtable.keys import partition_range
from partitions.simulator.bigtable.server import start_server
from partitions.sources.base import PROGRESS, PartitionState, ReadOptions
from partitions.sources.bigtable.cursor import root_cursor
from partitions.sources.bigtable.ranges import label, range_token
from partitions.sources.bigtable.records import Change

FAST_HEARTBEATS = ReadOptions(heartbeat_ms=200)


@pytest.fixture(scope="module")
def idle_simulator(bigtable_simulator):
    """Yield a simulator with one partition that never changes and no writes."""
    config = replace(bigtable_simulator.config, tps=0.0, roots=1, split_every=86400.0, merge_every=86400.0)
    server = start_server(config)
    try:
        yield server
    finally:
        server.stop(grace=0)


def _state(root) -> PartitionState:
    return PartitionState(root.token, root.start, root.start, root.cursor, root.label)


def test_heartbeats_advance_the_watermark_of_an_idle_partition_until_the_end(idle_simulator):
    # given an idle table and a read from a second ago to 1.5 s ahead, heartbeats every 200 ms
    source = source_for(idle_simulator)
    now = datetime.now(UTC)
    (root,) = source.roots(now - timedelta(seconds=1), None, FAST_HEARTBEATS)
    end = now + timedelta(seconds=1.5)
    read = source.read(_state(root), end, FAST_HEARTBEATS)
    # when it is read to its end
    seen = [(item, read.watermark, read.cursor["tokens"][0]["token"]) for item in read]
    # then only heartbeats came, each moving the watermark and the token on
    assert len(seen) >= 8
    assert all(item is PROGRESS for item, _, _ in seen)
    watermarks = [w for _, w, _ in seen]
    assert watermarks == sorted(watermarks)
    assert len({token for _, _, token in seen}) == len(seen)
    # and the stream stayed open until the end time, which the watermark then reached
    assert datetime.now(UTC) >= end
    assert read.watermark == end


def _long_lived_partition(simulator, start: datetime, seconds: float = 2.0) -> PartitionState:
    """Return the busiest partition live at start that lives on for `seconds` or more, as a root."""
    topology = simulator.tables["events"].topology
    at = int(start.timestamp() * 1_000_000)
    lasting = seconds * 1_000_000
    lasting_ones = [p for p in topology.live_at(at) if p.end_us is None or p.end_us - at > lasting]
    # the busiest of them: a test of what changes carry needs changes in its window
    workload = simulator.tables["events"].workload
    seconds_read = range(at // 1_000_000, (at + int(lasting)) // 1_000_000 + 1)

    def changes(p) -> int:
        return sum(len(workload.second(s).by_token.get(p.token, ())) for s in seconds_read)

    partition = max(lasting_ones, key=changes)
    row_range = partition_range(partition)
    return PartitionState(range_token(row_range), start, start, root_cursor(row_range), label(row_range))


def test_the_watermark_never_moves_back_though_the_estimates_do(bigtable_simulator, bigtable_source):
    # given a busy partition read with heartbeats every 50 ms (estimates trail by up to 40 ms)
    # (6 s: in 2 s the seeded workload sometimes had no estimate below the watermark)
    start, end = past_window(6, ago=30)
    read = bigtable_source.read(
        _long_lived_partition(bigtable_simulator, start, seconds=6.5), end, ReadOptions(heartbeat_ms=50)
    )
    # when it is read
    steps, watermark = [], read.watermark
    for item in read:
        if isinstance(item, Change):
            steps.append((watermark, item.estimated_low_watermark, read.watermark))
        watermark = read.watermark
    # then some change's estimate lay below the watermark reached before it
    assert any(estimate < before for before, estimate, _ in steps)
    # and the read's watermark never went back
    assert all(after >= before for before, _, after in steps)
    assert read.watermark == end


def test_live_changes_are_released_as_the_clock_reaches_them(bigtable_source):
    # given a read of a live partition from now to 1.5 s ahead
    now = datetime.now(UTC)
    end = now + timedelta(seconds=1.5)
    root = max(bigtable_source.roots(now, end, OPTIONS), key=lambda r: r.label)
    read = bigtable_source.read(_state(root), end, OPTIONS)
    # when it is read
    arrivals = []
    for item in read:
        if isinstance(item, Change):
            arrivals.append((datetime.now(UTC), item.commit_timestamp))
    # then no change arrived before its commit timestamp
    assert all(arrived >= committed for arrived, committed in arrivals)
    assert read.watermark >= now


def test_close_cancels_an_open_ended_read(idle_simulator, wait_for):
    # given an open-ended read of an idle partition, consumed in another thread, open on the server
    source = source_for(idle_simulator)
    (root,) = source.roots(datetime.now(UTC), None, FAST_HEARTBEATS)
    calls = len(idle_simulator.reads())
    read = source.read(_state(root), None, FAST_HEARTBEATS)
    consumer = threading.Thread(target=lambda: list(read))
    consumer.start()
    reads = idle_simulator.reads
    wait_for("the server to serve the read", lambda: len(reads()) > calls and reads()[-1].status == "RUNNING")
    # when the read is closed (twice: it is safe)
    read.close()
    read.close()
    # then the consumer's iteration ends promptly and the server saw the call cancelled
    consumer.join(timeout=2)
    assert not consumer.is_alive()
    wait_for("the server to see the call end", lambda: reads()[-1].status != "RUNNING", timeout=30)
    assert reads()[-1].status == "CANCELLED"
