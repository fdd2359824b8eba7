"""The Celery app: `celery -A cdcweb worker` and `celery -A cdcweb beat` load it."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")

app = Celery("cdcweb")
# Every CELERY_* setting in cdcweb/settings.py configures the app.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The reading pipeline's tasks live in partitions/pipeline/, below the app's own folder.
app.autodiscover_tasks(["partitions.pipeline"])
