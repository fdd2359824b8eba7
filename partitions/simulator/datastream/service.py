"""The Datastream v1 and google.longrunning.Operations methods the simulator answers.

Every method takes the request message and returns the response message; a refusal is
raised as ``Refusal`` and the server turns it into the gRPC status. One lock guards the
world: operations change it, reads look at it at one instant of the simulator's clock.
What the simulator does not do it refuses rather than ignores: a ListStreams filter or
order, an update of anything but the state, cancelling an operation.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

from google.cloud import datastream_v1 as ds
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2
from grpc import StatusCode

from partitions.simulator.core.server import Refusal

from . import actions, render
from .actions import Outcome, Strategy
from .config import SimClock
from .world import World

_DEFAULT_PAGE, _MAX_PAGE = 50, 1000  # the API's documented page sizes


@dataclass
class SimOperation:
    """A long-running operation: which stream it acts on, when it began, how it unfolds."""

    name: str
    target: str
    created: float
    outcome: Outcome


class DatastreamService:
    """The Datastream API over one simulated world."""

    def __init__(self, world: World, clock: SimClock):
        """Serve one world by one clock, with no operation yet."""
        self.world, self.clock = world, clock
        self.operations: dict[str, SimOperation] = {}
        self.lock = threading.Lock()
        self._ids = itertools.count(1)

    # -- streams and objects ----------------------------------------------------

    def list_streams(self, request: ds.ListStreamsRequest) -> ds.ListStreamsResponse:
        """Return one page of the location's streams (none for another location)."""
        if request.filter or request.order_by:
            raise Refusal(
                StatusCode.INVALID_ARGUMENT, "The simulator lists streams unfiltered and in name order."
            )
        with self.lock:
            now = self.clock.now()
            names = list(self.world.streams) if request.parent == self.world.config.parent else []
            page, token = paginate(names, request.page_size, request.page_token)
            streams = [render.stream_pb(self.world.streams[name], now) for name in page]
        return ds.ListStreamsResponse(streams=streams, next_page_token=token)

    def get_stream(self, request: ds.GetStreamRequest) -> ds.Stream:
        """Return one stream now, or refuse with NOT_FOUND."""
        with self.lock:
            return render.stream_pb(self.world.stream(request.name), self.clock.now())

    def list_stream_objects(self, request: ds.ListStreamObjectsRequest) -> ds.ListStreamObjectsResponse:
        """Return one page of a stream's objects now."""
        with self.lock:
            stream, now = self.world.stream(request.parent), self.clock.now()
            page, token = paginate(stream.objects, request.page_size, request.page_token)
            objects = [render.object_pb(stream, obj, now) for obj in page]
        return ds.ListStreamObjectsResponse(stream_objects=objects, next_page_token=token)

    def get_stream_object(self, request: ds.GetStreamObjectRequest) -> ds.StreamObject:
        """Return one object now, or refuse with NOT_FOUND."""
        with self.lock:
            stream, obj = self.world.object(request.name)
            return render.object_pb(stream, obj, self.clock.now())

    def lookup_stream_object(self, request: ds.LookupStreamObjectRequest) -> ds.StreamObject:
        """Return the object of a stream that a source identifier names, or refuse with NOT_FOUND."""
        with self.lock:
            stream = self.world.stream(request.parent)
            identifier = ds.SourceObjectIdentifier.pb(request.source_object_identifier)
            kind = identifier.WhichOneof("source_identifier")
            value = getattr(identifier, kind) if kind else None
            for obj in stream.objects:
                container = getattr(value, "database", "") or getattr(value, "schema", "")
                if value is not None and (container, value.table) == (obj.container, obj.table):
                    return render.object_pb(stream, obj, self.clock.now())
        raise Refusal(StatusCode.NOT_FOUND, f"No stream object of {request.parent} matches the identifier.")

    # -- operations on streams and objects -------------------------------------

    def update_stream(self, request: ds.UpdateStreamRequest) -> operations_pb2.Operation:
        """Pause or resume a stream (update mask ``state`` only) and return its operation, or refuse."""
        paths = list(request.update_mask.paths) if request.update_mask else []
        if paths != ["state"]:
            raise Refusal(
                StatusCode.INVALID_ARGUMENT,
                f"The simulator updates only the state (update_mask paths ['state']), not {paths}.",
            )
        wanted = ds.Stream.State(request.stream.state).name
        seconds = self.world.config.operation_seconds
        with self.lock:
            stream, now = self.world.stream(request.stream.name), self.clock.now()
            if request.validate_only:
                return self._operation(stream.name, Outcome("update", now, ((now, "Validated"),)), now)
            if wanted == "PAUSED":
                outcome = actions.pause(stream, now, seconds)
            elif wanted == "RUNNING":
                outcome = actions.resume(stream, now, seconds)
            else:
                raise Refusal(
                    StatusCode.INVALID_ARGUMENT,
                    f"A stream's state can be set to PAUSED or RUNNING, not {wanted}.",
                )
            return self._operation(stream.name, outcome, now)

    def run_stream(self, request: ds.RunStreamRequest) -> operations_pb2.Operation:
        """Run or recover a stream and return its operation, or refuse."""
        strategy = _strategy(request)
        with self.lock:
            stream, now = self.world.stream(request.name), self.clock.now()
            outcome = actions.run(stream, now, self.world.config.operation_seconds, strategy)
            return self._operation(stream.name, outcome, now)

    def start_backfill_job(self, request: ds.StartBackfillJobRequest) -> ds.StartBackfillJobResponse:
        """Start one object's backfill and return the object, or refuse."""
        with self.lock:
            stream, obj = self.world.object(request.object_)
            now = self.clock.now()
            actions.start_backfill(stream, obj, now, self.world.config.backfill_seconds)
            return ds.StartBackfillJobResponse(object_=render.object_pb(stream, obj, now))

    def stop_backfill_job(self, request: ds.StopBackfillJobRequest) -> ds.StopBackfillJobResponse:
        """Stop one object's backfill and return the object, or refuse."""
        with self.lock:
            stream, obj = self.world.object(request.object_)
            now = self.clock.now()
            actions.stop_backfill(stream, obj, now)
            return ds.StopBackfillJobResponse(object_=render.object_pb(stream, obj, now))

    # -- google.longrunning.Operations -----------------------------------------

    def get_operation(self, request: operations_pb2.GetOperationRequest) -> operations_pb2.Operation:
        """Return an operation as it stands now, or refuse with NOT_FOUND."""
        with self.lock:
            op = self.operations.get(request.name)
            if op is None:
                raise Refusal(StatusCode.NOT_FOUND, f"Operation '{request.name}' was not found.")
            return self._render(op, self.clock.now())

    def list_operations(self, request: operations_pb2.ListOperationsRequest):
        """Return every operation whose name starts with the request's."""
        with self.lock:
            now = self.clock.now()
            ops = [
                self._render(op, now) for op in self.operations.values() if op.name.startswith(request.name)
            ]
        return operations_pb2.ListOperationsResponse(operations=ops)

    def delete_operation(self, request: operations_pb2.DeleteOperationRequest) -> empty_pb2.Empty:
        """Forget an operation."""
        with self.lock:
            self.operations.pop(request.name, None)
        return empty_pb2.Empty()

    def cancel_operation(self, request: operations_pb2.CancelOperationRequest) -> empty_pb2.Empty:
        """Refuse: Datastream's operations are not cancellable here."""
        raise Refusal(StatusCode.UNIMPLEMENTED, "Datastream operations can't be cancelled.")

    def _operation(self, target: str, outcome: Outcome, now: float) -> operations_pb2.Operation:
        """Record a new operation on a stream and return it as it stands now."""
        parent = self.world.config.parent
        name = f"{parent}/operations/operation-{int(now * 1000)}-{next(self._ids):06d}"
        op = SimOperation(name, target, now, outcome)
        self.operations[name] = op
        return self._render(op, now)

    def _render(self, op: SimOperation, now: float) -> operations_pb2.Operation:
        """Return an operation as it stands at ``now``, with the stream it left once done."""
        response = None
        if now >= op.outcome.done_at:
            response = render.stream_pb(self.world.streams[op.target], op.outcome.done_at)
        return render.operation_pb(op, now, response)


def paginate(items: list, page_size: int, token: str) -> tuple[list, str]:
    """Return one page of items and the next page's token ("" after the last page)."""
    try:
        start = int(token) if token else 0
    except ValueError:
        raise Refusal(StatusCode.INVALID_ARGUMENT, f"Invalid page token {token!r}.") from None
    size = min(page_size or _DEFAULT_PAGE, _MAX_PAGE)
    end = start + size
    return items[start:end], (str(end) if end < len(items) else "")


def _strategy(request: ds.RunStreamRequest) -> Strategy | None:
    """Return the request's CDC strategy, or None when it has none."""
    if "cdc_strategy" not in request:
        return None
    cdc = ds.CdcStrategy.pb(request.cdc_strategy)
    kind = cdc.WhichOneof("start_position")
    if kind is None:
        return None
    if kind != "specific_start_position":
        return Strategy(kind)
    specific = cdc.specific_start_position
    position_kind = specific.WhichOneof("position") or ""
    return Strategy(kind, position_kind, _position_text(specific, position_kind))


def _position_text(specific, position_kind: str) -> str:
    """Return a specific start position as text, e.g. mysql-bin.000123:4."""
    if not position_kind:
        return ""
    position = getattr(specific, position_kind)
    if position_kind == "mysql_log_position":
        return f"{position.log_file}:{position.log_position}"
    if position_kind == "oracle_scn_position":
        return str(position.scn)
    if position_kind == "sql_server_lsn_position":
        return position.lsn
    if position_kind == "mysql_gtid_position":
        return position.gtid_set
    return position.start_time.ToJsonString()
