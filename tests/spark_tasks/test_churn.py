"""Partition churn from a lineage export: splits, merges and lifetimes."""

from spark_tasks.churn import build_churn_by_hour, build_lineage_lifetimes, read_lineage


def test_split_and_merge_are_counted_in_their_hours(spark, lineage_file, collect):
    # given a root that splits at 23:59 and whose children merge at 00:01
    lineage = read_lineage(spark, str(lineage_file))
    # when churn per hour is built
    got = collect(build_churn_by_hour(lineage))
    # then the split is in hour 23 and the merge in hour 00
    assert [(r["hour"], r["splits"], r["merges"]) for r in got] == [
        ("2026-11-20T23:00:00.000000Z", 1, 0),
        ("2026-11-21T00:00:00.000000Z", 0, 1),
    ]


def test_lifetimes_are_start_to_end_and_open_partitions_have_none(spark, lineage_file, collect):
    # given the same lineage
    lineage = read_lineage(spark, str(lineage_file))
    # when lifetimes are built
    got = {r["partition_token"]: r for r in collect(build_lineage_lifetimes(lineage))}
    # then finished partitions have their lifetime, the open one none
    assert got["root"]["lifetime_seconds"] == 60
    assert got["left"]["lifetime_seconds"] == 120
    assert got["merged"]["lifetime_seconds"] is None
    assert (got["root"]["children"], got["merged"]["parents"], got["merged"]["children"]) == (2, 2, 0)
