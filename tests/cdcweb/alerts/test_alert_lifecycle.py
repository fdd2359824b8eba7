"""An alert's life: it fires once, repeats when asked, resolves with a notice, and silences mute it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cdcweb.alerts import evaluation
from cdcweb.alerts.models import Alert, AlertRule, Silence
from streams.models import Stream
from tests.cdcweb.alerts.conftest import NOW

pytestmark = pytest.mark.django_db
K = AlertRule.Kind
A = Alert.State


@pytest.fixture
def failed(make_stream):
    """Return a stream that has been FAILED since NOW."""
    stream = make_stream("orders", state=Stream.State.FAILED, state_reason="UNAVAILABLE")
    Stream.objects.filter(pk=stream.pk).update(state_changed_at=NOW)
    return stream


def recover(stream) -> None:
    Stream.objects.filter(pk=stream.pk).update(state=Stream.State.RUNNING)


def test_an_alert_fires_once_while_its_rule_holds(failed, make_rule, evaluate, outbox):
    make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    for minute in range(5):
        evaluate(minutes=minute)
    assert Alert.objects.count() == 1
    assert outbox.events() == ["firing"]
    alert = Alert.objects.get()
    assert (alert.state, alert.fired_at, alert.last_sent_at, alert.notices) == (A.FIRING, NOW, NOW, 1)


def test_an_alert_repeats_every_n_minutes_while_it_holds(failed, make_rule, evaluate, outbox):
    # given a rule that repeats every 10 minutes
    make_rule(K.STREAM_FAILED, failed, for_minutes=0, repeat_minutes=10)
    # when it is evaluated over 25 minutes
    for minute in (0, 5, 9.9, 10, 15, 20, 25):
        evaluate(minutes=minute)
    # then it was sent at 0, 10 and 20
    assert outbox.events() == ["firing", "repeat", "repeat"]
    alert = Alert.objects.get()
    assert (alert.notices, alert.last_sent_at) == (3, NOW + timedelta(minutes=20))


def test_an_alert_resolves_with_a_notice_when_its_rule_stops_holding(failed, make_rule, evaluate, outbox):
    make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    evaluate()
    # when the stream runs again
    recover(failed)
    evaluate(minutes=1)
    # then the alert is resolved and a resolved notice goes out; a later failure is a new alert
    alert = Alert.objects.get()
    assert (alert.state, alert.resolved_at) == (A.RESOLVED, NOW + timedelta(minutes=1))
    assert outbox.events() == ["firing", "resolved"]
    Stream.objects.filter(pk=failed.pk).update(state=Stream.State.FAILED)
    evaluate(minutes=2)
    assert list(Alert.objects.order_by("id").values_list("state", flat=True)) == [A.RESOLVED, A.FIRING]


def test_every_enabled_channel_of_the_rule_gets_each_notice(failed, make_rule, webhook, evaluate, outbox):
    rule = make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    other = rule.channels.create(name="mail", kind="email", email_to=["ops@example.com"])
    rule.channels.create(name="off", kind="email", email_to=["x@example.com"], enabled=False)
    evaluate()
    assert sorted(channel for _, channel, _, _ in outbox.sent) == sorted([webhook.pk, other.pk])
    assert len({notice for *_, notice in outbox.sent}) == 2


@pytest.mark.parametrize("silence_on", ["stream", "rule", "both"])
def test_a_silenced_alert_is_recorded_but_not_sent(failed, make_rule, evaluate, outbox, silence_on):
    # given a silence on the stream, the rule, or the rule on the stream, for one hour
    rule = make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    names = {"stream": {"stream": failed}, "rule": {"rule": rule}, "both": {"rule": rule, "stream": failed}}
    Silence.objects.create(ends_at=NOW + timedelta(hours=1), starts_at=NOW - timedelta(minutes=1),
                           **names[silence_on])  # fmt: skip
    # when the rule holds during it
    evaluate()
    # then the alert is recorded as silenced and nothing is sent
    alert = Alert.objects.get()
    assert (alert.state, alert.silenced, alert.last_sent_at) == (A.FIRING, True, None)
    assert outbox.sent == []
    # and once the silence ends while it still holds, the firing notice goes out
    evaluate(minutes=61)
    alert.refresh_from_db()
    assert (alert.silenced, alert.last_sent_at) == (False, NOW + timedelta(minutes=61))
    assert outbox.events() == ["firing"]


def test_a_silence_on_another_stream_mutes_nothing(failed, make_stream, make_rule, evaluate, outbox):
    other = make_stream("other")
    Silence.objects.create(stream=other, starts_at=NOW - timedelta(hours=1), ends_at=NOW + timedelta(hours=1))
    make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    evaluate()
    assert outbox.events() == ["firing"]


def test_an_alert_that_resolves_while_silenced_sends_no_resolved_notice(failed, make_rule, evaluate, outbox):
    make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    evaluate()
    Silence.objects.create(stream=failed, starts_at=NOW, ends_at=NOW + timedelta(hours=1))
    recover(failed)
    evaluate(minutes=1)
    assert Alert.objects.get().state == A.RESOLVED
    assert outbox.events() == ["firing"]


def test_disabling_a_rule_resolves_its_alerts(failed, make_rule, evaluate, outbox):
    rule = make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    evaluate()
    AlertRule.objects.filter(pk=rule.pk).update(enabled=False)
    evaluate(minutes=1)
    assert Alert.objects.get().state == A.RESOLVED
    assert outbox.events() == ["firing", "resolved"]


def test_a_rule_without_channels_records_its_alert_and_sends_nothing(failed, make_rule, evaluate, outbox):
    rule = make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    rule.channels.clear()
    evaluate()
    evaluate(minutes=1)
    alert = Alert.objects.get()
    assert (alert.state, alert.last_sent_at, alert.notices) == (A.FIRING, None, 0)
    assert outbox.sent == []


def test_two_evaluations_with_the_same_view_open_and_send_once(failed, make_stream, make_rule, outbox):
    # given two evaluations that both read the rules before either wrote (a late beat)
    make_rule(K.STREAM_FAILED, failed, for_minutes=0)
    other = make_stream("other", state=Stream.State.FAILED)
    Stream.objects.filter(pk=other.pk).update(state_changed_at=NOW)
    make_rule(K.STREAM_FAILED, other, for_minutes=0)
    rules = evaluation.load_rules(enabled=True)
    findings = evaluation.find(list(rules.values()), evaluation.load_scope(list(rules.values()), NOW))
    plans = [evaluation.plan(findings, {}, rules, evaluation.Mutes([]), NOW) for _ in range(2)]
    senders = evaluation.channels_of(set(rules))
    # when the first opens one alert by itself, then both apply all they planned
    evaluation.apply(plans[0][0], senders[plans[0][0].rule.pk], outbox, evaluation.Cycle(), NOW)
    for planned in plans:
        evaluation.apply_all(planned, senders, outbox, evaluation.Cycle(), NOW)
    # then each alert opened once and was sent once
    assert Alert.objects.count() == 2
    assert outbox.events() == ["firing", "firing"]
