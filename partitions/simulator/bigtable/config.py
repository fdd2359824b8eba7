"""The Bigtable simulator's settings as one dataclass, plus the parser of its faults.

Argparse-free so that tests, benchmarks and the management command build the same
configuration; every parser raises ValueError with a message fit for one stderr line.
The settings and parsers every simulator shares are in ``core/config.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from partitions.simulator.core import config as core
from partitions.simulator.core.config import ChangeStreamConfig, Fault

FAULT_KINDS = ("unavailable", "slow")
SINGLE_CLUSTER_PROFILES = ("default", "cdc")
MULTI_CLUSTER_PROFILES = ("multi",)


@dataclass(frozen=True)
class BigtableSimulatorConfig(ChangeStreamConfig):
    """Everything that determines what the Bigtable simulator serves (the shared fields: ChangeStreamConfig).

    ``tables`` have a change stream; ``plain_tables`` exist without one. ``tps`` is
    changes per second per table. Values longer than ``chunk_bytes`` are sent in chunks,
    and a change's mods are spread over messages of about ``message_bytes``.
    """

    tables: tuple[str, ...] = ("events",)
    plain_tables: tuple[str, ...] = ("plain",)
    max_mods: int = 4
    large_value_chance: float = 0.02
    gc_chance: float = 0.05
    chunk_bytes: int = 16 * 1024
    message_bytes: int = 32 * 1024
    raw_row_deletes: bool = False  # send DeleteFromRow as is, not as one DeleteFromFamily per family
    # Name the merged child's whole range in each closing parent's token, as the real
    # server has been seen to (Beam intersects it with the parent's range; so must we).
    wide_merge_tokens: bool = False
    # The chance that a user change has a twin: the same row written by the other cluster
    # at the same commit timestamp (another tiebreaker). The low watermark sent with the
    # first then claims that timestamp, as an estimate may; the token does not pass it.
    shared_timestamp_chance: float = 0.0
    # Seconds after a merge that its right parent closes (0: both at once). Real parents
    # close at different times; until then that parent's rows are still read through it.
    merge_stagger: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        if not 1 <= self.max_mods <= 32:
            raise ValueError(f"max_mods must be between 1 and 32, got {self.max_mods}")
        if not 0 <= self.shared_timestamp_chance <= 1:
            raise ValueError(
                f"shared_timestamp_chance must be from 0 to 1, got {self.shared_timestamp_chance}"
            )
        if not 0 <= self.merge_stagger < min(self.split_every, self.merge_every) / 2:
            raise ValueError("merge_stagger must be from 0 to under half the time between splits or merges")
        if self.chunk_bytes < 16 or self.message_bytes < self.chunk_bytes:
            raise ValueError("chunk_bytes must be at least 16 and message_bytes at least chunk_bytes")
        # Bigtable keeps 1 to 7 days; shorter is allowed so tests can reach the edge quickly.
        if not 60 <= self.retention <= 7 * 86400:
            raise ValueError(f"retention must be between 60 s and 7 days, got {self.retention} s")
        if not self.tables:
            raise ValueError("at least one table with a change stream is needed")
        if set(self.tables) & set(self.plain_tables):
            raise ValueError("a table cannot both have and lack a change stream")


def parse_fault(text: str) -> Fault:
    """Return a Fault for 'unavailable:P' (a probability per message) or 'slow:MS'."""
    return core.parse_fault(text, FAULT_KINDS)
