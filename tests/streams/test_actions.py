"""Operator actions: they move the stream and hand the work to the pipeline after commit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from partitions.models import Partition
from streams import actions
from streams.models import Stream
from streams.transitions import TransitionNotAllowed

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


def test_start_enqueues_the_start_task_only_after_commit(
    make_stream, sent_tasks, django_capture_on_commit_callbacks
):
    stream = make_stream()
    with django_capture_on_commit_callbacks() as callbacks:
        actions.start(stream, by="alice")
        assert sent_tasks.start_stream_task.sent == []
    for callback in callbacks:
        callback()
    assert sent_tasks.start_stream_task.sent == [stream.pk]
    assert stream.state == "STARTING"
    assert stream.transitions.get().by == "alice"


def test_pause_drains_and_records_when(make_stream, sent_tasks, django_capture_on_commit_callbacks):
    stream = make_stream(state="RUNNING")
    with django_capture_on_commit_callbacks(execute=True):
        actions.pause(stream, by="alice")
    assert Stream.objects.get(pk=stream.pk).state == "DRAINING"
    assert stream.paused_at is not None
    assert sent_tasks.drain_stream_task.sent == [stream.pk]


def test_refused_action_enqueues_nothing(make_stream, sent_tasks, django_capture_on_commit_callbacks):
    stream = make_stream(state="RUNNING")
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(TransitionNotAllowed):
        actions.resume(stream, by="alice")
    assert sent_tasks.start_stream_task.sent == []


def test_resume_continues_from_watermarks(make_stream, sent_tasks):
    stream = make_stream(state="PAUSED", resume_from=T0)
    actions.resume(stream, by="alice")
    assert (stream.state, stream.resume_from) == ("STARTING", None)


def test_resume_of_a_stream_that_reached_its_end_is_refused(make_stream, make_partition, sent_tasks):
    end = T0 + timedelta(hours=1)
    stream = make_stream(state="PAUSED", end_at=end, reached_end_at=end)  # as the pipeline leaves it
    make_partition(stream, state=Partition.State.FINISHED, end_at=end)
    with pytest.raises(TransitionNotAllowed, match="finished at its end timestamp 2026-01-01T13:00"):
        actions.resume(stream, by="alice")
    assert Stream.objects.get(pk=stream.pk).state == "PAUSED"


def test_recover_from_timestamp_sets_where_the_start_task_reads(make_stream, sent_tasks):
    stream = make_stream(state="FAILED_PERMANENTLY", consecutive_failures=3)
    at = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)
    actions.recover(stream, "timestamp", at, by="alice")
    stored = Stream.objects.get(pk=stream.pk)
    assert (stored.state, stored.resume_from, stored.consecutive_failures) == ("STARTING", at, 0)
    assert "from timestamp (2026-01-01T12:30:00.000000Z)" in stored.state_reason


def test_recover_from_now_and_from_watermark(make_stream, sent_tasks):
    now_stream = make_stream(name="a", state="FAILED_PERMANENTLY")
    actions.recover(now_stream, "now", by="alice")
    assert timezone.now() - now_stream.resume_from < timedelta(seconds=5)
    kept = make_stream(name="b", state="FAILED_PERMANENTLY", resume_from=T0)
    actions.recover(kept, "watermark", by="alice")
    assert kept.resume_from is None


@pytest.mark.parametrize(
    ("strategy", "timestamp", "message"),
    [
        ("sideways", None, "unknown recovery strategy 'sideways'"),
        ("timestamp", None, "needs a timestamp"),
        ("timestamp", datetime(2026, 1, 1, 12), "has no time zone"),  # noqa: DTZ001 - the point of the test
        ("timestamp", datetime.now(UTC) + timedelta(hours=1), "is in the future"),
        ("now", T0, "only used with strategy 'timestamp'"),
    ],
)
def test_recover_refuses_bad_arguments_and_changes_nothing(
    make_stream, sent_tasks, strategy, timestamp, message
):
    stream = make_stream(state="FAILED_PERMANENTLY")
    with pytest.raises(actions.InvalidAction, match=message):
        actions.recover(stream, strategy, timestamp, by="alice")
    assert Stream.objects.get(pk=stream.pk).state == "FAILED_PERMANENTLY"


def test_recover_past_the_streams_end_is_refused(make_stream, sent_tasks):
    stream = make_stream(state="FAILED_PERMANENTLY", end_at=T0 + timedelta(minutes=5))
    with pytest.raises(actions.InvalidAction, match="it ends at 2026-01-01T12:05"):
        actions.recover(stream, "now", by="alice")
