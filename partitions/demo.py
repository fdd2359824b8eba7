"""`make demo`: the whole of cdcweb on one machine, with nothing to install but the venv.

Run as ``python -m partitions.demo``. It migrates the database, creates an admin user
(its generated password is printed once, when it is created), registers two demo
streams on the simulator (GoogleSQL demo-db and PostgreSQL demo-pg, each starting 30
minutes in the past so there is a backlog to catch up), starts them, and then hands
over to honcho, which runs the Procfile: simulator, Celery worker, beat and the web
server. Ctrl-C stops all of them.
"""

from __future__ import annotations

import os
import secrets
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIMULATOR_PORT = 9010
ADMIN_USER = "admin"
DEMO_STREAMS = (
    ("demo-orders", "demo-db", "googlesql"),
    ("demo-payments", "demo-pg", "postgresql"),
)


def prepare_environment() -> dict[str, str]:
    """Set the demo's defaults (an explicit environment wins) and return the environment."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    os.environ.setdefault("SPANNER_EMULATOR_HOST", f"127.0.0.1:{SIMULATOR_PORT}")
    os.environ.setdefault("SPANNER_DISABLE_BUILTIN_METRICS", "true")
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

    done = []
    for name, database, dialect in DEMO_STREAMS:
        if not Stream.objects.filter(name=name).exists():
            call_command(
                "cdc_stream", "create", name, "--project", "demo", "--instance", "demo",
                "--database", database, "--change-stream", "Changes", "--dialect", dialect,
                "--start=-30m", "--emulator-host", os.environ["SPANNER_EMULATOR_HOST"],
            )  # fmt: skip
            done.append(f"created {name}")
        if Stream.objects.get(name=name).state == Stream.State.NOT_STARTED:
            call_command("cdc_stream", "start", name)
            done.append(f"started {name}")
    return done


def banner(password: str | None) -> str:
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
        "  stop:      Ctrl-C\n"
    )


def main() -> None:
    """Prepare the database and streams, then run every process of the Procfile."""
    os.chdir(ROOT)
    env = prepare_environment()
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", "--no-input", verbosity=0)
    env["CDC_DEMO_EPOCH"] = simulator_epoch(Path(settings.VAR_DIR))
    env["CDC_DEMO_PORT"] = str(SIMULATOR_PORT)
    password = ensure_admin()
    for line in ensure_streams():
        print(f"  {line}")
    print(banner(password), flush=True)
    honcho = str(Path(sys.executable).with_name("honcho"))
    # exec: honcho becomes this process, so Ctrl-C reaches it and it stops every child.
    os.execve(honcho, [honcho, "start", "-f", str(ROOT / "Procfile"), "-d", str(ROOT)], env)


if __name__ == "__main__":
    main()
