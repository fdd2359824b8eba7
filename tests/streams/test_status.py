"""Status aggregates: low watermark, the partition holding it, lag, counts, records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from partitions.models import Partition
from streams.status import stream_status

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db
F = Partition.State.FINISHED


def test_low_watermark_is_the_oldest_unfinished_partition(make_stream, make_partition):
    stream = make_stream(state="RUNNING")
    make_partition(stream, state=F, minutes=1)  # finished long ago: ignored
    slow = make_partition(stream, minutes=5)
    make_partition(stream, minutes=9)
    assert stream.low_watermark() == T0 + timedelta(minutes=5)
    assert stream.holding_partition() == slow


def test_finished_stream_low_watermark_is_where_it_ended(make_stream, make_partition):
    end = T0 + timedelta(hours=1)
    stream = make_stream(state="PAUSED", end_at=end)
    make_partition(stream, state=F, minutes=60, end_at=end)
    make_partition(stream, state=F, minutes=30, end_at=T0 + timedelta(minutes=30))
    assert stream.low_watermark() == end
    assert stream.holding_partition() is None
    assert stream.lag_seconds() == 0.0
    assert stream.reached_end()


def test_lag_is_measured_to_now_or_to_an_earlier_end(make_stream, make_partition):
    stream = make_stream(state="RUNNING", end_at=T0 + timedelta(minutes=10))
    make_partition(stream, minutes=4)
    assert stream.lag_seconds() == pytest.approx(360.0)


def test_stream_without_partitions_has_no_watermark_or_lag(make_stream):
    stream = make_stream()
    status = stream_status(stream)
    assert (status["low_watermark"], status["lag_seconds"], status["data_records"]) == (None, None, 0)
    assert not stream.reached_end()


def test_partitions_by_state_lists_every_state(make_stream, make_partition):
    stream = make_stream(state="RUNNING")
    make_partition(stream, state=F)
    make_partition(stream, state=F)
    make_partition(stream, state=Partition.State.CREATED)
    assert stream.partitions_by_state() == {"CREATED": 1, "SCHEDULED": 0, "RUNNING": 0, "FINISHED": 2}


def test_data_records_sums_every_partition(make_stream, make_partition):
    stream = make_stream(state="RUNNING")
    make_partition(stream, data_records=5)
    make_partition(stream, state=F, data_records=7)
    other = make_stream(name="other", state="RUNNING")
    make_partition(other, data_records=100)
    assert stream.data_records == 12


@pytest.mark.parametrize("count", [2, 40])
def test_status_costs_three_queries_whatever_the_partition_count(
    make_stream, make_partition, django_assert_num_queries, count
):
    stream = make_stream(state="RUNNING")
    for i in range(count):
        make_partition(stream, minutes=i, data_records=1)
    with django_assert_num_queries(3):
        status = stream_status(stream)
    assert status["data_records"] == count
    assert status["holding_partition"] == "token-0"
    assert status["low_watermark"] == "2026-01-01T12:00:00.000000Z"
