"""Send a Celery task by its name once the current transaction commits.

By name, so that the module that asks for work never imports the module that does it:
streams' actions ask the pipeline (partitions) to start or drain a stream, the reports'
services ask their own task module to run a report, and neither import runs back up.
"""

from __future__ import annotations

from celery import current_app
from django.db import transaction


def send_after_commit(name: str, *args) -> None:
    """Send task `name`(*args) once the transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: send(name, args))


def send(name: str, args: tuple) -> None:
    """Send task `name` with args now (run in-process under CELERY_TASK_ALWAYS_EAGER, for debugging)."""
    if current_app.conf.task_always_eager:
        current_app.tasks[name].apply(args)
    else:
        current_app.send_task(name, args)
