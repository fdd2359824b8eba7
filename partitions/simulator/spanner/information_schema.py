"""Answer INFORMATION_SCHEMA queries about the simulated schema, as checks before a create ask them.

Only one shape is understood, in either dialect (names in any case, parameters ``@name``
or ``$n``, or quoted literals)::

    SELECT c1, c2 FROM INFORMATION_SCHEMA.VIEW [WHERE c = p [AND c = p]...]

over the views CHANGE_STREAMS, CHANGE_STREAM_OPTIONS, TABLES, COLUMNS, COLUMN_OPTIONS
(GoogleSQL only, as in Spanner) and INDEXES, each built from the simulator's config:
its one change stream (FOR ALL, its retention period) and its watched tables. Every
value is a STRING, as the checks read them; a view or column the simulator does not
hold is INVALID_ARGUMENT, as Spanner answers an unknown name.
"""

from __future__ import annotations

import re

from google.cloud.spanner_v1 import PartialResultSet, ResultSetMetadata, StructType, Type, TypeCode
from google.protobuf import struct_pb2

from partitions.sources.spanner_change_stream.query import GOOGLESQL

from .config import SimulatorConfig
from .sql import QueryError, _invalid
from .watched_tables import COMMITTED, TABLES

_QUERY = re.compile(
    r"\s*SELECT\s+(?P<columns>\w+(?:\s*,\s*\w+)*)\s+FROM\s+INFORMATION_SCHEMA\s*\.\s*(?P<view>\w+)"
    r"(?:\s+WHERE\s+(?P<where>.+?))?\s*;?\s*",
    re.IGNORECASE | re.DOTALL,
)
_CONDITION = re.compile(r"\s*(?P<column>\w+)\s*=\s*(?P<value>@\w+|\$\d+|'[^']*')\s*", re.IGNORECASE)


def is_information_schema_query(sql: str) -> bool:
    """Return whether the statement reads an INFORMATION_SCHEMA view."""
    return re.search(r"\bINFORMATION_SCHEMA\s*\.", sql, re.IGNORECASE) is not None


def views(config: SimulatorConfig, dialect: str) -> dict[str, list[dict[str, str]]]:
    """Return every view's rows (column names upper-case) for a database of a dialect."""
    schema = "" if dialect == GOOGLESQL else "public"
    tables = [t for t in TABLES if t.dialect == dialect]
    commit_type = "TIMESTAMP" if dialect == GOOGLESQL else "spanner.commit_timestamp"
    columns, options, indexes = [], [], []
    for t in tables:
        for i, name in enumerate(t.columns):
            code = t.codes()[i]
            spanner_type = commit_type if i == COMMITTED else code
            row = {"TABLE_SCHEMA": schema, "TABLE_NAME": t.name, "COLUMN_NAME": name}
            columns.append({**row, "ORDINAL_POSITION": str(i + 1), "SPANNER_TYPE": spanner_type})
            if i == COMMITTED and dialect == GOOGLESQL:
                options.append({**row, "OPTION_NAME": "allow_commit_timestamp", "OPTION_VALUE": "TRUE"})
        index = {"TABLE_SCHEMA": schema, "TABLE_NAME": t.name, "INDEX_TYPE": "PRIMARY_KEY"}
        indexes.append({**index, "INDEX_NAME": "PRIMARY_KEY", "IS_NULL_FILTERED": "NO"})
        if t.index:
            filtered = "YES" if dialect == GOOGLESQL else "NO"  # PostgreSQL filters with WHERE
            indexes.append(
                {**index, "INDEX_NAME": t.index, "INDEX_TYPE": "INDEX", "IS_NULL_FILTERED": filtered}
            )
    stream = {
        "CHANGE_STREAM_CATALOG": "",
        "CHANGE_STREAM_SCHEMA": schema,
        "CHANGE_STREAM_NAME": config.stream,
    }
    retention = {"OPTION_NAME": "retention_period", "OPTION_TYPE": "STRING"}
    result = {
        "CHANGE_STREAMS": [{**stream, "ALL": "YES"}],
        "CHANGE_STREAM_OPTIONS": [{**stream, **retention, "OPTION_VALUE": f"{int(config.retention)}s"}],
        "TABLES": [
            {"TABLE_SCHEMA": schema, "TABLE_NAME": t.name, "TABLE_TYPE": "BASE TABLE"} for t in tables
        ],
        "COLUMNS": columns,
        "INDEXES": indexes,
    }
    if dialect == GOOGLESQL:
        result["COLUMN_OPTIONS"] = options
    return result


def answer(sql: str, params, config: SimulatorConfig, dialect: str) -> tuple[list[str], list[list[str]]]:
    """Return (column names as written, rows) answering one query, or raise QueryError."""
    match = _QUERY.fullmatch(sql)
    if match is None:
        raise _invalid(
            f"the simulator answers only SELECT c, ... FROM INFORMATION_SCHEMA.v WHERE c = p: {sql[:200]!r}"
        )
    view = match["view"].upper()
    rows = views(config, dialect).get(view)
    if rows is None:
        raise _invalid(f"Table not found: INFORMATION_SCHEMA.{match['view']}")
    known = set(rows[0]) if rows else set()
    columns = [c.strip() for c in match["columns"].split(",")]
    conditions = _conditions(match["where"] or "", params)
    for name in [*columns, *conditions]:
        if name.upper() not in known:
            raise _invalid(f"Unrecognized name: {name}")
    kept = [r for r in rows if all(r[c.upper()] == v for c, v in conditions.items())]
    return columns, [[r[c.upper()] for c in columns] for r in kept]


def _conditions(where: str, params) -> dict[str, str]:
    """Return {column: value} of a WHERE of equalities joined by AND."""
    found: dict[str, str] = {}
    if not where:
        return found
    for part in re.split(r"\s+AND\s+", where, flags=re.IGNORECASE):
        match = _CONDITION.fullmatch(part)
        if match is None:
            raise _invalid(f"the simulator answers only equalities joined by AND: {part[:100]!r}")
        found[match["column"]] = _value(match["value"], params)
    return found


def _value(raw: str, params) -> str:
    if raw.startswith("'"):
        return raw[1:-1]
    key = raw[1:] if raw[0] == "@" else f"p{raw[1:]}"
    if key not in params:
        raise _invalid(f"No parameter found for binding: {key}")
    return params[key].string_value


def result_sets(columns: list[str], rows: list[list[str]]) -> bytes:
    """Return the one PartialResultSet (serialized) holding every row's values."""
    fields = [StructType.Field(name=c, type_=Type(code=TypeCode.STRING)) for c in columns]
    message = PartialResultSet.pb()(
        metadata=ResultSetMetadata.pb(ResultSetMetadata(row_type=StructType(fields=fields))),
        values=[struct_pb2.Value(string_value=v) for row in rows for v in row],
        resume_token=b"is:%d" % len(rows),
    )
    return message.SerializeToString()


__all__ = ["QueryError", "answer", "is_information_schema_query", "result_sets", "views"]
