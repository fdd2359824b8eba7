"""The retention app: beat's job that deletes what has been kept long enough."""

from django.apps import AppConfig


class RetentionConfig(AppConfig):
    """Deletes old errors, delivery attempts, resolved alerts, reports and landed files."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cdcweb.retention"
    label = "retention"
