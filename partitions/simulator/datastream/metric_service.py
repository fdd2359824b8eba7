"""The google.monitoring.v3.MetricService methods the simulator answers for Datastream metrics."""

from __future__ import annotations

from google.cloud import monitoring_v3 as mon
from grpc import StatusCode

from partitions.simulator.core.server import Refusal

from . import monitoring
from .config import SimClock
from .service import paginate
from .world import World


class MetricService:
    """ListTimeSeries, ListMetricDescriptors and GetMetricDescriptor over one simulated world."""

    def __init__(self, world: World, clock: SimClock, lock):
        """Serve the world's metrics under the Datastream service's lock."""
        self.world, self.clock, self._lock = world, clock, lock

    def list_metric_descriptors(self, request: mon.ListMetricDescriptorsRequest):
        """Return the Datastream metric descriptors the filter selects, one page."""
        self._project(request.name)
        clauses = monitoring.parse_filter(request.filter)
        found = [
            d
            for d in self._descriptors()
            if monitoring.matches(clauses, {"metric.type": d.type, "resource.type": monitoring.RESOURCE_TYPE})
        ]
        page, token = paginate(found, request.page_size, request.page_token)
        return mon.ListMetricDescriptorsResponse(metric_descriptors=page, next_page_token=token)

    def get_metric_descriptor(self, request: mon.GetMetricDescriptorRequest):
        """Return one descriptor by name, or refuse with NOT_FOUND."""
        for descriptor in self._descriptors():
            if descriptor.name == request.name:
                return descriptor
        raise Refusal(StatusCode.NOT_FOUND, f"Could not find descriptor for metric '{request.name}'.")

    def _descriptors(self):
        """Return the project's descriptors, without those the config says are missing."""
        return monitoring.descriptors(self.world.config.project, self.world.config.missing_metrics)

    def list_time_series(self, request: mon.ListTimeSeriesRequest) -> mon.ListTimeSeriesResponse:
        """Return the series of one metric type the filter selects, over the interval, one page."""
        self._project(request.name)
        if request.aggregation and request.aggregation.per_series_aligner:
            raise Refusal(
                StatusCode.INVALID_ARGUMENT, "The simulator serves raw points only: no aggregation."
            )
        clauses = monitoring.parse_filter(request.filter)
        types = [value for name, value, prefix in clauses if name == "metric.type" and not prefix]
        if len(types) != 1:
            raise Refusal(StatusCode.INVALID_ARGUMENT, 'The filter must name one metric.type = "...".')
        end, start = self._interval(request.interval)
        suffix = types[0].removeprefix(monitoring.PREFIX)
        if suffix in self.world.config.missing_metrics:
            # The simulator's answer for a type without a descriptor (Cloud Monitoring's own may differ).
            raise Refusal(StatusCode.NOT_FOUND, f'Cannot find metric(s) that match type = "{types[0]}".')
        headers = request.view == mon.ListTimeSeriesRequest.TimeSeriesView.HEADERS
        found = self._series(clauses, types[0], suffix, start, end, headers)
        page, token = paginate(found, request.page_size or 10_000, request.page_token)
        return mon.ListTimeSeriesResponse.pb()(time_series=page, next_page_token=token)

    def _series(self, clauses, metric_type, suffix, start, end, headers):
        """Return every stream's series of one metric type that matches the filter and has points."""
        cfg = self.world.config
        if not metric_type.startswith(monitoring.PREFIX):
            return []
        found = []
        with self._lock:
            for stream in self.world.streams.values():
                fields = monitoring.series_fields(stream, cfg.project, cfg.location, metric_type)
                if not monitoring.matches(clauses, fields):
                    continue
                series = monitoring.time_series(
                    stream, suffix, cfg.project, cfg.location, start, end, cfg.metric_step, cfg.seed, headers
                )
                if series is not None:
                    found.append(series)
        return found

    def _interval(self, interval) -> tuple[float, float]:
        """Return (end, start) in unix seconds, refusing an interval without an end or running backwards."""
        if not interval or interval.end_time is None:
            raise Refusal(StatusCode.INVALID_ARGUMENT, "The interval's end_time is required.")
        end = interval.end_time.timestamp()
        start = (
            interval.start_time.timestamp() if interval.start_time else end - self.world.config.metric_step
        )
        if start > end:
            raise Refusal(StatusCode.INVALID_ARGUMENT, "The interval's start_time is after its end_time.")
        return end, start

    def _project(self, name: str) -> None:
        """Refuse a project other than the simulator's with NOT_FOUND."""
        if name != f"projects/{self.world.config.project}":
            raise Refusal(StatusCode.NOT_FOUND, f"Project '{name}' was not found.")
