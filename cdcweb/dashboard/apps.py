"""The dashboard app: what shows streams and their partitions together (pages, API, admin, CLI)."""

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """Pages, REST API, admin and the cdc_stream command over both streams and partitions."""

    name = "cdcweb.dashboard"
    label = "dashboard"
