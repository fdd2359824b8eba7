"""Serve poll queries of the commit-timestamp tables, and the read-only transactions they run in.

A query is parsed (table_sql), resolved against the database's tables (names, types,
index), and answered at its transaction's read timestamp (table_reads.page). Rows go out
as PartialResultSets whose values are the columns of each row in turn; the first
message carries the row type and, when the query began the transaction, the
transaction's id and read timestamp. Each message has a resume token (rows sent so far),
so a stream broken by UNAVAILABLE resumes where it stopped, at the same read timestamp.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from google.cloud.spanner_v1 import (
    ExecuteSqlRequest,
    PartialResultSet,
    PlanNode,
    QueryPlan,
    ResultSetMetadata,
    ResultSetStats,
    StructType,
    Transaction,
    Type,
    TypeCode,
)

from partitions.simulator.core.clock import to_datetime, to_us
from partitions.simulator.core.config import parse_timestamp

from . import encode
from .faults import StreamFaults
from .sql import QueryError
from .table_history import TableHistory
from .table_reads import AFTER_ALL_KEYS, LOWEST, build_histories, page
from .table_sql import TableQuery, invalid, parse_table_query
from .tables import format_ts
from .transactions import ReadOnlyTransactions
from .watched_tables import COMMITTED, TABLES, WatchedTable, find_table, same_name


@dataclass
class TableQueryLogEntry:
    """One poll query: what was asked, at which read timestamp, how it ended."""

    database: str
    sql: str
    resumed: bool
    table: str = ""
    index: str | None = None
    shard: int | None = None
    read_timestamp: datetime | None = None
    began_transaction: bool = False
    rows: int = 0
    status: str = "RUNNING"  # then OK, CANCELLED or the error code's name
    closed_at: float | None = None  # time.monotonic()
    opened_wall: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass(frozen=True)
class Plan:
    """A resolved poll query: which rows to read, from which history."""

    table: WatchedTable
    history: TableHistory
    shard: int | None
    after: tuple  # (commit us, key tuple)
    end_us: int | None
    limit: int
    empty: bool = False  # a NULL parameter: the comparison is never true


class TableService:
    """The tables, their histories and transactions of one simulator server."""

    def __init__(self, server):
        self.server = server
        self.histories = build_histories(server.config)
        self.transactions = ReadOnlyTransactions()
        self._log: list[TableQueryLogEntry] = []
        self._lock = threading.Lock()

    def queries(self, table: str | None = None) -> list[TableQueryLogEntry]:
        """Return a copy of the log of poll queries, optionally of one table only."""
        with self._lock:
            return [q for q in self._log if table is None or q.table == table]

    def begin_transaction(self, request, context) -> Transaction:
        """Answer BeginTransaction: a strong read-only transaction with its read timestamp."""
        try:
            txn_id, read_us = self.transactions.begin(request.options)
        except QueryError as error:
            context.abort(error.code, error.message)
        return Transaction(id=txn_id, read_timestamp=to_datetime(read_us))

    async def execute(self, request, database: str, context):
        """Yield the PartialResultSet bytes answering one poll query (raw ExecuteSqlRequest), logged."""
        entry = TableQueryLogEntry(database, request.sql, bool(request.resume_token))
        with self._lock:
            self._log.append(entry)
        try:
            dialect = self.server.config.dialect_of(database)
            async for message in self._execute(request, dialect, entry, context):
                yield message
            entry.status = "OK" if entry.status == "RUNNING" else entry.status
        except QueryError as error:
            entry.status = error.code.name
            await context.abort(error.code, error.message)
        except (GeneratorExit, asyncio.CancelledError):
            entry.status = "CANCELLED"
            raise
        finally:
            entry.closed_at = time.monotonic()

    async def _execute(self, request, dialect: str, entry: TableQueryLogEntry, context):
        """Yield the answer to one poll query, logging what it asked."""
        query = parse_table_query(request.sql)
        plan = resolve(query, dialect, request.params.fields, request.param_types, self.histories)
        entry.table, entry.index, entry.shard = plan.table.name, query.index, plan.shard
        if request.query_mode == ExecuteSqlRequest.QueryMode.PLAN:
            yield query_plan(plan.table, query.index)
            return
        read_us, begun = self.transactions.read_timestamp(request.transaction)
        entry.read_timestamp, entry.began_transaction = to_datetime(read_us), begun is not None
        rows = (
            [] if plan.empty else page(plan.history, plan.shard, plan.after, plan.end_us, read_us, plan.limit)
        )
        skip = _resume_position(bytes(request.resume_token))
        faults = StreamFaults(self.server.config, f"table:{hash(request.sql)}:{read_us}:{skip}")
        head = _metadata(plan.table, begun, read_us) if not skip else b""
        async for message in self._send(head, rows, skip, faults, entry, context):
            yield message

    async def _send(self, head: bytes, rows: list, skip: int, faults: StreamFaults, entry, ctx):
        """Yield the rows after skip in messages of about batch_bytes, each with its resume token."""
        batch, size, sent = [], 0, skip
        limit = self.server.config.batch_bytes
        for version in rows[skip:]:
            if not version.wire:
                version.wire = _row_value(version.row)
            batch.append(version.wire)
            size += len(version.wire)
            sent += 1
            if size >= limit:
                async for message in self.server._message(head, batch, b"tbl1:%d" % sent, faults, entry, ctx):
                    yield message
                head, batch, size = b"", [], 0
        if batch or head or not rows:
            async for message in self.server._message(head, batch, b"tbl1:%d" % sent, faults, entry, ctx):
                yield message

    def ddl(self, dialect: str) -> list[str]:
        """Return the CREATE statements of a dialect's tables."""
        shards = self.server.config.table_shards
        return [s for t in TABLES if t.dialect == dialect for s in t.ddl(shards)]


def query_plan(table: WatchedTable, index: str | None) -> bytes:
    """Return the PLAN mode answer: the row type and a plan whose scan reads the index or the table.

    The simulator scans an index only when the query forces it (FORCE_INDEX), so a poll
    without the hint shows a table scan, as a planner that ignores the index would.
    """
    scan = {"scan_type": "IndexScan" if index else "TableScan", "scan_target": index or table.name}
    relational = PlanNode.Kind.RELATIONAL
    nodes = [
        PlanNode(
            index=0, kind=relational, display_name="Distributed Union", child_links=[{"child_index": 1}]
        ),
        PlanNode(index=1, kind=relational, display_name="Serialize Result", child_links=[{"child_index": 2}]),
        PlanNode(index=2, kind=relational, display_name="Scan", metadata=scan),
    ]
    fields = [
        StructType.Field(name=name, type_=Type(code=TypeCode[code]))
        for name, code in zip(table.columns, table.codes(), strict=True)
    ]
    return PartialResultSet.serialize(
        PartialResultSet(
            metadata=ResultSetMetadata(row_type=StructType(fields=fields)),
            stats=ResultSetStats(query_plan=QueryPlan(plan_nodes=nodes)),
        )
    )


def _resume_position(token: bytes) -> int:
    """Return how many rows a resumed stream already received (0 for a new one)."""
    if not token:
        return 0
    prefix, _, count = token.partition(b":")
    if prefix != b"tbl1" or not count.isdigit():
        raise invalid("Invalid resume token")
    return int(count)


def _metadata(table: WatchedTable, txn_id: bytes | None, read_us: int) -> bytes:
    """Return PartialResultSet field 1: the row type, and the transaction when the query began it."""
    fields = [
        StructType.Field(name=name, type_=Type(code=TypeCode[code]))
        for name, code in zip(table.columns, table.codes(), strict=True)
    ]
    meta = ResultSetMetadata(row_type=StructType(fields=fields))
    if txn_id is not None:
        meta.transaction = Transaction(id=txn_id, read_timestamp=to_datetime(read_us))
    return encode._field(b"\x0a", ResultSetMetadata.serialize(meta))


def _row_value(row: tuple) -> bytes:
    """Return a row's column values framed for PartialResultSet.values, in column order."""
    parts = []
    for i, value in enumerate(row):
        if value is None:
            parts.append(encode.framed(encode._NULL))
        elif isinstance(value, bool):
            parts.append(encode.framed(encode._bool(value)))
        elif isinstance(value, str):
            parts.append(encode.framed(encode._str(value)))
        elif i == COMMITTED:  # kept in microseconds, sent as RFC 3339 text
            parts.append(encode.framed(encode._str(format_ts(value))))
        else:
            parts.append(encode.framed(encode._int(value)))
    return b"".join(parts)


def resolve(query: TableQuery, dialect: str, params, types, histories: dict) -> Plan:
    """Return the plan of a parsed query on a database of a dialect, or raise QueryError."""
    if query.dialect != dialect:
        raise invalid(f"Syntax error: a {query.dialect} statement on a {dialect} database")
    table = find_table(dialect, query.table)
    if table is None:
        raise invalid(f"Table not found: {query.table}")
    _check_names(query, table)
    value = _Params(params, types)
    shard = value.get(query.shard, "INT64") if query.shard else None
    after_ts = value.get(query.after, "TIMESTAMP")
    codes = dict(zip(table.columns, table.codes(), strict=True))
    key = tuple(
        LOWEST if p is None else value.get(p, codes[table.columns[i]]) for i, (_, p) in enumerate(query.keys)
    )
    end = value.get(query.end, "TIMESTAMP") if query.end else None
    limit = value.get(query.limit, "INT64")
    if limit is None or limit < 0:
        raise invalid(f"LIMIT must be a non-negative integer, got {limit}")
    empty = after_ts is None or (query.shard is not None and shard is None) or (query.end and end is None)
    empty = empty or any(k is None for k in key)
    after = (to_us(after_ts) if after_ts else 0, key if query.keys else AFTER_ALL_KEYS)
    end_us = to_us(end) if end else None
    return Plan(table, histories[table.history], shard, after, end_us, limit, bool(empty))


def _check_names(query: TableQuery, table: WatchedTable) -> None:
    """Raise QueryError unless the query polls this table as the simulator can answer it."""
    declared = {}
    for name in [query.ts_column, *(c for c, _ in query.keys), *query.order, query.shard_column or ""]:
        if name and table.position(name) is None:
            raise invalid(f"Unrecognized name: {name}")
        declared[name] = table.columns[table.position(name)] if name else None
    if query.index and (table.index is None or not same_name(table.index, query.index, table.dialect)):
        raise invalid(f"The table {table.name} does not have a secondary index called {query.index}")
    if query.index and not query.shard_column:
        raise invalid(f"NULL_FILTERED index {query.index} needs the query to filter NULLs of {table.shard}")
    expect = [table.timestamp, *table.key]
    keys = [declared[c] for c, _ in query.keys]
    if (
        declared[query.ts_column] != table.timestamp
        or [declared[n] for n in query.order] != expect
        or keys not in ([], list(table.key))
        or declared[query.shard_column or ""] not in (None, table.shard)
    ):
        within = f" within {table.shard}" if table.sharded else ""
        raise invalid(f"the simulator answers polls of {table.name} by ({', '.join(expect)}){within} only")


class _Params:
    """Typed parameter values of a request (raw protobuf Struct fields and Type map)."""

    def __init__(self, fields, types):
        self.fields, self.types = fields, types

    def get(self, name: str, code: str):
        """Return the parameter's value as the column type code reads it; None for NULL."""
        if name not in self.fields:
            raise invalid(f"No parameter found for binding: {name}")
        if name not in self.types or TypeCode(self.types[name].code).name != code:
            got = TypeCode(self.types[name].code).name if name in self.types else "untyped"
            raise invalid(f"Parameter {name} has type {got}; the comparison needs {code}")
        value = self.fields[name]
        if value.WhichOneof("kind") == "null_value":
            return None
        text = value.string_value
        try:
            if code == "INT64":
                return int(text)
            if code == "TIMESTAMP":
                return parse_timestamp(text)
        except ValueError:
            raise invalid(f"Invalid value for parameter {name}: {text!r}") from None
        return text
