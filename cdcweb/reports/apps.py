"""The reports app: Spark reports of throughput, latency, transaction shape and cost."""

from django.apps import AppConfig


class ReportsConfig(AppConfig):
    """Reports over a stream's landing zone, run by Spark through Celery."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cdcweb.reports"
    label = "reports"
