"""Report services without Spark: command, progress parsing, errors, results, scheduling, recovery."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta

import pytest

from cdcweb.reports import command
from cdcweb.reports import services as report_services
from cdcweb.reports.assumptions import label, reader_assumptions
from cdcweb.reports.models import Report
from cdcweb.reports.output import parse_line, readable_error
from cdcweb.reports.tasks import fail_reports_of_previous_run, run_report_task
from partitions.models import Partition, PartitionEdge
from streams.models import Stream
from tests.factories import make_stream

S = Report.Status
SPARK_FAILURE = """\
Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties
26/11/22 00:00:01 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform
Traceback (most recent call last):
  File "/work/main/spark_tasks/main.py", line 97, in <module>
    sys.exit(main())
  File "/work/main/.venv/lib/python3.11/site-packages/py4j/protocol.py", line 326, in get_return_value
    raise Py4JJavaError(
py4j.protocol.Py4JJavaError: An error occurred while calling o51.collectToPython.
: java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)
\tat org.apache.spark.sql.execution.SparkPlan.executeCollect(SparkPlan.scala:430)
\t... 42 more
"""
# A stand-in for spark-submit: prints the job's protocol and writes its files.
FAKE_JOB = """
import json, sys, time
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--output") + 1])
for i in range(1, 4):
    print(f"PROGRESS {i}/3 {i * 0.1:.1f} step{i}", flush=True)
    time.sleep(0.05)  # a fake job's pace between progress lines: not a wait for a state
print("26/11/22 00:00:01 WARN SomeSparkChatter: ignore me", flush=True)
(out / "throughput.json").write_text(json.dumps({"name": "throughput", "columns": ["table_name", "mods"],
    "rows": [["Orders", 5], ["Items", 2]]}))
table = {"report": "throughput", "file": "throughput.json", "rows": 2}
assumed = [{"name": "nodes", "value": 1, "unit": "nodes", "source": "yours"}]
summary = {"totals": {"mods": 7}, "tables": {"throughput": table}, "assumptions": assumed, "empty": False}
(out / "summary.json").write_text(json.dumps(summary))
print(f"DONE {out / 'summary.json'}", flush=True)
"""


@pytest.fixture
def fake_spark(monkeypatch, tmp_path, settings):
    """Replace spark-submit by a Python script; return a setter of the script's text."""
    settings.CDC_REPORTS_DIR = tmp_path / "reports"
    script = tmp_path / "job.py"

    def use(text: str) -> None:
        script.write_text(text)
        monkeypatch.setattr(
            report_services,
            "build_command",
            lambda r, out, lin: [sys.executable, str(script), "--output", str(out)],
        )

    return use


def test_stdout_lines_become_progress_done_and_error_events():
    assert parse_line("PROGRESS 3/11 12.5 latency_by_minute\n").__dict__ == {
        "kind": "progress", "done": 3, "total": 11, "step": "latency_by_minute", "text": ""
    }  # fmt: skip
    assert parse_line("DONE /tmp/r/summary.json").text == "/tmp/r/summary.json"
    assert parse_line("ERROR input path /x does not exist").text == "input path /x does not exist"
    assert parse_line("26/11/22 00:00:01 WARN Utils: whatever") is None


def test_spark_errors_lose_their_stack_traces_and_py4j_noise():
    reason = readable_error(SPARK_FAILURE.splitlines(), 1)
    assert reason == "java.lang.OutOfMemoryError: Java heap space"
    assert readable_error([], 137) == "spark-submit exited with status 137"


def test_command_runs_main_with_the_range_the_master_and_the_price_model(new_stream, settings, tmp_path):
    settings.SPARK_MASTER, settings.CDC_SPARK_DRIVER_MEMORY = "spark://h:7077", "2g"
    settings.CDC_PRICE_MODEL = {"nodes": 3.0, "node_hour_usd": "", "edition": "enterprise"}
    report = Report(
        stream=new_stream, since=datetime(2026, 11, 20, tzinfo=UTC), until=datetime(2026, 11, 21, tzinfo=UTC)
    )
    argv = command.build_command(report, tmp_path / "out", tmp_path / "lineage.json")
    joined = " ".join(argv)
    assert argv[0].endswith("spark-submit")
    assert "--master spark://h:7077 --driver-memory 2g" in joined
    assert argv.index("--driver-memory") < argv.index(str(command.MAIN))  # JVM options before the script
    assert "--since 2026-11-20T00:00:00Z --until 2026-11-21T00:00:00Z" in joined
    assert "--nodes 3.0" in joined
    assert "--edition enterprise" in joined
    assert "--node-hour-usd" not in joined  # the kind's is the edition's list price
    assert "--retention-days 1.0" in joined  # the stream's retention_hours, 24
    assert "--cpu-share-read-high 0.1" in joined  # Spanner: an assumption of 0-10 %
    assert "--work-dir" not in argv  # the job's default: <output>/_work
    env = command.spark_env()
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert env["MALLOC_ARENA_MAX"] == "2"  # spark_tasks.submit.SUBMIT_ENV


def test_the_jobs_class_archive_lives_in_the_var_dir(settings, tmp_path):
    # given an installation whose state is in its own var directory
    settings.VAR_DIR = tmp_path
    # when a job's driver options are built, then its JVM writes (or maps) the archive there
    java_options = command.driver_options()[-1]
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'cds'}/spark-" in java_options


def test_the_job_sees_no_secrets_of_ours_only_what_spark_needs(monkeypatch, settings):
    # given a worker whose environment holds secrets beside Spark's and Java's variables
    secrets = {
        "DJANGO_SECRET_KEY": "k",
        "DATABASE_URL": "postgres://u:pw@db/x",
        "CDC_METRICS_TOKEN": "t",
        "CELERY_BROKER_URL": "redis://:pw@r/0",
        "AWS_SECRET_ACCESS_KEY": "a",
        "DJANGO_SECRET_KEY_FILE": "/f",
    }
    needed = {"JAVA_HOME": "/usr/lib/jvm/java", "SPARK_CONF_DIR": "/etc/spark",
              "HADOOP_CONF_DIR": "/etc/hadoop", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin"}  # fmt: skip
    for name, value in {**secrets, **needed}.items():
        monkeypatch.setenv(name, value)
    # when the job's environment is built, then it has the latter and none of the former
    env = command.spark_env()
    assert needed.items() <= env.items()
    assert not set(secrets) & set(env)
    # and a deployment can pass a name on purpose
    settings.CDC_SPARK_ENV_PASSTHROUGH = frozenset({"AWS_SECRET_ACCESS_KEY"})
    assert command.spark_env()["AWS_SECRET_ACCESS_KEY"] == "a"


def test_a_cluster_work_uri_gives_each_report_its_own_work_directory(new_stream, settings, tmp_path):
    settings.CDC_SPARK_WORK_URI = "hdfs://nn:8020/cdcweb/work/"
    report = Report(pk=42, stream=new_stream, since=datetime(2026, 11, 20, tzinfo=UTC),
                    until=datetime(2026, 11, 21, tzinfo=UTC))  # fmt: skip
    argv = command.build_command(report, tmp_path / "out", tmp_path / "lineage.json")
    assert argv[argv.index("--work-dir") + 1] == "hdfs://nn:8020/cdcweb/work/report-42"


def test_lineage_export_lists_partitions_in_range_with_their_parents(new_stream, tmp_path):
    t0 = datetime(2026, 11, 20, 10, tzinfo=UTC)
    old = Partition.objects.create(stream=new_stream, token="old", start_at=t0 - timedelta(days=3),
                                   end_at=t0 - timedelta(days=2), watermark=t0)  # fmt: skip
    root = Partition.objects.create(stream=new_stream, token="root", start_at=t0,
                                    end_at=t0 + timedelta(minutes=1), watermark=t0)  # fmt: skip
    child = Partition.objects.create(
        stream=new_stream, token="child", start_at=t0 + timedelta(minutes=1), watermark=t0
    )
    PartitionEdge.objects.create(stream=new_stream, parent=root, child=child)
    path = command.export_lineage(
        new_stream, t0 - timedelta(hours=1), t0 + timedelta(hours=1), tmp_path / "l.json"
    )
    rows = {r["token"]: r for r in json.loads(path.read_text())["partitions"]}
    assert set(rows) == {"root", "child"}, old
    assert rows["child"]["parents"] == ["root"]
    assert rows["root"]["end_at"] == "2026-11-20T10:01:00Z"
    assert rows["child"]["end_at"] is None


def test_a_job_streams_progress_and_its_tables_are_stored(fake_spark, running_report):
    fake_spark(FAKE_JOB)
    Report.objects.filter(pk=running_report.pk).update(status=S.QUEUED, progress_done=0, progress_total=0)
    run_report_task.apply(args=[running_report.pk])
    report = Report.objects.get(pk=running_report.pk)
    assert (report.status, report.progress_done, report.progress_total, report.step) == (S.DONE, 3, 3, "done")
    assert report.results == {
        "throughput": [{"table_name": "Orders", "mods": 5}, {"table_name": "Items", "mods": 2}]
    }
    assert report.assumptions[0]["note"] == "list price, verify for your contract"
    extra = {a["name"]: a for a in report.assumptions}
    assert extra["dataflow_vcpu_hour_usd"]["value"] == 0.069
    assert extra["reader_queries_per_day"]["value"] == 0  # no partitions in this test
    assert report.summary["tables"]["throughput"]["columns"] == ["table_name", "mods"]


def test_a_failed_job_keeps_the_meaningful_lines_only(fake_spark, running_report):
    fake_spark(f"import sys\nprint({SPARK_FAILURE!r})\nsys.exit(1)\n")
    Report.objects.filter(pk=running_report.pk).update(status=S.QUEUED)
    run_report_task.apply(args=[running_report.pk])
    report = Report.objects.get(pk=running_report.pk)
    assert report.status == S.FAILED
    assert report.error == "java.lang.OutOfMemoryError: Java heap space"
    assert report.finished_at is not None


def test_a_job_past_its_timeout_is_killed_and_fails(fake_spark, running_report, settings):
    settings.CDC_REPORT_TIMEOUT_SECONDS = 1
    # a fake job that must run past the 1 s timeout: its sleep waits for no state
    fake_spark("import time\nprint('PROGRESS 1/5 0.1 input', flush=True)\ntime.sleep(60)\n")
    Report.objects.filter(pk=running_report.pk).update(status=S.QUEUED)
    run_report_task.apply(args=[running_report.pk])
    report = Report.objects.get(pk=running_report.pk)
    assert report.status == S.FAILED
    assert "ran longer than 1 s" in report.error


def test_a_second_delivery_does_nothing_and_a_deleted_report_is_skipped(running_report):
    # given a report another delivery is already running
    assert run_report_task.apply(args=[running_report.pk]).get() == S.RUNNING
    assert Report.objects.get(pk=running_report.pk).step == "latency_by_minute"
    assert run_report_task.apply(args=[running_report.pk + 100]).get() is None


def test_a_restarted_worker_fails_the_reports_it_left_running(running_report, new_stream):
    Report.objects.filter(pk=running_report.pk).update(worker="w1@host")
    other = Report.objects.create(stream=new_stream, since=running_report.since, until=running_report.until,
                                  status=S.RUNNING, worker="w2@host", requested_by="x")  # fmt: skip
    fail_reports_of_previous_run(sender=type("Consumer", (), {"hostname": "w1@host"})())
    assert Report.objects.get(pk=running_report.pk).status == S.FAILED
    assert "start the report again" in Report.objects.get(pk=running_report.pk).error
    assert Report.objects.get(pk=other.pk).status == S.RUNNING


def test_daily_reports_cover_yesterday_once_per_stream_with_data(
    new_stream, sent, django_capture_on_commit_callbacks
):
    now = datetime(2026, 11, 22, 0, 30, tzinfo=UTC)
    idle = make_stream("idle", change_stream="I", start_at=new_stream.start_at)
    Partition.objects.create(stream=new_stream, token="t", start_at=now - timedelta(days=2),
                             watermark=now - timedelta(hours=1), data_records=10)  # fmt: skip
    Partition.objects.create(stream=idle, token="t", start_at=now - timedelta(days=2), watermark=now)
    with django_capture_on_commit_callbacks(execute=True):
        first = report_services.schedule_daily_reports(now)
        again = report_services.schedule_daily_reports(now)
    report = Report.objects.get()
    assert (first, again, sent) == ([report.pk], [], [report.pk])
    assert (report.stream, report.since, report.until) == (
        new_stream,
        datetime(2026, 11, 21, tzinfo=UTC),
        now.replace(minute=0, hour=0),
    )


def test_reader_volume_follows_the_open_partitions_and_the_window(new_stream, done_report):
    # given two partitions open over the whole day and one over half of it, 60 s windows
    since = done_report.since
    for token, hours in (("a", 24), ("b", 24), ("c", 12)):
        Partition.objects.create(stream=new_stream, token=token, start_at=since - timedelta(hours=1),
                                 end_at=since + timedelta(hours=hours), watermark=since)  # fmt: skip
    rows = {a["name"]: a["value"] for a in reader_assumptions(done_report)}
    assert rows["open_partitions"] == 2.5
    assert rows["reader_queries_per_day"] == 2.5 * 86_400 / 60
    assert rows["idle_heartbeats_per_day"] == 2.5 * 86_400 / 10


def test_a_table_read_by_commit_timestamp_counts_polls_and_keeps_nothing(new_stream, done_report):
    # given a stream of the commit-timestamp kind polled every 5 s, with 19 shards open all day
    Stream.objects.filter(pk=new_stream.pk).update(source_kind="spanner_commit_timestamp", heartbeat_ms=5000)
    done_report.stream.refresh_from_db()
    since = done_report.since
    for shard in range(19):
        Partition.objects.create(stream=new_stream, token=f"shard:{shard}", start_at=since, watermark=since)
    # then the report counts one poll per shard per interval, and no change stream queries
    rows = {a["name"]: a["value"] for a in reader_assumptions(done_report)}
    assert rows["poll_queries_per_day"] == 19 * 86_400 / 5
    assert "reader_queries_per_day" not in rows
    # and its price model retains nothing
    job_rows = [{"name": "retention_days", "value": 0.0, "unit": "days", "source": "the job's own words"}]
    (retention,) = label(job_rows, done_report.stream)
    assert "no change records are kept" in retention["source"]
