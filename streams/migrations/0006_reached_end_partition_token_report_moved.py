"""Streams record when they reached their end; errors name their partition by token; Report moves.

- Stream.reached_end_at: set for streams already PAUSED with "reached end timestamp".
- StreamError.partition_token replaces the foreign key to partitions (copied over), so
  that streams depends on nothing in partitions and an error outlives its partition.
- Report leaves this app's state for the reports app; its table (streams_report) stays.
"""

from django.db import migrations, models


def mark_reached_end(apps, schema_editor):
    stream = apps.get_model("streams", "Stream")
    for row in stream.objects.filter(state="PAUSED", state_reason__startswith="reached end timestamp"):
        row.reached_end_at = row.state_changed_at
        row.save(update_fields=["reached_end_at"])


def copy_tokens(apps, schema_editor):
    error = apps.get_model("streams", "StreamError")
    for row in error.objects.exclude(partition=None).select_related("partition"):
        row.partition_token = row.partition.token
        row.save(update_fields=["partition_token"])


class Migration(migrations.Migration):
    dependencies = [
        ("streams", "0005_error_kinds_landing_internal"),
        ("partitions", "0003_partition_stream_lag"),
    ]

    operations = [
        migrations.AddField(
            model_name="stream",
            name="reached_end_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(mark_reached_end, migrations.RunPython.noop),
        migrations.AddField(
            model_name="streamerror",
            name="partition_token",
            field=models.CharField(blank=True, max_length=1000),
        ),
        migrations.RunPython(copy_tokens, migrations.RunPython.noop),
        migrations.RemoveField(model_name="streamerror", name="partition"),
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="Report")]),
    ]
