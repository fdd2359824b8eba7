"""An evaluation cycle reads with a fixed number of queries, whatever the number of rules and streams."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cdcweb.alerts import evaluation
from cdcweb.alerts.models import Alert, AlertRule
from streams.models import Stream
from tests.cdcweb.alerts.conftest import NOW, RecordingOutbox, add_samples

pytestmark = pytest.mark.django_db
K = AlertRule.Kind


def build(count: int, make_stream, make_partition, make_rule) -> None:
    """Create count streams, each behind, stalled and growing, with one rule of every kind on it."""
    for i in range(count):
        stream = make_stream(f"s{i}", state=Stream.State.RUNNING)
        make_partition(stream, minutes=110, stalled=True, stall_rule="watermark_stalled")
        add_samples(stream, [300.0 + i for i in range(40)])
        for kind in (K.LAG_ABOVE, K.LAG_GROWING, K.PARTITION_STALLED, K.STREAM_FAILED, K.RETENTION):
            make_rule(kind, stream, name=f"{kind}-{i}", threshold_seconds=60, for_minutes=5)
    make_rule(K.LAG_ABOVE, None, name="every-stream", threshold_seconds=60, for_minutes=5)


def reads(minutes: float) -> list[str]:
    """Run one cycle at NOW + minutes; return the SQL of its reads."""
    with CaptureQueriesContext(connection) as captured:
        evaluation.evaluate(RecordingOutbox(), NOW + timedelta(minutes=minutes))
    return [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].lstrip().upper().startswith(("SELECT", "WITH"))
    ]


@pytest.mark.parametrize("count", [2, 12])
def test_a_cycle_reads_the_same_number_of_queries_for_2_or_12_streams(
    make_stream, make_partition, make_rule, count
):
    # given streams where lag_above, lag_growing and partition_stalled all hold
    build(count, make_stream, make_partition, make_rule)
    # when the first cycle opens every alert, and a second finds them all still holding
    first, steady = reads(0), reads(0.5)
    # then the first cycle read: rules, firing alerts, streams, progress, one query for each
    # kind that needs one (lag window, recent samples, stalled partitions), silences, channels
    assert Alert.objects.count() == 4 * count
    assert len(first) == 9, first
    # and a steady cycle needs no channels: nothing to send
    assert len(steady) == 8, steady
