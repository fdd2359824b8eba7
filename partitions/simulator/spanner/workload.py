"""Transactions and the data change records they leave, as a pure function of time.

Each whole second s has its own random generator keyed by (seed, s): the number of
transactions, their commit timestamps, keys, tables and values follow from it alone.
The partition a write lands in comes from the topology at its commit timestamp, so a
transaction whose keys fall in several partitions yields records in each of them.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from datetime import UTC, datetime, timedelta

from partitions.simulator.core.topology import Topology
from partitions.sources.spanner_change_stream.records import DataChangeRecord

from .tables import TABLES, TABLES_BY_NAME, column_types, make_mod

_UNIX = datetime(1970, 1, 1, tzinfo=UTC)
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


def to_datetime(us: int) -> datetime:
    """Return the aware UTC datetime for microseconds since 1970."""
    return _UNIX + timedelta(microseconds=us)


def to_us(value: datetime) -> int:
    """Return microseconds since 1970 for an aware datetime."""
    delta = value - _UNIX
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _transaction_count(rng: random.Random, tps: float) -> int:
    if tps <= 0:
        return 0
    return min(999_999, max(0, round(rng.gauss(tps, (tps**0.5) / 2))))


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
    count = _transaction_count(rng, tps)
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


class Second:
    """The records of one second, all together and by partition token."""

    __slots__ = ("entries", "by_token")

    def __init__(self, entries: list[Entry]):
        self.entries = entries
        self.by_token: dict[str, list[Entry]] = {}
        for entry in entries:
            self.by_token.setdefault(entry.token, []).append(entry)


class Workload:
    """Generated seconds behind a bounded LRU cache, shared by every query."""

    def __init__(self, seed: int, tps: float, max_keys: int, topology: Topology, max_entries: int = 500_000):
        self.seed, self.tps, self.max_keys, self.topology = seed, tps, max_keys, topology
        self._max_entries = max_entries
        self._cache: OrderedDict[int, Second] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def second(self, s: int) -> Second:
        """Return the records of second s, generating them on first use."""
        with self._lock:
            found = self._cache.get(s)
            if found is not None:
                self._cache.move_to_end(s)
                return found
        # Generated outside the lock: two threads may both build it, identically.
        built = Second(generate_second(self.seed, s, self.tps, self.max_keys, self.topology))
        with self._lock:
            found = self._cache.get(s)
            if found is not None:
                return found
            self._cache[s] = built
            self._size += len(built.entries)
            while self._size > self._max_entries and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._size -= len(old.entries)
        return built
