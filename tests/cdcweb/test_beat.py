"""Beat keeps its schedule in the database (django-celery-beat), not in a pickle shelve file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django_celery_beat.models import PeriodicTask

from cdcweb import embedded_db
from cdcweb.beat import Scheduler
from cdcweb.celery import app
from cdcweb.settings import every
from tests.factories import wait_for
from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures

ROOT = Path(__file__).resolve().parents[2]


# transactional: django-celery-beat closes the connection it finds inside a transaction
# (close_old_connections), which on PostgreSQL would end the test's own transaction.
def test_beat_writes_every_entry_of_the_settings_into_the_database(transactional_db):
    # when beat's scheduler starts
    Scheduler(app=app, lazy=False)
    # then each entry of CELERY_BEAT_SCHEDULE is a row, expiring within its own period
    rows = {t.name: t for t in PeriodicTask.objects.all()}
    assert set(django_settings.CELERY_BEAT_SCHEDULE) <= set(rows)
    partitions = rows["schedule-partitions"]
    assert partitions.task == "partitions.pipeline.tasks.schedule_partitions_task"
    assert partitions.interval.schedule.run_every == timedelta(seconds=django_settings.CDC_SCHEDULE_SECONDS)
    assert partitions.expire_seconds == 5
    assert rows["daily-reports"].crontab.hour == "0"
    assert "celery.backend_cleanup" not in rows  # no result backend to clean


def test_an_interval_shorter_than_a_second_keeps_its_length(transactional_db):
    # django-celery-beat keeps whole seconds: 0.5 s would become 0 and run without pause
    scheduler = Scheduler(app=app, lazy=False)
    scheduler.update_from_dict({"fast": {"task": "partitions.pipeline.tasks.sample_lag_task", **every(0.5)}})
    fast = PeriodicTask.objects.get(name="fast")
    assert fast.interval.schedule.run_every == timedelta(milliseconds=500)
    assert fast.expire_seconds == 1
    assert scheduler.schedule["fast"].schedule.run_every == timedelta(milliseconds=500)


@pytest.mark.slow
def test_a_beat_process_sends_tasks_and_leaves_no_schedule_file(tmp_path):
    # given a fresh embedded setup (the embedded PostgreSQL, the filesystem broker), migrated
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CDC_", "DATABASE_URL", "CELERY_"))}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env |= {"CDC_VAR_DIR": str(tmp_path / "var"), "CDC_SCHEDULE_SECONDS": "0.5", "PYTHONPATH": str(ROOT)}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input"], cwd=ROOT, env=env, check=True, capture_output=True)
    celery = str(Path(sys.executable).with_name("celery"))
    beat = subprocess.Popen(
        [celery, "-A", "cdcweb", "beat", "-l", "WARNING"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        # when it has run a while (from another folder): then it sends the scheduling task again and again
        queue = tmp_path / "var" / "broker" / "queue"
        sent = lambda: [p for p in queue.iterdir() if p.suffix == ".msg"]  # noqa: E731
        wait_for("beat to send five tasks", lambda: len(sent()) >= 5, timeout=60)
    finally:
        os.killpg(beat.pid, signal.SIGTERM)
        try:
            beat.wait(timeout=30)  # beat exits on SIGTERM: failing here is the test's finding
        finally:
            if beat.poll() is None:
                os.killpg(beat.pid, signal.SIGKILL)  # nothing left running after a failure
            embedded_db.stop(tmp_path / "var")
    # and nothing was written beside the database: no celerybeat-schedule shelve anywhere
    assert not [p for p in tmp_path.rglob("*") if "celerybeat" in p.name]
    assert b"Traceback" not in beat.stderr.read()


def test_sigterm_in_the_middle_of_a_query_stops_beat_at_once_and_leaves_the_connection_usable(
    transactional_db,
):
    # given beat's signal handlers, and its main thread waiting on a query's answer
    from django.db import connection

    from cdcweb.celery import stop_between_queries

    if connection.vendor != "postgresql":
        pytest.skip("psycopg's connection lock is what a query in the handler waited on")
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    stop_between_queries()
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    started = time.monotonic()
    try:
        timer.start()
        # when SIGTERM comes half a second into a five-second query
        with pytest.raises(SystemExit), connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(5)")
    finally:
        timer.cancel()
        for sig, handler in before.items():
            signal.signal(sig, handler)
    # then beat stops at once (the query is cancelled, not waited for; celery's own handler
    # ran a query here, on this connection, and waited for ever on its lock)
    assert time.monotonic() - started < 4
    # and the connection answers the next query: the schedule is saved as the loop ends
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
