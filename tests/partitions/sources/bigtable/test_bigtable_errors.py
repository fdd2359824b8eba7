"""Each permanent failure is refused with a message that says what to fix; none is retried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from bigtable_support import OPTIONS, source_for

from partitions.sources.base import PartitionState, PermanentSourceError, RetryableSourceError
from partitions.sources.bigtable.client import data_client
from partitions.sources.bigtable.cursor import root_cursor
from partitions.sources.bigtable.ranges import RowRange
from partitions.sources.bigtable.reader import BigtableRead

ALL = RowRange(b"", b"")


def _read_all(source, start: datetime) -> None:
    partition = PartitionState("p", start, start, root_cursor(ALL), "[-inf, +inf)")
    list(source.read(partition, start + timedelta(seconds=1), OPTIONS))


@pytest.mark.parametrize(
    ("table", "profile", "code", "says"),
    [
        (
            "missing",
            "default",
            "NOT_FOUND",
            "table projects/test-project/instances/test-instance/tables/missing",
        ),
        ("plain", "default", "FAILED_PRECONDITION", "change streams are not enabled on table"),
        ("events", "multi", "FAILED_PRECONDITION", "the app profile must use single-cluster routing"),
        ("events", "nope", "NOT_FOUND", "app profile 'nope' was not found"),
    ],
)
def test_starting_a_stream_that_cannot_be_read_says_why(bigtable_simulator, table, profile, code, says):
    # given a source whose table or app profile cannot be read
    source = source_for(bigtable_simulator, table, profile)
    # when the stream starts
    with pytest.raises(PermanentSourceError) as caught:
        source.roots(datetime.now(UTC), None, OPTIONS)
    # then the error is permanent, carries the status and explains itself
    assert caught.value.code == code
    assert says in str(caught.value)
    assert not caught.value.retryable


def test_reading_through_a_multi_cluster_app_profile_is_refused(bigtable_simulator):
    source = source_for(bigtable_simulator, app_profile="multi")
    with pytest.raises(PermanentSourceError, match="the app profile must use single-cluster routing"):
        _read_all(source, datetime.now(UTC) - timedelta(seconds=5))


def test_reading_a_table_without_a_change_stream_is_refused(bigtable_simulator):
    source = source_for(bigtable_simulator, table="plain")
    with pytest.raises(PermanentSourceError, match="change streams are not enabled on table"):
        _read_all(source, datetime.now(UTC) - timedelta(seconds=5))


def test_a_start_older_than_the_retention_period_is_refused(bigtable_simulator, bigtable_source):
    # given a start two hours back on a table that keeps one hour
    start = datetime.now(UTC) - timedelta(hours=2)
    # when a partition is read from it
    with pytest.raises(PermanentSourceError) as caught:
        _read_all(bigtable_source, start)
    # then the user learns the records are gone
    assert caught.value.code == "INVALID_ARGUMENT"
    assert "older than the change stream retention period" in str(caught.value)


def test_an_unreachable_endpoint_is_retried_then_given_up_as_retryable():
    # given a source pointed at a port nothing listens on
    client = data_client("127.0.0.1:9")
    start = datetime.now(UTC) - timedelta(seconds=5)
    partition = PartitionState("p", start, start, root_cursor(ALL))
    read = BigtableRead(
        client, "projects/p/instances/i/tables/t", "default", partition, None, OPTIONS, backoff_s=0.01
    )
    # when it is read
    with pytest.raises(RetryableSourceError, match="gave up after 5 attempts"):
        list(read)
    # then it tried a bounded number of times, resuming each time
    assert read.attempts == 5
