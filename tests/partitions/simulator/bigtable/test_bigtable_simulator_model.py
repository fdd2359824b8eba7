"""What the simulator serves is a pure function of its config: changes, partitions, ground truth."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bigtable_raw import initial_ranges

from partitions.simulator.bigtable.config import BigtableSimulatorConfig
from partitions.simulator.bigtable.groundtruth import ground_truth
from partitions.simulator.bigtable.keys import partition_range
from partitions.simulator.bigtable.model import TableModel
from partitions.simulator.core.clock import to_us
from partitions.sources.bigtable.ranges import RowRange, covers
from partitions.sources.bigtable.records import GARBAGE_COLLECTION, USER, SetCell

EPOCH = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
CONFIG = BigtableSimulatorConfig(seed=2, tps=200, epoch=EPOCH, retention=86400.0, chunk_bytes=512)
WINDOW = (EPOCH + timedelta(minutes=10), EPOCH + timedelta(minutes=10, seconds=5))


def test_the_ground_truth_is_the_same_for_the_same_config_and_differs_by_seed():
    # given two computations of one window
    first = list(ground_truth(CONFIG, "events", *WINDOW))
    second = list(ground_truth(replace(CONFIG), "events", *WINDOW))
    # then they agree exactly, and another seed gives other changes
    assert first == second
    assert first != list(ground_truth(replace(CONFIG, seed=3), "events", *WINDOW))
    assert len(first) > 800


def test_the_ground_truth_lies_in_the_window_in_commit_order_with_every_kind_of_change():
    changes = list(ground_truth(CONFIG, "events", *WINDOW))
    stamps = [c.commit_timestamp for c in changes]
    assert stamps == sorted(stamps)
    assert len(set(stamps)) == len(stamps)  # unique microseconds: a position is one number
    assert WINDOW[0] <= stamps[0]
    assert stamps[-1] <= WINDOW[1]
    assert {c.type for c in changes} == {USER, GARBAGE_COLLECTION}
    assert all(c.source_cluster_id for c in changes if c.type == USER)
    sizes = [m.value_size for c in changes for m in c.mods if isinstance(m, SetCell)]
    assert max(sizes) > 3 * CONFIG.chunk_bytes  # some values span several messages
    assert {m.mod_type for c in changes for m in c.mods} == {
        "SET_CELL",
        "DELETE_FROM_COLUMN",
        "DELETE_FROM_FAMILY",
    }


def test_partitions_split_and_merge_and_always_tile_the_table():
    # given a table's history over ten minutes
    model = TableModel("events", CONFIG)
    start = to_us(EPOCH)
    for minute in range(11):
        live = model.topology.live_at(start + minute * 60_000_000)
        # then at every moment the live partitions cover every row exactly once
        ranges = [
            RowRange(b"" if p.lo == 0 else b"row#%08x" % p.lo, b"" if p.hi == 2**32 else b"row#%08x" % p.hi)
            for p in live
        ]
        assert covers(RowRange(b"", b""), ranges)
    # and both kinds of event happened
    assert model.topology.splits >= 9
    assert model.topology.merges >= 9


def test_the_initial_partitions_are_those_live_now(bigtable_sim):
    # given the partitions live while the call ran (they may change during it)
    before = to_us(datetime.now(UTC))
    ranges = initial_ranges(bigtable_sim)
    after = to_us(datetime.now(UTC))
    topology = bigtable_sim.tables["events"].topology
    live = {
        partition_range(p)
        for p in topology.partitions()
        if p.start_us <= after and (p.end_us or after) >= before
    }
    # then the call named live partitions that tile the table
    assert set(ranges) <= live
    assert covers(RowRange(b"", b""), ranges)


def test_every_table_has_its_own_changes():
    config = replace(CONFIG, tables=("events", "orders"))
    assert list(ground_truth(config, "events", *WINDOW)) != list(ground_truth(config, "orders", *WINDOW))
