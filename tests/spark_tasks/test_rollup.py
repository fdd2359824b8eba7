"""The record roll-up and the transaction profile: the job's small levels give the mods' tables."""

from collections import defaultdict

import pytest

from spark_tasks.cost import build_cost
from spark_tasks.job import materialise
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
