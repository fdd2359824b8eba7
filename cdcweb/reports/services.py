"""Spark reports: create and validate them, run spark-submit, follow its progress, store results.

Lifecycle: QUEUED (created, task enqueued after commit) -> RUNNING (claimed by one task
with a conditional UPDATE) -> DONE or FAILED. A task delivered twice finds the report
no longer QUEUED and does nothing. While a report runs, its worker stamps
``heartbeat_at`` (the database's now) every HEARTBEAT_SECONDS. Beat's sweep
(``sweep_reports``) sends the task of a report QUEUED for REQUEUE_SECONDS again (a
message lost with a worker; a duplicate finds it claimed), and marks FAILED a RUNNING
report whose heartbeat stopped ("start it again"): re-running it could loop on a job
that kills its worker. A job running past CDC_REPORT_TIMEOUT_SECONDS is killed, so a
live worker never leaves a report RUNNING forever.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from partitions.models import Partition
from streams import dispatch
from streams.models import Stream

from .assumptions import label, reader_assumptions
from .command import build_command, export_lineage, spark_env
from .models import Report
from .output import load_results, parse_line, readable_error

S = Report.Status
# Progress is written at most this often (plus the first and the last step): a job of
# a dozen steps writes a dozen rows, a chatty one cannot flood the database.
PROGRESS_WRITE_SECONDS = 1.0
# Output lines kept to explain a failure: the last ones, where the Python error is.
KEPT_LINES = 400
ABANDONED = "the worker running this report stopped before it finished; start the report again"
# A running report's worker stamps it this often; three missed stamps and the sweep fails it.
HEARTBEAT_SECONDS = 10.0
STALE_HEARTBEATS = 3
# A report QUEUED this long since its task was sent gets its task sent again.
REQUEUE_SECONDS = 120.0


def range_errors(since: datetime | None, until: datetime | None) -> dict[str, str]:
    """Return field errors of a report's time range (empty when it is valid)."""
    if since is None or until is None:
        return {}
    if until <= since:
        return {"until": "the end of the range must be after its start"}
    if until - since > timedelta(days=settings.CDC_REPORT_MAX_DAYS):
        return {"until": f"a report covers at most {settings.CDC_REPORT_MAX_DAYS} days"}
    if since > timezone.now():
        return {"since": "the range starts in the future: nothing can have landed there yet"}
    return {}


RUN_TASK = "cdcweb.reports.tasks.run_report_task"


def enqueue(report: Report) -> None:
    """Send the report's task once the transaction that created it commits."""
    Report.objects.filter(pk=report.pk).update(sent_at=Now())
    _send(report.pk)


def _send(report_id: int) -> None:
    """Send the report's task (by name: tasks.py calls this module) once the transaction commits."""
    dispatch.send_after_commit(RUN_TASK, report_id)


def sweep_reports() -> dict[str, int]:
    """Send again the tasks of reports QUEUED too long; fail RUNNING ones whose worker stopped."""
    stale = Now() - timedelta(seconds=HEARTBEAT_SECONDS * STALE_HEARTBEATS)
    failed = Report.objects.filter(status=S.RUNNING).filter(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale)
    )
    counts = {"failed": failed.update(status=S.FAILED, error=ABANDONED, finished_at=Now())}
    waiting = Report.objects.filter(status=S.QUEUED).filter(
        Q(sent_at__isnull=True) | Q(sent_at__lt=Now() - timedelta(seconds=REQUEUE_SECONDS))
    )
    counts["requeued"] = 0
    for report in waiting:
        # The conditional UPDATE says which sweep (two beats, or a slow one) sends it.
        if Report.objects.filter(pk=report.pk, status=S.QUEUED, sent_at=report.sent_at).update(sent_at=Now()):
            _send(report.pk)
            counts["requeued"] += 1
    return counts


def create_report(stream: Stream, since: datetime, until: datetime, by: str, kind: str = "all") -> Report:
    """Create a QUEUED report of the stream over [since, until) and enqueue it."""
    with transaction.atomic():
        report = Report.objects.create(stream=stream, since=since, until=until, requested_by=by, kind=kind)
        enqueue(report)
    return report


def schedule_daily_reports(now: datetime | None = None) -> list[int]:
    """Create and enqueue yesterday's report of each stream with data then; return the new ids.

    Idempotent: a unique constraint allows one daily report per stream and day.
    """
    now = now or timezone.now()
    until = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    since = until - timedelta(days=1)
    with_data = Partition.objects.filter(data_records__gt=0, start_at__lt=until, watermark__gte=since)
    created_ids = []
    for stream in Stream.objects.filter(pk__in=with_data.values("stream_id")):
        with transaction.atomic():
            report, created = Report.objects.get_or_create(
                stream=stream, since=since, until=until, requested_by=Report.DAILY_BY
            )
            if created:
                enqueue(report)
                created_ids.append(report.pk)
    return created_ids


def fail_reports_left_by(worker: str) -> int:
    """Mark FAILED the reports a worker of this name left RUNNING (it is starting again).

    Only those whose heartbeat stopped: another live worker of the same name (two
    hosts, one name) keeps stamping its own, and they are not this one's to fail.
    """
    if not worker:
        return 0
    stale = Now() - timedelta(seconds=HEARTBEAT_SECONDS)
    left = Report.objects.filter(status=S.RUNNING, worker=worker).filter(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True)
    )
    return left.update(status=S.FAILED, error=ABANDONED, finished_at=timezone.now())


def claim(report: Report, worker: str) -> bool:
    """Move the report from QUEUED to RUNNING; return False if another run has it (or had it)."""
    now = timezone.now()
    won = Report.objects.filter(pk=report.pk, status=S.QUEUED).update(
        status=S.RUNNING, started_at=now, worker=worker, step="starting Spark", heartbeat_at=Now()
    )
    if won:
        report.status, report.started_at, report.worker = S.RUNNING, now, worker
    return bool(won)


def finish(report: Report, status: str, **fields) -> Report:
    """Record the report's outcome (only while it is still RUNNING) and return it refreshed."""
    Report.objects.filter(pk=report.pk, status=S.RUNNING).update(
        status=status, finished_at=timezone.now(), **fields
    )
    report.refresh_from_db()
    return report


def run_report(report: Report, worker: str = "") -> Report:
    """Run the report's Spark job if it is QUEUED; return the report as it ended."""
    if not claim(report, worker):
        return report
    output_dir = Path(settings.CDC_REPORTS_DIR) / str(report.pk)
    try:
        summary_path, reason = _execute(report, output_dir)
        if summary_path is None:
            return finish(report, S.FAILED, error=reason)
        summary, results, assumptions = load_results(summary_path)
        assumptions = label(assumptions, report.stream) + reader_assumptions(report)
    except Exception as error:  # noqa: BLE001 - whatever broke, the report must not stay RUNNING
        return finish(report, S.FAILED, error=f"{type(error).__name__}: {error}"[:2000])
    done = report.progress_total or report.progress_done
    return finish(
        report, S.DONE, summary=summary, results=results, assumptions=assumptions,
        progress_done=done, progress_total=done, step="done",
    )  # fmt: skip


def _execute(report: Report, output_dir: Path) -> tuple[Path | None, str]:
    """Run spark-submit; return (summary path, "") on success or (None, the readable reason)."""
    shutil.rmtree(output_dir, ignore_errors=True)  # never read a previous attempt's tables
    output_dir.mkdir(parents=True)
    Report.objects.filter(pk=report.pk).update(output_dir=str(output_dir))
    report.output_dir = str(output_dir)
    lineage = export_lineage(report.stream, report.since, report.until, output_dir / "lineage.json")
    proc = subprocess.Popen(
        build_command(report, output_dir, lineage), cwd=settings.BASE_DIR, env=spark_env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True,
    )  # fmt: skip
    timed_out = threading.Event()
    timer = threading.Timer(settings.CDC_REPORT_TIMEOUT_SECONDS, _kill, args=(proc, timed_out))
    timer.start()
    beating = Heartbeat(report.pk)
    beating.start()
    try:
        done_path, error, lines = _follow(report, proc)
        status = proc.wait()
    finally:
        beating.stop()
        timer.cancel()
        _kill(proc)  # still running only if reading its output failed
    if status == 0 and done_path:
        return Path(done_path), ""
    if timed_out.is_set():
        return None, f"the job ran longer than {settings.CDC_REPORT_TIMEOUT_SECONDS} s and was stopped"
    return None, error or readable_error(list(lines), status)


class Heartbeat(threading.Thread):
    """Stamps a running report's heartbeat_at every HEARTBEAT_SECONDS, however quiet its job is."""

    def __init__(self, report_id: int) -> None:
        super().__init__(name=f"report-{report_id}-heartbeat", daemon=True)
        self.report_id, self.done = report_id, threading.Event()

    def run(self) -> None:
        try:
            while not self.done.wait(HEARTBEAT_SECONDS):
                with contextlib.suppress(DatabaseError):  # a missed stamp; three make it stale
                    Report.objects.filter(pk=self.report_id, status=S.RUNNING).update(heartbeat_at=Now())
        finally:
            connections.close_all()  # this thread's own connection

    def stop(self) -> None:
        """Stop stamping and wait for the thread."""
        self.done.set()
        self.join(timeout=HEARTBEAT_SECONDS)


def _kill(proc: subprocess.Popen, flag: threading.Event | None = None) -> None:
    """Kill the job's whole process group (spark-submit, its JVM and the Python driver)."""
    if flag is not None:
        flag.set()
    if proc.returncode is not None:
        return  # reaped: its group id may already belong to someone else
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _follow(report: Report, proc: subprocess.Popen) -> tuple[str | None, str, deque]:
    """Read the job's output line by line, writing progress; return (done path, error, other lines)."""
    done_path, error, lines = None, "", deque(maxlen=KEPT_LINES)
    last_write = 0.0
    for line in proc.stdout:
        event = parse_line(line)
        if event is None:
            lines.append(line.rstrip("\n"))
        elif event.kind == "progress":
            report.progress_done, report.progress_total, report.step = event.done, event.total, event.step
            if time.monotonic() - last_write >= PROGRESS_WRITE_SECONDS or event.done == event.total:
                _write_progress(report)
                last_write = time.monotonic()
        elif event.kind == "done":
            done_path = event.text
        elif not error:
            error = event.text
    _write_progress(report)
    return done_path, error, lines


def _write_progress(report: Report) -> None:
    Report.objects.filter(pk=report.pk, status=S.RUNNING).update(
        progress_done=report.progress_done, progress_total=report.progress_total, step=report.step
    )
