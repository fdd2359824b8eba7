"""The Celery app: `celery -A cdcweb worker` and `celery -A cdcweb beat` load it."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import beat_init, worker_init

from cdcweb import embedded_db

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")

app = Celery("cdcweb")
# Every CELERY_* setting in cdcweb/settings.py configures the app.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The reading pipeline's tasks live in partitions/pipeline/, below the app's own folder.
app.autodiscover_tasks(["partitions.pipeline"])


@worker_init.connect
@beat_init.connect
def _start_embedded_database(**_) -> None:
    """With DATABASE_URL unset, make sure the embedded PostgreSQL runs before a worker or beat uses it."""
    embedded_db.start_if_default()
