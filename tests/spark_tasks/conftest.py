"""Fixtures: a small landing zone with duplicates (the one local[2] Spark session is tests/conftest.py's).

The landing zone's rows are kept as plain dicts so tests compute the expected figures
in plain Python over the same rows the Spark reports read.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from partitions.sources.landing import DEDUPE_KEY, LANDING_SCHEMA, stream_dir
from partitions.sources.spanner_change_stream.landing import READ_METHOD
from spark_tasks.landing import dedupe, list_input_files, read_mods, to_records

STREAM, STREAM_ID = "orders", 1
START = datetime(2026, 11, 20, 23, 58, tzinfo=UTC)  # the data crosses midnight
TOKENS = ["tok-a", "tok-b", "tok-c", "tok-d"]
TABLES = ["Orders", "Items", "Users"]
TAGS = ["", "checkout", "refund"]


def mod_row(
    rng: random.Random, tx: dict, token: str, seq: int, table: str, mod_type: str, index: int
) -> dict:
    """Return one landed mod of a record of transaction ``tx`` in partition ``token``."""
    keys = json.dumps({"id": rng.randrange(1000)})
    new = "{}" if mod_type == "DELETE" else json.dumps({"v": "x" * rng.randrange(1, 60)})
    old = "{}" if mod_type == "INSERT" else json.dumps({"v": "y" * rng.randrange(1, 30)})
    commit, record_sequence = tx["commit"], f"{seq:08d}"
    return {
        "uuid": f"u{rng.getrandbits(64):016x}", "stream_name": STREAM, "read_method": READ_METHOD,
        "object": table, "read_timestamp": tx["read"][token], "source_timestamp": commit,
        "sort_keys": [commit.isoformat(), tx["id"], record_sequence, str(index)],
        "partition_token": token, "commit_timestamp": commit, "server_transaction_id": tx["id"],
        "record_sequence": record_sequence, "table_name": table, "mod_index": index, "mod_type": mod_type,
        "value_capture_type": "OLD_AND_NEW_VALUES", "keys": keys, "new_values": new, "old_values": old,
        "number_of_records_in_transaction": tx["records"],
        "number_of_partitions_in_transaction": len(tx["parts"]),
        "transaction_tag": tx["tag"], "is_system_transaction": tx["system"],
        "mod_bytes": len(keys) + len(new) + len(old),
    }  # fmt: skip


def transaction(rng: random.Random, i: int) -> dict:
    """Return a transaction: commit time, partitions, per-partition read time and tag."""
    commit = START + timedelta(seconds=i * 4.3, microseconds=rng.randrange(1_000_000))
    parts = rng.sample(TOKENS, rng.choice([1, 1, 1, 2, 3]))
    lag = lambda: timedelta(seconds=rng.choice([0.2, 0.5, 1.1, 2.5, 4.0, 30.0]) + rng.random())  # noqa: E731
    return {
        "id": f"tx{i:04d}",
        "commit": commit,
        "parts": parts,
        "read": {p: commit + lag() for p in parts},
        "tag": rng.choice(TAGS),
        "system": i % 17 == 0,
    }


def landing_rows(seed: int = 7, transactions: int = 60) -> list[dict]:
    """Return the unique mods of ``transactions`` random transactions."""
    rng, rows = random.Random(seed), []
    for i in range(transactions):
        tx, records = transaction(rng, i), []
        for token in tx["parts"]:
            for _ in range(rng.choice([1, 1, 2])):
                records.append((token, rng.choice(TABLES), rng.choice(["INSERT", "UPDATE", "DELETE"])))
        tx["records"] = len(records) + (1 if i == 5 else 0)  # tx0005 lost a record: incomplete
        for seq, (token, table, mod_type) in enumerate(records):
            rows += [mod_row(rng, tx, token, seq, table, mod_type, k) for k in range(rng.choice([1, 2, 3]))]
    return rows


def redelivered(rows: list[dict]) -> list[dict]:
    """Return a window of rows read again a minute later (at-least-once delivery)."""
    return [{**r, "uuid": r["uuid"] + "-again", "read_timestamp": r["read_timestamp"] + timedelta(minutes=1)}
            for r in rows[10:40]]  # fmt: skip


def write_landing(root, folder: str, rows: list[dict], suffix: str = "", name: str = STREAM) -> None:
    """Write rows as the pipeline does under a stream's folder: one file per date and partition."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["commit_timestamp"].date(), r["partition_token"])].append({**r, "stream_name": name})
    for (day, token), group in groups.items():
        folder_of_day = root / folder / f"date={day}"
        folder_of_day.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.Table.from_pylist(group, schema=LANDING_SCHEMA), folder_of_day / f"{token}{suffix}.parquet"
        )


def unique(rows: list[dict]) -> list[dict]:
    """Return rows deduplicated by DEDUPE_KEY in plain Python, keeping the earliest read."""
    best = {}
    for r in rows:
        key = tuple(r[k] for k in DEDUPE_KEY)
        if key not in best or r["read_timestamp"] < best[key]["read_timestamp"]:
            best[key] = r
    return list(best.values())


@pytest.fixture(scope="session")
def rows() -> list[dict]:
    return landing_rows()


@pytest.fixture(scope="session")
def landing(tmp_path_factory, rows):
    root = tmp_path_factory.mktemp("landing")
    write_landing(root, stream_dir(STREAM_ID), rows)
    write_landing(root, stream_dir(STREAM_ID), redelivered(rows), suffix="-reread")
    write_landing(root, stream_dir(2), landing_rows(seed=8, transactions=10), name="other")
    return root


@pytest.fixture(scope="session")
def lineage_file(tmp_path_factory):
    """A lineage export: a root splits in two at 23:59, those two merge at 00:01."""
    at = lambda h, m: f"2026-11-{20 if h == 23 else 21}T{h:02d}:{m:02d}:00Z"  # noqa: E731
    partitions = [
        {"token": "root", "start_at": at(23, 58), "end_at": at(23, 59), "parents": []},
        {"token": "left", "start_at": at(23, 59), "end_at": at(0, 1), "parents": ["root"]},
        {"token": "right", "start_at": at(23, 59), "end_at": at(0, 1), "parents": ["root"]},
        {"token": "merged", "start_at": at(0, 1), "end_at": None, "parents": ["left", "right"]},
    ]
    path = tmp_path_factory.mktemp("lineage") / "lineage.json"
    path.write_text(json.dumps(partitions))
    return path


@pytest.fixture(scope="session")
def mods(spark, landing):
    """The deduplicated mods of the test stream, as the job reads them."""
    files = list_input_files(spark, str(landing), [stream_dir(STREAM_ID)])
    deduped = dedupe(read_mods(spark, files.paths)).cache()
    to_records(deduped).cache()  # the builders' to_records(mods) plans match this one
    return deduped


@pytest.fixture(scope="session")
def unique_mods(rows) -> list[dict]:
    """The test stream's mods deduplicated in plain Python."""
    return unique(rows + redelivered(rows))


@pytest.fixture(scope="session")
def records(unique_mods) -> dict[tuple, list[dict]]:
    """The deduplicated mods grouped by data change record key, in plain Python."""
    grouped = defaultdict(list)
    for r in unique_mods:
        grouped[tuple(r[k] for k in DEDUPE_KEY[:4])].append(r)
    return dict(grouped)


def iso(value: datetime) -> str:
    """Format an instant as the reports do."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def table_dicts(df) -> list[dict]:
    """Collect a result as dicts, timestamps as the reports' ISO strings."""
    from spark_tasks.output import collect_table

    columns, rows = collect_table(df)
    return [dict(zip(columns, r, strict=True)) for r in rows]


@pytest.fixture(scope="session")
def collect():
    return table_dicts


@pytest.fixture(scope="session")
def to_iso():
    return iso
