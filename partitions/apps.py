"""The partitions app: partitions, their lineage and lag; the pipeline that reads them; the kinds."""

from django.apps import AppConfig

from streams import kinds

from .sources import KINDS


class PartitionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "partitions"

    def ready(self) -> None:
        """Hand the source kinds to streams, which takes Stream.source_kind's choices from them."""
        kinds.use(KINDS)
