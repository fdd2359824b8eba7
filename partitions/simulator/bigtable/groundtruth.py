"""Every change a correct reader of a window must deliver, for comparison.

A reader that starts from the initial partitions at ``start`` and follows every new
partition with ``end`` as its end time sees each change whose commit timestamp lies in
[start, end] exactly once, in the partition that held its row at that moment.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import datetime

from partitions.simulator.core.clock import to_us
from partitions.sources.bigtable.landing import mod_keys, mod_new_values
from partitions.sources.bigtable.ranges import key_text
from partitions.sources.bigtable.records import Change

from .config import BigtableSimulatorConfig
from .model import TableModel


def ground_truth(
    config: BigtableSimulatorConfig, table: str, start: datetime, end: datetime
) -> Iterator[Change]:
    """Yield every change to the table committed in [start, end], in commit order (no token or watermark)."""
    if table not in config.tables:
        raise ValueError(f"table {table!r} is not one with a change stream the simulator serves")
    if end < start:
        raise ValueError("end is before start")
    model = TableModel(table, config.resolved())
    start_us, end_us = max(to_us(start), model.epoch_us), to_us(end)
    for second in range(start_us // 1_000_000, end_us // 1_000_000 + 1):
        for entry in model.workload.second(second).entries:
            if start_us <= entry.ts_us <= end_us:
                yield entry.change


def change_to_json(change: Change) -> dict:
    """Return a change as a JSON object: the landing zone's texts for keys and values, plus the rest."""
    row_key = key_text(change.row_key)
    return {
        "commit_timestamp": change.commit_timestamp.isoformat(),
        "row_key": row_key,
        "row_key_base64": base64.b64encode(change.row_key).decode(),
        "tiebreaker": change.tiebreaker,
        "type": change.type,
        "source_cluster_id": change.source_cluster_id,
        "mods": [
            {"mod_type": mod.mod_type, "keys": mod_keys(row_key, mod), "new_values": mod_new_values(mod)}
            for mod in change.mods
        ],
    }


def ground_truth_lines(
    config: BigtableSimulatorConfig, table: str, start: datetime, end: datetime
) -> Iterator[str]:
    """Yield the ground truth as JSON lines (no newline), keys sorted."""
    for change in ground_truth(config, table, start, end):
        yield json.dumps(change_to_json(change), sort_keys=True, separators=(",", ":"))
