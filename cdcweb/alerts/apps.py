"""The alerts app: rules over streams' lag, stalls, failures and retention, sent to webhooks and mail."""

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Alert rules evaluated by beat from stored progress, delivered by their own Celery worker."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cdcweb.alerts"
    label = "alerts"
