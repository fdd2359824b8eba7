"""The record roll-up and the transaction profile: the job's small levels give the mods' tables."""

from collections import defaultdict
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.parquet as pq
import pytest

from spark_tasks.cost import build_cost
from spark_tasks.job import UNIQUE_COLUMNS, materialise
from spark_tasks.landing import to_records
from spark_tasks.rollup import build_record_rollup
from spark_tasks.throughput import build_busiest_partitions, build_partition_activity, build_throughput
from spark_tasks.transactions import (
    build_transaction_profile,
    build_transaction_shape,
    build_transaction_summary,
    build_transaction_tags,
)

RECORD_LEVEL = (build_throughput, build_busiest_partitions, build_partition_activity, build_cost)
TRANSACTION_LEVEL = (build_transaction_summary, build_transaction_shape, build_transaction_tags)


@pytest.fixture(scope="module")
def written_records(mods, tmp_path_factory):
    """The records as the job reads them back from its work directory."""
    return materialise(to_records(mods), (tmp_path_factory.mktemp("work") / "records").as_uri())


def test_written_records_keep_a_dictionary_only_for_columns_of_few_values(written_records):
    # given the records' files in the work directory
    files = [Path(urlparse(f).path) for f in written_records.inputFiles()]
    assert files
    for path in files:
        meta = pq.ParquetFile(path).metadata
        for group in range(meta.num_row_groups):
            chunks = {meta.row_group(group).column(i).path_in_schema: meta.row_group(group).column(i)
                      for i in range(meta.num_columns)}  # fmt: skip
            # then the columns of a new value on every row are written plain, from the start
            for column in UNIQUE_COLUMNS:
                assert not chunks[column].has_dictionary_page, (path.name, column)
            # and the few-valued ones keep their dictionary
            assert chunks["table_name"].has_dictionary_page, path.name


@pytest.mark.parametrize("build", RECORD_LEVEL, ids=lambda b: b.__name__)
def test_record_tables_from_the_rollup_of_written_records_equal_those_from_the_mods(
    build, mods, written_records, collect
):
    # given the roll-up of the records read back from Parquet
    rollup = build_record_rollup(written_records)
    # when a record-level table is built from it and from the mods, then they are the same
    assert collect(build(rollup)) == collect(build(mods))


@pytest.mark.parametrize("build", TRANSACTION_LEVEL, ids=lambda b: b.__name__)
def test_transaction_tables_from_the_profile_equal_those_from_the_mods(build, mods, written_records, collect):
    # given the transaction profile of the written records
    profile = build_transaction_profile(written_records)
    # when a transaction table is built from it and from the mods, then they are the same
    assert collect(build(profile)) == collect(build(mods))


def test_partition_activity_counts_each_transaction_once_per_partition(mods, records, collect):
    # given each partition's transactions in plain Python (a transaction has several records in one)
    txs = defaultdict(set)
    for token, _, tx, _ in records:
        txs[token].add(tx)
    # when the activity table is built
    got = {r["partition_token"]: r["transactions"] for r in collect(build_partition_activity(mods))}
    # then each partition counts its distinct transactions
    assert got == {token: len(ids) for token, ids in txs.items()}


def test_summary_means_are_per_transaction_not_per_record(mods, records, collect):
    # given each transaction's declared records and partitions in plain Python
    declared = {}
    for (_, _, tx, _), mods_of_record in records.items():
        first = mods_of_record[0]
        declared[tx] = (
            first["number_of_records_in_transaction"],
            first["number_of_partitions_in_transaction"],
        )
    # when summarised
    (row,) = collect(build_transaction_summary(mods))
    # then the means are over transactions, as Spark's avg over the transactions gave them
    assert row["mean_records"] == sum(r for r, _ in declared.values()) / len(declared)
    assert row["mean_partitions"] == sum(p for _, p in declared.values()) / len(declared)
