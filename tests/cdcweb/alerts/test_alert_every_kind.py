"""Every rule kind, from stored samples, partition rows and stream states: fire, repeat, silence, resolve."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cdcweb.alerts.models import Alert, AlertRule, Silence
from partitions.models import LagSample, Partition
from streams.models import Stream
from tests.cdcweb.alerts.conftest import NOW, add_samples

pytestmark = pytest.mark.django_db
K = AlertRule.Kind
# Samples every 10 s from ten minutes before NOW to half an hour after it (the cycles run up to NOW + 17).
SPAN = 241
UNTIL = NOW + timedelta(minutes=30)
RULES = {
    K.LAG_ABOVE: {"threshold_seconds": 300, "for_minutes": 5},
    K.LAG_GROWING: {},
    K.PARTITION_STALLED: {},
    K.STREAM_FAILED: {"for_minutes": 0},
    K.RETENTION: {"retention_hours": 6},
    K.NO_DATA: {"for_minutes": 10},
}


def hold(kind: str, stream: Stream, make_partition) -> None:
    """Store what makes the kind hold for the stream from NOW on."""
    state = {K.STREAM_FAILED: "FAILED_PERMANENTLY", K.RETENTION: "PAUSED"}.get(kind, "RUNNING")
    Stream.objects.filter(pk=stream.pk).update(
        state=state, state_changed_at=NOW - timedelta(hours=1), paused_at=NOW - timedelta(hours=20)
    )
    make_partition(stream, minutes=110, data_records=100, stalled=kind == K.PARTITION_STALLED)
    lags = [100.0 + i for i in range(SPAN)] if kind == K.LAG_GROWING else [400.0] * SPAN
    add_samples(stream, lags, until=UNTIL, records=[100] * SPAN)


def clear(kind: str, stream: Stream) -> None:
    """Store what makes the kind stop holding."""
    partitions = Partition.objects.filter(stream=stream)
    if kind == K.LAG_ABOVE:
        partitions.update(watermark=NOW + timedelta(minutes=17))  # caught up
    elif kind == K.LAG_GROWING:
        LagSample.objects.create(stream=stream, at=UNTIL + timedelta(seconds=10), lag_seconds=0.0)
    elif kind == K.PARTITION_STALLED:
        partitions.update(stalled=False)
    elif kind == K.NO_DATA:
        partitions.update(data_records=500)
    else:
        Stream.objects.filter(pk=stream.pk).update(state="RUNNING")  # recovered, or resumed


@pytest.mark.parametrize("kind", list(RULES))
def test_each_kind_fires_repeats_is_silenced_and_resolves(
    kind, make_stream, make_partition, make_rule, evaluate, outbox, settings
):
    settings.CDC_ALERTS_NO_DATA = True
    # given a stream where the kind holds, and its rule repeating every 5 minutes
    stream = make_stream("orders")
    hold(kind, stream, make_partition)
    make_rule(kind, stream, repeat_minutes=5, **RULES[kind])
    # when it is evaluated, then it fires, and repeats 5 minutes later
    evaluate(0)
    evaluate(5)
    assert outbox.events() == ["firing", "repeat"]
    # when a silence covers it, then it is recorded as silenced and nothing is sent
    Silence.objects.create(
        stream=stream, starts_at=NOW + timedelta(minutes=6), ends_at=NOW + timedelta(minutes=15)
    )
    evaluate(10)
    assert Alert.objects.get().silenced
    assert outbox.events() == ["firing", "repeat"]
    # once the silence ends, it is sent again; once the condition clears, it resolves with a notice
    evaluate(16)
    clear(kind, stream)
    evaluate(17)
    alert = Alert.objects.get()
    assert outbox.events() == ["firing", "repeat", "repeat", "resolved"]
    assert (alert.state, alert.kind, alert.notices) == (Alert.State.RESOLVED, kind, 3)
    assert alert.resolved_at == NOW + timedelta(minutes=17)
