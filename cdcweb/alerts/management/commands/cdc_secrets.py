"""`manage.py cdc_secrets rotate|check`: re-encrypt channel secrets under CDC_SECRETS_KEY's first key."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from cdcweb import encryption
from cdcweb.alerts.models import Channel

FIELDS = ("secret", "slack_url")


def _stored(channel_id: int) -> dict[str, str]:
    """Return a channel's secrets as the database holds them (encrypted)."""
    table = connection.ops.quote_name(Channel._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(name) for name in FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {table} WHERE id = %s", [channel_id])  # noqa: S608
        return dict(zip(FIELDS, cursor.fetchone(), strict=True))


class Command(BaseCommand):
    help = "Re-encrypt channel secrets under CDC_SECRETS_KEY's first key (rotate), or list unreadable ones."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("rotate", "check"))

    def handle(self, *args, **options):
        unreadable = [c.name for c in Channel.objects.order_by("name") if c.unreadable]
        if options["action"] == "rotate":
            with transaction.atomic():
                for pk in Channel.objects.values_list("pk", flat=True):
                    again = {name: encryption.rotate(value) for name, value in _stored(pk).items()}
                    Channel.objects.filter(pk=pk).update(
                        **{name: encryption.Stored(value) for name, value in again.items()}
                    )
            self.stdout.write("channel secrets encrypted under the first key of CDC_SECRETS_KEY")
        if unreadable:
            raise CommandError(
                f"these channels' secrets cannot be decrypted with CDC_SECRETS_KEY: {', '.join(unreadable)} "
                "(add the old key after the new one, or save their secrets again)"
            )
        self.stdout.write("every channel secret can be decrypted")
