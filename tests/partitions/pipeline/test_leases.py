"""Leases: timed by the database's clock, renewed on a timer while a read lives, kept through retries."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from partitions.models import Partition
from partitions.pipeline import leases, services, window
from streams.models import Stream, StreamError
from tests.partitions.pipeline.test_window import busy_partition, running_stream

P, S = Partition.State, Stream.State


@pytest.fixture
def skewed_clock(monkeypatch):
    """Return a setter of this worker's clock skew (django.utils.timezone.now runs ahead by it)."""
    real = timezone.now

    def skew(seconds: float) -> None:
        monkeypatch.setattr(timezone, "now", lambda: real() + timedelta(seconds=seconds))

    return skew


@pytest.mark.django_db
def test_lease_times_come_from_the_database_not_the_worker(make_stream, make_partition, skewed_clock):
    # given a partition whose lease another host holds for another minute, by the database's clock
    stream = make_stream("s", state=S.RUNNING)
    partition = make_partition(stream)
    assert leases.take(partition, "host-a")
    # when a worker whose clock runs ten minutes ahead tries to take it
    skewed_clock(600)
    # then it cannot: by the database the lease is live
    assert not leases.take(partition, "host-b")
    # and a lease it takes itself ends a lease from the database's now, not from its own
    skewed_clock(-600)
    assert leases.release(partition.pk, "host-a")
    assert leases.take(partition, "host-b")
    partition.refresh_from_db()
    expires_in = (partition.lease_expires_at - leases.database_now(partition.pk)).total_seconds()
    assert 55 < expires_in <= 60


@pytest.mark.django_db(transaction=True)
def test_the_keeper_renews_a_quiet_read_and_reports_a_lease_taken_over(
    make_stream, make_partition, settings, wait_for
):
    # given a 1.5 s lease held by a read that lands nothing (the keeper renews every 0.5 s)
    settings.CDC_LEASE_SECONDS = 1.5
    stream = make_stream("s", state=S.RUNNING)
    partition = make_partition(stream)
    assert leases.take(partition, "quiet")
    keeper = leases.Keeper()
    keeper.hold(partition.pk, "quiet")
    try:
        # when four leases pass, the lease is still its own and live
        first = Partition.objects.get(pk=partition.pk).lease_expires_at
        wait_for("four renewals", lambda: Partition.objects.get(pk=partition.pk).lease_expires_at
                 > first + timedelta(seconds=2), timeout=10)  # fmt: skip
        assert not leases.take(partition, "other")
        assert not keeper.lost(partition.pk, "quiet")
        # when someone else holds it (as after this process stood still past its lease)
        Partition.objects.filter(pk=partition.pk).update(lease_owner="other")
        # then the keeper says so, and renews it no longer
        wait_for("the loss to be seen", lambda: keeper.lost(partition.pk, "quiet"), timeout=10)
        assert Partition.objects.get(pk=partition.pk).lease_owner == "other"
    finally:
        keeper.drop(partition.pk, "quiet")


@pytest.mark.django_db(transaction=True)  # the lease keeper's thread sees committed rows only
def test_a_failed_checkpoint_is_retried_without_reading_the_window_again(
    simulator, settings, queued, monkeypatch, caplog
):
    # given a window whose first two checkpoints meet a locked database
    settings.CDC_LANDING_URI = str(settings.VAR_DIR / "landing-locked")
    start = (timezone.now() - timedelta(minutes=10)).replace(microsecond=0)
    stream = running_stream(simulator, start)
    partition = busy_partition(simulator, stream, start)
    save, calls = window.save_progress, []

    def locked_twice(*args, **kwargs):
        calls.append(1)
        if len(calls) <= 2:
            raise OperationalError("database is locked")
        return save(*args, **kwargs)

    monkeypatch.setattr(window, "save_progress", locked_twice)
    queries_before = len(simulator.queries())
    # when the window is read
    with caplog.at_level(logging.WARNING):
        outcome = services.read_next_window(partition, queued)
    # then it was read once and checkpointed on the third try, the stream never failed
    assert outcome in ("continued", "finished")
    assert len(simulator.queries()) - queries_before == 1
    partition.refresh_from_db()
    assert partition.watermark > start
    stream.refresh_from_db()
    assert (stream.state, stream.consecutive_failures) == (S.RUNNING, 0)
    assert not StreamError.objects.filter(stream=stream).exists()
    # and the expected conflict was logged as one line each, no traceback
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2
    assert all(r.exc_info is None for r in caplog.records)


@pytest.mark.django_db(transaction=True)  # the lease keeper's thread sees committed rows only
def test_a_database_outage_is_no_source_failure_and_the_retry_takes_its_own_lease_back(
    simulator, settings, queued, monkeypatch
):
    # given a window whose checkpoints all fail, past a (short) lease of retries
    settings.CDC_LEASE_SECONDS = 1
    settings.CDC_LANDING_URI = str(settings.VAR_DIR / "landing-outage")
    start = (timezone.now() - timedelta(minutes=10)).replace(microsecond=0)
    stream = running_stream(simulator, start)
    partition = busy_partition(simulator, stream, start)
    save = window.save_progress

    def down(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(window, "save_progress", down)
    # when the task's first attempt reads it, the database error goes to the task's retry
    with pytest.raises(OperationalError):
        services.read_next_window(partition, queued, services.Attempt("task-1", "w1", 0))
    # then the stream is untouched: not FAILED, no failure counted, no error row
    stream.refresh_from_db()
    assert (stream.state, stream.consecutive_failures) == (S.RUNNING, 0)
    assert not StreamError.objects.filter(stream=stream).exists()
    # and the failed attempt kept its lease: another task finds it held, while the retry of the
    # same task takes it back at once (the lease is moved a minute on first: a one-second lease
    # could lapse on a loaded machine before task-2 asks, and task-2 then rightly takes it)
    held = Partition.objects.filter(pk=partition.pk, lease_expires_at__isnull=False).exclude(lease_owner="")
    assert held.update(lease_expires_at=timezone.now() + timedelta(minutes=1)) == 1
    monkeypatch.setattr(window, "save_progress", save)
    settings.CDC_LEASE_SECONDS = 60
    assert services.read_next_window(partition, queued, services.Attempt("task-2", "w2", 0)) == "not leased"
    assert services.read_next_window(partition, queued, services.Attempt("task-1", "w2", 1)) != "not leased"


def test_a_lease_start_is_logged_at_info_and_a_renewal_only_at_debug(caplog):
    # given the lease log at INFO (its default: CDC_LEASE_LOG_LEVEL), then at DEBUG
    seen = {}
    for level in (logging.INFO, logging.DEBUG):
        caplog.clear()
        with caplog.at_level(level, logger="partitions.lease"):
            # when a lease starts and is renewed
            leases.log_lease("start", 7, "w1")
            leases.log_lease("renew", 7, "w1", timezone.now())
        seen[level] = [r.getMessage().split()[1] for r in caplog.records]
    # then a renewal (one per checkpoint) shows only at DEBUG
    assert seen == {logging.INFO: ["start"], logging.DEBUG: ["start", "renew"]}
