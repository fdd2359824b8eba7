"""Dedupe: a window landed twice counts once, with its first read."""

from datetime import UTC, datetime

from pyspark.sql import functions as F

from partitions.sources.landing import stream_dir
from spark_tasks.landing import list_input_files, read_mods
from tests.spark_tasks.conftest import STREAM_ID


def test_redelivered_mods_are_counted_once(spark, landing, rows, unique_mods, mods):
    # given a landing zone where 30 mods were landed twice
    landed = read_mods(spark, list_input_files(spark, str(landing), [stream_dir(STREAM_ID)]).paths)
    assert landed.count() == len(rows) + 30
    # when deduplicated
    # then each mod is there once
    assert mods.count() == len(unique_mods) == len(rows)


def test_dedupe_keeps_the_earliest_read(mods, rows, collect, to_iso):
    # given mods whose second delivery was read a minute later
    first_reads = sorted(to_iso(r["read_timestamp"]) for r in rows)
    # when deduplicated
    kept = sorted(r["read_timestamp"] for r in collect(mods.select("read_timestamp")))
    # then the read timestamps are those of the first delivery
    assert kept == first_reads


def test_range_outside_the_data_is_empty(spark, landing):
    # given a range a day after the landed data
    since, until = datetime(2026, 11, 22, tzinfo=UTC), datetime(2026, 11, 23, tzinfo=UTC)
    files = list_input_files(spark, str(landing), [stream_dir(STREAM_ID)], since, until)
    # when read
    df = read_mods(spark, files.paths, since, until)
    # then there is nothing, and that is not an error
    assert df.count() == 0
    assert df.where(F.col("stream_name") == "orders").count() == 0
