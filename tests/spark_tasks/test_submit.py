"""The driver JVM's class-data-sharing archive: written by the first job, mapped by the next ones."""

import os
import time

from spark_tasks.submit import CDS_CLAIM_SECONDS, class_data_sharing, runtime_key, submit_options


def test_the_first_job_writes_the_archive_and_the_next_map_it(tmp_path):
    # given no archive yet
    cds = tmp_path / "cds"
    archive = cds / f"spark-{runtime_key()}.jsa"
    # when the first job's options are built, then its JVM writes the archive at exit
    assert class_data_sharing(cds) == f"-XX:ArchiveClassesAtExit={archive}"
    # and a job starting before that one ended runs without (one writer only)
    assert class_data_sharing(cds) == ""
    # and once the archive is there, jobs map it
    archive.write_bytes(b"archive")
    assert class_data_sharing(cds) == f"-XX:SharedArchiveFile={archive}"


def test_another_runtimes_archive_is_replaced_not_used(tmp_path):
    # given an archive of another JDK or Spark (another key)
    stale = tmp_path / "spark-0123456789abcdef.jsa"
    stale.write_bytes(b"old")
    # when a job's options are built, then it writes this runtime's archive and drops the stale one
    assert class_data_sharing(tmp_path).startswith("-XX:ArchiveClassesAtExit=")
    assert not stale.exists()


def test_a_claim_left_by_a_killed_job_is_taken_over(tmp_path):
    # given a claim older than any job, whose JVM never wrote the archive
    claim = tmp_path / f"spark-{runtime_key()}.claim"
    claim.touch()
    long_ago = time.time() - CDS_CLAIM_SECONDS - 60
    os.utime(claim, (long_ago, long_ago))
    # when a job's options are built, then this job writes the archive
    assert class_data_sharing(tmp_path).startswith("-XX:ArchiveClassesAtExit=")


def test_an_unusable_directory_means_no_archive_not_a_failure(tmp_path):
    # given a "directory" that is a file
    blocked = tmp_path / "cds"
    blocked.write_text("not a directory")
    # when the options are built, then they carry no archive option and the rest as before
    options = submit_options("640m", "-XX:+UseParallelGC", blocked / "sub")
    assert options[:3] == ["--driver-memory", "640m", "--driver-java-options"]
    assert "-Xms640m -XX:+UseParallelGC" in options[3]
    assert "SharedArchive" not in options[3]
    assert "ArchiveClasses" not in options[3]
