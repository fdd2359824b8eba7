"""Channel secrets: stored encrypted under CDC_SECRETS_KEY, rotated with it; an unreadable one never used."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from cdcweb.alerts import delivery
from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt
from cdcweb.alerts.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from tests.cdcweb.alerts.receiver import start_receiver, stop_receiver

SECRET = "a-secret-of-32-characters-long!!"
SLACK = "https://8.8.4.4/services/T000/B000/XXXXXXXX"
OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()
NOTICE = "0b0e2f8e-6a43-4c39-9d2e-6f1d8e0c1a11"


def stored(channel: Channel) -> dict[str, str]:
    """Return the channel's secret and Slack URL as the database holds them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret, slack_url FROM alerts_channel WHERE id = %s", [channel.pk])
        secret, slack_url = cursor.fetchone()
    return {"secret": secret, "slack_url": slack_url}


@pytest.fixture
def channels(db, settings):
    settings.CDC_SECRETS_KEY = (OLD,)
    hook = Channel.objects.create(name="hook", kind="webhook", url="https://8.8.8.8/h", secret=SECRET)
    chat = Channel.objects.create(name="chat", kind="slack", slack_url=SLACK)
    return hook, chat


def test_secrets_are_stored_encrypted_and_read_back_plain(channels):
    hook, chat = channels
    # then the database holds neither the secret nor the Slack URL
    assert stored(hook)["secret"].startswith("fernet:")
    assert SECRET not in stored(hook)["secret"]
    assert stored(chat)["slack_url"].startswith("fernet:")
    assert "8.8.4.4" not in stored(chat)["slack_url"]
    assert stored(hook)["slack_url"] == ""  # nothing to hide
    # and the application reads them as they were typed
    assert Channel.objects.get(pk=hook.pk).secret == SECRET
    assert Channel.objects.get(pk=chat.pk).slack_url == SLACK


def test_a_webhook_read_from_the_database_is_signed_with_the_plain_secret(
    channels, local_receivers, make_stream
):
    receiver = start_receiver()
    try:
        hook = Channel.objects.get(name="hook")
        Channel.objects.filter(pk=hook.pk).update(url=receiver.url)
        hook = Channel.objects.get(pk=hook.pk)
        stream = make_stream("orders")
        rule = AlertRule.objects.create(name="failed", kind="stream_failed", stream=stream)
        alert = Alert.objects.create(rule=rule, stream=stream, kind=rule.kind, summary="orders: FAILED")
        assert delivery.deliver(alert, hook, "firing", NOTICE, attempt=1, final=False) == "SENT"
        (got,) = receiver.received
        assert verify(SECRET, got.headers[TIMESTAMP_HEADER], got.body, got.headers[SIGNATURE_HEADER])
    finally:
        stop_receiver(receiver)


def test_a_new_key_first_reads_old_secrets_and_rotate_moves_them_to_it(channels, settings):
    hook, chat = channels
    before = stored(hook)["secret"]
    # when a new key is put first and the old one kept after it
    settings.CDC_SECRETS_KEY = (NEW, OLD)
    assert Channel.objects.get(pk=hook.pk).secret == SECRET
    call_command("cdc_secrets", "rotate")
    # then every secret is stored anew, and the old key can go
    assert stored(hook)["secret"] != before
    settings.CDC_SECRETS_KEY = (NEW,)
    assert Channel.objects.get(pk=hook.pk).secret == SECRET
    assert Channel.objects.get(pk=chat.pk).slack_url == SLACK
    call_command("cdc_secrets", "check")


def test_a_secret_the_key_cannot_open_is_never_used_nor_lost(channels, settings, make_stream, as_role):
    hook, _ = channels
    before = stored(hook)["secret"]
    # given a key that did not encrypt the saved secrets
    settings.CDC_SECRETS_KEY = (NEW,)
    hook = Channel.objects.get(pk=hook.pk)
    assert hook.unreadable == ["secret"]
    # then nothing is sent unsigned: the attempt fails saying what to do
    stream = make_stream("orders")
    rule = AlertRule.objects.create(name="failed", kind="stream_failed", stream=stream)
    alert = Alert.objects.create(rule=rule, stream=stream, kind=rule.kind, summary="orders: FAILED")
    assert delivery.deliver(alert, hook, "firing", NOTICE, attempt=1, final=False) == "FAILED"
    assert "CDC_SECRETS_KEY" in DeliveryAttempt.objects.get().error
    # and saving the channel's other fields keeps the stored secret for the right key
    hook.enabled = False
    hook.save()
    assert stored(hook)["secret"] == before
    page = as_role("operator").get("/alerts/channels/").content.decode()
    assert "unreadable: save it again" in page
    with pytest.raises(CommandError, match="hook"):
        call_command("cdc_secrets", "check")
    settings.CDC_SECRETS_KEY = (NEW, OLD)
    assert Channel.objects.get(pk=hook.pk).secret == SECRET


@pytest.mark.django_db(transaction=True)
def test_the_migration_encrypts_secrets_saved_in_plain_text(settings):
    settings.CDC_SECRETS_KEY = (OLD,)
    executor = MigrationExecutor(connection)
    # given a channel saved before the migration, its secret in plain text
    executor.migrate([("alerts", "0001_initial")])
    old_apps = executor.loader.project_state([("alerts", "0001_initial")]).apps
    old = old_apps.get_model("alerts", "Channel").objects.create(
        name="hook", kind="webhook", url="https://8.8.8.8/h", secret=SECRET
    )
    try:
        # when the database is migrated
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
        # then it is stored encrypted and reads the same
        assert stored(old)["secret"].startswith("fernet:")
        assert Channel.objects.get(pk=old.pk).secret == SECRET
        # and migrating back writes it in plain text again
        executor = MigrationExecutor(connection)
        executor.migrate([("alerts", "0001_initial")])
        assert stored(old)["secret"] == SECRET
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
