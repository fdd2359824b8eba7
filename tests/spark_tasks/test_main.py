"""main() as spark-submit runs it: result files, totals, empty ranges and readable failures."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_tasks.submit import CDS_DIR, runtime_key, submit_options

# spark-submit runs here have minutes to finish and only their results are asserted.
pytestmark = pytest.mark.long_deadlines
ROOT = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(sys.executable).with_name("spark-submit")


def spark_submit(*args: str, cds_dir: Path | None = CDS_DIR) -> subprocess.CompletedProcess:
    """Run spark_tasks/main.py with the project's interpreter on both sides (DESIGN §9)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("SPARK_MASTER", None)
    options = submit_options(driver_memory="512m", cds_dir=cds_dir)
    cmd = [str(SPARK_SUBMIT), "--master", "local[2]", *options, "spark_tasks/main.py", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
def test_spark_submit_writes_every_table_and_deduplicated_totals(
    landing, lineage_file, tmp_path, unique_mods, records
):
    # given the test landing zone with duplicates and a lineage export
    out = tmp_path / "report"
    # when the whole report runs through spark-submit
    done = spark_submit("--input", str(landing), "--output", str(out), "--stream-id", "1",
                        "--lineage", str(lineage_file))  # fmt: skip
    # then it succeeds, reports progress, and the totals are the deduplicated counts
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PROGRESS 1/")
    assert lines[-1] == f"DONE {out / 'summary.json'}"
    summary = json.loads((out / "summary.json").read_text())
    totals = summary["totals"]
    assert totals["mods"] == len(unique_mods)
    assert totals["records"] == len(records)
    assert totals["duplicate_mods_removed"] == 30
    assert totals["transactions"] == len({r["server_transaction_id"] for r in unique_mods})
    assert totals["bytes"] == sum(r["mod_bytes"] for r in unique_mods)
    for name, table in summary["tables"].items():
        data = json.loads((out / table["file"]).read_text())
        assert (data["name"], len(data["rows"])) == (name, table["rows"])
    assert {"churn_by_hour", "partition_lifetimes", "cost"} <= set(summary["tables"])
    assert any("verify for your contract" in a["source"] for a in summary["assumptions"])
    # and the intermediate records and transactions were written and then removed
    assert not (out / "_work").exists()
    assert [line.split()[-1] for line in lines[1:3]] == ["records", "transactions"]


@pytest.mark.slow
def test_a_missing_or_broken_class_archive_never_fails_the_job(landing, tmp_path):
    # given no class-data-sharing archive yet
    cds = tmp_path / "cds"
    archive = cds / f"spark-{runtime_key()}.jsa"
    report = ["--input", str(landing), "--stream-id", "1", "--report", "throughput"]
    # when a job runs, then it succeeds and its JVM leaves the archive behind
    first = spark_submit(*report, "--output", str(tmp_path / "first"), cds_dir=cds)
    assert first.returncode == 0, first.stderr[-3000:]
    assert archive.stat().st_size > 1 << 20
    # and the next job maps it, with the same result and only the job's lines on stdout
    second = spark_submit(*report, "--output", str(tmp_path / "second"), cds_dir=cds)
    assert second.returncode == 0, second.stderr[-3000:]
    assert all(line.startswith(("PROGRESS ", "DONE ")) for line in second.stdout.splitlines())
    throughput = [json.loads((tmp_path / d / "throughput.json").read_text()) for d in ("first", "second")]
    assert throughput[0] == throughput[1]
    # and an archive that is garbage (half-written, or of another JVM) is refused, not fatal
    archive.write_bytes(b"\0" * 4096)
    third = spark_submit(*report, "--output", str(tmp_path / "third"), cds_dir=cds)
    assert third.returncode == 0, third.stderr[-3000:]
    assert all(line.startswith(("PROGRESS ", "DONE ")) for line in third.stdout.splitlines())


@pytest.mark.slow
def test_a_range_without_data_is_an_empty_report(landing, tmp_path):
    # given a range a week after the landed data
    out = tmp_path / "empty"
    # when the throughput report runs over it
    week_later = ["--since", "2026-11-27T00:00:00Z", "--until", "2026-11-28T00:00:00Z"]
    done = spark_submit("--input", str(landing), "--output", str(out), "--stream-id", "1", "--report",
                        "throughput", *week_later)  # fmt: skip
    # then it succeeds with zero totals and empty tables
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["empty"] is True
    assert summary["totals"]["mods"] == 0
    assert json.loads((out / "throughput.json").read_text())["rows"] == []
    assert not (out / "_work").exists()


@pytest.mark.slow
def test_missing_input_path_fails_with_a_readable_first_line(tmp_path):
    # given an input path that does not exist
    missing = tmp_path / "nowhere"
    # when the job runs
    done = spark_submit("--input", str(missing), "--output", str(tmp_path / "out"), "--stream-id", "1")
    # then it exits non-zero and says why on its first line (spark-submit merges the
    # Python driver's stderr into stdout, after the JVM's own stderr lines)
    assert done.returncode == 2
    assert done.stdout.splitlines()[0] == f"ERROR input path {missing} does not exist"
    assert json.loads((tmp_path / "out" / "error.json").read_text())["error"].startswith("input path")


def test_spark_tasks_never_imports_django():
    # given a fresh interpreter
    code = "import sys, spark_tasks.main, spark_tasks.job; print('django' in sys.modules)"
    # when every spark_tasks module is imported
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    # then Django is not among the loaded modules
    assert out.stdout.strip() == "False"
