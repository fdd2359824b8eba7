"""Every data change record a correct reader of a window must deliver, for comparison.

A reader that starts with the initial query at ``start`` and follows every child
partition with ``end`` as its end timestamp sees each record whose commit timestamp
lies in [start, end] exactly once, in the partition that held its key at that moment.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from partitions.simulator.core.clock import to_us
from partitions.sources.spanner_change_stream.jsonl import record_to_json_line
from partitions.sources.spanner_change_stream.records import DataChangeRecord

from .config import SimulatorConfig
from .workload import Workload


def build_workload(config: SimulatorConfig) -> Workload:
    """Return the workload (and its topology) of a config whose epoch is resolved."""
    return Workload(config.seed, config.tps, config.max_keys, config.topology(), max_entries=50_000)


def ground_truth(
    config: SimulatorConfig, database: str, start: datetime, end: datetime
) -> Iterator[tuple[str, DataChangeRecord]]:
    """Yield (partition_token, record) for [start, end], sorted like the JSON lines."""
    if config.dialect_of(database) is None:
        raise ValueError(f"database {database!r} is not one the simulator serves")
    if end < start:
        raise ValueError("end is before start")
    workload = build_workload(config)
    start_us, end_us = max(to_us(start), to_us(config.epoch)), to_us(end)
    for second in range(start_us // 1_000_000, end_us // 1_000_000 + 1):
        entries = [e for e in workload.second(second).entries if start_us <= e.ts_us <= end_us]
        entries.sort(
            key=lambda e: (e.ts_us, e.record.server_transaction_id, e.record.record_sequence, e.token)
        )
        for entry in entries:
            yield entry.token, entry.record


def ground_truth_lines(
    config: SimulatorConfig, database: str, start: datetime, end: datetime
) -> Iterator[str]:
    """Yield the ground truth as JSON lines (no newline), the tail tool's format."""
    for token, record in ground_truth(config, database, start, end):
        yield record_to_json_line(record, token)
