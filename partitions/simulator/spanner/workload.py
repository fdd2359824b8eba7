"""Transactions and the data change records they leave, as a pure function of time.

Each whole second s has its own random generator keyed by (seed, s): the number of
transactions, their commit timestamps, keys, tables and values follow from it alone.
The partition a write lands in comes from the topology at its commit timestamp, so a
transaction whose keys fall in several partitions yields records in each of them.
"""

from __future__ import annotations

import random

from partitions.simulator.core import workload
from partitions.simulator.core.clock import to_datetime
from partitions.simulator.core.topology import Topology
from partitions.sources.spanner_change_stream.records import DataChangeRecord

from .tables import TABLES, TABLES_BY_NAME, column_types, make_mod

_MOD_TYPES = ("INSERT", "UPDATE", "UPDATE", "UPDATE", "DELETE")
_ACTIONS = ("checkout", "restock", "signup", "refund", "capture", "backfill")
_SYSTEM_CHANCE = 0.01  # a TTL delete now and then: the only system transactions
_UNTAGGED_CHANCE = 0.2


class Entry:
    """One data change record in one partition, with its wire encodings once built."""

    __slots__ = ("ts_us", "token", "record", "wire")

    def __init__(self, ts_us: int, token: str, record: DataChangeRecord):
        self.ts_us = ts_us
        self.token = token
        self.record = record
        self.wire: dict[str, bytes] = {}  # dialect -> framed PartialResultSet value


def _writes(rng: random.Random, max_keys: int, system: bool) -> list[tuple]:
    """Return the (table, mod_type, changed columns, key) writes of one transaction."""
    changed_by_table = {}
    writes = []
    for _ in range(rng.randint(1, max_keys)):
        table = TABLES[0] if system else rng.choice(TABLES)
        mod_type = "DELETE" if system else rng.choice(_MOD_TYPES)
        if table.name not in changed_by_table:
            # One changed-column set per table and transaction, so the mods of a
            # record share one column_types list, as in Spanner.
            cols = table.non_key
            changed_by_table[table.name] = tuple(c for c in cols if rng.random() < 0.5) or cols[:1]
        writes.append((table, mod_type, changed_by_table[table.name], rng.getrandbits(32)))
    return writes


def _transaction_records(
    rng: random.Random, topology: Topology, commit_us: int, txid: str, max_keys: int
) -> list[Entry]:
    system = rng.random() < _SYSTEM_CHANCE
    tag = (
        ""
        if system or rng.random() < _UNTAGGED_CHANCE
        else f"app=shop,env=demo,action={rng.choice(_ACTIONS)}"
    )
    groups: dict[tuple, list] = {}
    for table, mod_type, changed, key in _writes(rng, max_keys, system):
        token = topology.find(key, commit_us).token
        mod, shown = make_mod(table, mod_type, changed, key, rng, commit_us)
        groups.setdefault((token, table.name, mod_type), [shown, []])[1].append(mod)
    order = list(groups)
    last_in_partition = {token: i for i, (token, _, _) in enumerate(order)}
    commit_ts = to_datetime(commit_us)
    entries = []
    for i, (token, table_name, mod_type) in enumerate(order):
        shown, mods = groups[(token, table_name, mod_type)]
        record = DataChangeRecord(
            commit_timestamp=commit_ts,
            record_sequence=f"{i:08d}",
            server_transaction_id=txid,
            is_last_record_in_transaction_in_partition=last_in_partition[token] == i,
            table_name=table_name,
            column_types=column_types(table_name, shown),
            mods=tuple(mods),
            mod_type=mod_type,
            value_capture_type=TABLES_BY_NAME[table_name].value_capture_type,
            number_of_records_in_transaction=len(order),
            number_of_partitions_in_transaction=len(last_in_partition),
            transaction_tag=tag,
            is_system_transaction=system,
        )
        entries.append(Entry(commit_us, token, record))
    return entries


def generate_second(seed: int, second: int, tps: float, max_keys: int, topology: Topology) -> list[Entry]:
    """Return the records committed in [second, second + 1), in commit order."""
    rng = random.Random((seed << 40) ^ second)
    count = workload.count_in_second(rng, tps)
    offsets = sorted(rng.sample(range(1_000_000), count))
    entries: list[Entry] = []
    for i, offset in enumerate(offsets):
        commit_us = second * 1_000_000 + offset
        txn_rng = random.Random((seed << 48) ^ (second << 20) ^ i)
        if commit_us < topology.epoch_us:
            continue  # before the change stream existed: nothing was captured
        txid = f"{second:010d}{i:06d}"
        entries.extend(_transaction_records(txn_rng, topology, commit_us, txid, max_keys))
    return entries


class Workload(workload.Workload):
    """The records of every second, generated on first use and cached for every query."""

    def __init__(self, seed: int, tps: float, max_keys: int, topology: Topology, max_entries: int = 500_000):
        super().__init__(max_entries)
        self.seed, self.tps, self.max_keys, self.topology = seed, tps, max_keys, topology

    def generate(self, s: int) -> list[Entry]:
        """Return the records committed in [s, s + 1), in commit order."""
        return generate_second(self.seed, s, self.tps, self.max_keys, self.topology)
