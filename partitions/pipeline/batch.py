"""One writer for the checkpoints of a process's live reads: many partitions, one transaction.

A host following thousands of live partitions checkpoints each of them every couple of
seconds. Each in a transaction of its own, on a connection of its own, that is a
thousand transactions a second and a connection per read; here the live reads hand their
progress (already landed) to one thread, which stores every waiting checkpoint in one
transaction a few times a second: the rows locked in id order (two hosts never
deadlock), each applied as save_progress applies one (checkpoint.apply_progress: never
backwards, only while its reader holds the lease, children stored with the partition
that ends), and the streams' states, settings and the database's clock read back for
the readers, who so never touch the database while they read. On PostgreSQL a checkpoint
that only moves a live read on is applied in SQL, one UPDATE for all of them
(_store_moving_on); the others are applied to their built rows and written with one
plain UPDATE per row (_update).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models.base import ModelState
from django.db.models.functions import Now

from partitions.models import Partition
from streams.models import Stream

from .checkpoint import Progress, apply_progress, mark_streams_healthy
from .dbretry import replace_broken_connections
from .leases import lease_delta

log = logging.getLogger(__name__)
# Waits this long after the first checkpoint of a batch for others to join it: a live
# record is stored within about this much more than its landing takes.
GATHER_SECONDS = 0.05
# Past this many rows a batch is split: a few hundred rows are stored in milliseconds.
BATCH_ROWS = 500
FIELDS = (
    "watermark", "last_progress_at", "stalled", "stall_rule", "stall_evidence", "cursor", "data_records",
    "mods", "bytes", "heartbeats", "state", "end_at", "finished_at", "lease_owner", "lease_expires_at",
)  # fmt: skip


@dataclass
class Ticket:
    """One checkpoint handed to the writer, and what it found once stored."""

    partition_id: int
    owner: str
    progress: Progress
    keep_lease: bool
    done: threading.Event | None = None  # a waited ticket's (checkpoint): set when stored
    stored: Partition | None = None  # None: the lease was lost (or the partition had finished)
    stream: Stream | None = None  # the stream as stored now (state and settings)
    db_now: datetime | None = None
    error: BaseException | None = None
    future: asyncio.Future | None = None  # an awaited ticket's (checkpoint_async), set on its loop
    # The partition as its read holds it (the last checkpoint's): a checkpoint that moves a
    # live read on is then stored without building the row (store: _store_moving_on).
    current: Partition | None = None

    def __post_init__(self) -> None:
        if self.future is None:  # an awaited ticket needs no Event (a lock and a condition each)
            self.done = threading.Event()

    def wait(self) -> Ticket:
        """Block until the writer stored (or refused) this checkpoint; re-raise its error.

        The writer retries our own database errors for up to a lease; a writer that has
        not answered in two leases is stuck, and the read stops on it (recorded, retried).
        """
        if not self.done.wait(2 * settings.CDC_LEASE_SECONDS):
            raise TimeoutError(f"the checkpoint of partition {self.partition_id} was not stored in time")
        if self.error is not None:
            raise self.error
        return self


class Writer:
    """The process's checkpoint writer: a thread started on first use, stopped when idle."""

    def __init__(self) -> None:
        self._waiting: list[Ticket] = []
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None

    def checkpoint(
        self,
        partition_id: int,
        owner: str,
        progress: Progress,
        keep_lease: bool,
        current: Partition | None = None,
    ) -> Ticket:
        """Store the progress with the next batch; return its ticket once stored."""
        return self.submit(Ticket(partition_id, owner, progress, keep_lease, current=current)).wait()

    async def checkpoint_async(
        self,
        partition_id: int,
        owner: str,
        progress: Progress,
        keep_lease: bool,
        current: Partition | None = None,
    ) -> Ticket:
        """Store the progress with the next batch, awaited on the running event loop (no thread waits)."""
        stored: asyncio.Future[Ticket] = asyncio.get_running_loop().create_future()
        self.submit(Ticket(partition_id, owner, progress, keep_lease, future=stored, current=current))
        try:
            ticket = await asyncio.wait_for(stored, 2 * settings.CDC_LEASE_SECONDS)
        except TimeoutError:
            raise TimeoutError(f"the checkpoint of partition {partition_id} was not stored in time") from None
        if ticket.error is not None:
            raise ticket.error
        return ticket

    def submit(self, ticket: Ticket) -> Ticket:
        """Hand the ticket to the writer (started if idle); return it at once."""
        with self._lock:
            self._waiting.append(ticket)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="checkpoint-writer", daemon=True)
                self._thread.start()
            self._lock.notify()
        return ticket

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    if not self._lock.wait_for(lambda: self._waiting, timeout=5):
                        self._thread = None  # idle: the next checkpoint starts another
                        return
                time.sleep(GATHER_SECONDS)
                with self._lock:
                    batch, self._waiting = self._waiting, []
                for start in range(0, len(batch), BATCH_ROWS):
                    self._store(batch[start : start + BATCH_ROWS])
                with self._lock:
                    idle = not self._waiting
                if idle:
                    # A connection per quiet spell is cheap; one kept open through a quiet
                    # hour would be one more for the database to hold (and tests to drop).
                    connections.close_all()
        finally:
            connections.close_all()

    def _store(self, batch: list[Ticket]) -> None:
        """Store a batch, retrying our own database errors for up to a lease; settle every ticket."""
        deadline, delay = time.monotonic() + settings.CDC_LEASE_SECONDS, 0.2
        while True:
            try:
                store(batch)
                break
            except DatabaseError as error:
                if time.monotonic() + delay > deadline:
                    for ticket in batch:
                        ticket.error = error
                    break
                log.warning("storing %d checkpoints failed, retrying in %.1fs: %s", len(batch), delay, error)
                replace_broken_connections()
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
            except Exception as error:  # noqa: BLE001 - a bug must reach the readers, not kill the writer
                log.exception("storing %d checkpoints failed", len(batch))
                for ticket in batch:
                    ticket.error = error
                break
        awaited: dict[asyncio.AbstractEventLoop, list[Ticket]] = {}
        for ticket in batch:
            if ticket.done is not None:
                ticket.done.set()
            if ticket.future is not None:
                awaited.setdefault(ticket.future.get_loop(), []).append(ticket)
        # One wake-up per loop and batch: a call per ticket (a write to the loop's pipe
        # each, the lock handed back after each) held 500 checkpoints for seconds.
        for loop, tickets in awaited.items():
            loop.call_soon_threadsafe(_resolve, tickets)


def _resolve(tickets: list[Ticket]) -> None:
    """On the tickets' loop: hand each awaited ticket back to its read."""
    for ticket in tickets:
        if not ticket.future.done():  # a read that timed out waiting has gone
            ticket.future.set_result(ticket)


def _update(rows: list[Partition]) -> None:
    """Write the rows' checkpoint fields: one UPDATE statement, executed for each row.

    Django's bulk_update built a CASE expression per field and row: at 2,000 live
    partitions its Python alone held the GIL for most of the reader's time (py-spy:
    docs/benchmarks.md, issue 22). The fields are prepared as Django saves them.
    """
    if not rows:
        return
    connection = connections[Partition.objects.db]
    qn = connection.ops.quote_name
    fields = [Partition._meta.get_field(name) for name in FIELDS]
    sql = (
        f"UPDATE {qn(Partition._meta.db_table)} SET "
        + ", ".join(f"{qn(f.column)} = %s" for f in fields)
        + f" WHERE {qn(Partition._meta.pk.column)} = %s"
    )
    params = [
        [f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields] + [row.pk] for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def store(batch: list[Ticket]) -> None:
    """Store the batch's checkpoints in one transaction, setting each ticket's outcome."""
    postgres = connections[Partition.objects.db].vendor == "postgresql"
    moving_on: list[Ticket] = []
    others: list[Ticket] = []
    for ticket in batch:
        (moving_on if postgres and _moves_on(ticket) else others).append(ticket)
    now, stream_of, changed_streams = None, {}, set()  # stream_of: each partition's stream
    with transaction.atomic():
        if moving_on:
            # Every row of the batch locked in id order first (two hosts never deadlock).
            now = _lock(sorted({t.partition_id for t in batch}))
            changed_streams |= _store_moving_on(moving_on, now)
            stream_of.update((t.partition_id, t.current.stream_id) for t in moving_on)
        if others:
            # The rows alone: their streams (a few, read once below) joined to every row made
            # it nearly twice as wide (43 columns, 19 timestamps, each through Django's Python
            # loader; benchmarks/checkpoint_batch.py, docs/benchmarks.md, issue 22). A
            # partition that ends loads its stream as it stores its children (apply_progress).
            ids = sorted({t.partition_id for t in others})
            rows = Partition.objects.select_for_update(no_key=True)
            locked = {p.pk: p for p in rows.annotate(db_now=Now()).filter(pk__in=ids).order_by("pk")}
            changed: dict[int, Partition] = {}  # a partition checkpointed twice in a batch: one UPDATE
            for ticket in others:
                row = locked.get(ticket.partition_id)
                if row is None or row.lease_owner != ticket.owner or row.state == Partition.State.FINISHED:
                    continue
                apply_progress(row, ticket.progress, row.db_now, ticket.keep_lease)
                ticket.stored = row
                changed[row.pk] = row
            _update(list(changed.values()))
            now = now or next((row.db_now for row in locked.values()), None)
            stream_of.update((pk, row.stream_id) for pk, row in locked.items())
            changed_streams |= {row.stream_id for row in changed.values()}
        mark_streams_healthy(changed_streams)
        streams = Stream.objects.in_bulk(set(stream_of.values()))
    for ticket in batch:
        ticket.stream = streams.get(stream_of.get(ticket.partition_id))
        ticket.db_now = now


def _moves_on(ticket: Ticket) -> bool:
    """Return whether the checkpoint only moves a live read on: it keeps the lease and ends nothing."""
    progress = ticket.progress
    return (
        ticket.current is not None
        and ticket.keep_lease
        and progress.finish_at is None
        and progress.ended is None
    )


def _lock(ids: list[int]) -> datetime | None:
    """Lock the partitions' rows in id order; return the database's clock (None: none of them is left)."""
    connection = connections[Partition.objects.db]
    qn = connection.ops.quote_name
    table, pk = qn(Partition._meta.db_table), qn(Partition._meta.pk.column)
    with connection.cursor() as cursor:
        # FOR NO KEY UPDATE: save_progress says why (a merge's two parents finishing at once).
        # One row back: the clock read with each locked row was a tenth of the writer's time.
        cursor.execute(
            f"SELECT now(), count(*) FROM (SELECT {pk} FROM {table} WHERE {pk} = ANY(%s) "
            f"ORDER BY {pk} FOR NO KEY UPDATE) AS locked",
            [ids],
        )
        now, count = cursor.fetchone()
    return now if count else None


# What a checkpoint that moves a live read on writes, as apply_progress would: one UPDATE
# of the few columns it moves, from arrays of the batch's values, returning what the read
# needs to go on. apply_progress built and wrote each row's 43 columns through Django,
# which at 2,000 live partitions was most of the reader's time (py-spy, docs/benchmarks.md,
# issue 22). PostgreSQL only; SQLite stores every checkpoint through apply_progress.
# Timestamps are returned only where they differ from what the writer knows (NULLIF):
# loading them was a quarter of the writer's time. now() is the transaction's clock, the
# one _lock read, so the lease's expiry and a moved watermark's last_progress_at are known.
MOVE_ON_SQL = """
UPDATE {table} AS p SET
    watermark = GREATEST(p.watermark, v.watermark),
    last_progress_at = CASE WHEN v.watermark > p.watermark THEN now() ELSE p.last_progress_at END,
    stalled = p.stalled AND v.watermark <= p.watermark,
    stall_rule = CASE WHEN v.watermark > p.watermark THEN '' ELSE p.stall_rule END,
    stall_evidence = CASE WHEN v.watermark > p.watermark THEN '{{}}'::jsonb ELSE p.stall_evidence END,
    cursor = COALESCE(v.cursor::jsonb, p.cursor),
    data_records = p.data_records + v.records,
    mods = p.mods + v.mods,
    bytes = p.bytes + v.bytes,
    heartbeats = p.heartbeats + v.heartbeats,
    lease_expires_at = now() + %s
FROM unnest(%s::bigint[], %s::text[], %s::timestamptz[], %s::text[], %s::bigint[], %s::bigint[],
            %s::bigint[], %s::bigint[]) AS v(id, owner, watermark, cursor, records, mods, bytes, heartbeats)
WHERE p.id = v.id AND p.lease_owner = v.owner AND p.state <> %s
RETURNING p.id, p.lease_owner, NULLIF(p.watermark, v.watermark), p.last_progress_at = now(),
    NULLIF(p.last_progress_at, now()), p.cursor::text, p.data_records, p.mods, p.bytes, p.heartbeats,
    p.stalled, p.stall_rule, p.stall_evidence::text, p.state
"""
RETURNED = (
    "cursor",
    "data_records",
    "mods",
    "bytes",
    "heartbeats",
    "stalled",
    "stall_rule",
    "stall_evidence",
    "state",
)
JSON_RETURNED = {"cursor", "stall_evidence"}


def _store_moving_on(tickets: list[Ticket], now: datetime | None) -> set[int]:
    """Store checkpoints that move live reads on, in one statement; return the streams they moved."""
    merged: dict[tuple[int, str], list] = {}  # a partition checkpointed twice in a batch: one row
    for ticket in tickets:
        p, key = ticket.progress, (ticket.partition_id, ticket.owner)
        cursor = None if p.cursor is None else json.dumps(p.cursor)
        m = merged.get(key)
        if m is None:
            merged[key] = [p.watermark, cursor, p.records, p.mods, p.bytes, p.heartbeats]
        else:
            m[0], m[1] = max(m[0], p.watermark), cursor if cursor is not None else m[1]
            m[2], m[3], m[4], m[5] = m[2] + p.records, m[3] + p.mods, m[4] + p.bytes, m[5] + p.heartbeats
    columns = [[key[0] for key in merged], [key[1] for key in merged]]
    columns += [list(values) for values in zip(*merged.values(), strict=True)]
    connection = connections[Partition.objects.db]
    sql = MOVE_ON_SQL.format(table=connection.ops.quote_name(Partition._meta.db_table))
    delta = lease_delta()
    with connection.cursor() as cursor:
        cursor.execute(sql, [delta, *columns, Partition.State.FINISHED])
        returned = {(row[0], row[1]): row[2:] for row in cursor.fetchall()}
    for ticket in tickets:
        key = (ticket.partition_id, ticket.owner)
        values = returned.get(key)
        if values is None:
            continue  # the lease was lost, or the partition had finished
        stored = _copy(ticket.current)  # the read's own partition is left as it was
        stored.watermark = values[0] or merged[key][0]
        stored.last_progress_at = now if values[1] else values[2]
        for name, value in zip(RETURNED, values[3:], strict=True):
            setattr(stored, name, json.loads(value) if name in JSON_RETURNED else value)
        stored.lease_owner, stored.lease_expires_at, stored.db_now = ticket.owner, now + delta, now
        ticket.stored = stored
    return {ticket.current.stream_id for ticket in tickets if ticket.stored is not None}


def _copy(partition: Partition) -> Partition:
    """Return a copy of the partition as a saved row (copy.copy's pickling was a quarter of the writer)."""
    row = Partition.__new__(Partition)
    row.__dict__.update(partition.__dict__)
    row._state = ModelState()
    row._state.db, row._state.adding = partition._state.db, False
    return row


WRITER = Writer()
