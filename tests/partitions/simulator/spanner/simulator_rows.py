"""Read the simulator with the official client; turn its rows into dicts shaped like the JSON lines."""

from __future__ import annotations

import json

from google.auth.credentials import AnonymousCredentials
from google.cloud.spanner import Client

from partitions.sources.spanner_change_stream.jsonl import format_timestamp
from partitions.sources.spanner_change_stream.query import build_query
from partitions.sources.spanner_change_stream.schema import (
    CHILD_PARTITIONS_RECORD_FIELDS,
    DATA_CHANGE_RECORD_FIELDS,
    HEARTBEAT_RECORD_FIELDS,
)

KINDS = ("data_change_record", "heartbeat_record", "child_partitions_record")


def _plain(value):
    return json.loads(json.dumps(value))


def _googlesql(value) -> tuple[str, dict]:
    (struct,) = value  # the ChangeRecord array always has one element
    non_empty = [i for i, array in enumerate(struct) if array]
    assert len(non_empty) == 1, f"exactly one record kind per row, got {struct}"
    kind = KINDS[non_empty[0]]
    (fields,) = struct[non_empty[0]]
    names = {0: DATA_CHANGE_RECORD_FIELDS, 1: HEARTBEAT_RECORD_FIELDS, 2: CHILD_PARTITIONS_RECORD_FIELDS}
    body = dict(zip([n for n, _ in names[non_empty[0]]], fields, strict=True))
    for key in ("commit_timestamp", "timestamp", "start_timestamp"):
        if key in body:
            body[key] = format_timestamp(body[key])
    if kind == "data_change_record":
        body["column_types"] = [
            {"name": n, "type": _plain(t), "is_primary_key": pk, "ordinal_position": int(o)}
            for n, t, pk, o in body["column_types"]
        ]
        body["mods"] = [
            {"keys": _plain(k), "new_values": _plain(n), "old_values": _plain(o)} for k, n, o in body["mods"]
        ]
        for key in ("number_of_records_in_transaction", "number_of_partitions_in_transaction"):
            body[key] = int(body[key])
    if kind == "child_partitions_record":
        body["child_partitions"] = [
            {"token": t, "parent_partition_tokens": list(p)} for t, p in body["child_partitions"]
        ]
    return kind, body


def normalize(value, dialect: str) -> tuple[str, dict]:
    """Return (record kind, fields) of one row's ChangeRecord value."""
    if dialect == "googlesql":
        return _googlesql(value)
    data = _plain(value)
    assert len(data) == 1, f"exactly one key per PostgreSQL row, got {list(data)}"
    ((kind, body),) = data.items()
    return kind, body


def make_client(port: int) -> Client:
    """Return an official client talking plain gRPC to a local simulator."""
    return Client(
        project="p",
        client_options={"api_endpoint": f"127.0.0.1:{port}"},
        credentials=AnonymousCredentials(),
        disable_builtin_metrics=True,
    )


class Reader:
    """Run change stream queries against one simulator and return the decoded rows."""

    def __init__(self, port: int):
        self.client = make_client(port)
        self.instance = self.client.instance("i")

    def rows(self, database, dialect, start, end, token, heartbeat_ms=10_000, stream="Changes"):
        """Return every row (the client's decoding) of one query."""
        query = build_query(dialect, stream, start, end, token, heartbeat_ms)
        with self.instance.database(database).snapshot() as snapshot:
            result = snapshot.execute_sql(query.sql, params=query.params, param_types=query.param_types)
            return [row[0] for row in result]
