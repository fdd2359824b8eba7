"""The gRPC server: GenerateInitialChangeStreamPartitions and ReadChangeStream of google.bigtable.v2.

Handlers are registered generically with raw protobuf request parsers and an identity
response serializer: the plan yields ready bytes. Live reads release each message when
the wall clock reaches its time and stay open until end_time. Every call is logged, so
a test can check which partition was read when and from which tokens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import grpc
from google.cloud.bigtable_v2 import types as bt

from partitions.simulator.core.clock import now_us, to_datetime
from partitions.simulator.core.faults import Faults
from partitions.simulator.core.server import GrpcSimulator
from partitions.sources.bigtable.ranges import RowRange

from . import encode
from .config import BigtableSimulatorConfig
from .keys import partition_range
from .model import TableModel
from .requests import Refusal, check_app_profile, check_table, plan_request
from .stream import CLOSE, DATA, OUT_OF_RANGE, plan_read

_SERVICE = "google.bigtable.v2.Bigtable"


@dataclass
class CallLogEntry:
    """One call: what was asked, what was served, when it ran and how it ended."""

    method: str
    table: str
    app_profile: str
    row_range: RowRange | None = None
    start: datetime | None = None  # the start_time asked for
    tokens: tuple[str, ...] = ()  # or the continuation tokens
    position: datetime | None = None  # the first instant served: start_time, or just after the tokens
    partition: str | None = None  # the topology partition served (None: refused or redirected)
    opened_at: float = field(default_factory=time.monotonic)
    opened_wall: datetime = field(default_factory=lambda: datetime.now(UTC))
    closed_at: float | None = None
    messages: int = 0
    changes: int = 0
    status: str = "RUNNING"  # then OK, OUT_OF_RANGE (split, merge or redirect), CANCELLED or an error


class BigtableSimulator(GrpcSimulator):
    """A running simulator: its resolved config, a model per table, and the call log."""

    threads = "bigtable-sim"

    def __init__(self, config: BigtableSimulatorConfig):
        super().__init__(config.resolved())
        self.tables = {name: TableModel(name, self.config) for name in self.config.tables}
        self._starts: dict[str, int] = {}

    @property
    def emulator_host(self) -> str:
        """Return host:port, the value for BIGTABLE_EMULATOR_HOST."""
        return self.endpoint

    def register(self, server: grpc.Server) -> None:
        """Add the Bigtable service's change stream methods."""
        server.add_generic_rpc_handlers((_handler(self),))

    def reads(self, row_range: RowRange | None = None) -> list[CallLogEntry]:
        """Return a copy of the ReadChangeStream log, optionally of one row range only."""
        return self.logged(
            lambda e: e.method == "ReadChangeStream" and (row_range is None or e.row_range == row_range)
        )

    def early_child_reads(self, table: str) -> list[CallLogEntry]:
        """Return the reads of a child from its start that began before every parent's read closed it.

        Only reads that start where the child starts count, and only children some parent
        of which was read: a window that begins at or after a split or merge reaches the
        child through the initial partitions, and nobody reads its parents.
        """
        topology = self.tables[table].topology
        reads = self.reads()
        read = {entry.partition for entry in reads if entry.partition}
        closed: dict[str, float] = {}  # partition -> when a read first closed it with OUT_OF_RANGE
        for entry in reads:
            if entry.partition and entry.status == OUT_OF_RANGE_NAME and entry.closed_at is not None:
                closed[entry.partition] = min(closed.get(entry.partition, entry.closed_at), entry.closed_at)
        early = []
        for entry in reads:
            partition = topology.get(entry.partition) if entry.partition else None
            if partition is None or entry.position != to_datetime(partition.start_us):
                continue
            if not read.intersection(partition.parents):
                continue
            if any(closed.get(p, float("inf")) > entry.opened_at for p in partition.parents):
                early.append(entry)
        return early

    def generate_initial(self, request, context):
        """Yield the table's partitions live now (a GenerateInitialChangeStreamPartitions call)."""
        entry = self.log(
            CallLogEntry("GenerateInitialChangeStreamPartitions", request.table_name, request.app_profile_id)
        )
        try:
            model = check_table(self.tables, self.config, request.table_name)
            check_app_profile(request.app_profile_id)
        except Refusal as refusal:
            entry.status, entry.closed_at = refusal.code.name, time.monotonic()
            context.abort(refusal.code, refusal.message)
        for partition in model.topology.live_at(now_us()):
            entry.messages += 1
            yield encode.initial_partition(partition_range(partition))
        entry.status, entry.closed_at = "OK", time.monotonic()

    def read_change_stream(self, request, context):
        """Serve one ReadChangeStream call (see stream.py for what it sends)."""
        entry = self.log(CallLogEntry("ReadChangeStream", request.table_name, request.app_profile_id))
        try:
            plan = self._plan(request, entry)
        except Refusal as refusal:
            entry.status, entry.closed_at = refusal.code.name, time.monotonic()
            context.abort(refusal.code, refusal.message)
        faults = Faults(
            self.config, self._fault_key(f"{plan.model.name}:{plan.lo}:{plan.hi}:{plan.progress.encode()}")
        )
        try:
            yield from self._serve(plan, faults, entry, context)
        except GeneratorExit:
            if entry.status == "RUNNING":
                entry.status = "CANCELLED"
            raise
        finally:
            if entry.closed_at is None:
                entry.closed_at = time.monotonic()

    def _fault_key(self, start: str) -> str:
        """Return a key for the faults of a read: where it starts, and how often it started there."""
        # A read resumed from the same tokens (a change cut off mid-way) must not meet the
        # same fault again, or it would loop; the n-th retry from a position stays reproducible.
        with self._log_lock:
            count = self._starts[start] = self._starts.get(start, 0) + 1
        return f"{start}:{count}"

    def _plan(self, request, entry: CallLogEntry):
        """Return the checked plan of a read and note it in the log entry; Refusal if refused."""
        model = check_table(self.tables, self.config, request.table_name)
        check_app_profile(request.app_profile_id)
        plan = plan_request(model, request, now_us())
        entry.row_range = plan.row_range
        if plan.from_tokens:
            entry.tokens = tuple(t.token for t in request.continuation_tokens.tokens)
        else:
            entry.start = to_datetime(plan.progress.low() + 1)
        entry.position = to_datetime(plan.progress.low() + 1)
        served = model.exact(plan.lo, plan.hi, plan.progress.high() + 1)
        entry.partition = served.token if served is not None else None
        return plan

    def _serve(self, plan, faults: Faults, entry: CallLogEntry, context):
        """Yield the read's messages as the clock reaches them; break the stream when a fault says so."""
        items = plan_read(plan.model, plan.lo, plan.hi, plan.progress, plan.end_us, plan.heartbeat_us)
        for item in items:
            if item.release_us > now_us() and not self.wait_until(item.release_us, context):
                # The server stops (the call breaks, to be resumed), or the reader went away.
                entry.status = "UNAVAILABLE" if self.stopping else "CANCELLED"
                self.end_if_stopping(context)
                return
            entry.changes += item.kind == DATA
            if item.kind == CLOSE:
                # Logged before it is sent: the reader may cancel the call as soon as it has it.
                entry.status = OUT_OF_RANGE_NAME if item.status == OUT_OF_RANGE else "OK"
                entry.closed_at = time.monotonic()
            for message in item.messages:
                faults.before_message()
                entry.messages += 1
                yield message
                if faults.broken():
                    entry.status = "UNAVAILABLE"
                    context.abort(grpc.StatusCode.UNAVAILABLE, "simulated fault: the stream broke, resume it")
            if item.kind == CLOSE:
                return


OUT_OF_RANGE_NAME = grpc.StatusCode.OUT_OF_RANGE.name


def _handler(simulator: BigtableSimulator) -> grpc.GenericRpcHandler:
    """Return the generic handler of the Bigtable service's change stream methods."""

    def stream(method, request_type):
        """Return a server-streaming handler with a raw protobuf request parser."""
        # Raw protobuf in, ready bytes out: no proto-plus wrapping on the server's hot path.
        return grpc.unary_stream_rpc_method_handler(
            method, request_deserializer=request_type.pb().FromString, response_serializer=None
        )

    handlers = {
        "ReadChangeStream": stream(simulator.read_change_stream, bt.ReadChangeStreamRequest),
        "GenerateInitialChangeStreamPartitions": stream(
            simulator.generate_initial, bt.GenerateInitialChangeStreamPartitionsRequest
        ),
    }
    return grpc.method_handlers_generic_handler(_SERVICE, handlers)


def start_server(
    config: BigtableSimulatorConfig, host: str = "127.0.0.1", port: int = 0
) -> BigtableSimulator:
    """Start serving on host:port (0 picks a free port) in background threads; return the simulator."""
    return BigtableSimulator(config).listen(host, port)
