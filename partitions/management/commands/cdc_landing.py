"""`manage.py cdc_landing adopt`: move files landed under stream=<name>/ to stream_id=<id>/.

Files land by the stream's id (partitions/sources/landing.py). A stream that landed
before that keeps reading its stream=<name> directory (Stream.landing_name); this moves
those files beside its new ones and forgets the old name. Run it while no report job
runs: a job listing the files during the move could miss some.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from partitions.pipeline import landing
from streams.models import Stream


class Command(BaseCommand):
    help = "Move each stream's files from stream=<name>/ (before ids) to stream_id=<id>/."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("adopt",))

    def handle(self, *args, **options):
        streams = Stream.objects.exclude(landing_name="").order_by("pk")
        for stream in streams:
            moved = landing.adopt_legacy(settings.CDC_LANDING_URI, stream.pk, stream.landing_name)
            Stream.objects.filter(pk=stream.pk).update(landing_name="")
            self.stdout.write(
                f"stream '{stream.name}' (id {stream.pk}): moved {moved} files from "
                f"stream={stream.landing_name}/ to stream_id={stream.pk}/"
            )
        if not streams:
            self.stdout.write("no stream has files under stream=<name>/: nothing to move")
