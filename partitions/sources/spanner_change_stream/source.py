"""A connected Spanner change stream: the kind's Source (pure Python, no Django).

Partition tokens are Spanner's own. The roots come from the initial query (token
NULL); every later partition is announced by its parents' child partitions records,
and is read only once every parent it names has finished (the seed's rule).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from partitions.sources.base import NewPartition, PartitionState, ReadOptions

from . import reader as client
from .landing import build_table
from .read import AsyncChangeStreamRead, ChangeStreamRead
from .records import ChildPartitionsRecord

# The initial query returns the roots' child partitions records at its start at once; its
# end only has to bound it (an open-ended one would wait for the partitions to end).
ROOTS_QUERY_SPAN = timedelta(seconds=60)


class ChangeStreamSource:
    """Read one change stream of one database (the handle is shared per database and endpoint)."""

    def __init__(self, database, settings: dict[str, Any]):
        self.database = database
        self.stream_name = settings["change_stream"]
        self._dialect = settings.get("dialect") or None
        self._where = tuple(
            settings.get(name) or None for name in ("project", "instance", "database", "emulator_host")
        )

    @property
    def dialect(self) -> str:
        """Return the database's dialect: the setting's, or asked of the database once."""
        if self._dialect is None:
            self._dialect = client.detect_dialect(self.database)
        return self._dialect

    def _reader(self, options: ReadOptions) -> client.ChangeStreamReader:
        return client.ChangeStreamReader(
            self.database, self.stream_name, self.dialect, options.heartbeat_ms, timeout=options.timeout
        )

    def roots(self, at: datetime, end: datetime | None, options: ReadOptions) -> list[NewPartition]:
        """Run the initial query (token NULL) at `at` and return the root partitions it names."""
        until = min(at + ROOTS_QUERY_SPAN, end) if end is not None else at + ROOTS_QUERY_SPAN
        roots: list[NewPartition] = []
        for record in self._reader(options).read(None, at, until):
            if isinstance(record, ChildPartitionsRecord):
                roots += [NewPartition(child.token, at) for child in record.child_partitions]
        return roots

    def read(self, partition: PartitionState, end: datetime | None, options: ReadOptions) -> ChangeStreamRead:
        """Return a read of the partition from its watermark to `end` (its window)."""
        return ChangeStreamRead(self._reader(options), partition, end)

    async def read_async(
        self, partition: PartitionState, end: datetime | None, options: ReadOptions
    ) -> AsyncChangeStreamRead:
        """Return the same read on the running event loop (the asyncio client's): a live read, multiplexed."""
        database = await client.connect_async(*self._where)
        dialect = self.dialect if self._dialect is not None else await asyncio.to_thread(lambda: self.dialect)
        reader = client.AsyncChangeStreamReader(
            database, self.stream_name, dialect, options.heartbeat_ms, timeout=options.timeout
        )
        return AsyncChangeStreamRead(reader, partition, end)

    def landing_table(self, stream_name: str, token: str, records: list, read_at: datetime):
        """Return the landing rows (one per mod) of data change records."""
        return build_table(stream_name, token, records, read_at)

    def next_read_delay(self, read: ChangeStreamRead) -> float:
        """Return 0: the next window's query starts at once (a live one waits for records itself)."""
        return 0.0
