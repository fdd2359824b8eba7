"""Records stream through the reader: memory stays flat however long a partition runs."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest

from partitions.simulator.spanner.config import SimulatorConfig
from partitions.simulator.spanner.server import start_server
from partitions.sources.spanner_change_stream.reader import ChangeStreamReader, connect
from partitions.sources.spanner_change_stream.records import ChildPartitionsRecord, DataChangeRecord

EPOCH = (datetime.now(UTC) - timedelta(minutes=40)).replace(second=0, microsecond=0)
# One root that never splits within the test window: one long-running partition.
CONFIG = SimulatorConfig(
    seed=3, roots=1, split_every=86_400.0, merge_every=86_400.0, tps=100.0, retention=7200.0, epoch=EPOCH
)


@pytest.fixture(scope="module")
def long_partition():
    server = start_server(CONFIG, "127.0.0.1", 0)
    start = EPOCH + timedelta(minutes=1)
    server.warm(start, start + timedelta(minutes=2), dialects=("googlesql",))
    reader = ChangeStreamReader(
        connect("p", "i", "demo-db", server.emulator_host), "Changes", "googlesql", 10_000
    )
    (root,) = [
        child.token
        for record in reader.read(None, start, start)
        if isinstance(record, ChildPartitionsRecord)
        for child in record.child_partitions
    ]
    try:
        yield reader, root, start
    finally:
        server.stop(grace=0.5)


def peak_while_reading(reader, token: str, start: datetime, seconds: int) -> tuple[int, int]:
    """Return (data records read, peak traced bytes) reading the window, keeping nothing."""
    count = 0
    tracemalloc.start()
    try:
        for record in reader.read(token, start, start + timedelta(seconds=seconds)):
            count += isinstance(record, DataChangeRecord)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return count, peak


def test_memory_stays_flat_as_the_partition_runs_six_times_longer(long_partition):
    reader, token, start = long_partition
    peak_while_reading(reader, token, start, 10)  # client and channel set up outside the measure
    short_count, short_peak = peak_while_reading(reader, token, start, 20)
    long_count, long_peak = peak_while_reading(reader, token, start, 120)
    assert long_count > 5 * short_count > 0
    # six times the records, yet the peak grows by less than half
    assert long_peak < 1.5 * short_peak, (short_peak, long_peak)
    print(f"peak {short_peak:,} B for {short_count:,} records, {long_peak:,} B for {long_count:,}")
