"""What the Bigtable reader tests share: the simulator's config, read options, sources, windows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from partitions.simulator.bigtable.config import BigtableSimulatorConfig
from partitions.sources.base import ReadOptions
from partitions.sources.bigtable.client import data_client
from partitions.sources.bigtable.kind import BigtableSource

# A split and a merge every 3 s over an hour of history: a window of half a minute holds
# several of both. Small chunks and messages, so values and changes span messages.
BIGTABLE_CONFIG = BigtableSimulatorConfig(
    seed=11,
    roots=4,
    split_every=3.0,
    merge_every=3.0,
    tps=150.0,
    retention=3600.0,
    chunk_bytes=2048,
    message_bytes=4096,
    large_value_chance=0.05,
    gc_chance=0.05,
)
OPTIONS = ReadOptions(heartbeat_ms=500)


def source_for(simulator, table: str = "events", app_profile: str = "default") -> BigtableSource:
    """Return a Source reading a simulator through the process's client for its endpoint."""
    return BigtableSource(
        data_client(simulator.emulator_host), "test-project", "test-instance", table, app_profile
    )


def past_window(seconds: float, ago: float = 120.0) -> tuple[datetime, datetime]:
    """Return [start, end] of a window that ended ``ago`` seconds ago (a backlog, served at once)."""
    end = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=ago)
    return end - timedelta(seconds=seconds), end


def identity(change):
    """Return a change without what depends on how it was read (token, watermark)."""
    return replace(change, token="", estimated_low_watermark=None)
