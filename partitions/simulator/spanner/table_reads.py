"""What a read of a commit-timestamp table returns, and the row versions a poller must deliver.

``page`` answers one poll query at a read timestamp: the versions visible then, of one
shard or all, ordered by (commit timestamp, key), after a cursor, up to an end and a
limit. ``table_ground_truth`` lists every version committed in a window, which is what
a poller that keeps up (reads each version before its key is written again, i.e.
within ``table_update_after`` seconds) delivers, once each after dedupe.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime

from partitions.simulator.core.clock import to_us

from .config import SimulatorConfig
from .table_history import TableHistory, Version
from .tables import format_ts
from .watched_tables import SHARD, TABLES, WatchedTable, find_table


class _Lowest:
    """A key value below every other, as GoogleSQL sorts NULL (the key parts are never NULL here)."""

    def __lt__(self, other) -> bool:
        return other is not self

    def __gt__(self, other) -> bool:
        return False

    def __repr__(self) -> str:
        return "LOWEST"


LOWEST = _Lowest()
# Sorts after every key: "after (ts, AFTER_ALL_KEYS)" means after every row at ts.
AFTER_ALL_KEYS = (math.inf,)


def build_histories(config: SimulatorConfig) -> dict[str, TableHistory]:
    """Return the table histories of a config whose epoch is resolved, by history name."""
    if config.epoch is None:
        raise ValueError("the config's epoch must be set: use config.resolved() or the server's config")
    histories = {}
    for table in TABLES:
        if table.history not in histories:
            histories[table.history] = TableHistory(
                config.seed,
                table.history,
                config.table_rate,
                config.table_update_after,
                config.table_shards if table.sharded else None,
                to_us(config.epoch),
            )
    return histories


def page(
    history: TableHistory,
    shard: int | None,
    after: tuple,
    end_us: int | None,
    read_us: int,
    limit: int,
) -> list[Version]:
    """Return up to limit versions visible at read_us, ordered after ``after`` = (us, key)."""
    last_us = read_us if end_us is None else min(read_us, end_us)
    found: list[Version] = []
    s = after[0] // 1_000_000
    while s * 1_000_000 <= last_us and len(found) < limit:
        for version in history.second(s).after(shard, after):
            if version.ts_us > last_us:
                return found
            if version.visible_at(read_us, history.update_after_us):
                found.append(version)
                if len(found) == limit:
                    return found
        s += 1
    return found


def versions_between(history: TableHistory, start_us: int, end_us: int) -> Iterator[Version]:
    """Yield every version committed in [start_us, end_us], ordered by (commit timestamp, key)."""
    for s in range(start_us // 1_000_000, end_us // 1_000_000 + 1):
        for version in history.second(s).versions:
            if start_us <= version.ts_us <= end_us:
                yield version


def version_json(table: WatchedTable, version: Version) -> dict:
    """Return a version as the poller's record reads: table, commit timestamp, keys, values, shard."""
    names, row = table.columns, version.row
    values = {names[i]: row[i] for i in range(2, len(names))}
    values[table.timestamp] = format_ts(version.ts_us)
    return {
        "table": table.name,
        "commit_timestamp": format_ts(version.ts_us),
        "keys": {names[0]: row[0], names[1]: row[1]},
        "values": values,
        "shard": row[SHARD] if table.sharded else None,
    }


def table_ground_truth(
    config: SimulatorConfig, database: str, table_name: str, start: datetime, end: datetime
) -> Iterator[dict]:
    """Yield every version of a table committed in [start, end], as ``version_json`` dicts."""
    dialect = config.dialect_of(database)
    if dialect is None:
        raise ValueError(f"database {database!r} is not one the simulator serves")
    table = find_table(dialect, table_name)
    if table is None:
        names = ", ".join(t.name for t in TABLES if t.dialect == dialect)
        raise ValueError(f"table {table_name!r} is not in database {database} (its tables: {names})")
    if end < start:
        raise ValueError("end is before start")
    history = build_histories(config)[table.history]
    for version in versions_between(history, max(to_us(start), to_us(config.epoch)), to_us(end)):
        yield version_json(table, version)
