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
