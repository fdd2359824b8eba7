"""Run change stream queries with the official client and yield typed records.

Pure Python: no Django import. A reader runs one query per call in a single-use, strong,
read-only snapshot, reads rows with ``lazy_decode=True`` and turns each raw value into a
record with the decoders of ``parse.py``, one row at a time, so memory stays flat however
long a partition runs. Every failure leaves as one of four errors: QueryValidationError
(nothing sent), ChangeRecordError (a malformed row), RetryableSpannerError or
PermanentSpannerError (Spanner or the transport; the original is the ``__cause__``).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import spanner_v1
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import AsyncClient, StructType, TypeCode
from opentelemetry import trace

from partitions.sources.base import SourceError
from partitions.sources.grpc_status import RETRYABLE_CODES, server_message, status_name
from partitions.sources.spanner_retry import UNAVAILABLE_BUDGET_S, unavailable_retry, unavailable_retry_async

from . import schema
from .decode import GoogleSqlDecoder
from .errors import (
    ChangeRecordError,
    PermanentSpannerError,
    RetryableSpannerError,
    SpannerError,
)
from .parse import decode_postgresql_value
from .query import GOOGLESQL, POSTGRESQL, build_query
from .records import ChangeRecord

# ExecuteStreamingSql's own default deadline is one hour (DESIGN.md §9), which would cut
# a live open-ended query. Open-ended reads get a day instead: a query that reaches it
# ends with DEADLINE_EXCEEDED, which is retryable, and the caller resumes from its
# watermark. A bounded read gets the time until its end plus a grace period for backlog.
OPEN_ENDED_TIMEOUT_S = 24 * 3600.0
BOUNDED_GRACE_S = 600.0

# INTERNAL is retryable only when the message says the transport broke, as the client's
# own resumption logic judges it.
INTERNAL_RETRY_HINTS = (
    "rst_stream",
    "received unexpected eos on data frame",
    "received rst_stream",
    "connection reset",
    "retry",
)

_clients: dict[tuple[str, str | None], spanner_v1.Client] = {}
_clients_lock = threading.Lock()


def connect(
    project: str, instance: str, database: str, emulator_host: str | None = None
) -> spanner_v1.database.Database:
    """Return a client Database; the emulator or simulator when a host is given or set."""
    host = emulator_host or os.environ.get("SPANNER_EMULATOR_HOST") or None
    return _client(project, host).instance(instance).database(database)


def _client(project: str, host: str | None) -> spanner_v1.Client:
    # One client per (project, endpoint): each owns channels and a metrics setup, and a
    # worker reading window after window must not build a new one every time.
    with _clients_lock:
        client = _clients.get((project, host))
        if client is None:
            client = _new_client(project, host)
            _clients[(project, host)] = client
        return client


def _observability() -> dict | None:
    """Return the clients' observability options: OpenTelemetry's tracer provider, looked up once.

    With none set, the Spanner client asks OpenTelemetry for the global provider on every
    chunk of a streamed result, and each ask reads os.environ for one: 7.5 % of a reader's
    interpreter time at 2,000 live partitions (py-spy, docs/benchmarks.md, issue 22). Until
    an application sets a provider the global one is a proxy, which hands spans to one set
    later. A provider already set is left to the client (None: the client's defaults).
    One difference remains: the client writes each database's name into these options as
    it traces, so with a provider set after the clients are made and several databases on
    one client, a span may carry another database's name.
    """
    provider = trace.get_tracer_provider()
    return {"tracer_provider": provider} if isinstance(provider, trace.ProxyTracerProvider) else None


def _new_client(project: str, host: str | None) -> spanner_v1.Client:
    # Built-in metrics export to Cloud Monitoring and can hang process exit (DESIGN.md §9).
    if host is None:
        return spanner_v1.Client(
            project=project, disable_builtin_metrics=True, observability_options=_observability()
        )
    return spanner_v1.Client(
        project=project,
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": host},
        disable_builtin_metrics=True,
        observability_options=_observability(),
    )


# The asyncio client's clients and Databases, per event loop (gRPC's asyncio channels belong
# to the loop that made them): per (project, endpoint) and (project, instance, database, endpoint).
_async_clients: dict[tuple, AsyncClient] = {}
_async_databases: dict[tuple, object] = {}


async def connect_async(project: str, instance: str, database: str, emulator_host: str | None = None):
    """Return the asyncio client's Database (for a multiplexed live read), made once per event loop."""
    host = emulator_host or os.environ.get("SPANNER_EMULATOR_HOST") or None
    loop = asyncio.get_running_loop()
    key = (loop, project, instance, database, host)
    found = _async_databases.get(key)
    if found is None:
        client = _async_clients.get((loop, project, host))
        if client is None:
            client = _async_clients[(loop, project, host)] = _new_async_client(project, host)
        found = _async_databases[key] = await client.instance(instance).database(database)
    return found


def _new_async_client(project: str, host: str | None) -> AsyncClient:
    if host is None:
        return AsyncClient(
            project=project, disable_builtin_metrics=True, observability_options=_observability()
        )
    return AsyncClient(
        project=project,
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": host},
        disable_builtin_metrics=True,
        observability_options=_observability(),
    )


def detect_dialect(database: spanner_v1.database.Database) -> str:
    """Return "googlesql" or "postgresql" as the database reports its dialect."""
    try:
        dialect = database.database_dialect
    except Exception as exc:
        raise classify(exc) from exc
    if dialect == DatabaseDialect.POSTGRESQL:
        return POSTGRESQL
    return GOOGLESQL  # GOOGLE_STANDARD_SQL, or UNSPECIFIED which Spanner treats as GoogleSQL


class ChangeStreamReader:
    """Read windows of change stream partitions of one stream, in one dialect."""

    def __init__(
        self,
        database: spanner_v1.database.Database,
        stream_name: str,
        dialect: str,
        heartbeat_ms: int,
        timeout: float | None = None,
        unavailable_s: float = UNAVAILABLE_BUDGET_S,
    ):
        self.database = database
        self.stream_name = stream_name
        self.dialect = dialect
        self.heartbeat_ms = heartbeat_ms
        self.timeout = timeout
        self._retry = unavailable_retry(unavailable_s)  # how long a query waits for an unavailable server
        self._googlesql = GoogleSqlDecoder()

    def read(
        self, partition_token: str | None, start: datetime, end: datetime | None
    ) -> Iterator[ChangeRecord]:
        """Yield the records of one partition (None: the initial query) from start to end."""
        sql, options, decode = self._prepare(partition_token, start, end)
        try:
            with self.database.snapshot() as snapshot:
                rows = snapshot.execute_sql(sql, **options)
                skip_type_decoders(rows)
                for row in rows:
                    yield decode(rows, row)
        except SourceError:
            raise
        except Exception as exc:
            raise classify(exc) from exc

    def _prepare(self, partition_token: str | None, start: datetime, end: datetime | None):
        """Return the SQL, the execute_sql options and the row decoder of one partition's read.

        Both readers call it, so the threaded and the asyncio read cannot drift apart.
        """
        query = build_query(self.dialect, self.stream_name, start, end, partition_token, self.heartbeat_ms)
        decode = self._googlesql.decode if query.dialect == GOOGLESQL else decode_postgresql_value
        timeout = self.timeout if self.timeout is not None else query_timeout(query.start, query.end)
        options = {
            "params": query.params,
            "param_types": query.param_types,
            "lazy_decode": True,
            "timeout": timeout,
            "retry": self._retry,
        }
        return query.sql, options, _RowDecoder(decode, partition_token, check=query.dialect == GOOGLESQL)


class _RowDecoder:
    """Decode one partition's rows; for GoogleSQL, check the result's fields on the first row."""

    __slots__ = ("_decode", "_token", "_check")

    def __init__(self, decode, partition_token: str | None, check: bool):
        self._decode = decode
        self._token = partition_token
        self._check = check

    def __call__(self, rows, row) -> ChangeRecord:
        if self._check:  # fields are known only once the first response came
            check_googlesql_fields(rows.fields, self._token)
            self._check = False
        return self._decode(row[0], self._token)


class AsyncChangeStreamReader(ChangeStreamReader):
    """The same reads through the official client's asyncio API: many partitions on one thread.

    A live read mostly waits for a heartbeat. Read by a thread each, 2,000 partitions were
    2,000 threads handing one interpreter lock over a thousand times a second, and the
    process starved (docs/benchmarks.md, issue 22); on one event loop a heartbeat costs a
    callback. ``database`` is the asyncio client's (connect_async).
    """

    def __init__(self, database, stream_name: str, dialect: str, heartbeat_ms: int, **kwargs):
        super().__init__(database, stream_name, dialect, heartbeat_ms, **kwargs)
        self._retry = unavailable_retry_async(kwargs.get("unavailable_s", UNAVAILABLE_BUDGET_S))

    async def read(  # type: ignore[override]
        self, partition_token: str | None, start: datetime, end: datetime | None
    ) -> AsyncIterator[ChangeRecord]:
        """Yield the records of one partition from start to end, as ChangeStreamReader.read does."""
        sql, options, decode = self._prepare(partition_token, start, end)
        try:
            async with self.database.snapshot() as snapshot:
                rows = await snapshot.execute_sql(sql, **options)
                skip_type_decoders(rows)
                async for row in rows:
                    yield decode(rows, row)
        except SourceError:
            raise
        except Exception as exc:
            raise classify(exc) from exc


def skip_type_decoders(rows) -> None:
    """Spare the client building a type decoder per column for a result read with lazy_decode.

    The client's StreamedResultSet builds them on a query's first values even when it
    hands the raw values on undecoded, and never uses them then: for the change record's
    nested struct that was 9 % of the live reads' event loop at 2,000 partitions
    (docs/benchmarks.md, issue 22). Only its decode_row and decode_column would need them,
    and the reader calls neither. test_changestream_fields.py fails if the client stops
    honouring this.
    """
    if getattr(rows, "_field_decoders", False) is None:
        rows._field_decoders = ()


def check_googlesql_fields(fields, partition_token: str | None) -> None:
    """Raise ChangeRecordError unless the result's struct fields are those of schema.py.

    The fast decoder reads structs by position, so a different field layout must stop the
    read instead of silently shifting every value into the wrong field.
    """
    actual = tuple((f.name, _field_names(f.type_)) for f in fields)
    if actual != _EXPECTED_FIELDS:
        raise ChangeRecordError(
            f"unexpected result columns {actual!r:.300}",
            field=schema.GOOGLESQL_COLUMN,
            partition_token=partition_token,
        )


def _field_names(type_pb) -> tuple | None:
    if type_pb.code == TypeCode.ARRAY:
        return ("ARRAY", _field_names(type_pb.array_element_type))
    if type_pb.code == TypeCode.STRUCT:
        return tuple((f.name, _field_names(f.type_)) for f in type_pb.struct_type.fields)
    return None


# Raw protobuf fields, as StreamedResultSet.fields returns them.
_EXPECTED_FIELDS = tuple(
    (f.name, _field_names(f.type_)) for f in StructType.pb(schema.googlesql_row_type()).fields
)


def query_timeout(start: datetime, end: datetime | None, now: datetime | None = None) -> float:
    """Return the deadline in seconds for a query: a day if open-ended, else until end plus grace."""
    if end is None:
        return OPEN_ENDED_TIMEOUT_S
    now = now or datetime.now(UTC)
    remaining = (end - max(start, now)).total_seconds()
    return max(remaining, 0.0) + BOUNDED_GRACE_S


def classify(exc: BaseException) -> SpannerError:
    """Return the retryable or permanent error for an exception of the client or transport."""
    if isinstance(exc, SpannerError):
        return exc
    if isinstance(exc, api_exceptions.RetryError) and exc.cause is not None:
        return classify(exc.cause)  # the client gave up retrying: judge the last failure
    code = status_name(exc)
    message = server_message(exc)
    if code in RETRYABLE_CODES:
        return RetryableSpannerError(message, code=code)
    if code == "INTERNAL" and any(hint in message.lower() for hint in INTERNAL_RETRY_HINTS):
        return RetryableSpannerError(message, code=code)
    return PermanentSpannerError(message, code=code)
