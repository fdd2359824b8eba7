"""Cloud Monitoring through the official client: confirmed metric names, lag, throughput, warnings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.cloud import monitoring_v3

from partitions.simulator.datastream.config import METRIC_SUFFIXES, DatastreamSimConfig
from partitions.simulator.datastream.monitoring import DESCRIPTORS
from partitions.simulator.datastream.server import start_server
from partitions.sources.datastream import metrics
from partitions.sources.datastream.client import DatastreamApi

PROJECT, LOCATION = "demo-project", "us-central1"


def _settled(ds_sim, api, state: str, seconds: float, prone: bool | None = None):
    """Return a stream in a state for at least ``seconds`` already and the next minute (no operation)."""
    now = ds_sim.clock.now()
    for name in ds_sim.steady_streams(state, 60.0):
        stream = ds_sim.world.streams[name]
        settled = not stream.track and now - stream.moment(now).since >= seconds
        if settled and prone in (None, stream.unsupported_prone):
            return api.get_stream(name)
    raise AssertionError(f"no {state} stream settled for {seconds} s")


def _window(seconds: float) -> tuple[datetime, datetime]:
    end = datetime.now(UTC)
    return end - timedelta(seconds=seconds), end


def test_metric_names_are_confirmed_by_the_metric_descriptors(ds_sim, api):
    # given the descriptors Cloud Monitoring lists for Datastream, read with the official client
    client = monitoring_v3.MetricServiceClient(transport=api.monitoring.transport)
    request = monitoring_v3.ListMetricDescriptorsRequest(
        name=f"projects/{PROJECT}", filter=metrics.DESCRIPTOR_FILTER
    )
    listed = {d.type: d for d in client.list_metric_descriptors(request=request)}
    # then every metric cdcweb reads is one of them, on the Datastream stream resource
    assert api.missing_metric_types(PROJECT) == set()
    for metric_type in metrics.METRIC_TYPES:
        assert list(listed[metric_type].monitored_resource_types) == [metrics.RESOURCE_TYPE]
    assert metrics.METRIC_TYPES == (
        "datastream.googleapis.com/stream/freshness",
        "datastream.googleapis.com/stream/event_count",
        "datastream.googleapis.com/stream/bytes_count",
        "datastream.googleapis.com/stream/unsupported_event_count",
    )


def test_running_stream_has_a_small_lag_and_throughput(ds_sim, api):
    # given a stream running for a minute or more
    stream = _settled(ds_sim, api, "RUNNING", 60.0)
    start, end = _window(40.0)
    # when its metrics are read
    found = api.stream_metrics(PROJECT, LOCATION, start, end, stream.stream_id)[stream.stream_id]
    # then freshness gives its lag and the event and byte counts its throughput
    assert 0 <= found.lag_seconds < 15
    assert found.events_per_second > 0
    assert found.bytes_per_second > found.events_per_second
    times = [p.time for p in found.freshness]
    assert times == sorted(times)
    assert all(start < t <= end for t in times)


def test_paused_stream_has_no_lag_to_report(ds_sim, api):
    stream = _settled(ds_sim, api, "PAUSED", 60.0)
    start, end = _window(40.0)
    found = api.stream_metrics(PROJECT, LOCATION, start, end, stream.stream_id)
    assert stream.stream_id not in found  # a stream that processes nothing reports no points


def test_failing_stream_lags_more_and_more(ds_sim, api):
    stream = _settled(ds_sim, api, "FAILED", 60.0)
    start, end = _window(50.0)
    found = api.stream_metrics(PROJECT, LOCATION, start, end, stream.stream_id)[stream.stream_id]
    lags = [p.value for p in found.freshness]
    assert len(lags) >= 3
    assert lags == sorted(lags)
    assert found.events_per_second == 0


def test_unsupported_events_show_as_a_warning(ds_sim, api):
    # given a stream prone to unsupported events, running for ten minutes
    stream = _settled(ds_sim, api, "RUNNING", 600.0, prone=True)
    calm = _settled(ds_sim, api, "RUNNING", 600.0, prone=False)
    start, end = _window(600.0)
    # when both are read over those ten minutes
    found = api.stream_metrics(PROJECT, LOCATION, start, end, stream.stream_id)[stream.stream_id]
    quiet = api.stream_metrics(PROJECT, LOCATION, start, end, calm.stream_id)[calm.stream_id]
    # then only the prone one has unsupported events
    assert found.unsupported_events > 0
    assert quiet.unsupported_events == 0


def test_a_location_metrics_cost_four_calls_whatever_the_stream_count(ds_sim, api):
    # given 200 streams, and the project's descriptors read once already
    api.metric_types(PROJECT)
    mark = ds_sim.mark()
    start, end = _window(60.0)
    # when every stream's metrics are read at once
    found = api.stream_metrics(PROJECT, LOCATION, start, end)
    # then one ListTimeSeries per metric type covered them all
    assert len(found) > 100
    assert [r.method for r in ds_sim.requests(since=mark)] == ["ListTimeSeries"] * 4
    assert all(r.code == "OK" for r in ds_sim.requests(since=mark))


def test_series_of_another_location_are_left_out(api):
    start, end = _window(60.0)
    assert api.time_series(PROJECT, metrics.FRESHNESS, start, end, location="europe-west3") == {}


def test_metric_types_come_from_the_descriptors_listed_once_per_process(ds_sim):
    # given a new client (a new worker process)
    api, mark = DatastreamApi(ds_sim.endpoint, ds_sim.endpoint, timeout=10.0), ds_sim.mark()
    start, end = _window(60.0)
    # when it reads every stream's metrics twice
    api.stream_metrics(PROJECT, LOCATION, start, end)
    api.stream_metrics(PROJECT, LOCATION, start, end)
    # then the descriptors were listed once, and each role's type is the one a descriptor names
    methods = [r.method for r in ds_sim.requests(since=mark)]
    assert methods == ["ListMetricDescriptors"] + ["ListTimeSeries"] * 8
    assert api.metric_types(PROJECT) == metrics.MetricTypes(dict(metrics.ROLES), ())


def test_a_metric_without_a_descriptor_is_not_read_and_is_named_missing():
    # given a project whose Cloud Monitoring has no freshness descriptor
    config = DatastreamSimConfig(
        seed=5, streams=4, cycle=7200.0, metric_step=10.0, missing_metrics=("freshness",)
    )
    server = start_server(config.resolved())
    try:
        api, mark = DatastreamApi(server.endpoint, server.endpoint, timeout=10.0), server.mark()
        start, end = _window(60.0)
        # when the streams' metrics are read
        found = api.stream_metrics(PROJECT, LOCATION, start, end)
        # then freshness is not asked for, the other three are, and every stream names what is missing
        asked = [r.method for r in server.requests(since=mark)]
        assert asked == ["ListMetricDescriptors"] + ["ListTimeSeries"] * 3
        assert api.missing_metric_types(PROJECT) == {metrics.FRESHNESS}
        assert found
        assert all(m.missing == (metrics.FRESHNESS,) and m.lag_seconds is None for m in found.values())
    finally:
        server.stop()


def test_the_simulators_metric_suffixes_are_its_descriptors():
    assert tuple(d[0] for d in DESCRIPTORS) == METRIC_SUFFIXES


def test_resolve_keeps_a_descriptor_only_on_the_datastream_resource():
    other = {metrics.FRESHNESS: ("gce_instance",), metrics.EVENT_COUNT: (metrics.RESOURCE_TYPE,)}
    found = metrics.resolve(other)
    assert found.found == {"events": metrics.EVENT_COUNT}
    assert found.missing == tuple(
        sorted({metrics.FRESHNESS, metrics.BYTES_COUNT, metrics.UNSUPPORTED_EVENT_COUNT})
    )
