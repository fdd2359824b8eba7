"""The Spanner workload: a pure function of seed and second, shaped the way Spanner's records are."""

from __future__ import annotations

from collections import defaultdict

from partitions.simulator.core.topology import Topology
from partitions.simulator.spanner.workload import generate_second

EPOCH_US = 1_700_000_000 * 1_000_000


def make_topology(seed=7):
    return Topology(seed, EPOCH_US, 4, 5_000_000, 5_000_000)


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
