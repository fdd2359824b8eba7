"""Beat's sweep of reports left behind: a lost task is sent again, a dead worker's report fails."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models.functions import Now
from django.utils import timezone

from cdcweb.reports import services as report_services
from cdcweb.reports.models import Report
from cdcweb.reports.tasks import fail_reports_of_previous_run
from tests.cdcweb.reports.conftest import SINCE, UNTIL
from tests.factories import make_stream

S = Report.Status


def report(stream, status, **fields) -> Report:
    return Report.objects.create(stream=stream, since=SINCE, until=UNTIL, status=status, requested_by="otto",
                                 **fields)  # fmt: skip


def ago(seconds: float):
    return Now() - timedelta(seconds=seconds)


def test_a_running_report_whose_worker_stopped_stamping_fails_saying_so(new_stream):
    # given one report whose worker stamped it 31 s ago (three stamps missed) and one stamped now
    dead = report(new_stream, S.RUNNING, worker="reports-1@a")
    alive = report(new_stream, S.RUNNING, worker="reports-2@b")
    Report.objects.filter(pk=dead.pk).update(heartbeat_at=ago(31), started_at=ago(60))
    Report.objects.filter(pk=alive.pk).update(heartbeat_at=Now(), started_at=ago(600))
    # when beat sweeps
    counts = report_services.sweep_reports()
    # then only the dead one failed, with the reason
    dead.refresh_from_db()
    assert (counts["failed"], dead.status) == (1, S.FAILED)
    assert "start the report again" in dead.error
    assert Report.objects.get(pk=alive.pk).status == S.RUNNING


def test_a_report_queued_too_long_is_sent_again_once(
    new_stream, django_capture_on_commit_callbacks, monkeypatch
):
    # given a report whose task was sent 3 minutes ago and one sent just now
    sent = []
    monkeypatch.setattr("streams.dispatch.send", lambda name, args: sent.append((name, *args)))
    lost = report(new_stream, S.QUEUED)
    fresh = report(new_stream, S.QUEUED)
    Report.objects.filter(pk=lost.pk).update(sent_at=ago(180))
    Report.objects.filter(pk=fresh.pk).update(sent_at=Now())
    # when beat sweeps twice in a row
    with django_capture_on_commit_callbacks(execute=True):
        first = report_services.sweep_reports()
        second = report_services.sweep_reports()
    # then the lost one's task was sent again, once
    assert (first["requeued"], second["requeued"]) == (1, 0)
    assert sent == [("cdcweb.reports.tasks.run_report_task", lost.pk)]


def test_a_worker_starting_under_a_name_still_in_use_leaves_the_live_ones_reports_alone(new_stream):
    # given two workers with one node name: one died with a report, the other runs one now
    left = report(new_stream, S.RUNNING, worker="reports@host")
    running = report(new_stream, S.RUNNING, worker="reports@host")
    Report.objects.filter(pk=left.pk).update(heartbeat_at=ago(60))
    Report.objects.filter(pk=running.pk).update(heartbeat_at=Now())
    # when a worker of that name starts
    fail_reports_of_previous_run(sender=type("Consumer", (), {"hostname": "reports@host"})())
    # then only the report nobody stamps failed
    assert Report.objects.get(pk=left.pk).status == S.FAILED
    assert Report.objects.get(pk=running.pk).status == S.RUNNING


@pytest.mark.django_db(transaction=True)
def test_a_running_report_is_stamped_however_quiet_its_job(monkeypatch, wait_for):
    # given a RUNNING report last stamped a minute ago, and stamps every 0.2 s
    monkeypatch.setattr(report_services, "HEARTBEAT_SECONDS", 0.2)
    stream = make_stream("quiet", start_at=timezone.now())
    running = report(stream, S.RUNNING)
    Report.objects.filter(pk=running.pk).update(heartbeat_at=ago(60))
    before = Report.objects.get(pk=running.pk).heartbeat_at
    # when its heartbeat runs (as it does beside every job, whatever the job prints)
    beating = report_services.Heartbeat(running.pk)
    beating.start()
    try:
        # then the report is stamped again and again, and the sweep leaves it alone
        wait_for("a stamp", lambda: Report.objects.get(pk=running.pk).heartbeat_at > before, timeout=10)
        assert report_services.sweep_reports()["failed"] == 0
    finally:
        beating.stop()
    assert not beating.is_alive()
