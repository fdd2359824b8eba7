"""Each rule kind, driven from stored lag samples, partition rows and stream states."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cdcweb.alerts.models import Alert, AlertRule
from partitions.models import Partition
from streams.models import Stream
from tests.cdcweb.alerts.conftest import NOW, add_samples

pytestmark = pytest.mark.django_db
K = AlertRule.Kind


@pytest.fixture
def behind(make_stream, make_partition):
    """Return a RUNNING stream whose low watermark is 10 minutes behind NOW (lag 600 s)."""
    stream = make_stream("orders", state=Stream.State.RUNNING)
    make_partition(stream, minutes=110, data_records=100)
    make_partition(stream, minutes=119)
    return stream


def test_lag_above_fires_when_every_sample_of_the_window_was_above(behind, make_rule, evaluate, outbox):
    # given six minutes of samples all above 300 s, and a rule "above 300 s for 5 minutes"
    add_samples(behind, [400.0 + i for i in range(37)])
    make_rule(K.LAG_ABOVE, behind, threshold_seconds=300, for_minutes=5)
    # when the rules are evaluated
    evaluate()
    # then one alert fires on the stream's lag, with the window the samples cover
    alert = Alert.objects.get()
    assert (alert.state, alert.stream, alert.kind) == (Alert.State.FIRING, behind, K.LAG_ABOVE)
    assert alert.evidence["lag_seconds"] == pytest.approx(600.0)
    assert alert.evidence["min_lag_in_window"] == pytest.approx(406.0)
    assert alert.evidence["window"]["until"] == NOW.isoformat()
    assert "lag 10 m 0 s above 5 m 0 s" in alert.summary
    assert outbox.events() == ["firing"]


def test_lag_above_holds_back_while_one_sample_of_the_window_was_below(behind, make_rule, evaluate):
    add_samples(behind, [400.0] * 20 + [250.0] + [400.0] * 16)
    make_rule(K.LAG_ABOVE, behind, threshold_seconds=300, for_minutes=5)
    evaluate()
    assert not Alert.objects.exists()


def test_lag_above_waits_until_the_samples_cover_the_whole_window(behind, make_rule, evaluate):
    # given a stream sampled for two minutes only
    add_samples(behind, [400.0] * 12)
    make_rule(K.LAG_ABOVE, behind, threshold_seconds=300, for_minutes=5)
    evaluate()
    assert not Alert.objects.exists()


def test_lag_above_without_a_window_fires_on_the_current_lag(behind, make_rule, evaluate):
    make_rule(K.LAG_ABOVE, behind, threshold_seconds=60, for_minutes=0)
    evaluate()
    assert Alert.objects.get().evidence["lag_seconds"] == pytest.approx(600.0)


def test_lag_above_for_every_stream_fires_only_for_those_behind(
    behind, make_stream, make_partition, make_rule, evaluate
):
    fresh = make_stream("fresh", state=Stream.State.RUNNING)
    make_partition(fresh, minutes=119.9)
    add_samples(behind, [400.0] * 37)
    add_samples(fresh, [5.0] * 37)
    make_rule(K.LAG_ABOVE, None, threshold_seconds=300, for_minutes=5)
    evaluate()
    assert list(Alert.objects.values_list("stream__name", flat=True)) == ["orders"]


def test_lag_growing_fires_when_the_lag_rose_in_each_sample_of_the_window(behind, make_rule, evaluate):
    # given the lag rising in each of the last ten samples (Burrow's "stalled consumer")
    add_samples(behind, [100.0, 90.0] + [100.0 + 10 * i for i in range(10)])
    make_rule(K.LAG_GROWING, behind)
    evaluate()
    alert = Alert.objects.get()
    assert [s["lag_seconds"] for s in alert.evidence["samples"]] == [100.0 + 10 * i for i in range(10)]
    assert "grew in each of the last 10 samples" in alert.summary


def test_lag_growing_holds_back_when_one_sample_stayed_level(behind, make_rule, evaluate):
    add_samples(behind, [100.0 + 10 * i for i in range(5)] + [140.0] + [150.0 + i for i in range(4)])
    make_rule(K.LAG_GROWING, behind)
    evaluate()
    assert not Alert.objects.exists()


def test_partition_stalled_fires_with_the_stall_rules_evidence(behind, make_partition, make_rule, evaluate):
    # given a partition the stall rule marked STALLED, with what it found
    found = {"level": "STALLED", "threshold_seconds": 60.0, "last_progress_at": "2026-01-01T13:50:00+00:00"}
    stuck = make_partition(behind, minutes=100, stalled=True, stall_rule="watermark_stalled",
                           stall_evidence=found)  # fmt: skip
    make_rule(K.PARTITION_STALLED, behind)
    evaluate()
    alert = Alert.objects.get()
    assert alert.evidence["stalled"] == 1
    assert alert.evidence["partitions"][0]["token"] == stuck.token
    assert alert.evidence["partitions"][0]["stall_evidence"] == found
    # and once a checkpoint clears the stall, the alert resolves
    Partition.objects.filter(pk=stuck.pk).update(stalled=False)
    evaluate(minutes=1)
    assert Alert.objects.get().state == Alert.State.RESOLVED


@pytest.mark.parametrize("state", [Stream.State.FAILED, Stream.State.FAILED_PERMANENTLY])
def test_stream_failed_fires_on_either_failed_state(make_stream, make_rule, evaluate, state):
    stream = make_stream("orders", state=state, state_reason="UNAVAILABLE three times")
    Stream.objects.filter(pk=stream.pk).update(state_changed_at=NOW - timedelta(minutes=3))
    make_rule(K.STREAM_FAILED, stream, for_minutes=2)
    evaluate()
    alert = Alert.objects.get()
    assert alert.evidence["state"] == state
    assert "UNAVAILABLE three times" in alert.summary


def test_stream_failed_waits_for_its_minutes(make_stream, make_rule, evaluate):
    stream = make_stream("orders", state=Stream.State.FAILED)
    Stream.objects.filter(pk=stream.pk).update(state_changed_at=NOW - timedelta(minutes=1))
    make_rule(K.STREAM_FAILED, stream, for_minutes=2)
    evaluate()
    assert not Alert.objects.exists()
    evaluate(minutes=1.5)
    assert Alert.objects.exists()


@pytest.mark.parametrize(("paused_hours_ago", "fires"), [(20, True), (10, False), (30, True)])
def test_retention_fires_when_a_paused_stream_has_few_hours_left(
    make_stream, make_rule, evaluate, paused_hours_ago, fires
):
    # given a stream paused some hours ago (retention 24 h) and a rule "less than 6 h left"
    stream = make_stream("orders", state=Stream.State.PAUSED)
    Stream.objects.filter(pk=stream.pk).update(paused_at=NOW - timedelta(hours=paused_hours_ago))
    make_rule(K.RETENTION, None, retention_hours=6)
    evaluate()
    assert Alert.objects.exists() == fires
    if fires:
        left = Alert.objects.get().evidence["left_hours"]
        assert left == pytest.approx(24 - paused_hours_ago)


def test_retention_counts_from_a_failed_streams_low_watermark(
    make_stream, make_partition, make_rule, evaluate
):
    # given a stream that failed permanently with its watermark 21 hours back
    stream = make_stream("orders", state=Stream.State.FAILED_PERMANENTLY)
    make_partition(stream, minutes=120 - 21 * 60)
    make_rule(K.RETENTION, stream, retention_hours=6)
    evaluate()
    assert Alert.objects.get().evidence["left_hours"] == pytest.approx(3.0)


@pytest.fixture
def quiet(behind):
    """Return the behind stream RUNNING for an hour, with 100 records counted in every recent sample."""
    Stream.objects.filter(pk=behind.pk).update(state_changed_at=NOW - timedelta(hours=1))
    return behind


def test_no_data_fires_when_no_record_arrived_in_its_minutes(quiet, make_rule, evaluate, settings):
    settings.CDC_ALERTS_NO_DATA = True
    add_samples(quiet, [5.0] * 70, records=[100] * 70)
    make_rule(K.NO_DATA, quiet, for_minutes=10)
    evaluate()
    alert = Alert.objects.get()
    assert alert.evidence["data_records"] == 100
    assert "no data change records for 10 min" in alert.summary


def test_no_data_holds_back_when_records_arrived(quiet, make_rule, evaluate, settings):
    settings.CDC_ALERTS_NO_DATA = True
    add_samples(quiet, [5.0] * 70, records=[90] * 65 + [100] * 5)
    make_rule(K.NO_DATA, quiet, for_minutes=10)
    evaluate()
    assert not Alert.objects.exists()


def test_no_data_is_off_unless_enabled(quiet, make_rule, evaluate):
    add_samples(quiet, [5.0] * 70, records=[100] * 70)
    make_rule(K.NO_DATA, quiet, for_minutes=10)
    evaluate()
    assert not Alert.objects.exists()


@pytest.mark.parametrize(
    ("state", "hours_ago", "fires"), [("PAUSED", 150, True), ("FAILED", 150, True), ("PAUSED", 100, False)]
)
def test_retention_applies_to_a_watched_stream_from_when_datastream_stopped_it(
    make_stream, make_partition, make_rule, evaluate, state, hours_ago, fires
):
    # given a Datastream stream (source log retention 7 days) paused or failing for some hours,
    # whose objects' backfills ended long ago (no watermark to go by)
    stream = make_stream("ds", source_kind="datastream", state=state)
    Stream.objects.filter(pk=stream.pk).update(
        connection={
            "project": "demo-project",
            "location": "us-central1",
            "stream_id": "s",
            "log_retention_hours": 168,
        },
        state_changed_at=NOW - timedelta(hours=hours_ago),
    )
    make_partition(stream, minutes=-100 * 60)
    make_rule(K.RETENTION, None, retention_hours=24)
    evaluate()
    assert Alert.objects.exists() == fires
    if fires:
        assert Alert.objects.get().evidence["left_hours"] == pytest.approx(168 - hours_ago)


def test_stream_failed_applies_to_a_watched_stream(make_stream, make_rule, evaluate):
    stream = make_stream("ds", source_kind="datastream", state=Stream.State.FAILED_PERMANENTLY)
    Stream.objects.filter(pk=stream.pk).update(
        state_changed_at=NOW - timedelta(minutes=3),
        state_reason="Datastream reports FAILED_PERMANENTLY: lost",
    )
    make_rule(K.STREAM_FAILED, None, for_minutes=2)
    evaluate()
    assert "Datastream reports FAILED_PERMANENTLY" in Alert.objects.get().summary
