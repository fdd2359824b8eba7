"""Alerts end to end: real beat, housekeeping and alerts workers, a real webhook receiver on 127.0.0.1.

The condition is set in the shared database the moment the test starts its clock; beat
evaluates every EVALUATE_SECONDS, the housekeeping worker runs the evaluation, and the
alerts worker delivers. Goal: the receiver has the notice within one evaluation
interval + 2 s of the condition becoming true.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt
from streams.models import Stream
from tests.factories import make_stream
from tests.partitions.pipeline.conftest import (  # noqa: F401 - the fixtures
    TEST_ENV,
    _wait_for,
    pipeline,
    pipeline_broker,
    pipeline_database,
)

pytestmark = pytest.mark.slow
EVALUATE_SECONDS = 2.0
S = Stream.State


@pytest.fixture(scope="module")
def pipeline_env() -> dict[str, str]:
    """Return the pipeline tests' settings with a 2 s evaluation and quick retries."""
    return {
        **TEST_ENV,
        "CDC_ALERT_EVALUATE_SECONDS": str(EVALUATE_SECONDS),
        "CDC_ALERT_RETRY_BACKOFF": "1",
        "CDC_ALERT_RETRY_BACKOFF_MAX": "1",
        "CDC_ALERT_DELIVERY_RETRIES": "4",
        "CDC_ALERT_DELIVERY_TIMEOUT": "3",
        "CDC_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",
    }


@pytest.fixture(scope="module")
def running(pipeline):  # noqa: F811 - the imported fixture
    """Start beat, the housekeeping worker and the alerts worker; wait for the first evaluation."""
    pipeline.beat()
    pipeline.alerts()
    done = re.compile(r"evaluate_alerts_task\[[^\]]+\] succeeded")
    _wait_for("an evaluation", lambda: done.search(pipeline.log_text("hk")), timeout=90)
    return pipeline


def watched(name: str, receiver) -> Stream:
    """Create a RUNNING stream and a rule that alerts when it fails, sent to the receiver."""
    stream = make_stream(name, state=S.RUNNING)
    hook = Channel.objects.create(name=f"{name}-hook", kind="webhook", url=receiver.url, secret="x" * 32)
    rule = AlertRule.objects.create(name=f"{name}-failed", kind="stream_failed", stream=stream, for_minutes=0)
    rule.channels.add(hook)
    return stream


def evaluations(pipe, event: str) -> int:
    """Return how many alert evaluations the housekeeping worker logged as `event` (received, succeeded)."""
    return len(re.findall(rf"evaluate_alerts_task\[[^\]]+\] {event}", pipe.log_text("hk")))


def fail(stream: Stream) -> float:
    """Make the stream FAILED_PERMANENTLY now (no automatic retry will touch it); return when."""
    became_true = time.time()
    Stream.objects.filter(pk=stream.pk).update(state=S.FAILED_PERMANENTLY, state_changed_at=timezone.now())
    return became_true


def test_an_alert_reaches_the_webhook_within_one_interval_and_two_seconds(running, receiver):
    # given a stream watched by a rule that sends to a webhook
    stream = watched("orders", receiver)
    # and an evaluation begun after the rule existed has run and seen it healthy: of those
    # received before, at most `earlier` can succeed, so one more proves a later one did
    earlier = evaluations(running, "received")
    _wait_for("an evaluation that saw it healthy", lambda: evaluations(running, "succeeded") > earlier)
    # when it fails
    became_true = fail(stream)
    # then the firing notice arrives within one evaluation interval + 2 s
    first = _wait_for("the firing notice", lambda: receiver.received, timeout=30)[0]
    latency = first.at - became_true
    print(f"\ncondition to webhook: {latency:.2f} s (interval {EVALUATE_SECONDS:.0f} s)")
    assert first.json()["event"] == "firing"
    assert latency <= EVALUATE_SECONDS + 2.0
    # and when it runs again, the resolved notice follows
    Stream.objects.filter(pk=stream.pk).update(state=S.RUNNING)
    _wait_for("the resolved notice", lambda: len(receiver.received) == 2, timeout=30)
    assert receiver.received[1].json()["event"] == "resolved"
    assert Alert.objects.get(stream=stream).state == Alert.State.RESOLVED


def test_a_failing_receiver_gets_retries_and_every_attempt_is_visible(running, receiver):
    # given a receiver that answers 500 twice before it accepts
    receiver.answers = [500, 500]
    stream = watched("payments", receiver)
    # when the stream fails
    fail(stream)
    # then the notice is retried until it is taken, each attempt recorded
    attempts = DeliveryAttempt.objects.filter(alert__stream=stream).order_by("id")
    _wait_for("the notice taken", lambda: attempts.filter(status="SENT").exists(), timeout=60)
    rows = list(attempts.values_list("attempt", "status", "http_status"))
    assert rows == [(1, "RETRYING", 500), (2, "RETRYING", 500), (3, "SENT", 200)]
    assert len({r.json()["id"] for r in receiver.received}) == 1  # one notice, three tries
    # and the API shows them with the alert
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root", password="x"))
    alert = Alert.objects.get(stream=stream)
    shown = client.get(f"/api/v1/alerts/{alert.pk}/").json()["deliveries"]
    assert [(d["attempt"], d["status"]) for d in shown] == [(3, "SENT"), (2, "RETRYING"), (1, "RETRYING")]
    assert alert.fired_at > timezone.now() - timedelta(minutes=5)
