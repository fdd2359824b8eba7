"""`make demo`: the whole of cdcweb on one machine, with nothing to install but the venv.

Run as ``python -m cdcweb.demo``. It migrates the database, creates an admin user
(its generated password is printed once, when it is created), registers four demo
streams on the simulators (the change streams of GoogleSQL demo-db and PostgreSQL
demo-pg, demo-db's ShardedEvents table watched by its commit-timestamp column over
19 shards, and the Bigtable simulator's events table, whose partitions split and merge
every minute, with chunked values and garbage collection; each starts 30 minutes in
the past so there is a backlog to catch up), starts them, registers two Datastream
streams of the Datastream simulator (watched, not read: they move through every state
in a 10-minute cycle), and then runs the Procfile under honcho: simulators, Celery
workers, beat and the web server. The
database is the embedded PostgreSQL in CDC_VAR_DIR/postgres (cdcweb/embedded_db.py),
started first; Ctrl-C stops every process, then the database.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cdcweb import embedded_db

ROOT = Path(__file__).resolve().parent.parent
SIMULATOR_PORT = 9010
BIGTABLE_PORT = 8086  # the Bigtable simulator's (and emulator's) usual port
DATASTREAM_PORT = 9011
# The Datastream simulator's two streams (Procfile: --streams 2), watched by beat once it runs.
DEMO_DATASTREAM = ("stream-000", "stream-001")
ADMIN_USER = "admin"
DEMO_STREAMS = (
    ("demo-orders", "demo-db", "googlesql"),
    ("demo-payments", "demo-pg", "postgresql"),
)
# A table watched by commit timestamp (seeds 3 and 5): the simulator's sharded table, with
# its shard column and the index on (shard, commit timestamp) the kind's advice asks for.
DEMO_TABLE_STREAM = (
    "demo-events-table",
    ["--kind", "spanner_commit_timestamp", "--database", "demo-db", "--dialect", "googlesql",
     "--table", "ShardedEvents", "--timestamp-column", "LastModified",
     "--key-columns", "TenantId,EventId", "--shard-column", "ShardId", "--shards", "0-18",
     "--index", "ShardedEventsByShardLastModified"],
)  # fmt: skip
# The Bigtable simulator's table with a change stream, read through a single-cluster app profile.
DEMO_BIGTABLE_STREAM = (
    "demo-bigtable",
    ["--kind", "bigtable", "--project", "demo-project", "--instance", "demo-instance", "--table", "events",
     "--app-profile", "default"],
)  # fmt: skip
# A heartbeat that fits a live dashboard: an idle partition proves progress every 2 s,
# and reads checkpoint as often (CDC_CHECKPOINT_SECONDS), so the lag shown is seconds.
DEMO_HEARTBEAT_MS = "2000"


def ensure_secret_key(var_dir: Path) -> None:
    """Give the demo a random secret key of its own, kept in var_dir (unless one is set).

    The web server refuses the development key (cdcweb/security.py); this one is made
    at the first run, readable by its owner only, and kept so that logins survive restarts.
    """
    if os.environ.get("DJANGO_SECRET_KEY") or os.environ.get("DJANGO_SECRET_KEY_FILE"):
        return
    path = var_dir / "secret-key"
    if not path.exists():
        var_dir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_urlsafe(50))
    os.environ["DJANGO_SECRET_KEY_FILE"] = str(path)


def prepare_environment() -> dict[str, str]:
    """Set the demo's defaults (an explicit environment wins) and return the environment."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    ensure_secret_key(Path(os.environ.get("CDC_VAR_DIR", str(ROOT / "var"))).resolve())
    os.environ.setdefault("SPANNER_EMULATOR_HOST", f"127.0.0.1:{SIMULATOR_PORT}")
    os.environ.setdefault("SPANNER_DISABLE_BUILTIN_METRICS", "true")
    os.environ.setdefault("BIGTABLE_EMULATOR_HOST", f"127.0.0.1:{BIGTABLE_PORT}")
    datastream = f"127.0.0.1:{DATASTREAM_PORT}"
    os.environ.setdefault("DATASTREAM_API_ENDPOINT", datastream)
    os.environ.setdefault("MONITORING_API_ENDPOINT", datastream)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    # The Procfile's commands (python, celery) must be the venv's.
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    return dict(os.environ)


def simulator_epoch(var_dir: Path) -> str:
    """Return the simulator's epoch, fixed at the first run so partition tokens survive restarts."""
    path = var_dir / "demo-simulator-epoch"
    if not path.exists():
        epoch = (datetime.now(UTC) - timedelta(days=1)).replace(second=0, microsecond=0)
        path.write_text(epoch.isoformat())
    return path.read_text().strip()


def ensure_admin() -> str | None:
    """Create the admin user if absent; return its new password (None if it existed)."""
    from django.contrib.auth import get_user_model

    users = get_user_model()
    if users.objects.filter(username=ADMIN_USER).exists():
        return None
    password = secrets.token_urlsafe(12)
    users.objects.create_superuser(ADMIN_USER, "admin@localhost", password)
    return password


def ensure_streams() -> list[str]:
    """Register and start the demo streams that do not exist yet; return what was done."""
    from django.core.management import call_command

    from streams.models import Stream

    spanner = [
        "--project",
        "demo",
        "--instance",
        "demo",
        "--emulator-host",
        os.environ["SPANNER_EMULATOR_HOST"],
    ]
    wanted = [
        (name, [*spanner, "--database", database, "--change-stream", "Changes", "--dialect", dialect])
        for name, database, dialect in DEMO_STREAMS
    ]
    wanted.append((DEMO_TABLE_STREAM[0], [*spanner, *DEMO_TABLE_STREAM[1]]))
    wanted.append(DEMO_BIGTABLE_STREAM)  # its endpoint: BIGTABLE_EMULATOR_HOST, the client's own
    done = []
    for name, source in wanted:
        if not Stream.objects.filter(name=name).exists():
            call_command(
                "cdc_stream", "create", name, *source, "--start=-30m",
                "--heartbeat-ms", DEMO_HEARTBEAT_MS,
            )  # fmt: skip
            done.append(f"created {name}")
        if Stream.objects.get(name=name).state == Stream.State.NOT_STARTED:
            call_command("cdc_stream", "start", name)
            done.append(f"started {name}")
    return done


def ensure_datastream_streams() -> list[str]:
    """Register the Datastream simulator's two streams to watch, once; beat fills in the rest."""
    from django.core.management import call_command

    from streams.models import Stream

    done = []
    for stream_id in DEMO_DATASTREAM:
        name = f"demo-datastream-{stream_id.rsplit('-', 1)[-1]}"
        if not Stream.objects.filter(name=name).exists():
            call_command(
                "cdc_stream", "create", name, "--kind", "datastream", "--project", "demo-project",
                "--location", "us-central1", "--stream-id", stream_id,
            )  # fmt: skip
            done.append(f"created {name}")
    return done


# A few example rules, so a new user sees what alerts look like (no channel: they show on
# /alerts/ only; add a webhook, Slack or email channel to send them).
DEMO_RULES = (
    {"name": "demo: lag above 1 min", "kind": "lag_above", "threshold_seconds": 60, "for_minutes": 2},
    {"name": "demo: lag growing", "kind": "lag_growing"},
    {"name": "demo: partition stalled", "kind": "partition_stalled"},
    {"name": "demo: stream failed", "kind": "stream_failed", "for_minutes": 1},
    {"name": "demo: near the end of retention", "kind": "retention", "retention_hours": 6},
)


def ensure_alert_rules() -> list[str]:
    """Create the example alert rules (every stream) that do not exist yet; return what was done."""
    from cdcweb.alerts.models import AlertRule

    done = []
    for fields in DEMO_RULES:
        _, created = AlertRule.objects.get_or_create(
            name=fields["name"], defaults={**fields, "created_by": "demo"}
        )
        if created:
            done.append(f"created alert rule {fields['name']!r}")
    return done


def banner(password: str | None, readers: int = 1) -> str:
    """Return what to tell the user: where to go and how to log in."""
    secret = (
        f"password: {password}   (shown once: note it now)"
        if password
        else "password: the one printed when the demo first ran (reset: manage.py changepassword admin)"
    )
    return (
        "\n  cdcweb demo\n"
        "  admin:     http://127.0.0.1:8000/admin/\n"
        f"  user:      {ADMIN_USER}\n  {secret}\n"
        f"  simulator: {os.environ['SPANNER_EMULATOR_HOST']} (databases demo-db, demo-pg)\n"
        f"  bigtable:  {os.environ['BIGTABLE_EMULATOR_HOST']} (table events)\n"
        f"  datastream: {os.environ['DATASTREAM_API_ENDPOINT']} (streams {', '.join(DEMO_DATASTREAM)})\n"
        f"  readers:   {readers} process{'es' if readers > 1 else ''} (CDC_READERS)\n"
        "  stop:      Ctrl-C\n"
    )


def main() -> None:
    """Start the embedded database, prepare it and the streams, run the Procfile, stop the database."""
    os.chdir(ROOT)
    env = prepare_environment()
    readers = reader_processes(env)  # a bad CDC_READERS stops the demo before anything starts
    var_dir = embedded_db.default_var_dir()
    if embedded_db.is_default():
        embedded_db.ensure_running(var_dir)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--no-input", verbosity=0)
    env["CDC_DEMO_EPOCH"] = simulator_epoch(var_dir)
    env["CDC_DEMO_PORT"] = str(SIMULATOR_PORT)
    env["CDC_DEMO_BIGTABLE_PORT"] = env["BIGTABLE_EMULATOR_HOST"].rsplit(":", 1)[1]
    password = ensure_admin()
    for line in [*ensure_streams(), *ensure_datastream_streams(), *ensure_alert_rules()]:
        print(f"  {line}")
    print(banner(password, readers), flush=True)
    sys.exit(run_procfile(env, var_dir, readers))


def reader_processes(environ=os.environ) -> int:
    """Return how many reader processes to run: CDC_READERS, or one per core this process may use.

    A reader's live reads share one event loop, which runs on one core: on 2 cores, one
    process fell minutes behind at 2,000 live partitions and two held them within seconds
    (docs/benchmarks.md, issue 22). The processes share the partitions out by lease.
    """
    value = environ.get("CDC_READERS", "").strip()
    if not value:
        return max(1, len(os.sched_getaffinity(0)))
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(f"CDC_READERS must be a whole number of processes, at least 1 (it is {value!r})")
    return int(value)


def honcho_command(honcho: str, readers: int) -> list[str]:
    """Return the command that runs the Procfile, its reader line `readers` times (reader.1, ...)."""
    return [honcho, "start", "-f", str(ROOT / "Procfile"), "-d", str(ROOT), "-c", f"reader={readers}"]


def run_procfile(env: dict[str, str], var_dir: Path, readers: int) -> int:
    """Run every process of the Procfile under honcho until Ctrl-C, then stop the embedded database."""
    command = honcho_command(str(Path(sys.executable).with_name("honcho")), readers)
    # Ctrl-C reaches honcho too (same terminal), which stops every child; we wait for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.call(command, env=env)
    finally:
        if embedded_db.is_default():
            embedded_db.stop(var_dir)
            print(f"  stopped the embedded database ({embedded_db.data_dir(var_dir)})", flush=True)


if __name__ == "__main__":
    main()
