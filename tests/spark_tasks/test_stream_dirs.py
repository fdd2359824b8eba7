"""A report reads its stream's files by id, and by name where it landed before ids: nothing else."""

from __future__ import annotations

from partitions.sources.landing import legacy_stream_dir, stream_dir
from spark_tasks.landing import list_input_files, read_mods, stream_dirs
from tests.spark_tasks.conftest import landing_rows, write_landing


def test_a_stream_reads_its_id_and_its_old_name_under_the_name_it_has_now(spark, tmp_path):
    # given a stream (id 5) that landed as "orders" before ids, then by id, and was renamed;
    # and a new stream (id 6) that took the name "orders" afterwards
    old, new, theirs = (landing_rows(seed=s, transactions=5) for s in (1, 2, 3))
    write_landing(tmp_path, legacy_stream_dir("orders"), old, name="orders")
    write_landing(tmp_path, stream_dir(5), new, name="orders-archive")
    write_landing(tmp_path, stream_dir(6), theirs, name="orders")
    # when each stream's files are listed as its report lists them
    mine = list_input_files(spark, str(tmp_path), stream_dirs(5, "orders"))
    others = list_input_files(spark, str(tmp_path), stream_dirs(6))
    # then the renamed stream reads both of its directories, under its name of today
    df = read_mods(spark, mine.paths, name="orders-archive")
    assert df.count() == len(old) + len(new)
    assert {r.stream_name for r in df.select("stream_name").distinct().collect()} == {"orders-archive"}
    # and the new "orders" reads only its own
    assert read_mods(spark, others.paths).count() == len(theirs)
    assert not set(mine.paths) & set(others.paths)
