"""Settings come from the environment alone; the defaults run the embedded setup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from cdcweb import embedded_db

PROBE = """
import json
from cdcweb import celery_app
from django.conf import settings
db = settings.DATABASES["default"]
conf = celery_app.conf
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "options": db.get("OPTIONS", {}), "host": db["HOST"],
    "broker": conf.broker_url, "transport": conf.broker_transport_options,
    "landing": settings.CDC_LANDING_URI, "beat_scheduler": conf.beat_scheduler,
    "beat": {k: v["task"] for k, v in conf.beat_schedule.items()},
    "acks_late": conf.task_acks_late, "prefetch": conf.worker_prefetch_multiplier,
    "ignore_result": conf.task_ignore_result, "lease": settings.CDC_LEASE_SECONDS,
}))
"""


def probe(**env: str) -> dict:
    """Return the settings a fresh process builds from exactly this environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CDC_", "DATABASE_URL", "CELERY_"))}
    base["DJANGO_SETTINGS_MODULE"] = "cdcweb.settings"
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + PROBE],
        env={**base, **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def test_defaults_put_everything_in_the_var_dir(tmp_path):
    var = tmp_path / "fresh" / "var"
    conf = probe(CDC_VAR_DIR=str(var))
    assert var.is_dir()
    assert (conf["engine"], conf["name"]) == ("django.db.backends.postgresql", "cdcweb")
    assert conf["host"] == str(embedded_db.socket_dir(var))  # var/run (as root: where nobody reaches)
    if os.geteuid() != 0:
        assert conf["host"] == str(var / "run")
    assert conf["broker"] == "filesystem://"
    assert (
        conf["transport"]["data_folder_in"]
        == conf["transport"]["data_folder_out"]
        == str(var / "broker/queue")
    )
    assert Path(conf["transport"]["data_folder_in"]).is_dir()
    assert conf["transport"]["polling_interval"] == 0.05
    assert conf["landing"] == str(var / "landing")
    assert conf["beat_scheduler"] == "cdcweb.beat:Scheduler"  # in the database, no shelve file
    assert (conf["acks_late"], conf["prefetch"], conf["ignore_result"]) == (True, 1, True)


def test_beat_schedule_names_the_pipeline_tasks(tmp_path):
    beat = probe(CDC_VAR_DIR=str(tmp_path))["beat"]
    tasks = {name.rsplit(".", 1)[-1] for name in beat.values()}
    assert tasks == {
        "schedule_partitions_task",
        "retry_failed_streams_task",
        "sample_lag_task",
        "detect_stalls_task",
        "cleanup_lag_samples_task",
        "schedule_daily_reports_task",
        "evaluate_alerts_task",
        "purge_old_data_task",
        "sweep_streams_task",
        "sweep_reports_task",
        "poll_watched_streams_task",
    }


def test_production_urls_switch_database_and_broker(tmp_path):
    conf = probe(
        CDC_VAR_DIR=str(tmp_path),
        DATABASE_URL="postgres://cdc:secret@db.example:5432/cdcweb",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        CDC_LANDING_URI="gs://bucket/landing",
        CDC_LEASE_SECONDS="90",
    )
    assert (conf["engine"], conf["name"]) == ("django.db.backends.postgresql", "cdcweb")
    assert conf["broker"] == "redis://127.0.0.1:6379/0"
    assert conf["transport"] == {}
    assert (conf["landing"], conf["lease"]) == ("gs://bucket/landing", 90)


def test_a_sqlite_url_gets_sqlite_tuned_for_concurrent_workers(tmp_path):
    conf = probe(CDC_VAR_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path / 'cdc.sqlite3'}")
    assert (conf["engine"], conf["name"]) == ("django.db.backends.sqlite3", str(tmp_path / "cdc.sqlite3"))
    assert "journal_mode=WAL" in conf["options"]["init_command"]
    assert (conf["options"]["transaction_mode"], conf["options"]["timeout"]) == ("IMMEDIATE", 30)
