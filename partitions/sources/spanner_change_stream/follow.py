"""Follow every partition of a change stream through its splits and merges.

The seed's rule: a child partition's records may be processed only after the records
of ALL its parents, so a child is queried once every parent's query has ended, and a
merged child (announced by each of its parents) is queried exactly once. This is the
engine of `tail_change_stream`; the Celery pipeline applies the same rule with its
state in the database instead of in memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from .errors import RetryableSpannerError
from .records import ChildPartitionsRecord, DataChangeRecord, HeartbeatRecord

OnData = Callable[[DataChangeRecord, str], None]


@dataclass
class FollowSummary:
    """What a follow run saw: partitions, lineage events, records, time taken."""

    partitions: int = 0
    splits: int = 0
    merges: int = 0
    data_records: int = 0
    heartbeats: int = 0
    retries: int = 0
    seconds: float = 0.0


@dataclass
class _Partition:
    token: str
    start: datetime
    parents: frozenset[str]
    children: set[str] = field(default_factory=set)
    submitted: bool = False
    finished: bool = False


class _Resume:
    """Where a partition's query resumes after a retryable error, skipping replays."""

    def __init__(self, start: datetime):
        self.start = start
        self.seen_at_start: set[tuple] = set()

    def accept(self, record: DataChangeRecord) -> bool:
        """Return True if the record was not delivered before a retry."""
        key = record.order_key
        if record.commit_timestamp < self.start or key in self.seen_at_start:
            return False
        if record.commit_timestamp > self.start:
            self.start = record.commit_timestamp
            self.seen_at_start = set()
        self.seen_at_start.add(key)
        return True


class PartitionFollower:
    """Read [start, end] of a change stream, every partition, in parent-before-child order."""

    def __init__(
        self,
        reader,
        start: datetime,
        end: datetime | None,
        on_data: OnData,
        *,
        parallelism: int = 8,
        max_retries: int = 5,
    ):
        self._reader = reader
        self._start = start
        self._end = end
        self._on_data = on_data
        self._max_retries = max_retries
        self._pool = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="partition")
        self._lock = threading.Lock()
        self._partitions: dict[str, _Partition] = {}
        self._pending = 0
        self._done = threading.Event()
        self._error: BaseException | None = None
        self.summary = FollowSummary()

    def run(self) -> FollowSummary:
        """Follow every partition until all have ended; raise the first fatal error."""
        began = time.monotonic()
        try:
            roots = self._initial_partitions()
            with self._lock:
                for token, start in roots:
                    self._register(token, start, frozenset())
                ready = [p for p in self._partitions.values() if not p.submitted]
                for partition in ready:
                    self._submit(partition)
                if self._pending == 0:
                    self._done.set()
            while not self._done.wait(0.2):
                pass
        finally:
            self._pool.shutdown(wait=self._error is None, cancel_futures=True)
            self.summary.seconds = time.monotonic() - began
        if self._error is not None:
            raise self._error
        return self.summary

    def _initial_partitions(self) -> list[tuple[str, datetime]]:
        roots = []
        for record in self._reader.read(None, self._start, self._end):
            if isinstance(record, ChildPartitionsRecord):
                roots.extend((child.token, record.start_timestamp) for child in record.child_partitions)
        return roots

    def _register(self, token: str, start: datetime, parents: frozenset[str]) -> _Partition:
        partition = self._partitions.get(token)
        if partition is None:
            partition = self._partitions[token] = _Partition(token, start, parents)
            self.summary.partitions += 1
            if len(parents) > 1:
                self.summary.merges += 1
        return partition

    def _submit(self, partition: _Partition) -> None:
        partition.submitted = True
        self._pending += 1
        future = self._pool.submit(self._read_partition, partition)
        future.add_done_callback(self._on_done)

    def _on_done(self, future: Future) -> None:
        error = future.exception()
        if error is not None:
            with self._lock:
                if self._error is None:
                    self._error = error
            self._done.set()

    def _read_partition(self, partition: _Partition) -> None:
        resume = _Resume(partition.start)
        attempt = 0
        while True:
            try:
                self._query(partition, resume)
                break
            except RetryableSpannerError:
                attempt += 1
                if attempt > self._max_retries or self._error is not None:
                    raise
                with self._lock:
                    self.summary.retries += 1
                time.sleep(min(0.1 * 2**attempt, 5.0))
        self._finish(partition)

    def _query(self, partition: _Partition, resume: _Resume) -> None:
        for record in self._reader.read(partition.token, resume.start, self._end):
            if self._error is not None:
                return
            if isinstance(record, DataChangeRecord):
                if resume.accept(record):
                    self._deliver(record, partition.token)
            elif isinstance(record, HeartbeatRecord):
                with self._lock:
                    self.summary.heartbeats += 1
            else:
                self._add_children(partition, record)

    def _deliver(self, record: DataChangeRecord, token: str) -> None:
        with self._lock:
            self.summary.data_records += 1
            self._on_data(record, token)

    def _add_children(self, partition: _Partition, record: ChildPartitionsRecord) -> None:
        with self._lock:
            for child in record.child_partitions:
                parents = frozenset(child.parent_partition_tokens) or frozenset({partition.token})
                self._register(child.token, record.start_timestamp, parents)
                partition.children.add(child.token)

    def _finish(self, partition: _Partition) -> None:
        """Mark the partition ended and start each child whose parents have all ended."""
        with self._lock:
            partition.finished = True
            if len(partition.children) > 1:
                self.summary.splits += 1
            for token in sorted(partition.children):
                child = self._partitions[token]
                if not child.submitted and all(self._is_finished(p) for p in child.parents):
                    self._submit(child)
            self._pending -= 1
            if self._pending == 0:
                self._done.set()

    def _is_finished(self, token: str) -> bool:
        parent = self._partitions.get(token)
        return parent is not None and parent.finished
