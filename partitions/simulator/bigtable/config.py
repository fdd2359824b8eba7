"""The Bigtable simulator's settings as one dataclass, plus parsers for their command-line forms.

Argparse-free so that tests, benchmarks and the management command build the same
configuration; every parser raises ValueError with a message fit for one stderr line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from partitions.simulator.spanner.config import Fault
from partitions.simulator.spanner.config import parse_fault as parse_any_fault

FAULT_KINDS = ("unavailable", "slow")
SINGLE_CLUSTER_PROFILES = ("default", "cdc")
MULTI_CLUSTER_PROFILES = ("multi",)


@dataclass(frozen=True)
class BigtableSimulatorConfig:
    """Everything that determines what the simulator serves.

    Changes and partitions are a pure function of these fields (epoch included), so two
    servers, or a server and ``ground_truth``, with equal configs agree exactly.
    ``tables`` have a change stream; ``plain_tables`` exist without one. ``tps`` is
    changes per second per table. Values longer than ``chunk_bytes`` are sent in chunks,
    and a change's mods are spread over messages of about ``message_bytes``.
    """

    seed: int = 1
    tables: tuple[str, ...] = ("events",)
    plain_tables: tuple[str, ...] = ("plain",)
    roots: int = 4
    split_every: float = 60.0
    merge_every: float = 60.0
    tps: float = 20.0
    max_mods: int = 4
    large_value_chance: float = 0.02
    gc_chance: float = 0.05
    chunk_bytes: int = 16 * 1024
    message_bytes: int = 32 * 1024
    raw_row_deletes: bool = False  # send DeleteFromRow as is, not as one DeleteFromFamily per family
    retention: float = 86400.0
    epoch: datetime | None = None
    faults: tuple[Fault, ...] = ()
    max_workers: int = 64

    def __post_init__(self):
        if self.roots < 1:
            raise ValueError(f"roots must be at least 1, got {self.roots}")
        if self.split_every <= 0 or self.merge_every <= 0:
            raise ValueError("split_every and merge_every must be positive")
        if self.tps < 0:
            raise ValueError(f"tps must not be negative, got {self.tps}")
        if not 1 <= self.max_mods <= 32:
            raise ValueError(f"max_mods must be between 1 and 32, got {self.max_mods}")
        if self.chunk_bytes < 16 or self.message_bytes < self.chunk_bytes:
            raise ValueError("chunk_bytes must be at least 16 and message_bytes at least chunk_bytes")
        # Bigtable keeps 1 to 7 days; shorter is allowed so tests can reach the edge quickly.
        if not 60 <= self.retention <= 7 * 86400:
            raise ValueError(f"retention must be between 60 s and 7 days, got {self.retention} s")
        if self.epoch is not None and self.epoch.tzinfo is None:
            raise ValueError("epoch must be timezone-aware")
        if not self.tables:
            raise ValueError("at least one table with a change stream is needed")
        if set(self.tables) & set(self.plain_tables):
            raise ValueError("a table cannot both have and lack a change stream")

    def resolved(self, now: datetime | None = None) -> BigtableSimulatorConfig:
        """Return a copy whose epoch is set: now - retention, floored to the minute."""
        if self.epoch is not None:
            return self
        now = now or datetime.now(UTC)
        return replace(self, epoch=(now - timedelta(seconds=self.retention)).replace(second=0, microsecond=0))

    def fault(self, kind: str) -> float:
        """Return the summed value of the faults of one kind (0 when none)."""
        return sum(f.value for f in self.faults if f.kind == kind)


def parse_fault(text: str) -> Fault:
    """Return a Fault for 'unavailable:P' (a probability per message) or 'slow:MS'."""
    return parse_any_fault(text, FAULT_KINDS)
