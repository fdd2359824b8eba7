"""Changes to a simulated table as a pure function of time.

Each whole second has its own random generator keyed by (seed, second): how many
changes, their commit timestamps (unique microseconds), then each change's row, type,
cluster, tiebreaker and mods in commit order. The partition a change lands
in comes from the topology at its commit timestamp.
"""

from __future__ import annotations

import random

from partitions.simulator.core import workload
from partitions.simulator.core.clock import to_datetime
from partitions.simulator.core.topology import Topology
from partitions.sources.bigtable.records import (
    GARBAGE_COLLECTION,
    USER,
    Change,
    DeleteFromColumn,
    DeleteFromFamily,
    DeleteFromRow,
    SetCell,
)

from .config import BigtableSimulatorConfig
from .keys import row_key

FAMILIES = ("cf", "meta", "stats")
QUALIFIERS = (b"name", b"email", b"count", b"payload", b"\x00\x01bin")
CLUSTERS = ("cluster-a", "cluster-b")
_HOUR_US = 3600 * 1_000_000


class Entry:
    """One change in one partition, with its wire encoding once built."""

    __slots__ = ("ts_us", "key", "token", "change", "wire", "twin_follows")

    def __init__(self, ts_us: int, key: int, token: str, change: Change):
        self.ts_us = ts_us
        self.key = key
        self.token = token  # the topology partition that holds the row at ts_us
        self.change = change
        self.wire = None  # (messages before the last, the last message), filled by encode
        self.twin_follows = False  # the next change of the partition shares this commit timestamp


def _value(rng: random.Random, config: BigtableSimulatorConfig) -> bytes:
    """Return a cell value: mostly short, now and then long enough to be chunked."""
    if rng.random() < config.large_value_chance:
        # Long enough to be chunked, sometimes beyond the 64 KiB the landing zone keeps.
        size = rng.randint(config.chunk_bytes + 1, 6 * config.chunk_bytes)
        block = rng.randbytes(64)
        return (block * (size // 64 + 1))[:size]
    return rng.randbytes(rng.randint(0, 48))


def _user_mods(rng: random.Random, config: BigtableSimulatorConfig, commit_us: int) -> list:
    """Return the mods of one user change: writes and deletes of cells, families and rows."""
    mods: list = []
    cell_ts = commit_us // 1000 * 1000  # Bigtable's default: millisecond cell timestamps
    for _ in range(rng.randint(1, config.max_mods)):
        kind = rng.random()
        family, qualifier = rng.choice(FAMILIES), rng.choice(QUALIFIERS)
        if kind < 0.6:
            mods.append(SetCell(family, qualifier, cell_ts, _value(rng, config)))
        elif kind < 0.75:
            start = 0 if rng.random() < 0.5 else cell_ts - _HOUR_US
            mods.append(DeleteFromColumn(family, qualifier, start, 0 if start == 0 else cell_ts))
        elif kind < 0.85:
            mods.append(DeleteFromFamily(family))
        elif config.raw_row_deletes:
            mods.append(DeleteFromRow())
        else:
            # Bigtable reports a row delete as a delete from each family holding data (seed 003);
            # the simulator keeps no cells, so it names every family.
            mods.extend(DeleteFromFamily(f) for f in FAMILIES)
    return mods


def _gc_mods(rng: random.Random, commit_us: int) -> list:
    """Return the mods of a garbage collection: old cells of a column or two deleted."""
    # Garbage collection drops cells past a family's max age: old versions of a column.
    expired_before = commit_us // 1000 * 1000 - 24 * _HOUR_US
    return [
        DeleteFromColumn(rng.choice(FAMILIES), rng.choice(QUALIFIERS), 0, expired_before)
        for _ in range(rng.randint(1, 2))
    ]


def make_change(rng: random.Random, commit_us: int, config: BigtableSimulatorConfig) -> tuple[int, Change]:
    """Return (integer key, change) of a change committed at commit_us, drawn from rng."""
    key = rng.getrandbits(32)
    gc = rng.random() < config.gc_chance
    tiebreaker = rng.getrandbits(32) - 2**31  # an int32
    mods = _gc_mods(rng, commit_us) if gc else _user_mods(rng, config, commit_us)
    change = Change(
        row_key=row_key(key),
        commit_timestamp=to_datetime(commit_us),
        tiebreaker=tiebreaker,
        type=GARBAGE_COLLECTION if gc else USER,
        source_cluster_id="" if gc else rng.choice(CLUSTERS),
        mods=tuple(mods),
    )
    return key, change


def generate_second(
    seed: int, second: int, config: BigtableSimulatorConfig, topology: Topology
) -> list[Entry]:
    """Return the changes committed in [second, second + 1), in commit order.

    One generator per second draws the count, the timestamps and then each change in
    turn (seeding a generator per change would cost more than drawing the change).
    """
    rng = random.Random((seed << 40) ^ second)
    entries = []
    for offset in sorted(rng.sample(range(1_000_000), workload.count_in_second(rng, config.tps))):
        commit_us = second * 1_000_000 + offset
        key, change = make_change(rng, commit_us, config)
        if commit_us < topology.epoch_us:  # before the change stream was enabled nothing was captured
            continue
        token = topology.find(key, commit_us).token
        entries.append(Entry(commit_us, key, token, change))
        if (
            config.shared_timestamp_chance
            and change.type == USER
            and rng.random() < config.shared_timestamp_chance
        ):
            entries[-1].twin_follows = True
            entries.append(Entry(commit_us, key, token, _twin(rng, change)))
    return entries


def _twin(rng: random.Random, change: Change) -> Change:
    """Return the same row's change by the other cluster at the same commit timestamp."""
    other = CLUSTERS[1 - CLUSTERS.index(change.source_cluster_id)]
    tiebreaker = rng.getrandbits(32) - 2**31
    return Change(change.row_key, change.commit_timestamp, tiebreaker, USER, other, change.mods)


class Workload(workload.Workload):
    """The changes of one table, second by second, generated on first use and cached for every read."""

    def __init__(
        self, seed: int, config: BigtableSimulatorConfig, topology: Topology, max_entries: int = 400_000
    ):
        super().__init__(max_entries)
        self.seed, self.config, self.topology = seed, config, topology

    def generate(self, s: int) -> list[Entry]:
        """Return the changes committed in [s, s + 1), in commit order."""
        return generate_second(self.seed, s, self.config, self.topology)
