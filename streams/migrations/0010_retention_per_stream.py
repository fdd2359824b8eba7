"""Each stream's retention is its kind's setting now: copy the old global one into existing streams.

Before, one setting (CDC_STREAM_RETENTION_HOURS, 24 by default) stood for every stream's
retention. Spanner change streams and Bigtable streams keep it as `retention_hours` in
their connection settings (24 to 168 hours); the value the deployment ran with is copied.
"""

import os

from django.db import migrations

KINDS_WITH_RETENTION = ("spanner_change_stream", "bigtable")


def copy_global_retention(apps, schema_editor):
    Stream = apps.get_model("streams", "Stream")
    hours = min(max(int(os.environ.get("CDC_STREAM_RETENTION_HOURS") or 24), 24), 168)
    for stream in Stream.objects.filter(source_kind__in=KINDS_WITH_RETENTION):
        if "retention_hours" not in stream.connection:
            stream.connection = {**stream.connection, "retention_hours": hours}
            stream.save(update_fields=["connection"])


class Migration(migrations.Migration):
    dependencies = [("streams", "0009_source_kind_choices_from_kinds")]

    operations = [migrations.RunPython(copy_global_retention, migrations.RunPython.noop)]
