"""The simulator's Cloud Monitoring through the official client: descriptors, series, filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.api import metric_pb2
from google.api_core import exceptions
from google.cloud import monitoring_v3 as mon

PROJECT = "projects/demo-project"
FRESHNESS = "datastream.googleapis.com/stream/freshness"
EVENTS = "datastream.googleapis.com/stream/event_count"


def _series(monitoring, metric_type: str, extra: str = "", minutes: int = 10, **fields):
    end = datetime.fromtimestamp(datetime.now(UTC).timestamp(), UTC)
    request = mon.ListTimeSeriesRequest(
        name=PROJECT,
        filter=f'metric.type = "{metric_type}"{extra}',
        interval=mon.TimeInterval(start_time=end - timedelta(minutes=minutes), end_time=end),
        **fields,
    )
    return list(monitoring.list_time_series(request=request))


def test_descriptors_are_listed_by_prefix_or_by_name(monitoring):
    every = mon.ListMetricDescriptorsRequest(
        name=PROJECT, filter='metric.type = starts_with("datastream.googleapis.com/")'
    )
    one = mon.ListMetricDescriptorsRequest(name=PROJECT, filter=f'metric.type = "{FRESHNESS}"')
    listed = {d.type: d for d in monitoring.list_metric_descriptors(request=every)}
    assert len(listed) == 6
    assert listed[FRESHNESS].metric_kind == metric_pb2.MetricDescriptor.MetricKind.GAUGE
    assert listed[EVENTS].metric_kind == metric_pb2.MetricDescriptor.MetricKind.DELTA
    assert [d.type for d in monitoring.list_metric_descriptors(request=one)] == [FRESHNESS]
    got = monitoring.get_metric_descriptor(name=f"{PROJECT}/metricDescriptors/{FRESHNESS}")
    assert got.unit == "s"


def test_one_streams_series_carries_its_resource_labels_and_points_newest_first(sim, monitoring):
    # given a stream running for a while
    name = next(n for n in sim.steady_streams("RUNNING", 30.0) if not sim.world.streams[n].track)
    stream_id = name.rsplit("/", 1)[-1]
    # when its event counts are listed
    found = _series(monitoring, EVENTS, f' AND resource.labels.stream_id = "{stream_id}"', minutes=3)
    # then one series comes back, labelled with the stream, points newest first, each a step long
    assert len(found) == 1
    labels = dict(found[0].resource.labels)
    assert labels == {"resource_container": "demo-project", "location": "us-central1", "stream_id": stream_id}
    ends = [p.interval.end_time for p in found[0].points]
    assert ends == sorted(ends, reverse=True)
    point = found[0].points[0]
    assert (point.interval.end_time - point.interval.start_time).total_seconds() == sim.config.metric_step


def test_gauge_points_are_instants(monitoring):
    found = _series(monitoring, FRESHNESS, minutes=3)
    assert found
    assert all(p.interval.start_time == p.interval.end_time for s in found for p in s.points)


@pytest.mark.parametrize(
    ("filter_text", "says"),
    [
        (f'metric.type = "{FRESHNESS}" OR resource.type = "x"', "cannot parse"),
        ('resource.labels.stream_id = "stream-001"', "one metric.type"),
    ],
)
def test_filters_it_does_not_understand_are_refused(monitoring, filter_text, says):
    end = datetime.now(UTC)
    request = mon.ListTimeSeriesRequest(
        name=PROJECT,
        filter=filter_text,
        interval=mon.TimeInterval(start_time=end - timedelta(minutes=1), end_time=end),
    )
    with pytest.raises(exceptions.InvalidArgument, match=says):
        list(monitoring.list_time_series(request=request))


def test_aggregation_is_refused_rather_than_ignored(monitoring):
    aggregation = mon.Aggregation(
        alignment_period={"seconds": 60}, per_series_aligner=mon.Aggregation.Aligner.ALIGN_MEAN
    )
    with pytest.raises(exceptions.InvalidArgument, match="no aggregation"):
        _series(monitoring, FRESHNESS, aggregation=aggregation)
