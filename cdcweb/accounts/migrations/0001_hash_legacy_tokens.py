"""Move the plain-text tokens of rest_framework.authtoken into knox, as digests.

Each old token keeps working with the same text until it expires (CDC_TOKEN_DAYS
from this migration) or is revoked; its plain text is deleted from the old table.
Nothing to do on a database that never had the old app.
"""

from django.conf import settings
from django.db import migrations
from django.utils import timezone

LEGACY_TABLE = "authtoken_token"


def hash_legacy_tokens(apps, schema_editor):
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS

    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    auth_token = apps.get_model("knox", "AuthToken")
    table, key = connection.ops.quote_name(LEGACY_TABLE), connection.ops.quote_name("key")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {key}, user_id FROM {table}")
        rows = cursor.fetchall()
    lifetime = settings.REST_KNOX["TOKEN_TTL"]
    expiry = timezone.now() + lifetime if lifetime else None
    auth_token.objects.bulk_create(
        auth_token(
            digest=hash_token(key),
            token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH],
            user_id=user_id,
            expiry=expiry,
        )
        for key, user_id in rows
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")


class Migration(migrations.Migration):
    dependencies = [
        ("knox", "0009_extend_authtoken_field"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(hash_legacy_tokens, migrations.RunPython.noop, elidable=True)]
