"""The gRPC server: Datastream v1, google.longrunning.Operations and Cloud Monitoring's MetricService.

Generic handlers with the messages' own serializers (proto-plus ``serialize`` and
``deserialize``, protobuf ``SerializeToString`` and ``FromString``), on a free port in a
thread pool (core/server.py, as every simulator). Every call is written to a request log (method,
resource, status) so a test or benchmark can count what a client cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import grpc
from google.api import metric_pb2
from google.cloud import datastream_v1 as ds
from google.cloud import monitoring_v3 as mon
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2
from google.protobuf import message as protobuf_message

from partitions.simulator.core.server import GrpcSimulator, Refusal

from .config import DatastreamSimConfig, SimClock
from .metric_service import MetricService
from .service import DatastreamService
from .world import World

DATASTREAM = "google.cloud.datastream.v1.Datastream"
OPERATIONS = "google.longrunning.Operations"
METRICS = "google.monitoring.v3.MetricService"


@dataclass(frozen=True)
class RequestRecord:
    """One call the simulator answered: which method, on which resource, with which status."""

    service: str
    method: str
    target: str
    code: str  # OK or the gRPC status name
    at: float = field(default_factory=time.monotonic)


class DatastreamSimulator(GrpcSimulator):
    """A running simulator: its config, clock, world, services and request log.

    ``endpoint`` is the value for DATASTREAM_API_ENDPOINT and MONITORING_API_ENDPOINT.
    """

    threads = "dssim"
    stop_grace = 0.5

    def __init__(self, config: DatastreamSimConfig, clock: SimClock | None = None):
        """Build the world and the services; nothing listens until start_server."""
        self.world = World(config)
        super().__init__(self.world.config)
        self.clock = clock or SimClock()
        self.datastream = DatastreamService(self.world, self.clock)
        self.metrics = MetricService(self.world, self.clock, self.datastream.lock)

    def register(self, server: grpc.Server) -> None:
        """Add the Datastream, Operations and MetricService services."""
        server.add_generic_rpc_handlers(_handlers(self))

    def requests(self, method: str | None = None, since: int = 0) -> list[RequestRecord]:
        """Return the logged calls from index ``since`` on, optionally of one method only."""
        return self.logged(lambda r: method is None or r.method == method, since)

    def mark(self) -> int:
        """Return the request log's length now: pass it as ``since`` to count what came after."""
        with self._log_lock:
            return len(self.call_log)

    def record(self, service: str, method: str, target: str, code: str) -> None:
        """Append one call to the request log."""
        self.log(RequestRecord(service, method, target, code))

    def steady_streams(self, state: str, seconds: float) -> list[str]:
        """Return the streams in a state now that will stay in it for ``seconds`` (tests pick from these)."""
        with self.datastream.lock:
            now = self.clock.now()
            return [
                s.name
                for s in self.world.streams.values()
                if s.moment(now).state == state and s.steady(now, seconds)
            ]


def _target(request) -> str:
    """Return the resource a request is about, for the log."""
    for attr in ("name", "parent", "object_"):
        value = getattr(request, attr, "")
        if value:
            return value
    stream = getattr(request, "stream", None)
    return getattr(stream, "name", "") if stream is not None else ""


def _unary(sim: DatastreamSimulator, service: str, method: str, fn, request_type, response_type):
    """Return the handler of one unary method: decode, answer or refuse, log, encode."""

    def call(request, context):
        """Answer one request, or abort with the refusal's status and message; log either way."""
        target = _target(request)
        try:
            response = fn(request)
        except Refusal as refusal:
            sim.record(service, method, target, refusal.code.name)
            context.abort(refusal.code, refusal.message)
        except Exception:
            sim.record(service, method, target, "UNKNOWN")
            raise
        sim.record(service, method, target, "OK")
        return response

    deserialize = (
        request_type.deserialize if hasattr(request_type, "deserialize") else request_type.FromString
    )
    return grpc.unary_unary_rpc_method_handler(
        call, request_deserializer=deserialize, response_serializer=_serialize
    )


def _serialize(message) -> bytes:
    """Serialize a response, proto-plus (``serialize``) or plain protobuf (hot paths build those)."""
    if isinstance(message, protobuf_message.Message):
        return message.SerializeToString()
    return type(message).serialize(message)


def _handlers(sim: DatastreamSimulator) -> tuple[grpc.GenericRpcHandler, ...]:
    """Return the generic handlers of the three services, each method logged."""
    tables = (
        (DATASTREAM, _datastream_methods(sim)),
        (OPERATIONS, _operation_methods(sim)),
        (METRICS, _metric_methods(sim)),
    )
    return tuple(
        grpc.method_handlers_generic_handler(
            service, {name: _unary(sim, service, name, *spec) for name, spec in table.items()}
        )
        for service, table in tables
    )


def _datastream_methods(sim: DatastreamSimulator) -> dict:
    """Return the Datastream methods served: name -> (answer, request type, response type)."""
    d = sim.datastream
    return {
        "ListStreams": (d.list_streams, ds.ListStreamsRequest, ds.ListStreamsResponse),
        "GetStream": (d.get_stream, ds.GetStreamRequest, ds.Stream),
        "UpdateStream": (d.update_stream, ds.UpdateStreamRequest, operations_pb2.Operation),
        "RunStream": (d.run_stream, ds.RunStreamRequest, operations_pb2.Operation),
        "ListStreamObjects": (
            d.list_stream_objects,
            ds.ListStreamObjectsRequest,
            ds.ListStreamObjectsResponse,
        ),
        "GetStreamObject": (d.get_stream_object, ds.GetStreamObjectRequest, ds.StreamObject),
        "LookupStreamObject": (d.lookup_stream_object, ds.LookupStreamObjectRequest, ds.StreamObject),
        "StartBackfillJob": (d.start_backfill_job, ds.StartBackfillJobRequest, ds.StartBackfillJobResponse),
        "StopBackfillJob": (d.stop_backfill_job, ds.StopBackfillJobRequest, ds.StopBackfillJobResponse),
    }


def _operation_methods(sim: DatastreamSimulator) -> dict:
    """Return the google.longrunning.Operations methods served."""
    d, op = sim.datastream, operations_pb2
    return {
        "GetOperation": (d.get_operation, op.GetOperationRequest, op.Operation),
        "ListOperations": (d.list_operations, op.ListOperationsRequest, op.ListOperationsResponse),
        "DeleteOperation": (d.delete_operation, op.DeleteOperationRequest, empty_pb2.Empty),
        "CancelOperation": (d.cancel_operation, op.CancelOperationRequest, empty_pb2.Empty),
    }


def _metric_methods(sim: DatastreamSimulator) -> dict:
    """Return the Cloud Monitoring MetricService methods served."""
    m = sim.metrics
    return {
        "ListTimeSeries": (m.list_time_series, mon.ListTimeSeriesRequest, mon.ListTimeSeriesResponse),
        "ListMetricDescriptors": (
            m.list_metric_descriptors,
            mon.ListMetricDescriptorsRequest,
            mon.ListMetricDescriptorsResponse,
        ),
        "GetMetricDescriptor": (
            m.get_metric_descriptor,
            mon.GetMetricDescriptorRequest,
            metric_pb2.MetricDescriptor,
        ),
    }


def start_server(
    config: DatastreamSimConfig, host: str = "127.0.0.1", port: int = 0, clock: SimClock | None = None
) -> DatastreamSimulator:
    """Start serving on host:port (0 picks a free port) in background threads; return the simulator."""
    return DatastreamSimulator(config, clock).listen(host, port)
