from django.apps import AppConfig


class PartitionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "partitions"
