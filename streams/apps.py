from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class StreamsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "streams"

    def ready(self) -> None:
        """Drop cached API answers whenever a stream is saved (transitions, edits) or deleted."""
        from streams.api.cache import invalidate_on_commit

        from .models import Stream

        post_save.connect(invalidate_on_commit, sender=Stream, dispatch_uid="api-cache-stream-save")
        post_delete.connect(invalidate_on_commit, sender=Stream, dispatch_uid="api-cache-stream-delete")
