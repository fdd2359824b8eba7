"""Query validation happens before anything is sent; errors are classified for retrying."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import pytest
from google.api_core import exceptions as api

from partitions.sources.spanner_change_stream.errors import (
    PermanentSpannerError,
    QueryValidationError,
    RetryableSpannerError,
)
from partitions.sources.spanner_change_stream.query import DIALECTS, build_query
from partitions.sources.spanner_change_stream.reader import (
    ChangeStreamReader,
    classify,
    connect,
    query_timeout,
)

START = datetime(2024, 1, 1, tzinfo=UTC)
BAD_NAMES = ['Changes"', "Chan'ges", "Chan ges", "Changes;DROP", "Changes--", "Changes/*", "1Changes", ""]


@pytest.fixture(scope="module")
def unreachable_database():
    # A real client aimed at a port nothing listens on: any query that were sent would fail
    # with UNAVAILABLE, so QueryValidationError proves nothing was sent.
    return connect("p", "i", "d", emulator_host="127.0.0.1:9")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("heartbeat_ms", [999, 300_001, 0, -1])
def test_heartbeat_outside_range_is_refused(dialect, heartbeat_ms, unreachable_database):
    reader = ChangeStreamReader(unreachable_database, "Changes", dialect, heartbeat_ms)
    with pytest.raises(QueryValidationError, match="heartbeat"):
        next(reader.read(None, START, None))


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("heartbeat_ms", [1_000, 300_000])
def test_heartbeat_bounds_are_accepted(dialect, heartbeat_ms):
    assert build_query(dialect, "Changes", START, None, None, heartbeat_ms).params


@pytest.mark.parametrize("dialect", DIALECTS)
def test_end_before_start_is_refused(dialect, unreachable_database):
    reader = ChangeStreamReader(unreachable_database, "Changes", dialect, 10_000)
    with pytest.raises(QueryValidationError, match="before"):
        next(reader.read("tok", START, START - timedelta(microseconds=1)))


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", BAD_NAMES)
def test_stream_names_that_could_inject_sql_are_refused(dialect, name, unreachable_database):
    reader = ChangeStreamReader(unreachable_database, name, dialect, 10_000)
    with pytest.raises(QueryValidationError, match="stream name"):
        next(reader.read(None, START, None))


def test_naive_start_is_refused():
    with pytest.raises(QueryValidationError):
        build_query("googlesql", "Changes", datetime(2024, 1, 1), None, None, 10_000)  # noqa: DTZ001


class _RpcError(grpc.RpcError):
    def __init__(self, code):
        self._code = code

    def code(self):
        return self._code

    def details(self):
        return "from grpc"


@pytest.mark.parametrize(
    ("exc", "kind", "code"),
    [
        (api.ServiceUnavailable("down"), RetryableSpannerError, "UNAVAILABLE"),
        (api.Aborted("conflict"), RetryableSpannerError, "ABORTED"),
        (api.DeadlineExceeded("slow"), RetryableSpannerError, "DEADLINE_EXCEEDED"),
        (api.TooManyRequests("quota"), RetryableSpannerError, "RESOURCE_EXHAUSTED"),
        (api.ResourceExhausted("quota"), RetryableSpannerError, "RESOURCE_EXHAUSTED"),
        (api.InternalServerError("Received unexpected EOS on DATA frame from server"), RetryableSpannerError,
         "INTERNAL"),
        (api.InternalServerError("stream terminated by RST_STREAM"), RetryableSpannerError, "INTERNAL"),
        (api.InternalServerError("please retry"), RetryableSpannerError, "INTERNAL"),
        (api.InternalServerError("assertion failed"), PermanentSpannerError, "INTERNAL"),
        (api.InvalidArgument("start too old"), PermanentSpannerError, "INVALID_ARGUMENT"),
        (api.NotFound("no such database"), PermanentSpannerError, "NOT_FOUND"),
        (api.PermissionDenied("no"), PermanentSpannerError, "PERMISSION_DENIED"),
        (api.Unauthenticated("who"), PermanentSpannerError, "UNAUTHENTICATED"),
        (api.FailedPrecondition("state"), PermanentSpannerError, "FAILED_PRECONDITION"),
        (api.RetryError("gave up", api.ServiceUnavailable("down")), RetryableSpannerError, "UNAVAILABLE"),
        (_RpcError(grpc.StatusCode.UNAVAILABLE), RetryableSpannerError, "UNAVAILABLE"),
        (_RpcError(grpc.StatusCode.INVALID_ARGUMENT), PermanentSpannerError, "INVALID_ARGUMENT"),
        (ConnectionResetError("reset"), RetryableSpannerError, "UNAVAILABLE"),
        (api.Cancelled("the server shut down"), RetryableSpannerError, "CANCELLED"),
        (ValueError("odd"), PermanentSpannerError, "UNKNOWN"),
    ],
)  # fmt: skip
def test_errors_are_classified(exc, kind, code):
    error = classify(exc)
    assert type(error) is kind
    assert error.code == code
    assert error.retryable is (kind is RetryableSpannerError)


def test_open_ended_queries_get_a_long_explicit_deadline():
    assert query_timeout(START, None) > 3600
    now = START + timedelta(minutes=1)
    assert query_timeout(START, START + timedelta(minutes=5), now=now) == pytest.approx(240 + 600)
    assert query_timeout(START, START, now=now) == pytest.approx(600)
