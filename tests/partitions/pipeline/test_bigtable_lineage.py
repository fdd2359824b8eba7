"""Bigtable children in the database: a merge waits for every parent's tokens, and placing is idempotent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from partitions.models import Partition, PartitionEdge
from partitions.pipeline import lineage, scheduling
from partitions.sources import KINDS
from partitions.sources.base import Ended, NewPartition
from partitions.sources.bigtable.cursor import Token, root_cursor, tokens_cursor
from partitions.sources.bigtable.kind import KIND
from partitions.sources.bigtable.ranges import RowRange, label, range_token
from partitions.sources.bigtable.requests import children_of
from streams.models import Stream
from tests.factories import T0, RecordingQueue, make_partition, make_stream

pytestmark = pytest.mark.django_db
P = Partition.State
LEFT, RIGHT, ALL = RowRange(b"", b"m"), RowRange(b"m", b""), RowRange(b"", b"")
CLOSE = T0 + timedelta(seconds=30)


@pytest.fixture
def bigtable_stream():
    connection = {
        "project": "test-project",
        "instance": "test-instance",
        "table": "events",
        "app_profile": "cdc",
    }
    return Stream.objects.create(
        name="bt", source_kind="bigtable", connection=KIND.clean(connection), start_at=T0,
        state=Stream.State.RUNNING,
    )  # fmt: skip


def parent(bigtable_stream, row_range):
    return make_partition(
        bigtable_stream, token=range_token(row_range), cursor=root_cursor(row_range), label=label(row_range)
    )


def close_into_merge(part, row_range, token_text):
    """Store what a parent's CloseStream hands over to the merged child, as its finishing checkpoint does."""
    ended = Ended(CLOSE, children_of([Token(row_range, token_text)], [ALL], CLOSE))
    with transaction.atomic():
        lineage.store_children(part, ended, KIND)
    Partition.objects.filter(pk=part.pk).update(state=P.FINISHED)


def merged(bigtable_stream):
    return Partition.objects.get(stream=bigtable_stream, token__startswith=range_token(ALL))


def test_a_merged_child_waits_for_every_parent_and_a_repeated_handover_changes_nothing(bigtable_stream):
    # given two parents that merge, the left one closed (and its handover stored twice)
    left, right = parent(bigtable_stream, LEFT), parent(bigtable_stream, RIGHT)
    close_into_merge(left, LEFT, "left@30")
    first = merged(bigtable_stream).cursor
    close_into_merge(left, LEFT, "left@30")
    # then the child is the same, and it waits for the right parent
    assert merged(bigtable_stream).cursor == first
    queue = RecordingQueue()
    assert scheduling.schedule_ready(bigtable_stream.pk, queue) == 0
    # when the right parent closes too (its checkpoint retried)
    close_into_merge(right, RIGHT, "right@30")
    assert scheduling.schedule_ready(bigtable_stream.pk, queue) == 1
    close_into_merge(right, RIGHT, "right@30")
    # then one child holds both tokens, is scheduled once, and no new generation appeared
    child = merged(bigtable_stream)
    assert [t["token"] for t in child.cursor["tokens"]] == ["left@30", "right@30"]
    assert Partition.objects.filter(stream=bigtable_stream).count() == 3
    assert child.state == P.SCHEDULED
    assert queue.reads == [(child.pk, 0)]
    assert PartitionEdge.objects.filter(child=child).count() == 2


def test_a_parent_that_reads_on_to_the_streams_end_completes_the_merged_child(bigtable_stream):
    # given a bounded stream whose end falls between a merge's parents' closes: the left
    # parent closed into the merge, the right one read on to the end and finished there
    end = CLOSE + timedelta(seconds=1)
    Stream.objects.filter(pk=bigtable_stream.pk).update(end_at=end)
    left, right = parent(bigtable_stream, LEFT), parent(bigtable_stream, RIGHT)
    close_into_merge(left, LEFT, "left@30")
    last = tokens_cursor(RIGHT, [Token(RIGHT, "right@31")])
    Partition.objects.filter(pk=right.pk).update(state=P.FINISHED, end_at=end, cursor=last)
    # when the children are scheduled
    queue = RecordingQueue()
    scheduled = scheduling.schedule_ready(bigtable_stream.pk, queue)
    # then the merged child reads from the left's handed-over token and the right's last one
    child = merged(bigtable_stream)
    assert scheduled == 1
    assert child.state == P.SCHEDULED
    assert [t["token"] for t in child.cursor["tokens"]] == ["left@30", "right@31"]
    assert set(PartitionEdge.objects.filter(child=child).values_list("parent_id", flat=True)) == {
        left.pk,
        right.pk,
    }


def test_a_merged_child_of_an_open_ended_stream_waits_for_the_close(bigtable_stream):
    # given an open-ended stream, the left parent closed into the merge and the right one finished
    # for another reason (a row put there by hand)
    left, right = parent(bigtable_stream, LEFT), parent(bigtable_stream, RIGHT)
    close_into_merge(left, LEFT, "left@30")
    last = tokens_cursor(RIGHT, [Token(RIGHT, "right@31")])
    Partition.objects.filter(pk=right.pk).update(state=P.FINISHED, end_at=CLOSE, cursor=last)
    # when the children are scheduled, then the child still waits for the right parent's close
    assert scheduling.schedule_ready(bigtable_stream.pk, RecordingQueue()) == 0
    assert merged(bigtable_stream).state == P.CREATED


def test_a_child_whose_token_begins_another_childs_is_still_stored():
    # given a Spanner parent that already handed over to a child whose token extends another's
    spanner = make_stream("orders", Stream.State.RUNNING)
    kind = KINDS[spanner.source_kind]
    part = make_partition(spanner, token="tok-p")
    child = NewPartition("tok-12", CLOSE, parents=("tok-p",))
    with transaction.atomic():
        lineage.store_children(part, Ended(CLOSE, (child,)), kind)
    # when it announces a child whose token is a prefix of that one
    with transaction.atomic():
        lineage.store_children(part, Ended(CLOSE, (NewPartition("tok-1", CLOSE, parents=("tok-p",)),)), kind)
    # then that child is stored too, with its edge
    assert set(PartitionEdge.objects.filter(parent=part).values_list("child__token", flat=True)) == {
        "tok-12",
        "tok-1",
    }
