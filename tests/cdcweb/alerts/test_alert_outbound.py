"""Channels send only where they should: no internal address at save or at send, no redirect, no body."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from cdcweb.alerts import delivery, outbound
from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt
from cdcweb.settings import env_networks
from tests.cdcweb.alerts.receiver import start_receiver, stop_receiver

pytestmark = pytest.mark.django_db
SECRET = "s" * 32
NOTICE = "5b0f5c4e-0a51-4c58-8f0c-1d5e0a8b9c01"

# Each is refused when it is saved and when it is sent to, whatever the channel's kind.
INTERNAL = [
    pytest.param("http://169.254.169.254/latest/meta-data/", "link-local", id="metadata"),
    pytest.param("http://127.0.0.1:6379/", "loopback", id="redis-on-loopback"),
    pytest.param("https://[::1]/", "loopback", id="ipv6-loopback"),
    pytest.param("https://localhost:8000/", "loopback", id="a-name-for-127.0.0.1"),
    pytest.param("https://10.1.2.3/hook", "private", id="private"),
    pytest.param("https://192.168.0.10/hook", "private", id="private-192"),
    pytest.param("https://[fe80::1]/", "link-local", id="ipv6-link-local"),
    pytest.param("https://[fd00::1]/", "private", id="ipv6-unique-local"),
    pytest.param("https://[::ffff:127.0.0.1]/", "loopback", id="ipv4-mapped-loopback"),
    pytest.param("https://0.0.0.0/", "unspecified", id="unspecified"),
    pytest.param("https://224.0.0.1/", "multicast", id="multicast"),
    pytest.param("https://240.0.0.1/", "reserved", id="reserved"),
    pytest.param("https://100.64.0.1/", "non-public", id="carrier-grade-nat"),
    pytest.param("ftp://8.8.8.8/hook", "https://", id="ftp"),
    pytest.param("http://8.8.8.8/hook", "use https://", id="plain-http-outside"),
    pytest.param("https://user:pw@8.8.8.8/hook", "no user name", id="credentials"),
]


@pytest.fixture
def alert(make_stream) -> Alert:
    stream = make_stream("orders")
    rule = AlertRule.objects.create(name="failed", kind=AlertRule.Kind.STREAM_FAILED, stream=stream)
    return Alert.objects.create(rule=rule, stream=stream, kind=rule.kind, summary="orders: FAILED")


@pytest.mark.parametrize(("url", "why"), INTERNAL)
def test_an_internal_or_non_https_url_is_refused_at_save(as_role, url, why):
    operator = as_role("operator")
    webhook = {"name": "hook", "kind": "webhook", "url": url, "secret": SECRET}
    slack = {"name": "chat", "kind": "slack", "slack_url": url}
    for body, field in ((webhook, "url"), (slack, "slack_url")):
        response = operator.post("/api/v1/alerts/channels/", body, content_type="application/json")
        assert response.status_code == 400, (url, response.content)
        assert field in response.json()
    assert not Channel.objects.exists()


@pytest.mark.parametrize(("url", "why"), INTERNAL)
def test_the_refusal_says_why(url, why):
    with pytest.raises(outbound.Refused, match=why):
        outbound.check(url)


def test_the_channel_form_refuses_an_internal_address(as_role):
    body = {"name": "hook", "kind": "webhook", "url": "http://169.254.169.254/", "secret": SECRET}
    response = as_role("operator").post("/alerts/channels/new/", {**body, "enabled": "on"})
    assert response.status_code == 200
    assert "link-local address" in response.content.decode()
    assert not Channel.objects.exists()


def test_a_public_https_url_is_accepted(as_role):
    body = {"name": "hook", "kind": "webhook", "url": "https://8.8.8.8/cdc", "secret": SECRET}
    response = as_role("operator").post("/api/v1/alerts/channels/", body, content_type="application/json")
    assert response.status_code == 201


def test_an_allowed_network_takes_internal_and_plain_http_urls(as_role, settings):
    operator = as_role("operator")
    # given the operator's network allowed
    settings.CDC_WEBHOOK_ALLOW_NETWORKS = ("10.0.0.0/8",)
    body = {"name": "hook", "kind": "webhook", "url": "http://10.1.2.3/hook", "secret": SECRET}
    # then a plain http URL inside it is accepted, and one outside still refused
    post = operator.post
    assert post("/api/v1/alerts/channels/", body, content_type="application/json").status_code == 201
    body = {**body, "name": "other", "url": "http://192.168.0.10/hook"}
    assert post("/api/v1/alerts/channels/", body, content_type="application/json").status_code == 400


def test_a_url_saved_before_the_guard_is_refused_at_send(alert, receiver):
    # given a channel stored while its host pointed elsewhere (or before this check existed)
    channel = Channel.objects.create(name="hook", kind="webhook", url=receiver.url, secret=SECRET)
    # when an alert is delivered to it
    status = delivery.deliver(alert, channel, "firing", NOTICE, attempt=1, final=False)
    # then nothing was sent, and the attempt says why, for good
    assert status == DeliveryAttempt.Status.FAILED
    assert receiver.received == []
    assert DeliveryAttempt.objects.get().error.startswith("refused: the host 127.0.0.1 is a loopback address")


def test_a_name_resolving_to_loopback_is_refused_at_send(alert, receiver):
    port = receiver.server.server_address[1]
    channel = Channel.objects.create(name="chat", kind="slack", slack_url=f"https://localhost:{port}/hook")
    delivery.deliver(alert, channel, "firing", NOTICE, attempt=1, final=False)
    assert receiver.received == []
    assert "loopback" in DeliveryAttempt.objects.get().error


def test_a_redirect_to_an_internal_address_is_not_followed(alert, local_receivers):
    # given a receiver (in an allowed network) that redirects to another service
    inner = start_receiver()
    outer = start_receiver(answers=[307], location=inner.url)
    try:
        channel = Channel.objects.create(name="hook", kind="webhook", url=outer.url, secret=SECRET)
        # when an alert is delivered
        status = delivery.deliver(alert, channel, "firing", NOTICE, attempt=1, final=False)
        # then the redirect fails the attempt and the other service got nothing
        assert (status, len(outer.received), inner.received) == (DeliveryAttempt.Status.FAILED, 1, [])
        assert DeliveryAttempt.objects.get().error == "HTTP 307: redirects are not followed"
    finally:
        stop_receiver(inner)
        stop_receiver(outer)


def test_the_request_goes_to_the_checked_address_not_a_new_lookup(receiver):
    # given a target whose name resolves nowhere but whose checked address is the receiver's
    port = receiver.server.server_address[1]
    target = outbound.Target("http", "hooks.invalid", port, "/hook?x=1", "127.0.0.1")
    # when it is posted to
    status = outbound.post(target, b"{}", {"Content-Type": "application/json"}, timeout=2)
    # then the connection went to the address, and the name is only the Host header
    assert status == 200
    (got,) = receiver.received
    assert (got.path, got.headers["Host"]) == ("/hook?x=1", f"hooks.invalid:{port}")


def test_a_bad_allow_network_stops_the_process(monkeypatch):
    monkeypatch.setenv("CDC_WEBHOOK_ALLOW_NETWORKS", "10.0.0.0/8, not-a-net")
    with pytest.raises(ImproperlyConfigured, match="not-a-net"):
        env_networks("CDC_WEBHOOK_ALLOW_NETWORKS")
    monkeypatch.setenv("CDC_WEBHOOK_ALLOW_NETWORKS", "10.0.0.0/8, fd00::/8")
    assert env_networks("CDC_WEBHOOK_ALLOW_NETWORKS") == ("10.0.0.0/8", "fd00::/8")
