"""Play the pipeline's part for Bigtable: roots, windows of reads, children, readiness.

What the Celery pipeline will do with the source kind, in memory: store each partition's
state, read ready partitions in parallel, checkpoint watermark and cursor after every
item, cut reads short now and then and resume them from the stored cursor, register the
children of an Ended (a new generation when a range recurs, else merging the cursors of
a merged child), and start a child once ``child_ready`` says its tokens cover it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime

from partitions.sources.base import PROGRESS, Ended, PartitionState, ReadOptions
from partitions.sources.bigtable.cursor import place_child, split_generation
from partitions.sources.bigtable.kind import KIND


@dataclass
class Followed:
    """One partition as the double stores it."""

    state: PartitionState
    status: str = "waiting"  # then scheduled, finished
    changes: list = field(default_factory=list)
    reads: int = 0


class Follower:
    """Read [start, end] of a table's change stream, every partition, as the pipeline would."""

    def __init__(
        self, source, start: datetime, end: datetime, options: ReadOptions, *, window_items=0, workers=6
    ):
        self.source, self.start, self.end, self.options = source, start, end, options
        self.window_items = window_items  # cut each read after this many items (0: never)
        self.partitions: dict[str, Followed] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers)
        self._pending = 0
        self._done = threading.Event()
        self._errors: list[BaseException] = []

    def run(self, timeout: float = 60.0) -> dict[str, Followed]:
        """Follow every partition until all finished; raise the first error."""
        roots = self.source.roots(self.start, self.end, self.options)
        with self._lock:
            for root in roots:
                self._register(root)
            self._schedule_ready()
        finished = self._done.wait(timeout)
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._errors:
            raise self._errors[0]
        assert finished, "the follow did not finish in time"
        return self.partitions

    def changes(self) -> list:
        """Return every change delivered, in no particular order."""
        return [c for p in self.partitions.values() for c in p.changes]

    def _register(self, child) -> None:
        known = {
            t: p.state.cursor for t, p in self.partitions.items() if split_generation(t)[0] == child.token
        }
        token, merge = place_child(child, known)
        if merge:
            stored = self.partitions[token]
            cursor = KIND.merge_cursor(stored.state.cursor, child.cursor)
            start = min(stored.state.start, child.start)
            stored.state = replace(stored.state, cursor=cursor, start=start, watermark=start)
            return
        state = PartitionState(token, child.start, child.start, child.cursor, child.label)
        self.partitions[token] = Followed(state)

    def _schedule_ready(self) -> None:
        for followed in self.partitions.values():
            if followed.status == "waiting" and KIND.child_ready(followed.state, False):
                followed.status = "scheduled"
                self._pending += 1
                self._pool.submit(self._read, followed)

    def _read(self, followed: Followed) -> None:
        try:
            ended = self._read_windows(followed)
            with self._lock:
                followed.status = "finished"
                for child in ended.children if ended else ():
                    self._register(child)
                self._schedule_ready()
                self._pending -= 1
                if self._pending == 0:
                    self._done.set()
        except BaseException as error:  # any failure ends the follow
            self._errors.append(error)
            self._done.set()

    def _read_windows(self, followed: Followed) -> Ended | None:
        """Read windows until the partition ends or its window is complete; return its Ended."""
        while True:
            read = self.source.read(followed.state, self.end, self.options)
            followed.reads += 1
            items, cut = 0, False
            try:
                for item in read:
                    if isinstance(item, Ended):
                        return item
                    if item is not PROGRESS:
                        followed.changes.append(item)
                    # The checkpoint after every item: the next read continues from here.
                    followed.state = replace(followed.state, watermark=read.watermark, cursor=read.cursor)
                    items += 1
                    if self.window_items and items >= self.window_items:
                        cut = True
                        break
            finally:
                read.close()
            if read.watermark >= self.end:
                return None
            assert cut, f"a read of {followed.state.label} stopped at {read.watermark} without ending"
