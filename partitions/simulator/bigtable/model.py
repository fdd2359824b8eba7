"""One simulated table: its partitions over time (topology) and its changes (workload).

Each table gets its own seed, derived from the config's seed and the table's name, so
two tables of one server differ while staying reproducible.
"""

from __future__ import annotations

import zlib

from partitions.simulator.core.topology import Partition

from .config import BigtableSimulatorConfig
from .encode import change_wire
from .workload import Entry, Workload


class TableModel:
    """The topology and workload of one table with a change stream."""

    def __init__(self, name: str, config: BigtableSimulatorConfig):
        self.name = name
        self.config = config
        self.seed = config.seed ^ (zlib.crc32(name.encode()) << 8)
        self.topology = config.topology(self.seed)  # ValueError unless the config is resolved
        self.epoch_us = self.topology.epoch_us
        self.workload = Workload(self.seed, config, self.topology)
        self.stagger_us = int(config.merge_stagger * 1_000_000)

    def exact(self, lo: int, hi: int, t_us: int) -> Partition | None:
        """Return the partition with exactly the keys [lo, hi) a read from t_us serves, or None.

        A merge parent that closes late is still served after the merge, until it closes.
        """
        for partition in self.topology.live_at(t_us):
            if partition.lo == lo and partition.hi == hi:
                return partition
        if self.stagger_us:
            for partition in self.topology.live_at(max(self.epoch_us, t_us - self.stagger_us)):
                if partition.lo == lo and partition.hi == hi and t_us < (self.close_us(partition) or t_us):
                    return partition
        return None

    def close_us(self, partition: Partition) -> int | None:
        """Return when a read of the partition closes: its end, later for the right parent of a
        merge when ``merge_stagger`` is set (a real server's parents close at different times)."""
        end = partition.end_us
        if end is None or not self.stagger_us or len(partition.children) != 1:
            return end
        (child,) = partition.children
        return end + self.stagger_us if partition.hi == child.hi and partition.lo != child.lo else end

    def overlapping(self, lo: int, hi: int, t_us: int) -> list[Partition]:
        """Return the partitions live at t_us that share keys with [lo, hi), by key."""
        return [p for p in self.topology.live_at(t_us) if p.lo < hi and lo < p.hi]

    def wire(self, entry: Entry) -> tuple[list[bytes], bytes]:
        """Return a change's cached encoding (built on first use; equal builds may race harmlessly)."""
        wire = entry.wire
        if wire is None:
            wire = entry.wire = change_wire(entry.change, entry.ts_us, self.config)
        return wire
