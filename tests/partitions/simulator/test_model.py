"""Topology and workload: deterministic, and shaped the way Spanner's are."""

from __future__ import annotations

from collections import Counter, defaultdict

from partitions.simulator.topology import KEY_SPACE, Topology
from partitions.simulator.workload import generate_second

EPOCH_US = 1_700_000_000 * 1_000_000
HOUR_US = 3600 * 1_000_000


def make_topology(seed=7):
    return Topology(seed, EPOCH_US, 4, 5_000_000, 5_000_000)


def test_same_seed_gives_same_history_and_other_seed_another():
    # given two topologies with one seed and one with another
    a, b, c = make_topology(), make_topology(), make_topology(seed=8)
    # when each is extended over an hour
    for topology in (a, b, c):
        topology.ensure(EPOCH_US + HOUR_US)
    # then the first two agree on every partition and the third does not
    assert [(p.token, p.end_us) for p in a.partitions()] == [(p.token, p.end_us) for p in b.partitions()]
    assert {p.token for p in a.partitions()} != {p.token for p in c.partitions()}


def test_live_partitions_always_tile_the_key_space():
    topology = make_topology()
    topology.ensure(EPOCH_US + HOUR_US)
    for t in range(EPOCH_US, EPOCH_US + HOUR_US, 1_250_000):
        live = topology.live_at(t)
        assert live[0].lo == 0
        assert live[-1].hi == KEY_SPACE
        assert all(a.hi == b.lo for a, b in zip(live, live[1:], strict=False))
        assert all(p.start_us <= t and (p.end_us is None or t < p.end_us) for p in live)


def test_splits_and_merges_happen_and_merges_join_adjacent_ranges():
    topology = make_topology()
    topology.ensure(EPOCH_US + 10 * 60 * 1_000_000)
    assert topology.splits >= 100
    assert topology.merges >= 100
    merged = [p for p in topology.partitions() if len(p.parents) == 2]
    assert merged
    for child in merged:
        left, right = (topology.get(t) for t in child.parents)
        assert left.hi == right.lo
        assert (child.lo, child.hi) == (left.lo, right.hi)
        assert left.end_us == right.end_us == child.start_us
        assert left.children == right.children == (child,)
    split_sizes = Counter(len(p.children) for p in topology.partitions() if len(p.children) > 1)
    assert set(split_sizes) <= {2, 3}
    assert split_sizes[2] > 0


def test_workload_is_a_pure_function_of_seed_and_second():
    topology = make_topology()
    second = EPOCH_US // 1_000_000 + 100
    first = [(e.token, e.record) for e in generate_second(7, second, 50, 4, topology)]
    again = [(e.token, e.record) for e in generate_second(7, second, 50, 4, make_topology())]
    assert first == again
    assert first


def test_records_follow_value_capture_rules_and_transaction_counts():
    topology = make_topology()
    entries = []
    for second in range(EPOCH_US // 1_000_000 + 10, EPOCH_US // 1_000_000 + 40):
        entries += generate_second(7, second, 50, 4, topology)
    records = [e.record for e in entries]
    assert {r.value_capture_type for r in records} == {
        "OLD_AND_NEW_VALUES",
        "NEW_ROW",
        "NEW_VALUES",
        "NEW_ROW_AND_OLD_VALUES",
    }
    assert {r.mod_type for r in records} == {"INSERT", "UPDATE", "DELETE"}
    for r in records:
        for mod in r.mods:
            if r.mod_type == "DELETE":
                assert mod.new_values == {}
            if r.mod_type == "INSERT" or r.value_capture_type in ("NEW_ROW", "NEW_VALUES"):
                assert mod.old_values == {}
            if r.mod_type == "UPDATE" and r.value_capture_type in (
                "OLD_AND_NEW_VALUES",
                "NEW_ROW_AND_OLD_VALUES",
            ):
                assert mod.old_values
    by_txn = defaultdict(list)
    for e in entries:
        by_txn[e.record.server_transaction_id].append(e)
    assert any(len({e.token for e in txn}) > 1 for txn in by_txn.values())
    for txn in by_txn.values():
        first = txn[0].record
        assert [e.record.record_sequence for e in txn] == [f"{i:08d}" for i in range(len(txn))]
        assert first.number_of_records_in_transaction == len(txn)
        assert first.number_of_partitions_in_transaction == len({e.token for e in txn})
        lasts = [e for e in txn if e.record.is_last_record_in_transaction_in_partition]
        assert sorted(e.token for e in lasts) == sorted({e.token for e in txn})
        assert len({e.ts_us for e in txn}) == 1
