"""Reports through real spark-submit: a pipeline-landed stream via a real worker, a failure, an empty range.

The landing zone is made by the real pipeline (simulator over gRPC, Celery workers);
the expected totals are computed from the landed Parquet files with pyarrow.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pyarrow.compute as pc
import pyspark
import pytest
from django.utils import timezone

from cdcweb.dashboard import deletion
from cdcweb.reports.models import Report
from cdcweb.reports.tasks import run_report_task
from partitions.pipeline import landing
from partitions.sources.landing import DEDUPE_KEY
from spark_tasks.submit import CDS_DIR
from streams.models import Stream
from tests.partitions.pipeline.conftest import (  # noqa: F401 - the fixtures
    _wait_for,
    pipeline,
    pipeline_broker,
    pipeline_database,
    pipeline_env,
    sim,
    sim_config,
)

# A report takes about 30 s on a quiet machine; on a loaded 2-core one Spark took 317 s, past
# the suite's 300 s per test (the first test's set-up runs the report): waits here are long.
pytestmark = [pytest.mark.slow, pytest.mark.long_deadlines, pytest.mark.timeout(1200)]
S = Report.Status
SPAN = timedelta(seconds=20)
# Two cores are shared with the pipeline's processes: keep Spark small.
SPARK_ENV = {"SPARK_MASTER": "local[2]", "CDC_SPARK_DRIVER_MEMORY": "512m"}


@pytest.fixture(scope="module")
def landed(pipeline, sim) -> Stream:  # noqa: F811
    """Return a stream whose 20 s of past changes a real worker has read and landed."""
    pipeline.env.update(SPARK_ENV)
    # The reports worker maps the suite's class-data-sharing archive (CDC_VAR_DIR/cds), as a
    # host's worker maps the one its first job wrote, instead of dumping one of its own in
    # its first job (about 20 s: writing, mapping and refusing one is test_main's test).
    CDS_DIR.mkdir(parents=True, exist_ok=True)
    (pipeline.var_dir / "cds").symlink_to(CDS_DIR, target_is_directory=True)
    pipeline.beat()
    pipeline.worker("w1")
    pipeline.reports()
    start = (timezone.now() - timedelta(minutes=20)).replace(microsecond=0)
    pipeline.manage(
        "cdc_stream", "create", "orders", "--project", "p", "--instance", "i", "--database", "demo-db",
        "--change-stream", sim.config.stream, "--start", start.isoformat(),
        "--end", (start + SPAN).isoformat(), "--heartbeat-ms", "1000", "--window-seconds", "5",
        "--emulator-host", sim.emulator_host,
    )  # fmt: skip
    pipeline.manage("cdc_stream", "start", "orders")
    stream = Stream.objects.get(name="orders")

    def finished():
        stream.refresh_from_db()
        return stream.state == Stream.State.PAUSED and "reached end" in stream.state_reason

    _wait_for("the stream to reach its end", finished, timeout=300)
    return stream


@pytest.fixture(scope="module")
def worker_run(pipeline, landed):  # noqa: F811
    """Run a report of the whole stream on the pipeline's worker; return it and the states seen."""
    report = Report.objects.create(
        stream=landed, since=landed.start_at - timedelta(minutes=1),
        until=landed.end_at + timedelta(minutes=1), requested_by="test",
    )  # fmt: skip
    code = f"from cdcweb.reports.tasks import run_report_task; run_report_task.delay({report.pk})"
    pipeline.manage("shell", "-c", code)
    seen = []

    def finished() -> bool:
        report.refresh_from_db()
        seen.append((report.status, report.progress_done, report.progress_total))
        return report.finished

    _wait_for(
        "the report to finish", finished, timeout=900, every=0.1,
        detail=lambda: f"report {report.status}; the worker's log:\n{pipeline.log_text('w1')[-3000:]}",
    )  # fmt: skip
    # The pipeline's beat and worker would only compete with the next Spark runs.
    pipeline.stop_all()
    return report, seen


def expected_totals(landing_uri: str, stream) -> dict:
    """Return the landing zone's deduplicated totals, computed with pyarrow."""
    table = landing.read_landing(landing_uri, stream.pk)
    unique = table.group_by(list(DEDUPE_KEY)).aggregate([("mod_bytes", "max")])
    records = unique.group_by(list(DEDUPE_KEY[:4])).aggregate([])
    return {
        "landed_mods": table.num_rows,
        "mods": unique.num_rows,
        "records": records.num_rows,
        "bytes": pc.sum(unique["mod_bytes_max"]).as_py(),
        "transactions": len(pc.unique(table["server_transaction_id"])),
    }


def test_worker_report_totals_equal_the_landing_zones_deduplicated_counts(pipeline, landed, worker_run):  # noqa: F811
    report, seen = worker_run
    # then the report is done, and was seen running with progress
    assert report.status == S.DONE, report.error
    assert any(status == S.RUNNING and total > 0 for status, _, total in seen)
    assert report.progress_done == report.progress_total > 2
    assert report.worker.startswith("rep@")
    # and its totals are the landing zone's, deduplicated
    expected = expected_totals(str(pipeline.landing), landed)
    assert expected["mods"] > 100
    totals = report.summary["totals"]
    assert {k: totals[k] for k in expected} == expected
    assert sum(r["mods"] for r in report.results["throughput"]) == expected["mods"]
    assert sum(r["records"] for r in report.results["latency_by_minute"]) == expected["records"]


def test_worker_report_has_churn_from_the_lineage_and_a_priced_cost(worker_run):
    report, _ = worker_run
    assert report.results["partition_lifetimes"]
    assert sum(r["splits"] + r["merges"] for r in report.results["churn_by_hour"]) > 0
    assert report.results["cost"]
    assert {"storage_usd_per_gib_month", "node_hour_usd", "retention_days"} <= {
        a["name"] for a in report.assumptions
    }
    notes = {a["name"]: a["note"] for a in report.assumptions}
    assert (
        notes["storage_usd_per_gib_month"]
        == notes["dataflow_vcpu_hour_usd"]
        == "list price, verify for your contract"
    )
    assert notes["reader_queries_per_day"] == "measured"


def apply_report(stream, since, until, kind=Report.Kind.ALL) -> Report:
    """Run a new report in this process through the task, as a worker would; return it finished."""
    report = Report.objects.create(stream=stream, since=since, until=until, requested_by="test", kind=kind)
    run_report_task.apply(args=[report.pk])
    report.refresh_from_db()
    return report


def test_a_missing_input_path_fails_with_a_readable_reason(landed, settings, tmp_path):
    # given a landing zone that does not exist
    for name, value in SPARK_ENV.items():
        setattr(settings, name, value)
    settings.CDC_LANDING_URI = str(tmp_path / "nowhere")
    settings.CDC_REPORTS_DIR = tmp_path / "reports"
    # when a report runs
    report = apply_report(landed, landed.start_at, landed.end_at)
    # then it failed, saying why in one line without a stack trace
    assert report.status == S.FAILED
    assert report.error == f"input path {tmp_path / 'nowhere'} does not exist"
    assert report.finished_at is not None


def test_a_range_without_data_is_a_done_empty_report(pipeline, landed, settings, tmp_path):  # noqa: F811
    # given a day a week before the stream's data
    for name, value in SPARK_ENV.items():
        setattr(settings, name, value)
    settings.CDC_LANDING_URI = str(pipeline.landing)
    settings.CDC_REPORTS_DIR = tmp_path / "reports"
    since = landed.start_at - timedelta(days=7)
    # when its throughput report runs (all reports take a minute on a loaded 2-core machine)
    report = apply_report(landed, since, since + timedelta(days=1), kind=Report.Kind.THROUGHPUT)
    # then it is done, empty, and its tables are there with no rows
    assert report.status == S.DONE, report.error
    assert report.summary["empty"] is True
    assert report.summary["totals"]["mods"] == 0
    assert set(report.results) == {"throughput", "busiest_partitions"}
    assert all(rows == [] for rows in report.results.values())


@pytest.fixture
def spark_cluster(tmp_path):
    """Yield the URL of a Spark standalone cluster: a master and a worker from pyspark's spark-class."""
    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    ports = [_free_port() for _ in range(3)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(tmp_path)}
    logs = {name: tmp_path / f"{name}.log" for name in ("master", "worker")}
    procs = [
        subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(ports[0]), "--webui-port", str(ports[1])],
            env=env, stdout=open(logs["master"], "w"), stderr=subprocess.STDOUT, start_new_session=True,  # noqa: SIM115
        ),
        subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{ports[0]}",
             "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(ports[2]),
             "--work-dir", str(tmp_path / "work")],
            env=env, stdout=open(logs["worker"], "w"), stderr=subprocess.STDOUT, start_new_session=True,  # noqa: SIM115
        ),
    ]  # fmt: skip
    try:
        _wait_for("the worker to register", lambda: "Registering worker" in logs["master"].read_text(), 120)
        yield f"spark://127.0.0.1:{ports[0]}", logs
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_report_runs_on_a_spark_standalone_cluster(
    pipeline,  # noqa: F811
    landed,
    worker_run,
    spark_cluster,
    settings,
    tmp_path,
):
    # given a standalone cluster (master and worker from pyspark's own spark-class)
    url, logs = spark_cluster
    settings.SPARK_MASTER, settings.CDC_SPARK_DRIVER_MEMORY = url, "512m"
    settings.CDC_LANDING_URI = str(pipeline.landing)
    settings.CDC_REPORTS_DIR = tmp_path / "reports"
    # when a report of the landed stream runs there
    report = apply_report(
        landed, landed.start_at - timedelta(minutes=1), landed.end_at + timedelta(minutes=1)
    )
    # then it is done with the landing zone's totals, and its executor ran on the cluster's worker
    assert report.status == S.DONE, report.error
    expected = expected_totals(str(pipeline.landing), landed)
    assert {k: report.summary["totals"][k] for k in expected} == expected
    assert (
        "Launching executor" in logs["worker"].read_text() or "launch executor" in logs["worker"].read_text()
    )


def test_a_renamed_stream_keeps_its_data_and_a_new_one_of_its_old_name_sees_none(
    pipeline,  # noqa: F811
    landed,
    worker_run,
    settings,
    tmp_path,
):
    # given the landed stream, stopped at its end, renamed; and a new stream given its old name
    for name, value in SPARK_ENV.items():
        setattr(settings, name, value)
    settings.CDC_LANDING_URI = str(pipeline.landing)
    settings.CDC_REPORTS_DIR = tmp_path / "reports"
    expected = expected_totals(str(pipeline.landing), landed)
    landed.refresh_from_db()
    landed.name = "orders-archive"
    landed.save()
    newcomer = Stream.objects.create(name="orders", start_at=landed.start_at, connection=landed.connection)
    since, until = landed.start_at - timedelta(minutes=1), landed.end_at + timedelta(minutes=1)
    # when each is reported on (throughput only: two Spark runs on a loaded 2-core machine)
    renamed = apply_report(landed, since, until, kind=Report.Kind.THROUGHPUT)
    fresh = apply_report(newcomer, since, until, kind=Report.Kind.THROUGHPUT)
    # then the renamed stream reports all it landed, under its new name, and the new one nothing
    assert renamed.status == fresh.status == S.DONE, (renamed.error, fresh.error)
    assert {k: renamed.summary["totals"][k] for k in expected} == expected
    assert {r["stream_name"] for r in renamed.results["throughput"]} == {"orders-archive"}
    assert fresh.summary["empty"] is True
    # and deleting the renamed stream needs a word on its data: kept, the files stay, read by none
    with pytest.raises(deletion.DeletionRefused, match="data=keep"):
        deletion.delete_stream(landed, "", by="test")
    deletion.delete_stream(landed, "keep", by="test")
    assert not Stream.objects.filter(pk=landed.pk).exists()
    assert landing.read_landing(str(pipeline.landing), landed.pk).num_rows == expected["landed_mods"]
    assert landing.read_landing(str(pipeline.landing), newcomer.pk).num_rows == 0
