"""Landed files move from stream=<name>/ to stream_id=<id>/: existing streams keep reading their old directory.

The stream=<name> directory of each existing stream is recorded as its landing_name, so
its reports still read what it landed, whatever it is renamed to; a stream created
later has none, so it never reads a directory that a deleted stream of its name left.
`manage.py cdc_landing adopt` moves the old files under stream_id=<id> and clears it.
"""

from django.db import migrations, models


def remember_landing_names(apps, schema_editor):
    """Give every existing stream its name as it landed until now."""
    stream = apps.get_model("streams", "Stream")
    stream.objects.using(schema_editor.connection.alias).update(landing_name=models.F("name"))


class Migration(migrations.Migration):
    dependencies = [
        ("streams", "0010_retention_per_stream"),
    ]

    operations = [
        migrations.AddField(
            model_name="stream",
            name="landing_name",
            field=models.CharField(blank=True, editable=False, max_length=100),
        ),
        migrations.RunPython(remember_landing_names, migrations.RunPython.noop),
    ]
