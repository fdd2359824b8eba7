"""The gRPC server: the part of Spanner and DatabaseAdmin the official client uses.

ExecuteStreamingSql is registered with an identity response serializer: it yields
ready PartialResultSet bytes assembled from cached per-record encodings, which is what
makes the simulator fast enough never to be the bottleneck of a benchmark. It is a
coroutine on the server's event loop (core/server.py's AioGrpcSimulator): a live change
stream query waits there for its next record at the cost of a timer, not of a thread.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import grpc
from google.cloud.spanner_admin_database_v1.types import Database, DatabaseDialect, GetDatabaseDdlResponse
from google.cloud.spanner_v1.testing import spanner_database_admin_pb2_grpc as admin_grpc
from google.cloud.spanner_v1.types import Transaction
from google.cloud.spanner_v1.types import spanner as spanner_types
from google.protobuf import empty_pb2

from partitions.simulator.core.clock import now_us, to_datetime, to_us
from partitions.simulator.core.server import Aborted, AioGrpcSimulator, SyncSteps

from . import encode
from .access import read_function, refusal
from .config import SimulatorConfig
from .faults import StreamFaults
from .information_schema import answer, is_information_schema_query, result_sets
from .sql import QueryError, QuerySpec, check_query, check_retention, is_change_stream_query, parse_query
from .stream import CHILD, DATA, HEARTBEAT, Position, initial_items, partition_items
from .table_service import TableQueryLogEntry, TableService
from .workload import Workload

_DATABASE = re.compile(r"projects/[^/]+/instances/[^/]+/databases/(?P<db>[^/]+)")
STEPS = SyncSteps()  # the context of the plain steps of a query: a refusal raises Aborted
_DIALECTS = {"googlesql": DatabaseDialect.GOOGLE_STANDARD_SQL, "postgresql": DatabaseDialect.POSTGRESQL}


@dataclass
class QueryLogEntry:
    """One ExecuteStreamingSql call: what was asked, when it ran, how it ended."""

    database: str
    dialect: str | None
    token: str | None
    start: datetime | None
    end: datetime | None
    heartbeat_ms: int | None
    resumed: bool
    opened_at: float = field(default_factory=time.monotonic)  # time.monotonic()
    opened_wall: datetime = field(default_factory=lambda: datetime.now(UTC))
    closed_at: float | None = None
    rows: int = 0
    status: str = "RUNNING"  # then OK, CANCELLED or the error code's name


class SimulatorServer(AioGrpcSimulator):
    """A running simulator: its resolved config, topology, workload and query log (``call_log``)."""

    def __init__(self, config: SimulatorConfig):
        super().__init__(config.resolved())
        c = self.config
        self.topology = c.topology()
        self.workload = Workload(c.seed, c.tps, c.max_keys, self.topology)
        self.tables = TableService(self)
        # The database role each session was created with ("" for none): access.py asks it.
        self._roles: dict[str, str] = {}

    @property
    def emulator_host(self) -> str:
        """Return host:port, the value for SPANNER_EMULATOR_HOST."""
        return self.endpoint

    def queries(self, token: str | None = None) -> list[QueryLogEntry]:
        """Return a copy of the query log, optionally only one partition's queries."""
        return self.logged(lambda q: token is None or q.token == token)

    def table_queries(self, table: str | None = None) -> list[TableQueryLogEntry]:
        """Return a copy of the log of table poll queries, optionally of one table only."""
        return self.tables.queries(table)

    def warm(self, start: datetime, end: datetime, dialects=("googlesql", "postgresql")) -> int:
        """Generate and encode every record of [start, end] ahead of readers; return the count."""
        count = 0
        for second in range(to_us(start) // 1_000_000, to_us(end) // 1_000_000 + 1):
            for entry in self.workload.second(second).entries:
                for dialect in dialects:
                    encode.entry_value(entry, dialect)
                count += 1
        return count

    # -- Spanner ---------------------------------------------------------------

    def _database(self, name: str, context) -> str:
        match = _DATABASE.match(name)
        db = match["db"] if match else name
        if self.config.dialect_of(db) is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"Database not found: {name}")
        return db

    def _session(self, database: str, template) -> spanner_types.Session:
        session = spanner_types.Session(name=f"{database}/sessions/{uuid.uuid4().hex}")
        session.multiplexed = bool(template and template.multiplexed)
        session.create_time = datetime.now(UTC)
        session.creator_role = template.creator_role if template else ""
        self._roles[session.name] = session.creator_role
        return session

    def create_session(self, request, context):
        self._database(request.database, context)
        return self._session(request.database, request.session)

    def batch_create_sessions(self, request, context):
        self._database(request.database, context)
        sessions = [
            self._session(request.database, request.session_template) for _ in range(request.session_count)
        ]
        return spanner_types.BatchCreateSessionsResponse(session=sessions)

    def get_session(self, request, context):
        self._database(request.name, context)
        return spanner_types.Session(name=request.name, creator_role=self._roles.get(request.name, ""))

    def delete_session(self, request, context):
        self._roles.pop(request.name, None)
        return empty_pb2.Empty()

    async def execute_streaming_sql(self, request, context):
        """Answer a query: INFORMATION_SCHEMA and tables at once, a change stream as its records fall due."""
        try:
            database = self._database(request.session, STEPS)
            self._check_access(request, database, STEPS)
            if is_information_schema_query(request.sql):
                yield self._information_schema(request, database, STEPS)
                return
        except Aborted as refused:
            await context.abort(refused.code, refused.details)
        if not is_change_stream_query(request.sql):
            async for message in self.tables.execute(request, database, context):
                yield message
            return
        entry = QueryLogEntry(database, None, None, None, None, None, bool(request.resume_token))
        try:
            spec = parse_query(request.sql, request.params.fields)
            entry.dialect, entry.token, entry.heartbeat_ms = spec.dialect, spec.token, spec.heartbeat_ms
            entry.start = to_datetime(spec.start_us)
            entry.end = None if spec.end_us is None else to_datetime(spec.end_us)
            items, position = self._plan(spec, database, bytes(request.resume_token))
        except QueryError as error:
            entry.status, entry.closed_at = error.code.name, time.monotonic()
            self.log(entry)
            await context.abort(error.code, error.message)
        self.log(entry)
        faults = StreamFaults(self.config, f"{spec.token}:{spec.start_us}:{position.count}")
        try:
            async for message in self._serve(spec, items, position, faults, entry, context):
                yield message
            entry.status = "OK" if entry.status == "RUNNING" else entry.status
        except (GeneratorExit, asyncio.CancelledError):
            entry.status = "CANCELLED"  # the client went away
            raise
        finally:
            entry.closed_at = time.monotonic()

    def _check_access(self, request, database: str, context) -> None:
        """Abort with PERMISSION_DENIED where the config denies this session's query."""
        if not self.config.denied:
            return
        function = None
        if is_change_stream_query(request.sql):
            try:
                spec = parse_query(request.sql, request.params.fields)
                function = read_function(spec.dialect, spec.stream)
            except QueryError:
                function = None  # refused for its own reason right after
        role = self._roles.get(request.session, "")
        denied = refusal(self.config.denied, request.session, database, role, function)
        if denied is not None:
            context.abort(denied.code, denied.message)

    def _information_schema(self, request, database: str, context) -> bytes:
        """Return the answer to an INFORMATION_SCHEMA query (one message), or abort as Spanner would."""
        try:
            columns, rows = answer(
                request.sql, request.params.fields, self.config, self.config.dialect_of(database)
            )
        except QueryError as error:
            context.abort(error.code, error.message)
        return result_sets(columns, rows)

    def register(self, server: grpc.Server) -> None:
        """Add the Spanner service and the part of DatabaseAdmin the client asks for the dialect."""
        server.add_generic_rpc_handlers((_spanner_handler(self),))
        admin_grpc.add_DatabaseAdminServicer_to_server(_AdminServicer(self), server)

    def begin_transaction(self, request, context):
        self._database(request.session, context)
        return self.tables.begin_transaction(request, context)

    def _plan(self, spec: QuerySpec, database: str, resume_token: bytes):
        """Return the item iterator and start position of a checked query."""
        now = now_us()
        if resume_token:
            try:
                position = Position.decode(resume_token)
            except ValueError:
                raise QueryError(grpc.StatusCode.INVALID_ARGUMENT, "Invalid resume token") from None
            # The records a resumed query would send next may have aged out meanwhile.
            check_retention(max(spec.start_us, position.last_us), self.config, now, "resume position")
        else:
            check_query(spec, self.config, database, now)
            position = Position(0, spec.start_us, 0)
        if spec.token is None:
            return initial_items(self.topology, spec.start_us, position), position
        self.topology.ensure(now)
        part = self.topology.get(spec.token)
        if part is None:
            raise QueryError(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid partition token: {spec.token}")
        if spec.start_us < part.start_us:
            raise QueryError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"start_timestamp is before the start of partition {spec.token} "
                f"({encode.format_ts(part.start_us)})",
            )
        return partition_items(self.workload, part, spec.end_us, spec.heartbeat_ms, position), position

    async def _serve(self, spec: QuerySpec, items, position: Position, faults: StreamFaults, entry, context):
        dialect, cfg = spec.dialect, self.config
        head = encode.metadata(dialect, cfg.stream)
        batch: list[bytes] = []
        size = 0
        token = position.encode()
        sent_any = ended_by_child = False
        for item in items:
            if batch and (item.ts_us > now_us() or len(batch) >= cfg.batch_rows or size >= cfg.batch_bytes):
                async for message in self._message(head, batch, token, faults, entry, context):
                    yield message
                head, batch, size, sent_any = b"", [], 0, True
            if item.ts_us > now_us() and not await self.wait_until_async(item.ts_us):
                await self._cut_short(entry, context)
            value = self._value(item, dialect, faults)
            batch.append(value)
            size += len(value)
            token = item.position.encode()
            ended_by_child = item.kind == CHILD
        if batch or not sent_any:
            async for message in self._message(head, batch, token, faults, entry, context):
                yield message
        # Spanner keeps a query open until its end timestamp even when no record or
        # heartbeat falls due before it; ending earlier let a reader take the end as its
        # watermark and start its next window in the future (INVALID_ARGUMENT).
        if spec.end_us is not None and not ended_by_child and not await self.wait_until_async(spec.end_us):
            await self._cut_short(entry, context)

    async def _cut_short(self, entry: QueryLogEntry, context) -> None:
        """End a call whose wait ended early (the server stops): UNAVAILABLE."""
        entry.status = "UNAVAILABLE"
        await self.end_if_stopping_async(context)

    def _value(self, item, dialect: str, faults: StreamFaults) -> bytes:
        if item.kind == DATA:
            if faults.malformed and faults.corrupt():
                return encode.malformed_value(item.payload, dialect)
            return encode.entry_value(item.payload, dialect)
        if item.kind == HEARTBEAT:
            return encode.heartbeat_value(item.ts_us, dialect)
        assert item.kind == CHILD
        return encode.child_value(item.payload, dialect)

    async def _message(
        self, head: bytes, batch: list[bytes], token: bytes, faults: StreamFaults, entry, context
    ):
        """Yield one PartialResultSet; end the call after it if a fault says so."""
        if faults.active:
            await faults.before_message_async()
        entry.rows += len(batch)
        yield encode.partial_result_set(head, batch, token)
        # An empty message repeats the last token: failing it could loop forever.
        status = faults.after_message() if faults.active and batch else None
        if status is not None:
            entry.status = status[0].name
            await context.abort(*status)


class _AdminServicer(admin_grpc.DatabaseAdminServicer):
    """GetDatabase and GetDatabaseDdl: what ``database.database_dialect`` needs."""

    def __init__(self, server: SimulatorServer):
        self._server = server

    def GetDatabase(self, request, context):  # noqa: N802 - the gRPC method name
        db = self._server._database(request.name, context)
        dialect = _DIALECTS[self._server.config.dialect_of(db)]
        return Database(name=request.name, state=Database.State.READY, database_dialect=dialect)

    def GetDatabaseDdl(self, request, context):  # noqa: N802 - the gRPC method name
        db = self._server._database(request.database, context)
        cfg = self._server.config
        retention = f"{int(cfg.retention)}s"
        dialect = cfg.dialect_of(db)
        return GetDatabaseDdlResponse(
            statements=[
                *self._server.tables.ddl(dialect),
                f"CREATE CHANGE STREAM {cfg.stream} FOR ALL OPTIONS (retention_period = '{retention}')",
            ]
        )


def _spanner_handler(server: SimulatorServer) -> grpc.GenericRpcHandler:
    def unary(method, request_type, response_type):
        return grpc.unary_unary_rpc_method_handler(
            method, request_deserializer=request_type.deserialize, response_serializer=response_type.serialize
        )

    t = spanner_types
    handlers = {
        "CreateSession": unary(server.create_session, t.CreateSessionRequest, t.Session),
        "BatchCreateSessions": unary(
            server.batch_create_sessions, t.BatchCreateSessionsRequest, t.BatchCreateSessionsResponse
        ),
        "GetSession": unary(server.get_session, t.GetSessionRequest, t.Session),
        "BeginTransaction": grpc.unary_unary_rpc_method_handler(
            server.begin_transaction,
            request_deserializer=t.BeginTransactionRequest.pb().FromString,
            response_serializer=Transaction.serialize,
        ),
        "DeleteSession": grpc.unary_unary_rpc_method_handler(
            server.delete_session,
            request_deserializer=t.DeleteSessionRequest.deserialize,
            response_serializer=empty_pb2.Empty.SerializeToString,
        ),
        # Raw protobuf in, ready bytes out: no proto-plus wrapping on the hot path.
        "ExecuteStreamingSql": grpc.unary_stream_rpc_method_handler(
            server.execute_streaming_sql,
            request_deserializer=t.ExecuteSqlRequest.pb().FromString,
            response_serializer=None,
        ),
    }
    return grpc.method_handlers_generic_handler("google.spanner.v1.Spanner", handlers)


def start_server(config: SimulatorConfig, host: str = "127.0.0.1", port: int = 0) -> SimulatorServer:
    """Start serving on host:port (0 picks a free port) in background threads; return the server."""
    return SimulatorServer(config).listen(host, port)
