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

    def exact(self, lo: int, hi: int, t_us: int) -> Partition | None:
        """Return the partition with exactly the keys [lo, hi) live at t_us, or None."""
        for partition in self.topology.live_at(t_us):
            if partition.lo == lo and partition.hi == hi:
                return partition
        return None

    def overlapping(self, lo: int, hi: int, t_us: int) -> list[Partition]:
        """Return the partitions live at t_us that share keys with [lo, hi), by key."""
        return [p for p in self.topology.live_at(t_us) if p.lo < hi and lo < p.hi]

    def wire(self, entry: Entry) -> tuple[list[bytes], bytes]:
        """Return a change's cached encoding (built on first use; equal builds may race harmlessly)."""
        wire = entry.wire
        if wire is None:
            wire = entry.wire = change_wire(entry.change, entry.ts_us, self.config)
        return wire
