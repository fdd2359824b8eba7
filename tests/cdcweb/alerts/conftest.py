"""Fixtures of the alert tests: a fixed now, stored lag samples, rules and channels, a recording outbox."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User

from cdcweb.alerts import evaluation
from cdcweb.alerts.models import AlertRule, Channel
from partitions.models import LagSample
from streams.roles import OPERATORS, VIEWERS, ensure_roles
from tests.cdcweb.alerts.receiver import start_receiver, stop_receiver
from tests.factories import T0
from tests.factories.api import django_db_setup  # noqa: F401 - PostgreSQL when CDC_TEST_DATABASE_URL is set

NOW = T0 + timedelta(hours=2)


class RecordingOutbox:
    """The evaluation's Outbox for tests: records (alert, channel, event, notice) instead of queueing."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, str, str]] = []

    def send(self, alert_id: int, channel_id: int, event: str, notice: str) -> None:
        self.sent.append((alert_id, channel_id, event, notice))

    def events(self) -> list[str]:
        """Return the events sent so far, oldest first."""
        return [event for _, _, event, _ in self.sent]


@pytest.fixture
def as_role(db, client):
    """Return a function that logs the test client in as a viewer or an operator."""
    ensure_roles(apps)

    def login(role: str):
        user = User.objects.create_user(role, password="pw")
        user.groups.add(Group.objects.get(name=VIEWERS if role == "viewer" else OPERATORS))
        client.force_login(user)
        return client

    return login


@pytest.fixture
def local_receivers(settings):
    """Allow channels to send to this machine, as CDC_WEBHOOK_ALLOW_NETWORKS does for the demo."""
    settings.CDC_WEBHOOK_ALLOW_NETWORKS = ("127.0.0.0/8",)


@pytest.fixture
def receiver():
    """Yield a webhook receiver on 127.0.0.1 (tests.cdcweb.alerts.receiver) that records what it is sent."""
    receiver = start_receiver()
    yield receiver
    stop_receiver(receiver)


@pytest.fixture
def outbox() -> RecordingOutbox:
    return RecordingOutbox()


@pytest.fixture
def evaluate(outbox):
    """Return a function that runs one evaluation cycle at NOW + minutes (default NOW)."""

    def run(minutes: float = 0):
        return evaluation.evaluate(outbox, NOW + timedelta(minutes=minutes))

    return run


def add_samples(stream, lags: list[float], until=NOW, every: float = 10.0, records=None) -> None:
    """Store raw lag samples of the stream, one every `every` seconds, the last at `until`."""
    count = len(lags)
    LagSample.objects.bulk_create(
        LagSample(
            stream=stream, at=until - timedelta(seconds=every * (count - 1 - i)), lag_seconds=lag,
            data_records=records[i] if records else 0, resolution_seconds=10,
        )
        for i, lag in enumerate(lags)
    )  # fmt: skip


@pytest.fixture
def webhook(db) -> Channel:
    """Return an enabled webhook channel (to a port nothing listens on: tests here never send)."""
    return Channel.objects.create(
        name="ops-hook", kind=Channel.Kind.WEBHOOK, url="http://127.0.0.1:9/hook", secret="s" * 32
    )


@pytest.fixture
def make_rule(db, webhook):
    """Return a factory of enabled rules that send to the webhook channel."""

    def make(kind: str, stream=None, **fields) -> AlertRule:
        fields.setdefault("name", f"{kind}-{AlertRule.objects.count()}")
        rule = AlertRule.objects.create(kind=kind, stream=stream, **fields)
        rule.channels.add(webhook)
        return rule

    return make
