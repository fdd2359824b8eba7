"""The batch writer stores many live reads' checkpoints together, as each would be stored alone."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partitions.models import Partition
from partitions.pipeline import batch
from partitions.pipeline.checkpoint import Progress
from streams.models import Stream
from tests.factories import T0, make_partition, make_stream

pytestmark = pytest.mark.django_db(transaction=True)  # the writer stores on a thread of its own
P, S = Partition.State, Stream.State


def leased(stream, owner: str, minutes: float) -> Partition:
    return make_partition(
        stream, minutes=minutes, lease_owner=owner, lease_expires_at=T0 + timedelta(days=3650)
    )


def progress(partition: Partition, seconds: float, heartbeats: int = 1) -> Progress:
    moved = Progress(start=partition.watermark, watermark=partition.watermark + timedelta(seconds=seconds))
    moved.heartbeats = heartbeats
    return moved


def test_checkpoints_of_many_reads_are_stored_with_the_stream_read_back():
    # given a failing stream whose partitions are held by three readers, and one by another host
    stream = make_stream("s", state=S.RUNNING)
    Stream.objects.filter(pk=stream.pk).update(state=S.FAILED, consecutive_failures=3)
    mine = [leased(stream, f"reader-{i}", minutes=i) for i in range(3)]
    theirs = leased(stream, "other-host", minutes=0)
    tickets = {}

    def checkpoint(partition, owner, seconds):
        tickets[partition.pk] = batch.WRITER.checkpoint(
            partition.pk, owner, progress(partition, seconds), True
        )

    # when they all checkpoint at once (one of them under an owner that lost the lease)
    threads = [threading.Thread(target=checkpoint, args=(p, f"reader-{i}", 30)) for i, p in enumerate(mine)]
    threads.append(threading.Thread(target=checkpoint, args=(theirs, "reader-9", 30)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # then the holders' checkpoints are stored and the other is refused, untouched
    for partition in mine:
        partition.refresh_from_db()
        assert partition.watermark == T0 + timedelta(minutes=mine.index(partition), seconds=30)
        assert partition.heartbeats == 1
        assert tickets[partition.pk].stored is not None
    assert tickets[theirs.pk].stored is None
    theirs.refresh_from_db()
    assert (theirs.watermark, theirs.heartbeats) == (T0, 0)
    # and a good read brought the stream back, as each reader sees it
    assert tickets[mine[0].pk].stream.state == S.RUNNING
    assert tickets[mine[0].pk].db_now is not None
    stream.refresh_from_db()
    assert (stream.state, stream.consecutive_failures) == (S.RUNNING, 0)


def test_a_watermark_never_moves_back_and_a_finish_frees_the_lease():
    stream = make_stream("s", state=S.RUNNING)
    partition = leased(stream, "r", minutes=5)
    back = batch.WRITER.checkpoint(partition.pk, "r", progress(partition, -60), True)
    assert back.stored.watermark == T0 + timedelta(minutes=5)
    ending = progress(partition, 10)
    ending.finish_at = ending.watermark
    done = batch.WRITER.checkpoint(partition.pk, "r", ending, True)
    assert (done.stored.state, done.stored.lease_owner) == (P.FINISHED, "")
    assert batch.WRITER.checkpoint(partition.pk, "r", progress(partition, 20), True).stored is None


def test_one_batch_of_hundreds_is_a_few_statements():
    # given 300 partitions of two streams held by their readers
    streams = [make_stream(f"s{i}", state=S.RUNNING) for i in range(2)]
    parts = [leased(streams[i % 2], f"r{i}", minutes=1) for i in range(300)]
    tickets = [batch.Ticket(p.pk, f"r{i}", progress(p, 5), True) for i, p in enumerate(parts)]
    # when they are stored as one batch
    with CaptureQueriesContext(connection) as captured:
        batch.store(tickets)
    # then every one is stored, with a handful of statements whatever their number
    assert all(t.stored is not None for t in tickets)
    assert len(captured.captured_queries) <= 8, [q["sql"][:80] for q in captured.captured_queries]
    assert Partition.objects.filter(watermark=T0 + timedelta(minutes=1, seconds=5)).count() == 300


# A live read hands its partition with each checkpoint (Ticket.current): one that moves the
# read on is then stored by one UPDATE of the columns it moves (batch._store_moving_on).
FIELDS = ("watermark", "cursor", "data_records", "mods", "bytes", "heartbeats", "stalled", "stall_rule",
          "stall_evidence", "state", "lease_owner")  # fmt: skip


def moved(partition: Partition, seconds: float, records: int, cursor: dict | None) -> Progress:
    step = progress(partition, seconds, heartbeats=2)
    step.records, step.mods, step.bytes, step.cursor = records, 2 * records, 100 * records, cursor
    return step


def test_a_checkpoint_that_moves_a_read_on_is_stored_as_apply_progress_stores_it():
    # given two identical stalled partitions, one checkpointed as a finishing read would be
    # (apply_progress on the built row), the other as a live read is (its partition handed)
    stream = make_stream("s", state=S.RUNNING)
    rows = [leased(stream, f"r{i}", minutes=5) for i in range(2)]
    Partition.objects.update(
        stalled=True, stall_rule="quiet", stall_evidence={"seconds": 90}, cursor={"k": 1}
    )
    rows = [Partition.objects.get(pk=p.pk) for p in rows]
    steps = [(-60, 3, None), (0, 0, None), (30, 5, {"k": 2}), (-10, 1, {"k": 3}), (45, 0, None)]
    for seconds, records, cursor in steps:
        # when the same checkpoints are stored both ways (back, still, on, back with a cursor, on)
        built = batch.Ticket(rows[0].pk, "r0", moved(rows[0], seconds, records, cursor), True)
        handed = batch.Ticket(
            rows[1].pk, "r1", moved(rows[1], seconds, records, cursor), True, current=rows[1]
        )
        with CaptureQueriesContext(connection) as captured:
            batch.store([built, handed])
        # (the handed one by its own statement: the comparison below is of the two paths)
        assert any("unnest" in q["sql"] for q in captured.captured_queries)
        assert handed.stored is not rows[1]  # a copy: the read's own partition is left as it was
        assert handed.stored.pk == rows[1].pk
        # then the stored rows and what each read gets back agree, field by field
        stored = [Partition.objects.get(pk=p.pk) for p in rows]
        for name in FIELDS:
            expected = getattr(stored[0], name)
            if name == "lease_owner":
                expected = "r1"
            assert getattr(stored[1], name) == expected, (seconds, name)
            assert getattr(handed.stored, name) == expected, (seconds, name)
        assert handed.stored.lease_expires_at == stored[1].lease_expires_at
        assert handed.stored.last_progress_at == stored[1].last_progress_at
        assert (stored[0].last_progress_at is None) == (stored[1].last_progress_at is None)
        assert handed.stream.pk == stream.pk
        assert handed.db_now is not None
        rows = stored
    # and the watermark moved only forwards, clearing the stall as it first moved
    assert rows[1].watermark == T0 + timedelta(minutes=5, seconds=75)
    assert (rows[1].stalled, rows[1].stall_rule, rows[1].stall_evidence) == (False, "", {})
    assert (rows[1].cursor, rows[1].data_records, rows[1].heartbeats) == ({"k": 3}, 9, 10)


def test_a_read_moved_on_twice_in_a_batch_is_one_row_and_a_lost_lease_or_finish_is_refused():
    stream = make_stream("s", state=S.RUNNING)
    mine, lost, finished = (leased(stream, "r", minutes=1) for _ in range(3))
    Partition.objects.filter(pk=lost.pk).update(lease_owner="someone-else")
    Partition.objects.filter(pk=finished.pk).update(state=P.FINISHED)
    tickets = [
        batch.Ticket(mine.pk, "r", moved(mine, 10, 2, {"c": 1}), True, current=mine),
        batch.Ticket(mine.pk, "r", moved(mine, 20, 3, None), True, current=mine),
        batch.Ticket(lost.pk, "r", moved(lost, 10, 1, None), True, current=lost),
        batch.Ticket(finished.pk, "r", moved(finished, 10, 1, None), True, current=finished),
    ]
    with CaptureQueriesContext(connection) as captured:
        batch.store(tickets)
    mine.refresh_from_db()
    assert mine.watermark == T0 + timedelta(minutes=1, seconds=20)
    assert (mine.data_records, mine.heartbeats) == (5, 4)
    assert mine.cursor == {"c": 1}  # the later checkpoint carried no cursor: the earlier one's stays
    assert [t.stored.watermark for t in tickets[:2]] == [mine.watermark] * 2
    assert (tickets[2].stored, tickets[3].stored) == (None, None)
    lost.refresh_from_db()
    finished.refresh_from_db()
    assert (lost.heartbeats, finished.heartbeats, lost.watermark) == (0, 0, T0 + timedelta(minutes=1))
    if connection.vendor == "postgresql":  # begin, lock, update, the streams' health, the streams, commit
        assert len(captured.captured_queries) <= 6, [q["sql"][:80] for q in captured.captured_queries]


def test_hundreds_of_reads_moved_on_are_a_few_statements():
    streams = [make_stream(f"s{i}", state=S.RUNNING) for i in range(2)]
    parts = [leased(streams[i % 2], f"r{i}", minutes=1) for i in range(300)]
    tickets = [batch.Ticket(p.pk, f"r{i}", progress(p, 5), True, current=p) for i, p in enumerate(parts)]
    with CaptureQueriesContext(connection) as captured:
        batch.store(tickets)
    assert all(t.stored is not None and t.stream.pk == t.current.stream_id for t in tickets)
    assert len(captured.captured_queries) <= 8, [q["sql"][:80] for q in captured.captured_queries]
    assert Partition.objects.filter(watermark=T0 + timedelta(minutes=1, seconds=5)).count() == 300
