"""Channel secrets and Slack URLs: text columns that hold them encrypted (cdcweb/encryption.py)."""

from django.db import migrations

import cdcweb.encryption

SECRETS = ("secret", "slack_url")


def encrypt_saved(apps, schema_editor):
    """Encrypt the secrets saved in plain text before this migration."""
    channel = apps.get_model("alerts", "Channel")
    for row in channel.objects.using(schema_editor.connection.alias).only("pk", *SECRETS):
        # Read back plain (not yet prefixed); update() stores them through the field: encrypted.
        channel.objects.filter(pk=row.pk).update(**{name: getattr(row, name) for name in SECRETS})


def decrypt_saved(apps, schema_editor):
    """Store the secrets in plain text again, as the columns before this migration held them."""
    channel = apps.get_model("alerts", "Channel")
    table = schema_editor.quote_name(channel._meta.db_table)
    columns = ", ".join(f"{schema_editor.quote_name(name)} = %s" for name in SECRETS)
    with schema_editor.connection.cursor() as cursor:
        for row in channel.objects.using(schema_editor.connection.alias).only("pk", *SECRETS):
            cursor.execute(
                f"UPDATE {table} SET {columns} WHERE id = %s", [*(getattr(row, n) for n in SECRETS), row.pk]
            )


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="channel",
            name="secret",
            field=cdcweb.encryption.EncryptedTextField(blank=True, help_text="webhook: the HMAC-SHA256 key"),
        ),
        migrations.AlterField(
            model_name="channel",
            name="slack_url",
            field=cdcweb.encryption.EncryptedTextField(
                blank=True, help_text="Slack: the incoming webhook URL"
            ),
        ),
        migrations.RunPython(encrypt_saved, decrypt_saved),
    ]
