"""The Datastream and Cloud Monitoring clients of one worker process, and the calls that watch streams.

One ``DatastreamApi`` per process and pair of endpoints (``shared_api``), reused by every
stream. gRPC channels do not survive a fork, so the official clients are built lazily and
rebuilt when the process ID changes (a Celery prefork child gets its own). Endpoints come
from DATASTREAM_API_ENDPOINT and MONITORING_API_ENDPOINT: when set (host:port), the
clients talk to that server over an insecure channel with anonymous credentials (the
simulator); when unset, to the real APIs with the application default credentials.

Calls are made without the client library's own retries and with a timeout: a failure
leaves at once as a RetryableSourceError or PermanentSourceError (errors.py), and retrying
is the caller's decision (a Celery task's autoretry). ``calls`` counts the RPCs made, page
by page, so a poller can report its cost.

The v1 API has no FetchStreamErrors (the seed names it; only v1alpha1 had FetchErrors, as
a long-running operation): a stream's errors come with the stream itself (``Stream.errors``)
and an object's with the object, so ``stream_errors`` reads those.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime

import grpc
from google.auth.credentials import AnonymousCredentials
from google.cloud import datastream_v1 as ds
from google.cloud import monitoring_v3 as mon
from google.cloud.datastream_v1.services.datastream.transports import DatastreamGrpcTransport
from google.cloud.monitoring_v3.services.metric_service.transports import MetricServiceGrpcTransport

from . import metrics
from .errors import classify
from .metrics import StreamMetrics
from .snapshots import ErrorSnapshot, ObjectSnapshot, StreamSnapshot, object_snapshot, stream_snapshot

DATASTREAM_ENDPOINT_ENV = "DATASTREAM_API_ENDPOINT"
MONITORING_ENDPOINT_ENV = "MONITORING_API_ENDPOINT"
DEFAULT_TIMEOUT_S = 30.0
LIST_PAGE_SIZE = 1000  # the API's maximum page: one call lists a location of up to 1000 streams
# Descriptors change when Google adds a metric, not between polls: one ListMetricDescriptors
# per project an hour, so a beat cycle costs no more than its ListTimeSeries.
DESCRIPTORS_TTL_S = 3600.0

_shared: dict[tuple[str | None, str | None], DatastreamApi] = {}
_shared_lock = threading.Lock()


def endpoints() -> tuple[str | None, str | None]:
    """Return the Datastream and Monitoring endpoints the environment sets (None: the real APIs)."""
    return os.environ.get(DATASTREAM_ENDPOINT_ENV) or None, os.environ.get(MONITORING_ENDPOINT_ENV) or None


def shared_api() -> DatastreamApi:
    """Return this process's DatastreamApi for the endpoints the environment sets now."""
    key = endpoints()
    with _shared_lock:
        api = _shared.get(key)
        if api is None:
            api = _shared[key] = DatastreamApi(*key)
        return api


class DatastreamApi:
    """Watch Datastream streams and read their metrics; operations.py operates them through it."""

    def __init__(
        self,
        datastream_endpoint: str | None = None,
        monitoring_endpoint: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ):
        """Keep the endpoints (None: the real API) and the per-call timeout; build nothing yet."""
        self.datastream_endpoint, self.monitoring_endpoint = datastream_endpoint, monitoring_endpoint
        self.timeout = timeout
        self._pid = -1
        self._reset()

    def _reset(self) -> None:
        # A lock held by another thread at fork time stays held in the child: a new one.
        """Forget the clients and the lock: a new process (or a first use) starts afresh."""
        self._lock = threading.Lock()
        self._datastream: ds.DatastreamClient | None = None
        self._monitoring: mon.MetricServiceClient | None = None
        self._metric_types: dict[str, tuple[float, metrics.MetricTypes]] = {}
        self._calls = 0
        self._pid = os.getpid()

    @property
    def calls(self) -> int:
        """Return how many RPCs (pages included) this process made through this object."""
        return self._calls

    def count(self, n: int = 1) -> None:
        """Add n RPCs to ``calls``."""
        with self._lock:
            self._calls += n

    @property
    def datastream(self) -> ds.DatastreamClient:
        """Return this process's Datastream client, built on first use."""
        if self._pid != os.getpid():
            self._reset()
        with self._lock:
            if self._datastream is None:
                self._datastream = self._build(
                    ds.DatastreamClient, DatastreamGrpcTransport, self.datastream_endpoint
                )
            return self._datastream

    @property
    def monitoring(self) -> mon.MetricServiceClient:
        """Return this process's Cloud Monitoring client, built on first use."""
        if self._pid != os.getpid():
            self._reset()
        with self._lock:
            if self._monitoring is None:
                self._monitoring = self._build(
                    mon.MetricServiceClient, MetricServiceGrpcTransport, self.monitoring_endpoint
                )
            return self._monitoring

    @staticmethod
    def _build(client_type, transport_type, endpoint: str | None):
        """Return an official client: on an insecure channel to ``endpoint``, or the real API."""
        try:
            if endpoint is None:
                return client_type()
            # The transport ignores credentials given with a channel; they say what it runs as.
            transport = transport_type(
                credentials=AnonymousCredentials(), channel=grpc.insecure_channel(endpoint)
            )
            return client_type(transport=transport)
        except Exception as exc:
            raise classify(exc) from exc

    def call(self, method, **kwargs):
        """Call one unary client method without the library's retries, counted and classified."""
        try:
            self.count()
            return method(**kwargs, retry=None, timeout=self.timeout)
        except Exception as exc:
            raise classify(exc) from exc

    def pages(self, method, **kwargs):
        """Yield the pages of a list method, each page one counted and classified RPC."""
        try:
            self.count()
            pager = method(**kwargs, retry=None, timeout=self.timeout)
            for number, page in enumerate(pager.pages):
                if number:
                    self.count()
                yield page
        except Exception as exc:
            raise classify(exc) from exc

    # -- watching -------------------------------------------------------------

    def list_streams(self, project: str, location: str) -> list[StreamSnapshot]:
        """Return every stream of a location (the import list): one RPC per 1000 streams."""
        parent = f"projects/{project}/locations/{location}"
        request = ds.ListStreamsRequest(parent=parent, page_size=LIST_PAGE_SIZE)
        return [
            stream_snapshot(s)
            for page in self.pages(self.datastream.list_streams, request=request)
            for s in page.streams
        ]

    def get_stream(self, name: str) -> StreamSnapshot:
        """Return one stream: state, errors, last recovery, backfill strategy. One RPC."""
        return stream_snapshot(self.call(self.datastream.get_stream, name=name))

    def list_stream_objects(self, name: str) -> list[ObjectSnapshot]:
        """Return a stream's objects with their backfill jobs: one RPC per 1000 objects."""
        request = ds.ListStreamObjectsRequest(parent=name, page_size=LIST_PAGE_SIZE)
        pages = self.pages(self.datastream.list_stream_objects, request=request)
        return [object_snapshot(o) for page in pages for o in _raw(page).stream_objects]

    def get_stream_object(self, name: str) -> ObjectSnapshot:
        """Return one object of a stream. One RPC."""
        return object_snapshot(self.call(self.datastream.get_stream_object, name=name))

    def stream_errors(self, name: str, objects: bool = False) -> tuple[ErrorSnapshot, ...]:
        """Return a stream's errors, each once; with ``objects``, its objects' and backfills' too.

        One RPC (GetStream), plus one ListStreamObjects page per 1000 objects with ``objects``.
        """
        found = list(self.get_stream(name).errors)
        if objects:
            for obj in self.list_stream_objects(name):
                found.extend(obj.errors)
                found.extend(obj.backfill.errors if obj.backfill else ())
        unique = {error.key: error for error in found}
        return tuple(unique.values())

    # -- metrics --------------------------------------------------------------

    def time_series(
        self, project: str, metric_type: str, start: datetime, end: datetime, stream_id=None, location=None
    ) -> dict[str, tuple[metrics.Point, ...]]:
        """Return {stream ID: points oldest first} of one metric over (start, end].

        One RPC per page: for one stream (``stream_id``) or every stream of the project.
        """
        request = mon.ListTimeSeriesRequest(
            name=f"projects/{project}",
            filter=metrics.series_filter(metric_type, stream_id),
            interval=mon.TimeInterval(start_time=start, end_time=end),
            view=mon.ListTimeSeriesRequest.TimeSeriesView.FULL,
        )
        found: dict[str, list[metrics.Point]] = {}
        for page in self.pages(self.monitoring.list_time_series, request=request):
            for series in _raw(page).time_series:
                key = metrics.series_stream(series, location)
                if key is not None and (stream_id is None or key == stream_id):
                    found.setdefault(key, []).extend(metrics.points(series))
        return {key: tuple(sorted(values, key=lambda p: p.time)) for key, values in found.items()}

    def stream_metrics(
        self,
        project: str,
        location: str,
        start: datetime,
        end: datetime,
        stream_id: str | None = None,
        types: metrics.MetricTypes | None = None,
    ) -> dict[str, StreamMetrics]:
        """Return {stream ID: StreamMetrics} for one stream or all of a location.

        One ListTimeSeries (page) per metric type the project's descriptors confirm (``types``,
        default ``metric_types(project)``): 4 RPCs, fewer when a descriptor is missing; each
        StreamMetrics names the missing ones.
        """
        types = self.metric_types(project) if types is None else types
        by_role = {
            role: self.time_series(project, metric_type, start, end, stream_id, location)
            for role, metric_type in types.found.items()
        }
        window = (end - start).total_seconds()
        ids = set().union(*by_role.values())
        return {
            sid: StreamMetrics(
                sid,
                window,
                **{role: series.get(sid, ()) for role, series in by_role.items()},
                missing=types.missing,
            )
            for sid in sorted(ids)
        }

    def metric_types(self, project: str) -> metrics.MetricTypes:
        """Return the metric types to read, from the project's Datastream metric descriptors.

        Listed once per project every DESCRIPTORS_TTL_S in this process (one RPC per page).
        """
        if self._pid != os.getpid():
            self._reset()
        cached = self._metric_types.get(project)
        if cached is not None and time.monotonic() - cached[0] < DESCRIPTORS_TTL_S:
            return cached[1]
        request = mon.ListMetricDescriptorsRequest(
            name=f"projects/{project}", filter=metrics.DESCRIPTOR_FILTER
        )
        found = {
            d.type: tuple(d.monitored_resource_types)
            for page in self.pages(self.monitoring.list_metric_descriptors, request=request)
            for d in _raw(page).metric_descriptors
        }
        types = metrics.resolve(found)
        self._metric_types[project] = (time.monotonic(), types)
        return types

    def missing_metric_types(self, project: str) -> set[str]:
        """Return the metric types cdcweb reads that the project's metric descriptors lack."""
        return set(self.metric_types(project).missing)


def _raw(page):
    """Return the protobuf of a proto-plus page: reading protobuf is several times faster."""
    return type(page).pb(page)
