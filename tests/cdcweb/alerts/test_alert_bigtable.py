"""Alerts on a Bigtable stream: the same rules, its own retention (the table's 1 to 7 days)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cdcweb.alerts.models import AlertRule
from partitions.sources.bigtable.kind import KIND
from streams.models import Stream
from tests.cdcweb.alerts.conftest import NOW, add_samples

pytestmark = pytest.mark.django_db
K = AlertRule.Kind
SETTINGS = {"project": "my-project", "instance": "my-instance", "table": "events", "app_profile": "cdc"}


def bigtable_stream(name: str, retention_hours: int, **fields) -> Stream:
    connection = KIND.clean({**SETTINGS, "retention_hours": retention_hours})
    stream = Stream.objects.create(name=name, source_kind="bigtable", connection=connection, start_at=NOW)
    Stream.objects.filter(pk=stream.pk).update(**fields)
    return stream


@pytest.mark.parametrize(("retention_hours", "fires"), [(24, True), (168, False)])
def test_the_retention_rule_uses_the_tables_change_stream_retention(
    retention_hours, fires, make_partition, make_rule, evaluate, outbox
):
    # given a Bigtable stream paused 20 hours ago, whose table keeps changes 1 or 7 days
    stream = bigtable_stream(
        "bt", retention_hours, state="PAUSED", state_changed_at=NOW - timedelta(hours=20),
        paused_at=NOW - timedelta(hours=20),
    )  # fmt: skip
    make_partition(stream, minutes=110)
    make_rule(K.RETENTION, stream, retention_hours=6)
    # when the rules are evaluated, then it fires only when under 6 hours of retention are left
    evaluate(0)
    assert outbox.events() == (["firing"] if fires else [])


def test_the_lag_rule_fires_for_a_bigtable_stream(make_partition, make_rule, evaluate, outbox):
    # given a running Bigtable stream whose lag has stood at 400 s for ten minutes
    stream = bigtable_stream("bt", 24, state="RUNNING")
    make_partition(stream, minutes=110, data_records=100)
    add_samples(stream, [400.0] * 61, until=NOW, records=[100] * 61)
    make_rule(K.LAG_ABOVE, stream, threshold_seconds=300, for_minutes=5)
    # when the rules are evaluated, then the lag alert fires
    evaluate(0)
    assert outbox.events() == ["firing"]
