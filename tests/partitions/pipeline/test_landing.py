"""The landing zone: one Parquet row per mod, deterministic names, atomic replacement."""

from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest

from partitions.pipeline import landing
from partitions.sources.landing import LANDING_SCHEMA
from partitions.sources.spanner_change_stream.landing import build_table
from partitions.sources.spanner_change_stream.records import ColumnType, DataChangeRecord, Mod

T0 = datetime(2026, 3, 1, 23, 59, 30, 123456, tzinfo=UTC)


STREAM_ID = 7


def write_window(uri: str, stream: str, token: str, start: datetime, records, read_at=None) -> str | None:
    """Land a window's change records as the pipeline does; return the file's path (None: no rows)."""
    table = build_table(stream, token, records, read_at or datetime.now(UTC))
    return landing.write_table(uri, STREAM_ID, token, start, table) if table.num_rows else None


def make_record(seconds: float = 0, mods: int = 2, txid: str = "tx-1") -> DataChangeRecord:
    return DataChangeRecord(
        commit_timestamp=T0 + timedelta(seconds=seconds),
        record_sequence="00000001",
        server_transaction_id=txid,
        is_last_record_in_transaction_in_partition=True,
        table_name="Orders",
        column_types=(ColumnType("OrderId", {"code": "INT64"}, True, 1),),
        mods=tuple(
            Mod(keys={"OrderId": str(i)}, new_values={"Amount": i * 1.5}, old_values={}) for i in range(mods)
        ),
        mod_type="INSERT",
        value_capture_type="NEW_ROW",
        number_of_records_in_transaction=1,
        number_of_partitions_in_transaction=2,
        transaction_tag="app=test",
        is_system_transaction=False,
    )


def test_window_lands_one_row_per_mod_with_the_envelope(tmp_path):
    # given a window with two records of two and three mods
    records = [make_record(0, mods=2), make_record(1, mods=3, txid="tx-2")]
    # when it is landed
    path = write_window(str(tmp_path), "orders", "tok-A", T0, records)
    # then one file holds five rows in the shared schema, under the stream's id and the date
    table = pq.read_table(path)
    assert table.schema.equals(LANDING_SCHEMA)
    assert table.num_rows == 5
    assert "/stream_id=7/date=2026-03-01/" in path
    row = table.to_pylist()[0]
    assert row["read_method"] == "spanner-change-stream"
    assert row["object"] == "Orders"
    assert row["keys"] == '{"OrderId":"0"}'
    assert row["sort_keys"] == [T0.isoformat(), "tx-1", "00000001", "0"]
    assert row["mod_bytes"] == len(row["keys"]) + len(row["new_values"]) + len(row["old_values"])


def test_rereading_a_window_replaces_the_same_file_with_the_same_uuids(tmp_path):
    # given a landed window
    first = write_window(str(tmp_path), "orders", "tok-A", T0, [make_record(mods=3)])
    uuids = pq.read_table(first).column("uuid").to_pylist()
    # when the same window is read again later
    second = write_window(
        str(tmp_path), "orders", "tok-A", T0, [make_record(mods=3)], read_at=T0 + timedelta(hours=1)
    )
    # then it replaced the same file, rows keep their uuids, and no temp file is left
    assert second == first
    assert pq.read_table(second).column("uuid").to_pylist() == uuids
    assert len(set(uuids)) == 3
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [first.rsplit("/", 1)[1]]


def test_window_without_data_records_writes_no_file(tmp_path):
    # when a window held only heartbeats
    path = write_window(str(tmp_path), "orders", "tok-A", T0, [])
    # then nothing was written
    assert path is None
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("prefix", ["", "file://"])
def test_landing_uri_may_be_a_path_or_a_file_uri(tmp_path, prefix):
    # given windows of two partitions
    uri = f"{prefix}{tmp_path}"
    write_window(uri, "orders", "tok-A", T0, [make_record(mods=1)])
    write_window(uri, "orders", "tok-B", T0, [make_record(mods=2)])
    # when the stream's landing zone is read back
    table = landing.read_landing(uri, STREAM_ID)
    # then both files are there
    assert sorted(table.column("partition_token").to_pylist()) == ["tok-A", "tok-B", "tok-B"]


def test_file_names_differ_by_partition_and_window():
    # given two partitions and two windows
    a = landing.window_path(1, "tok-A", T0)
    b = landing.window_path(1, "tok-B", T0)
    c = landing.window_path(1, "tok-A", T0 + timedelta(microseconds=1))
    # then every (partition, window) has its own name
    assert len({a, b, c}) == 3
    assert a.endswith(f"-{int(T0.timestamp() * 1_000_000)}.parquet")


def test_an_object_store_landing_zone_gets_whole_files_and_reads_back(s3_server):
    # given a landing zone in a bucket of an S3-compatible server (CDC_LANDING_URI=s3://...)
    uri = s3_server.uri("cdc-landing-unit")
    segment = landing.Segment(uri, STREAM_ID, "tok-A", "attempt-1")
    # when a read lands two checkpoints into its segment
    first = build_table("orders", "tok-A", [make_record(0, mods=2)], datetime.now(UTC))
    second = build_table("orders", "tok-A", [make_record(1, mods=3, txid="tx-2")], datetime.now(UTC))
    path = segment.land(T0, first)
    assert segment.land(T0, second) == path
    # then the bucket holds one whole file with both, no temporary object, and it reads back
    filesystem, root = landing.resolve(uri)
    names = [
        i.path for i in filesystem.get_file_info(landing.pafs.FileSelector(root, recursive=True)) if i.is_file
    ]
    assert names == [path]
    assert f"/stream_id={STREAM_ID}/date=2026-03-01/" in path
    table = landing.read_landing(uri, STREAM_ID)
    assert table.num_rows == 5
    assert sorted(table.column("server_transaction_id").to_pylist()) == ["tx-1"] * 2 + ["tx-2"] * 3
