"""Landing rows of table row records, and failures classified as retryable or permanent."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import grpc
import pytest
from google.api_core import exceptions as api

from partitions.sources.base import PermanentSourceError, RetryableSourceError
from partitions.sources.landing import LANDING_SCHEMA, UUID_NAMESPACE
from partitions.sources.spanner_commit_timestamp.errors import source_error
from partitions.sources.spanner_commit_timestamp.query import TableSpec
from partitions.sources.spanner_commit_timestamp.records import TableRowRecord
from partitions.sources.spanner_commit_timestamp.source import landing_table

AT = datetime(2024, 5, 1, 9, 0, 0, 250000, tzinfo=UTC)
READ_AT = datetime(2024, 5, 1, 9, 0, 5, tzinfo=UTC)
SPEC = TableSpec("Singers", "LastModified", ("SingerId", "Name"))


def record(singer: int, name: str = "Ana", **values) -> TableRowRecord:
    return TableRowRecord(
        "Singers", AT, {"SingerId": singer, "Name": name}, {"Zeta": 1, "Alpha": "é", **values}, 4
    )


def test_one_landing_row_per_row_read_in_the_landing_schema():
    # given two rows read in one poll
    table = landing_table("orders", "shard:4", [record(1), record(2)], READ_AT)
    # then each lands once, as an upsert of a whole row, in the landing schema
    assert table.schema == LANDING_SCHEMA
    rows = table.to_pylist()
    assert len(rows) == 2
    first = rows[0]
    assert first["read_method"] == "spanner-commit-timestamp"
    assert (first["mod_type"], first["value_capture_type"]) == ("UPSERT", "NEW_ROW")
    assert (first["object"], first["table_name"], first["partition_token"]) == (
        "Singers",
        "Singers",
        "shard:4",
    )
    assert first["server_transaction_id"] == '{"Name":"Ana","SingerId":1}'
    assert first["keys"] == first["server_transaction_id"]
    assert first["new_values"] == '{"Alpha":"\\u00e9","Zeta":1}'
    assert first["old_values"] == "{}"
    assert (first["record_sequence"], first["mod_index"], first["transaction_tag"]) == ("0", 0, "")
    assert (first["number_of_records_in_transaction"], first["number_of_partitions_in_transaction"]) == (1, 1)
    assert first["is_system_transaction"] is False
    assert first["mod_bytes"] == len(first["keys"]) + len(first["new_values"]) + 2
    assert first["commit_timestamp"] == first["source_timestamp"] == AT
    assert first["read_timestamp"] == READ_AT
    assert first["sort_keys"] == [AT.isoformat(), first["server_transaction_id"], "0", "0"]


def test_the_uuid_depends_only_on_token_commit_timestamp_and_key():
    # given the same row version read twice, with other values, and another key
    again = landing_table("s", "all", [record(1, Quantity=9)], READ_AT).to_pylist()[0]
    once = landing_table("s", "all", [record(1)], READ_AT).to_pylist()[0]
    other = landing_table("s", "all", [record(2)], READ_AT).to_pylist()[0]
    # then the version keeps its uuid (the Spanner kind's uuid5 of the dedupe key), another key does not
    assert once["uuid"] == again["uuid"] != other["uuid"]
    expected = uuid.uuid5(UUID_NAMESPACE, f"all|{AT.isoformat()}|{once['server_transaction_id']}|0|0")
    assert once["uuid"] == str(expected)
    assert json.loads(once["keys"]) == {"SingerId": 1, "Name": "Ana"}


def test_no_records_land_as_an_empty_table():
    assert landing_table("s", "all", [], READ_AT).num_rows == 0


@pytest.mark.parametrize(
    ("exc", "kind", "code"),
    [
        (api.ServiceUnavailable("socket closed"), RetryableSourceError, "UNAVAILABLE"),
        (api.Aborted("try again"), RetryableSourceError, "ABORTED"),
        (api.DeadlineExceeded("slow"), RetryableSourceError, "DEADLINE_EXCEEDED"),
        (api.PermissionDenied("no"), PermanentSourceError, "PERMISSION_DENIED"),
        (api.InvalidArgument("Table not found: Singers"), PermanentSourceError, "INVALID_ARGUMENT"),
        (ConnectionResetError(), RetryableSourceError, "UNAVAILABLE"),
    ],
)
def test_failures_are_retryable_or_permanent_as_for_change_streams(exc, kind, code):
    error = source_error(exc, SPEC, "orders")
    assert type(error) is kind
    assert error.code == code


def test_a_missing_table_says_which_settings_to_check():
    error = source_error(api.InvalidArgument("Table not found: Singers"), SPEC, "orders")
    assert (
        "table Singers or one of its columns (LastModified, SingerId, Name) was not found in database orders"
        in str(error)
    )


def test_a_missing_database_says_so():
    error = source_error(
        api.NotFound("Database not found: projects/p/instances/i/databases/orders"), SPEC, "orders"
    )
    assert isinstance(error, PermanentSourceError)
    assert str(error).startswith("NOT_FOUND: database orders was not found")


def test_a_raw_grpc_error_is_classified_by_its_status():
    class Unavailable(grpc.RpcError):
        def code(self):
            return grpc.StatusCode.UNAVAILABLE

        def details(self):
            return "connection refused"

    assert isinstance(source_error(Unavailable(), SPEC, "orders"), RetryableSourceError)
