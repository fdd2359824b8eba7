"""Drive the commit-timestamp kind as the pipeline would: roots, then reads window after window."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from partitions.sources.base import Ended, PartitionState, ReadOptions
from partitions.sources.spanner_commit_timestamp.kind import KIND
from partitions.sources.spanner_commit_timestamp.records import TableRowRecord, record_json

# (database, table, timestamp column, key columns, shard column, shards, index) per dialect and layout.
TABLES = {
    ("googlesql", "unsharded"): ("demo-db", "Events", "LastModified", "TenantId,EventId", "", "", ""),
    ("googlesql", "sharded"): (
        "demo-db", "ShardedEvents", "LastModified", "TenantId,EventId", "ShardId", "0-18",
        "ShardedEventsByShardLastModified",
    ),
    ("postgresql", "unsharded"): ("demo-pg", "events", "last_modified", "tenant_id,event_id", "", "", ""),
    ("postgresql", "sharded"): (
        "demo-pg", "sharded_events", "last_modified", "tenant_id,event_id", "shard_id", "0-18",
        "sharded_events_by_shard_last_modified",
    ),
}  # fmt: skip


def settings_for(server, dialect: str, layout: str, **overrides) -> dict:
    """Return cleaned settings for one of the simulator's tables."""
    database, table, ts, keys, shard_column, shards, index = TABLES[(dialect, layout)]
    values = dict(
        project="p", instance="i", database=database, dialect=dialect, table=table, timestamp_column=ts,
        key_columns=keys, shard_column=shard_column, shards=shards, index=index,
        emulator_host=server.emulator_host,
    )  # fmt: skip
    values.update(overrides)
    return KIND.clean(values)


@dataclass
class ReadLog:
    """One read as the test saw it: items in order, and the read's state after it."""

    token: str
    items: list
    watermark: datetime
    cursor: dict
    read_timestamp: datetime | None
    capped: bool
    delay: float


@dataclass
class Run:
    """Everything a run of polls delivered."""

    records: list[tuple[str, TableRowRecord]] = field(default_factory=list)
    reads: list[ReadLog] = field(default_factory=list)


def poll_to_end(
    source, start: datetime, end: datetime, interval_ms: int = 1000, deadline_s: float = 30
) -> Run:
    """Read every partition window after window until each has ended; honour next_read_delay."""
    options = ReadOptions(heartbeat_ms=interval_ms, timeout=30)
    states = {p.token: PartitionState(p.token, p.start, p.start, dict(p.cursor), p.label)
              for p in source.roots(start, end, options)}  # fmt: skip
    due = dict.fromkeys(states, 0.0)
    run, stop_at = Run(), time.monotonic() + deadline_s
    while due:
        token = min(due, key=due.get)
        time.sleep(max(0.0, due[token] - time.monotonic()))  # the poll interval, as the pipeline keeps it
        assert time.monotonic() < stop_at, f"partitions not ended in time: {sorted(due)}"
        state = states[token]
        read = source.read(state, end, options)
        items = list(read)
        run.records += [(token, item) for item in items if isinstance(item, TableRowRecord)]
        delay = source.next_read_delay(read)
        run.reads.append(
            ReadLog(token, items, read.watermark, read.cursor, read.read_timestamp, read.capped, delay)
        )
        states[token] = PartitionState(token, state.start, read.watermark, read.cursor, state.label)
        if items and isinstance(items[-1], Ended):
            del due[token]
        else:
            due[token] = time.monotonic() + delay
    return run


def as_json(records) -> list[dict]:
    """Return records as ground-truth-shaped dicts, sorted by (commit timestamp, key)."""
    rows = [record_json(r) for _, r in records]
    return sorted(rows, key=lambda r: (r["commit_timestamp"], sorted(r["keys"].items())))


def sort_truth(truth: list[dict]) -> list[dict]:
    """Return ground truth lines in the order ``as_json`` sorts records."""
    return sorted(truth, key=lambda r: (r["commit_timestamp"], sorted(r["keys"].items())))
