"""One window read of one change stream partition, in the shape of the source-kind contract.

Pure Python, no Django. It wraps ``ChangeStreamReader.read``: data change records pass
through, a heartbeat becomes PROGRESS, and the child partitions records that end a
partition are gathered into one ``Ended``. A query may return several child partitions
records before it ends (the seed's initial-query example returns two records for three
tokens; all records of one query share a start timestamp), so the read keeps every one
of them and announces the children only when the query is over: keeping just the last
record would lose the children the earlier ones named.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import datetime

from partitions.sources.base import PROGRESS, Ended, NewPartition, PartitionState

from .errors import ChangeRecordError
from .reader import AsyncChangeStreamReader, ChangeStreamReader
from .records import ChildPartitionsRecord, DataChangeRecord, HeartbeatRecord


class ChangeStreamRead:
    """Read one partition from its watermark to ``end``; ``watermark`` follows what was yielded."""

    def __init__(self, reader: ChangeStreamReader, partition: PartitionState, end: datetime | None):
        self.token = partition.token
        self.watermark = partition.watermark
        self.cursor: dict = {}
        self._records = reader.read(partition.token, partition.watermark, end)
        self._ends: list[ChildPartitionsRecord] = []

    def __iter__(self) -> Iterator[object]:
        """Yield data change records, PROGRESS per heartbeat, and Ended once the query ended it."""
        for record in self._records:
            item = self._take(record)
            if item is not None:
                yield item
        if self._ends:
            yield self._ended(self._ends)

    def _take(self, record) -> object | None:
        """Return what a record yields (None: a child partitions record, kept for the end)."""
        kind = type(record)
        if kind is DataChangeRecord:
            if record.commit_timestamp > self.watermark:
                self.watermark = record.commit_timestamp
            return record
        if kind is HeartbeatRecord:
            if record.timestamp > self.watermark:
                self.watermark = record.timestamp
            return PROGRESS
        self._ends.append(record)
        return None

    def _ended(self, records: list[ChildPartitionsRecord]) -> Ended:
        at = records[0].start_timestamp
        if any(r.start_timestamp != at for r in records):
            raise ChangeRecordError(
                "child partitions records of one query have different start timestamps",
                field="start_timestamp",
                partition_token=self.token,
            )
        children: dict[str, NewPartition] = {}
        for record in records:
            for child in record.child_partitions:
                children.setdefault(child.token, NewPartition(child.token, at, child.parent_partition_tokens))
        self.watermark = max(self.watermark, at)
        return Ended(at, tuple(children.values()))

    def close(self) -> None:
        """Cancel the query if it is still open (the generator's cleanup ends the call)."""
        self._records.close()


class AsyncChangeStreamRead(ChangeStreamRead):
    """The same read through the asyncio client: ``async for`` it, ``await aclose()`` it."""

    def __init__(self, reader: AsyncChangeStreamReader, partition: PartitionState, end: datetime | None):
        super().__init__(reader, partition, end)  # type: ignore[arg-type]

    def __iter__(self):
        raise TypeError("an asyncio read: use async for")

    async def __aiter__(self) -> AsyncIterator[object]:
        """Yield what ChangeStreamRead yields, in the same order."""
        async for record in self._records:
            item = self._take(record)
            if item is not None:
                yield item
        if self._ends:
            yield self._ended(self._ends)

    def close(self) -> None:
        raise TypeError("an asyncio read: use await aclose()")

    async def aclose(self) -> None:
        """Cancel the query if it is still open; safe to call twice."""
        await self._records.aclose()
