"""Retention: beat deletes what is older than its CDC_KEEP_* age, keeps the rest, and logs what it deleted."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt
from cdcweb.reports.models import Report
from cdcweb.retention import purge
from cdcweb.retention.tasks import purge_old_data_task
from partitions.pipeline import landing
from partitions.sources.spanner_change_stream.landing import build_table
from partitions.watch.importing import import_streams
from partitions.watch.polling import poll_watched
from streams.models import StreamError
from tests.factories.datastream import LOCATION, PROJECT
from tests.partitions.pipeline.test_landing import make_record

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


@pytest.fixture
def rows(make_stream, tmp_path, settings):
    """Create an old and a recent row of every kind the job deletes; return the old ones' markers."""
    settings.CDC_REPORTS_DIR = tmp_path / "reports"
    stream = make_stream("orders")
    for age in (40, 1):
        StreamError.objects.create(stream=stream, at=days_ago(age), kind="retryable", message=f"{age} days")
    rule = AlertRule.objects.create(name="failed", kind="stream_failed", stream=stream)
    channel = Channel.objects.create(name="mail", kind="email", email_to=["ops@example.com"])
    alert = lambda summary, fired, **more: Alert.objects.create(  # noqa: E731
        rule=rule, stream=stream, kind=rule.kind, summary=summary, fired_at=days_ago(fired), **more
    )
    alerts = {
        "old resolved": alert("a", 100, state="RESOLVED", resolved_at=days_ago(95)),
        "recent resolved": alert("b", 12, state="RESOLVED", resolved_at=days_ago(10)),
        "firing for long": alert("c", 200),
    }  # fmt: skip
    for age in (40, 1):
        DeliveryAttempt.objects.create(alert=alerts["firing for long"], channel=channel, channel_name="mail",
                                       event="firing", status="SENT", at=days_ago(age))  # fmt: skip
    for age, status in ((120, "DONE"), (120, "RUNNING"), (5, "DONE")):
        folder = tmp_path / "reports" / f"{age}-{status}"
        folder.mkdir(parents=True)
        Report.objects.create(stream=stream, since=days_ago(age + 1), until=days_ago(age), status=status,
                              requested_by="t", created_at=days_ago(age), output_dir=str(folder))  # fmt: skip
    return stream, alerts


def test_old_rows_go_recent_ones_and_firing_alerts_stay(rows, tmp_path, caplog):
    _, alerts = rows
    # when the job runs with the default ages
    with caplog.at_level(logging.INFO, logger="cdcweb.retention"):
        counts = purge.run(NOW)
    # then what is past its age is gone, the rest is there
    assert counts == {"stream errors": 1, "delivery attempts": 1, "resolved alerts": 1, "reports": 1}
    assert list(StreamError.objects.values_list("message", flat=True)) == ["1 days"]
    assert [d.at for d in DeliveryAttempt.objects.all()] == [days_ago(1)]
    assert set(Alert.objects.values_list("summary", flat=True)) == {"b", "c"}
    # a running report is never deleted, however old; a deleted one's output folder goes with it
    assert set(Report.objects.values_list("status", "created_at")) == {
        ("RUNNING", days_ago(120)),
        ("DONE", days_ago(5)),
    }
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["120-RUNNING", "5-DONE"]
    # and the log says what went
    said = [r.getMessage() for r in caplog.records]
    assert "retention: deleted 1 stream errors older than 30 days" in said
    assert "retention: deleted 1 reports older than 90 days" in said


def test_ages_are_settings_and_zero_keeps_for_ever(rows, settings):
    settings.CDC_KEEP_ERRORS_DAYS = 0
    settings.CDC_KEEP_DELIVERIES_DAYS = 0
    settings.CDC_KEEP_RESOLVED_ALERTS_DAYS = 7
    settings.CDC_KEEP_REPORTS_DAYS = 0
    counts = purge.run(NOW)
    assert counts == {"resolved alerts": 2}
    assert StreamError.objects.count() == 2
    assert list(Alert.objects.values_list("summary", flat=True)) == ["c"]


def test_batches_delete_everything_past_its_age(make_stream, monkeypatch):
    monkeypatch.setattr(purge, "BATCH", 3)
    stream = make_stream("orders")
    StreamError.objects.bulk_create(
        StreamError(stream=stream, at=days_ago(31 + i), kind="record", message="m") for i in range(10)
    )
    assert purge.run(NOW)["stream errors"] == 10
    assert not StreamError.objects.exists()


def _land(uri: str, stream_id: int, day: datetime) -> None:
    table = build_table("orders", "tok", [make_record()], day)
    landing.write_table(uri, stream_id, "tok", day, table)


@pytest.mark.parametrize("keep_days", [0, 10])
def test_landed_files_are_kept_for_ever_unless_told(db, settings, tmp_path, keep_days, caplog):
    # given days of landed files, and a folder of files landed by name before ids
    uri = str(tmp_path / "landing")
    settings.CDC_LANDING_URI, settings.CDC_LANDING_KEEP_DAYS = uri, keep_days
    for age in (30, 11, 9, 0):
        _land(uri, 1, days_ago(age))
    (tmp_path / "landing" / "stream=orders" / "date=2026-01-02").mkdir(parents=True)
    (tmp_path / "landing" / "stream=orders" / "date=2026-01-02" / "w.parquet").write_bytes(b"")
    # when the job runs
    with caplog.at_level(logging.INFO, logger="cdcweb.retention"):
        counts = purge.run(NOW)
    days = sorted(p.name for p in (tmp_path / "landing").glob("*/date=*"))
    if keep_days == 0:
        # then nothing landed is deleted by default
        assert "landed files" not in counts
        assert len(days) == 5
    else:
        # then only whole days older than the age go, of every stream's folder
        assert counts["landed files"] == 3
        assert days == ["date=2026-11-16", "date=2026-11-25"]
        assert any("deleted 3 landed files in 3 day folders before 2026-11-15" in r.getMessage()
                   for r in caplog.records)  # fmt: skip


def test_beat_runs_it_hourly_on_the_housekeeping_queue():
    entry = django_settings.CELERY_BEAT_SCHEDULE["purge-old-data"]
    assert entry["task"] == purge_old_data_task.name
    assert entry["schedule"] == 3600.0
    assert django_settings.CELERY_TASK_ROUTES["cdcweb.retention.tasks.*"] == {"queue": "housekeeping"}


def test_an_error_datastream_still_reports_is_kept_and_not_stored_again(db, at_sim, pick):
    # given a watched stream whose two errors Datastream reports, stored by a poll 40 days after they began
    stream = import_streams(PROJECT, LOCATION, pick("FAILED_PERMANENTLY")).created[0]
    poll_watched()
    errors = StreamError.objects.filter(stream=stream)
    assert errors.count() == 2
    errors.update(at=timezone.now() - timedelta(days=40))
    # and one more, of our own making and as old, that nothing reports any more
    StreamError.objects.create(
        stream=stream, at=timezone.now() - timedelta(days=40), kind="retryable", message="x"
    )
    # when the retention job runs (errors are kept 30 days by default)
    assert django_settings.CDC_KEEP_ERRORS_DAYS == 30
    purge.run(timezone.now())
    # then the errors Datastream still reports stay, the other is gone
    assert errors.count() == 2
    assert not errors.filter(uuid="").exists()
    # and the next poll finds them stored: nothing is added as new
    assert poll_watched().errors == 0
    assert errors.count() == 2


def test_an_error_datastream_stopped_reporting_ages_from_when_it_was_last_seen(db, at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("FAILED_PERMANENTLY")).created[0]
    poll_watched()
    errors = StreamError.objects.filter(stream=stream)
    old = timezone.now() - timedelta(days=40)
    errors.update(at=old, last_seen_at=old + timedelta(days=15))  # last reported 25 days ago: kept
    purge.run(timezone.now())
    assert errors.count() == 2
    errors.update(last_seen_at=old + timedelta(days=5))  # last reported 35 days ago: gone
    purge.run(timezone.now())
    assert errors.count() == 0
