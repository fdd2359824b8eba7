"""A stream's source settings move into one JSON field, checked by its kind; more kinds.

The Spanner change stream columns (project, instance, database, change_stream,
dialect, emulator_host) are copied into Stream.connection, then dropped, so every
existing stream keeps its settings.
"""

from django.db import migrations, models

SPANNER_COLUMNS = ("project", "instance", "database", "change_stream", "dialect", "emulator_host")


def to_connection(apps, schema_editor):
    stream = apps.get_model("streams", "Stream")
    for row in stream.objects.all():
        row.connection = {name: getattr(row, name) for name in SPANNER_COLUMNS}
        row.save(update_fields=["connection"])


def to_columns(apps, schema_editor):
    stream = apps.get_model("streams", "Stream")
    for row in stream.objects.filter(source_kind="spanner_change_stream"):
        for name in SPANNER_COLUMNS:
            setattr(row, name, row.connection.get(name, ""))
        row.save(update_fields=list(SPANNER_COLUMNS))


class Migration(migrations.Migration):
    dependencies = [("streams", "0006_reached_end_partition_token_report_moved")]

    operations = [
        migrations.AddField(
            model_name="stream", name="connection", field=models.JSONField(blank=True, default=dict)
        ),
        migrations.RunPython(to_connection, to_columns),
        *(migrations.RemoveField(model_name="stream", name=name) for name in SPANNER_COLUMNS),
        migrations.AlterField(
            model_name="stream",
            name="source_kind",
            field=models.CharField(
                choices=[
                    ("spanner_change_stream", "Spanner change stream"),
                    ("spanner_commit_timestamp", "Spanner table (commit timestamp)"),
                    ("bigtable", "Bigtable change stream"),
                    ("datastream", "Datastream stream"),
                ],
                default="spanner_change_stream",
                max_length=40,
            ),
        ),
    ]
