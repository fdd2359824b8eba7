"""A start task lost with its worker: beat sends another, or the stream says why it is stuck."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models.functions import Now
from django.utils import timezone

from partitions.models import Partition
from partitions.pipeline import scheduling, starting, sweeps
from partitions.sources.base import NewPartition
from streams import actions
from streams.models import Stream

S = Stream.State
pytestmark = pytest.mark.django_db


def starting_since(make_stream, name: str, seconds: float, claimed_for: float | None = None) -> Stream:
    """Return a STARTING stream that moved there `seconds` ago, its start claimed for `claimed_for` s."""
    stream = make_stream(name, state=S.STARTING)
    claim = Now() + timedelta(seconds=claimed_for) if claimed_for is not None else None
    Stream.objects.filter(pk=stream.pk).update(
        state_changed_at=timezone.now() - timedelta(seconds=seconds), start_claimed_until=claim
    )
    return stream


def test_a_start_whose_task_was_lost_is_sent_again(make_stream, queued):
    # given streams STARTING: one whose message was lost (nobody claimed it for a minute),
    # one whose task died mid-start (its claim lapsed), one just moved, one being started now
    lost = starting_since(make_stream, "lost", 60)
    died = starting_since(make_stream, "died", 300, claimed_for=-1)
    starting_since(make_stream, "new", 2)
    starting_since(make_stream, "busy", 300, claimed_for=60)
    # when beat sweeps
    counts = sweeps.sweep_starting(queued)
    # then the lost and the died get a start task, the others are left to theirs
    assert counts == {"restarted": 2, "failed": 0}
    assert sorted(pk for pk, _ in queued.starts) == sorted([lost.pk, died.pk])


def test_a_start_nobody_runs_for_the_start_timeout_fails_saying_why(make_stream, queued, settings):
    stream = starting_since(make_stream, "stuck", settings.CDC_START_TIMEOUT_SECONDS + 1)
    assert sweeps.sweep_starting(queued) == {"restarted": 0, "failed": 1}
    stream.refresh_from_db()
    assert stream.state == S.FAILED
    assert "no start task ran for 600 s (CDC_START_TIMEOUT_SECONDS)" in stream.state_reason
    assert stream.next_retry_at is not None
    assert not queued.starts


def test_one_start_task_at_a_time_and_a_recover_meanwhile_wins(make_stream, queued, monkeypatch):
    # given a stream being started, whose source answers while an operator recovers it from now
    stream = make_stream("s", state=S.FAILED_PERMANENTLY)
    actions.recover(stream, "watermark", by="otto")
    point = timezone.now() - timedelta(minutes=1)
    calls = []

    def roots(stream_, at):
        calls.append(at)
        if len(calls) == 1:
            # a second start task finds the start taken; then the operator recovers from a point
            assert starting.start_stream(Stream.objects.get(pk=stream.pk), queued) == "started elsewhere"
            actions.recover(Stream.objects.get(pk=stream.pk), "timestamp", point, by="otto")
        return [NewPartition(f"root-{len(calls)}", at, ())]

    monkeypatch.setattr(starting, "find_roots", roots)
    # when the first start task ends, its roots are not stored: the recover took the start away
    assert starting.start_stream(stream, queued) == "not starting: paused or recovered meanwhile"
    assert not Partition.objects.filter(stream=stream).exists()
    assert Stream.objects.get(pk=stream.pk).state == S.STARTING
    # and the recover's own start task starts it from the recovery point
    assert starting.start_stream(Stream.objects.get(pk=stream.pk), queued).startswith("running")
    assert list(Partition.objects.filter(stream=stream).values_list("token", "start_at")) == [
        ("root-2", point)
    ]
    stream.refresh_from_db()
    assert (stream.state, stream.start_claimed_until, stream.resume_from) == (S.RUNNING, None, None)


def test_a_start_can_be_paused(make_stream, queued):
    # given a stream STARTING whose start task has not run yet
    stream = make_stream("s", state=S.STARTING)
    # when an operator pauses it, it drains (nothing is read yet) to PAUSED
    actions.pause(stream, by="otto")
    assert scheduling.maybe_finish_drain(stream)
    # and the start task that runs late starts nothing
    assert starting.start_stream(stream, queued) == "not starting: stream is PAUSED"
    assert Stream.objects.get(pk=stream.pk).state == S.PAUSED
