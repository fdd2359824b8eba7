"""The scheduler locks partition rows only: never its stream's row, which every checkpoint updates."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from partitions.models import Partition, PartitionEdge
from partitions.pipeline import scheduling
from tests.factories import RecordingQueue, make_partition, make_stream

pytestmark = pytest.mark.django_db
P = Partition.State


def test_the_lock_of_ready_children_does_not_join_their_stream():
    # The default ordering (stream, start_at, id) joins streams_stream; locked FOR NO KEY
    # UPDATE SKIP LOCKED that way, a child was skipped whenever a reader of its stream was
    # checkpointing, and waited for beat (2 s late at the live edge on PostgreSQL).
    with transaction.atomic():
        sql = str(scheduling._lock_skipping(Partition.objects.filter(pk__in=[1, 2])).query)
    assert "streams_stream" not in sql


def test_a_child_whose_parents_finished_is_scheduled_and_queued_once():
    stream = make_stream("s", state="RUNNING")
    parent = make_partition(stream, P.FINISHED, token="p")
    child = make_partition(stream, P.CREATED, token="c")
    PartitionEdge.objects.create(stream=stream, parent=parent, child=child)
    queue = RecordingQueue()
    with CaptureQueriesContext(connection) as queries:
        assert scheduling.schedule_children(parent, queue) == 1
    assert not any("streams_stream" in q["sql"] and "FOR" in q["sql"] for q in queries.captured_queries)
    assert [pk for pk, *_ in queue.reads] == [child.pk]
    assert scheduling.schedule_children(parent, queue) == 0
