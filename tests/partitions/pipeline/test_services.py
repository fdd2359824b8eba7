"""The pipeline's services without a broker: leases, checkpoints, scheduling, drain, failures, lag."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from partitions import stalls
from partitions.models import LagSample, Partition, PartitionEdge
from partitions.pipeline import checkpoint, failures, leases, scheduling
from partitions.pipeline import lag_samples as lag
from partitions.sources.base import Ended, NewPartition
from partitions.sources.spanner_change_stream.errors import PermanentSpannerError, RetryableSpannerError
from streams.models import Stream, StreamError
from streams.transitions import transition
from tests.factories import make_stream

P, S = Partition.State, Stream.State
T0 = datetime(2026, 1, 1, tzinfo=UTC)
pytestmark = pytest.mark.django_db


@pytest.fixture
def started_stream():
    """Return a RUNNING stream with no partitions yet, started through the state machine."""
    s = make_stream("orders", change_stream="Changes", start_at=T0)
    transition(s, S.STARTING, by="test")
    return transition(s, S.RUNNING, by="test")


def part(stream, token, state=P.RUNNING, **fields):
    fields = {"start_at": T0, "watermark": T0, **fields}
    return Partition.objects.create(stream=stream, token=token, state=state, **fields)


def finish_with_children(partition, owner, *children, parents=None):
    at = T0 + timedelta(seconds=5)
    ended = Ended(at, tuple(NewPartition(c, at, tuple(parents or [partition.token])) for c in children))
    progress = checkpoint.Progress(start=T0, watermark=T0, ended=ended, finish_at=at)
    return checkpoint.save_progress(partition.pk, owner, progress, keep_lease=True)


def test_only_one_of_two_readers_wins_the_lease(started_stream):
    # given a scheduled partition
    p = part(started_stream, "a", P.SCHEDULED)
    # when two readers ask for its lease
    first, second = leases.take(p, "r1"), leases.take(p, "r2")
    # then one wins, and the partition is RUNNING under that one
    assert (first, second) == (True, False)
    p.refresh_from_db()
    assert (p.state, p.lease_owner) == (P.RUNNING, "r1")


def test_an_expired_lease_can_be_taken_over(started_stream):
    p = part(started_stream, "a", lease_owner="dead", lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert leases.take(p, "r2")


def test_merged_child_is_scheduled_once_both_parents_finish(started_stream, queued):
    # given two partitions that merge into one child
    left, right = part(started_stream, "L", lease_owner="r1"), part(started_stream, "R", lease_owner="r2")
    finish_with_children(left, "r1", "C", parents=["L", "R"])
    child = Partition.objects.get(token="C")
    # when only one parent has finished, the child waits
    scheduling.schedule_children(left, queued)
    assert Partition.objects.get(pk=child.pk).state == P.CREATED
    # when the other parent announces the same child and finishes
    finish_with_children(right, "r2", "C", parents=["L", "R"])
    scheduling.schedule_children(right, queued)
    # then the child exists once, with both edges, and is queued once
    assert Partition.objects.filter(token="C").count() == 1
    assert set(PartitionEdge.objects.filter(child=child).values_list("parent__token", flat=True)) == {
        "L",
        "R",
    }
    assert Partition.objects.get(pk=child.pk).state == P.SCHEDULED
    assert queued.reads == [(child.pk, 0)]


def test_checkpoint_never_moves_a_watermark_back_and_needs_the_lease(started_stream):
    p = part(started_stream, "a", lease_owner="r1", watermark=T0 + timedelta(seconds=10))
    older = checkpoint.Progress(start=T0, watermark=T0 + timedelta(seconds=3), heartbeats=1)
    assert checkpoint.save_progress(p.pk, "r1", older, keep_lease=True).watermark == T0 + timedelta(
        seconds=10
    )
    assert checkpoint.save_progress(p.pk, "someone-else", older, keep_lease=True) is None


def test_draining_stream_pauses_only_once_no_lease_is_held(started_stream):
    p = part(started_stream, "a", lease_owner="r1", lease_expires_at=timezone.now() + timedelta(seconds=30))
    transition(started_stream, S.DRAINING, by="test")
    assert not scheduling.maybe_finish_drain(started_stream)
    leases.release(p.pk, "r1")
    assert scheduling.maybe_finish_drain(started_stream)
    assert Stream.objects.get(pk=started_stream.pk).state == S.PAUSED


def test_stream_that_reached_its_end_says_so(started_stream):
    Stream.objects.filter(pk=started_stream.pk).update(end_at=T0 + timedelta(minutes=1))
    part(started_stream, "a", P.FINISHED, end_at=T0 + timedelta(minutes=1))
    assert scheduling.maybe_finish_stream(started_stream)
    started_stream.refresh_from_db()
    assert started_stream.state == S.PAUSED
    assert "reached end timestamp" in started_stream.state_reason
    assert started_stream.reached_end_at is not None  # resume refuses a complete stream (streams.actions)


def test_retryable_errors_fail_the_stream_and_a_success_brings_it_back(started_stream, queued, settings):
    settings.CDC_MAX_CONSECUTIVE_FAILURES = 2
    p = part(started_stream, "a", lease_owner="r1")
    for attempt in (1, 2):
        leases.take(p, f"r{attempt}")
        failures.handle_read_error(
            started_stream, p, f"r{attempt}", RetryableSpannerError("down", code="UNAVAILABLE"), queued
        )
        Partition.objects.filter(pk=p.pk).update(lease_expires_at=None)
    started_stream.refresh_from_db()
    assert started_stream.state == S.FAILED
    assert started_stream.consecutive_failures == 2
    assert [c for _, c in queued.reads] == [1.0, 2.0]  # capped exponential backoff
    assert StreamError.objects.filter(stream=started_stream, kind="retryable").count() == 2
    leases.take(p, "r3")
    checkpoint.save_progress(p.pk, "r3", checkpoint.Progress(start=T0, watermark=T0), keep_lease=True)
    started_stream.refresh_from_db()
    assert (started_stream.state, started_stream.consecutive_failures) == (S.RUNNING, 0)


def test_permanent_error_stops_the_stream_with_the_reason(started_stream, queued):
    p = part(started_stream, "a", lease_owner="r1")
    error = PermanentSpannerError("start is outside the retention period", code="INVALID_ARGUMENT")
    failures.handle_read_error(started_stream, p, "r1", error, queued)
    started_stream.refresh_from_db()
    assert started_stream.state == S.FAILED_PERMANENTLY
    assert "retention" in started_stream.state_reason
    assert Partition.objects.get(pk=p.pk).watermark == T0
    assert queued.reads == []


@pytest.mark.parametrize(
    "error",
    [
        RetryableSpannerError("Stream removed", code="DEADLINE_EXCEEDED"),
        PermanentSpannerError("?", code="UNKNOWN"),
    ],
)
def test_a_read_that_fails_after_its_lease_passed_on_changes_nothing(started_stream, queued, error):
    # given a partition that reader r2 took over while r1's read stood still (its process stopped)
    p = part(started_stream, "a", lease_owner="r2")
    # when r1's read wakes and fails (its connection's keepalive timed out meanwhile)
    failures.handle_read_error(started_stream, p, "r1", error, queued)
    failures.handle_unexpected_error(started_stream, p, "r1", OSError("disk"), queued)
    # then the stream shows no error, counts none and stays RUNNING; r2 reads on
    started_stream.refresh_from_db()
    assert (started_stream.state, started_stream.consecutive_failures) == (S.RUNNING, 0)
    assert not StreamError.objects.filter(stream=started_stream).exists()
    assert Partition.objects.get(pk=p.pk).lease_owner == "r2"
    assert queued.reads == []


def test_lag_samples_fold_into_coarser_tiers(started_stream):
    now = T0 + timedelta(days=8)
    part(started_stream, "a")
    for i in range(360):  # an hour of 10 s samples, 7 hours ago
        LagSample.objects.create(
            stream=started_stream, at=now - timedelta(hours=7, seconds=10 * i), lag_seconds=i
        )
    lag.downsample(started_stream.pk, now)
    rows = LagSample.objects.filter(stream=started_stream)
    assert rows.count() <= 61
    assert set(rows.values_list("resolution_seconds", flat=True)) == {60}
    assert max(rows.values_list("lag_seconds", flat=True)) == 359  # the worst survives


def test_stalled_partition_records_rule_and_evidence(started_stream, settings):
    settings.CDC_STALL_HEARTBEATS = 6
    now = timezone.now()
    part(started_stream, "a", last_progress_at=now - timedelta(minutes=5))
    assert stalls.detect_stalled_partitions(started_stream, now) == 1
    p = Partition.objects.get(token="a")
    assert p.stalled
    assert p.stall_rule == stalls.STALLED
    assert p.stall_evidence["threshold_seconds"] == 60


def test_merged_child_waits_for_a_parent_that_does_not_exist_yet(started_stream, queued):
    # given a merge of L and R where R's own parent has not announced R yet
    left = part(started_stream, "L", lease_owner="r1")
    finish_with_children(left, "r1", "C", parents=["L", "R"])
    # then the child is not stored (nor scheduled) on L's word alone
    assert not Partition.objects.filter(token="C").exists()
    # when R appears, is read and announces the same child
    right = part(started_stream, "R", lease_owner="r2")
    finish_with_children(right, "r2", "C", parents=["L", "R"])
    scheduling.schedule_children(right, queued)
    # then the child has both edges and is scheduled once both parents finished
    child = Partition.objects.get(token="C")
    assert set(PartitionEdge.objects.filter(child=child).values_list("parent__token", flat=True)) == {
        "L",
        "R",
    }
    assert child.state == P.SCHEDULED
