"""Beat's schedule kept in the database (django-celery-beat), not in a pickle shelve file.

`CELERY_BEAT_SCHEDULE` (cdcweb/settings.py) stays the one list of periodic tasks: at
start beat writes it into django-celery-beat's tables, where it keeps when each last ran;
the admin shows them. The embedded default needs no server: the tables are in the same
database (SQLite). django-celery-beat stores intervals as whole seconds, so a shorter
one (the tests' 0.5 s scheduling) would become 0 and run without pause: `Scheduler`
stores those in microseconds instead.
"""

from __future__ import annotations

from celery import schedules
from django_celery_beat.models import IntervalSchedule
from django_celery_beat.schedulers import DatabaseScheduler, ModelEntry


class Entry(ModelEntry):
    """django-celery-beat's entry, with intervals that are not whole seconds kept in microseconds."""

    @classmethod
    def to_model_schedule(cls, schedule):
        """Return the model of a schedule (and its field); a fractional interval in microseconds."""
        schedule = schedules.maybe_schedule(schedule)
        if type(schedule) is schedules.schedule and schedule.run_every.total_seconds() % 1:
            micros = round(schedule.run_every.total_seconds() * 1_000_000)
            period = IntervalSchedule.MICROSECONDS
            model, _ = IntervalSchedule.objects.get_or_create(every=micros, period=period)
            return model, "interval"
        return super().to_model_schedule(schedule)


class Scheduler(DatabaseScheduler):
    """The database scheduler of django-celery-beat, with Entry above."""

    Entry = Entry
