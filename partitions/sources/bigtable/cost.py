"""What a Bigtable change stream costs, from the fourth seed document: each figure with its source.

Pure Python. Keeping change streams on costs about 10 % more CPU and reading them 20-30 %;
the change data kept is about 1.5 times a day's writes per day of retention (1 to 7 days),
billed as Bigtable storage (stored per cluster). Prices are us-central1 list prices.
"""

from __future__ import annotations

from partitions.sources import costs
from partitions.sources.kinds import Assumption

SEED = "Bigtable change streams overview (seed 003)"


RETENTION = "the table's change stream retention (this stream's setting)"
OVERHEAD = f"{SEED}: the change data kept is about 1.5x the writes"
STORAGE = f"Bigtable SSD storage, us-central1; {costs.LIST_PRICE}"
NODE = f"Bigtable node, us-central1; {costs.LIST_PRICE}"
ENABLED = f"{SEED}: about +10 % CPU with change streams on"
READ = f"{SEED}: +20-30 % CPU while they are read"


def cost_model(retention_days: float) -> tuple[Assumption, ...]:
    """Return the Bigtable price model for a table whose change stream keeps `retention_days`."""
    return (
        Assumption("retention_days", retention_days, "days", RETENTION),
        Assumption("nodes", 1.0, "nodes", "the cluster's nodes: set yours (CDC_PRICE_NODES)"),
        Assumption("overhead_factor", 1.5, "x a day's writes", OVERHEAD),
        Assumption("days_per_month", 30.42, "days", "billing month length that turns GiB-months into days"),
        Assumption("storage_usd_per_gib_month", 0.17, "USD per GiB-month", STORAGE),
        Assumption("edition", "", "", "Bigtable has no editions: the node-hour price below applies"),
        Assumption("node_hour_usd", 0.65, "USD per node-hour", NODE),
        Assumption("cpu_share_enabled", 0.10, "share of CPU", ENABLED),
        Assumption("cpu_share_read_low", 0.20, "share of CPU", READ),
        Assumption("cpu_share_read_high", 0.30, "share of CPU", READ),
    )


def reading_assumptions(partitions: float, window_seconds: int, heartbeat_ms: int) -> tuple[Assumption, ...]:
    """Return the ReadChangeStream calls a day (one per partition window) and an idle stream's heartbeats."""
    return (
        costs.per_day(
            "read_change_stream_calls_per_day", partitions * costs.DAY_SECONDS / window_seconds, "calls",
            f"partitions x 86,400 / window of {window_seconds} s",
        ),
        costs.per_day(
            "idle_heartbeats_per_day", partitions * costs.DAY_SECONDS * 1000 / heartbeat_ms, "heartbeats",
            f"partitions x 86,400 / heartbeat of {heartbeat_ms / 1000:g} s on an idle stream",
        ),
    )  # fmt: skip
