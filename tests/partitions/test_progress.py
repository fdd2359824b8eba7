"""The progress read model: low watermark, the partition holding it, lag, counts, records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from partitions.models import Partition
from partitions.progress import lag_seconds, partition_lag, progress

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db
F = Partition.State.FINISHED


def test_low_watermark_is_the_oldest_unfinished_partition(make_stream, make_partition):
    stream = make_stream(state="RUNNING")
    make_partition(stream, state=F, minutes=1)  # finished long ago: ignored
    slow = make_partition(stream, minutes=5)
    make_partition(stream, minutes=9)
    found = progress(stream)
    assert found.low_watermark == T0 + timedelta(minutes=5)
    assert (found.holding_partition_id, found.holding_token) == (slow.pk, slow.token)


def test_finished_stream_low_watermark_is_where_it_ended(make_stream, make_partition):
    end = T0 + timedelta(hours=1)
    stream = make_stream(state="PAUSED", end_at=end)
    make_partition(stream, state=F, minutes=60, end_at=end)
    make_partition(stream, state=F, minutes=30, end_at=T0 + timedelta(minutes=30))
    found = progress(stream)
    assert found.low_watermark == end
    assert found.holding_partition_id is None
    assert found.lag_seconds == 0.0
    assert found.reached_end


def test_lag_is_measured_to_now_or_to_an_earlier_end(make_stream, make_partition):
    stream = make_stream(state="RUNNING", end_at=T0 + timedelta(minutes=10))
    make_partition(stream, minutes=4)
    assert progress(stream).lag_seconds == pytest.approx(360.0)


def test_stream_without_partitions_has_no_watermark_or_lag(make_stream):
    found = progress(make_stream())
    assert (found.low_watermark, found.lag_seconds, found.data_records) == (None, None, 0)
    assert not found.reached_end


def test_partitions_by_state_lists_every_state(make_stream, make_partition):
    stream = make_stream(state="RUNNING")
    make_partition(stream, state=F)
    make_partition(stream, state=F)
    make_partition(stream, state=Partition.State.CREATED)
    assert progress(stream).by_state == {"CREATED": 1, "SCHEDULED": 0, "RUNNING": 0, "FINISHED": 2}


def test_data_records_sums_every_partition(make_stream, make_partition):
    stream = make_stream(state="RUNNING")
    make_partition(stream, data_records=5)
    make_partition(stream, state=F, data_records=7)
    other = make_stream(name="other", state="RUNNING")
    make_partition(other, data_records=100)
    assert progress(stream).data_records == 12


@pytest.mark.parametrize("count", [2, 40])
def test_progress_costs_one_query_whatever_the_partition_count(
    make_stream, make_partition, django_assert_num_queries, count
):
    stream = make_stream(state="RUNNING")
    for i in range(count):
        make_partition(stream, minutes=i, data_records=1)
    with django_assert_num_queries(1):
        found = progress(stream)
    assert found.data_records == count
    assert found.holding_token == "token-0"
    assert found.low_watermark == T0


def test_one_lag_formula_for_datetimes_and_epochs():
    at = datetime(2026, 11, 25, 12, tzinfo=UTC)
    assert lag_seconds(at, at + timedelta(seconds=90)) == 90.0
    assert lag_seconds(at.timestamp(), at.timestamp() + 90) == 90.0
    assert lag_seconds(at + timedelta(seconds=5), at) == 0.0  # a watermark ahead of now is not negative lag
    assert partition_lag("FINISHED", at, at + timedelta(hours=1)) is None
    assert partition_lag("RUNNING", at.timestamp(), at.timestamp() + 3) == 3.0
