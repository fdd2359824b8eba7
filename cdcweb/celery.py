"""The Celery app: `celery -A cdcweb worker` and `celery -A cdcweb beat` load it."""

from __future__ import annotations

import os
import signal

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, beat_init, worker_init

from cdcweb.beat_lock import hold as hold_beat_lock
from cdcweb.embedded_db import start_if_default
from cdcweb.worker_logging import hand_off

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")

app = Celery("cdcweb")
# Every CELERY_* setting in cdcweb/settings.py configures the app.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The reading pipeline's tasks live in partitions/pipeline/, below the app's own folder, and
# the watched streams' in partitions/watch/.
app.autodiscover_tasks(["partitions.pipeline", "partitions.watch"])


@worker_init.connect
def _start_embedded_database(**_) -> None:
    """With DATABASE_URL unset, make sure the embedded PostgreSQL runs before a worker uses it."""
    start_if_default()


@after_setup_logger.connect
@after_setup_task_logger.connect
def _log_from_a_thread_of_its_own(logger, **_) -> None:
    """Write a worker's (or beat's) log lines from one thread: a thread that logs never waits on a write."""
    hand_off(logger)


_beat_lock = []  # what holds the beat lock, referenced for the life of the process


@beat_init.connect
def _one_beat_at_a_time(**_) -> None:
    """Start the embedded database if it is the default, then wait for the beat lock (cdcweb/beat_lock.py)."""
    stop_between_queries()
    start_if_default()
    _beat_lock.append(hold_beat_lock())


def stop_between_queries() -> None:
    """Make SIGTERM and SIGINT stop beat with no query run inside the signal handler.

    Celery's own handler saves the schedule from inside the handler. Beat's main thread
    queries the database every tick, and psycopg holds its connection's lock (not
    reentrant) while it waits for an answer: a signal that came then ran the handler's
    query on the same connection, which waited for that lock for ever: a beat a test saw
    still running after SIGTERM (test_beat, once in the fresh-clone runs of issue 22) was
    found an hour later in Cursor.execute's lock, inside celery's handler, inside the
    tick's own Cursor.execute (py-spy dump). Here the handler only raises SystemExit: psycopg
    cancels a query it interrupts, and celery's Service.start saves the schedule as its
    loop ends, out of the handler.
    """

    def stop(signum, frame) -> None:
        raise SystemExit()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
