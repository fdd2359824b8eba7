"""This process's live reads: each partition at the live edge read on, window after window.

A read at the live edge mostly waits for its source (a heartbeat every couple of seconds,
a record now and then). Held by a Celery pool thread for its whole window, it made a host's
width the size of that pool, and the pool's threads each wanted a database connection.
Here, a read whose window reaches the live edge is handed (with its lease) to a thread of
its own, which reads window after window, polls after poll, lands what it reads and hands
its checkpoints to the process's batch writer (batch.py): it holds no database connection
and no pool thread, so a host follows as many live partitions as its source serves, with
no setting to raise. Celery's pool is left to catching up, a few threads per core.

A kind whose source reads through an asyncio client (``read_async``: Spanner change streams)
is followed on one event loop per process, every live partition a coroutine: a heartbeat
costs a callback, not a thread woken. A thread per live partition made 2,000 of them a
thousand hand-overs of the interpreter lock a second, and the process took new partitions
at one a second while the live ones kept it busy (docs/benchmarks.md, issue 22). Blocking
work (landing a file, the bookkeeping of an error or an end) goes to a few helper threads;
a checkpoint is awaited on the loop (batch.Writer.checkpoint_async). Other kinds keep a
thread each.

A live read stops when the partition ends (its children are scheduled), when the stream
stops reading (the lease is given back and draining settles), when the lease is lost, on
an error (recorded and retried through the queue, as a pool thread would) and when the
worker shuts down (it checkpoints and gives the lease back, so another reader takes over
at once). A process that dies leaves its leases to expire: the orphan sweep re-queues them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all

from django.db import connections

from partitions.models import Partition
from streams.models import Stream

from . import leases, scheduling
from .leases import log_lease
from .queue import Queue
from .readers import source_for
from .settle import read_and_settle, read_and_settle_async
from .window import Batched

log = logging.getLogger(__name__)
# Threads for the live loop's blocking work: landing a read's records (a table built, a file
# written and fsynced), an error's or an end's bookkeeping. A checkpoint needs none (it is
# awaited). With 4, at 2,000 live partitions (100 records a second, each landed on its own)
# a landing waited 20-28 s in their queue; with 32, 0.04-0.07 s (docs/benchmarks.md, issue 22).
OFFLOAD_THREADS = 32


class LiveReads:
    """The live reads of this process (a coroutine or a thread each), stopped together with the worker."""

    def __init__(self) -> None:
        self._reads: dict[int, threading.Thread | Future] = {}
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._offload: ThreadPoolExecutor | None = None

    def adopt(self, partition: Partition, stream: Stream, owner: str, queue: Queue) -> bool:
        """Read the partition on under `owner`'s lease, on the live loop or in a thread; False if stopping."""
        if self.stopping.is_set():
            return False
        if _multiplexed(stream):
            loop = self._running_loop()
            with self._lock:  # registered before the read can end and unregister itself
                self._reads[partition.pk] = asyncio.run_coroutine_threadsafe(
                    self._follow_async(partition, stream, owner, queue), loop
                )
            return True
        thread = threading.Thread(
            target=self._follow,
            args=(partition, stream, owner, queue),
            name=f"live-{partition.pk}",
            daemon=True,
        )
        with self._lock:
            self._reads[partition.pk] = thread
        thread.start()
        return True

    def count(self) -> int:
        """Return how many live reads this process runs now."""
        with self._lock:
            return len(self._reads)

    def stop_all(self, timeout: float = 15.0) -> int:
        """Ask every live read to checkpoint and give its lease back; wait up to `timeout`."""
        self.stopping.set()
        with self._lock:
            reads = list(self._reads.values())
        threads = [read for read in reads if isinstance(read, threading.Thread)]
        futures = [read for read in reads if isinstance(read, Future)]
        if futures:
            wait_all(futures, timeout if not threads else timeout / 2)
        for thread in threads:
            thread.join(timeout / 2 / max(1, len(threads)) + 0.1)
        return len(reads)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._offload = ThreadPoolExecutor(OFFLOAD_THREADS, thread_name_prefix="live-offload")
                threading.Thread(target=self._loop.run_forever, name="live-loop", daemon=True).start()
            return self._loop

    async def _off(self, fn, *args):
        """Run fn(*args) on a helper thread, awaited; it keeps no database connection."""
        try:
            done = asyncio.get_running_loop().run_in_executor(self._offload, _closing, fn, args)
        except RuntimeError:  # the interpreter is exiting and starts no thread: give the lease back here
            return _closing(fn, args)
        return await done

    def _follow(self, partition: Partition, stream: Stream, owner: str, queue: Queue) -> None:
        try:
            follow(partition, stream, owner, queue, self.stopping)
        except Exception:
            log.exception("the live read of partition %s stopped unexpectedly", partition.pk)
        finally:
            connections.close_all()  # an error's bookkeeping may have opened one
            with self._lock:
                self._reads.pop(partition.pk, None)

    async def _follow_async(self, partition: Partition, stream: Stream, owner: str, queue: Queue) -> str:
        try:
            return await follow_async(partition, stream, owner, queue, self.stopping, self._off)
        except Exception:
            log.exception("the live read of partition %s stopped unexpectedly", partition.pk)
            return "error"
        finally:
            with self._lock:
                self._reads.pop(partition.pk, None)


def _multiplexed(stream: Stream) -> bool:
    """Return whether the stream's source reads through an asyncio client (its live reads share the loop)."""
    try:
        return hasattr(source_for(stream), "read_async")
    except Exception:  # noqa: BLE001 - a source that cannot connect: the thread's read records why
        return False


def _closing(fn, args):
    try:
        return fn(*args)
    finally:
        connections.close_all()


def follow(partition: Partition, stream: Stream, owner: str, queue: Queue, stop: threading.Event) -> str:
    """Read the partition window after window while its stream reads on; return why it stopped."""
    store = Batched()
    while True:
        done, outcome = read_and_settle(stream, partition, owner, queue, store, stop)
        if done:
            return done
        stream = store.stream or stream
        if not outcome.go_on or stop.is_set() or stream.state not in leases.READING_STATES:
            _stop(stream, outcome.stored.pk, owner)
            return "stopped"
        partition = outcome.stored
        if outcome.delay and stop.wait(outcome.delay):  # a polling kind waits for its next poll
            _stop(stream, partition.pk, owner)
            return "stopped"


async def follow_async(
    partition: Partition, stream: Stream, owner: str, queue: Queue, stop: threading.Event, offload
) -> str:
    """follow() on the live loop: the same windows, awaited; blocking work through `offload`."""
    store = Batched()
    store.seed(stream, partition)
    while True:
        done, outcome = await read_and_settle_async(stream, partition, owner, queue, store, stop, offload)
        if done:
            return done
        stream = store.stream or stream
        if not outcome.go_on or stop.is_set() or stream.state not in leases.READING_STATES:
            await offload(_stop, stream, outcome.stored.pk, owner)
            return "stopped"
        partition = outcome.stored
        if outcome.delay and await _stopped_within(stop, outcome.delay):
            await offload(_stop, stream, partition.pk, owner)
            return "stopped"


async def _stopped_within(stop: threading.Event, seconds: float) -> bool:
    """Wait up to `seconds`; return True as soon as `stop` is set (checked every half second)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not stop.is_set():
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            return False
        await asyncio.sleep(min(0.5, left))
    return True


def _stop(stream: Stream, partition_id: int, owner: str) -> None:
    """Give the lease back (the next reader starts at once) and settle a draining stream."""
    log_lease("end", partition_id, owner)
    leases.release(partition_id, owner)
    scheduling.maybe_finish_drain(stream)


LIVE = LiveReads()
