"""Production defaults: no web server on the development key, `check --deploy` clean, HTTPS switches."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from django.conf import settings

from cdcweb import demo
from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures

PRODUCTION = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "k" * 10 + "-a-long-random-production-key-0123456789-abcdefghijklmnop",
    "DJANGO_ALLOWED_HOSTS": "cdc.example.com",
    "CDC_BEHIND_TLS_PROXY": "true",
}


def run(code_or_args, tmp_path, **env: str) -> subprocess.CompletedProcess:
    """Run python (-c code, or manage.py args) in a fresh process with only this environment for cdcweb."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CDC_", "DJANGO_", "DATABASE_URL"))}
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else ["manage.py", *code_or_args]
    return subprocess.run(
        [sys.executable, *args],
        env={
            **base,
            "CDC_VAR_DIR": str(tmp_path),
            "DJANGO_SETTINGS_MODULE": "cdcweb.settings",
            # A database to open, with no server to start (the embedded one has tests of its own).
            "DATABASE_URL": f"sqlite:///{tmp_path / 'cdcweb.sqlite3'}",
            **env,
        },  # fmt: skip
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


LOAD_WSGI = "import cdcweb.wsgi"


def test_the_web_server_refuses_the_development_key_naming_the_variable(tmp_path):
    refused = run(LOAD_WSGI, tmp_path, DJANGO_DEBUG="false")
    assert refused.returncode != 0
    assert "ImproperlyConfigured" in refused.stderr
    assert "DJANGO_SECRET_KEY is not set" in refused.stderr


@pytest.mark.parametrize(
    "env",
    [{"DJANGO_DEBUG": "true"}, {"DJANGO_SECRET_KEY": "x" * 60}],
    ids=["debug", "a key of its own"],
)
def test_the_web_server_starts_in_debug_or_with_a_key(tmp_path, env):
    assert run(LOAD_WSGI, tmp_path, **env).returncode == 0


def test_the_web_process_keeps_its_start_up_objects_out_of_full_collections(tmp_path):
    # given the web process as gunicorn loads it
    counts = "gc.get_freeze_count(), len(gc.get_objects()), 'knox.views' in sys.modules"
    probe = f"{LOAD_WSGI}; import gc, sys; print({counts})"
    done = run(probe, tmp_path, DJANGO_SECRET_KEY="x" * 60)
    frozen, tracked, views_loaded = done.stdout.split()
    # then the views are imported before the freeze, and a full pass walks almost nothing of it
    assert views_loaded == "True"
    assert int(frozen) > 50_000
    assert int(tracked) < int(frozen) // 10


def test_management_commands_still_run_on_a_fresh_machine_without_a_key(tmp_path):
    done = run(["migrate", "--no-input"], tmp_path, DJANGO_DEBUG="false")
    assert done.returncode == 0, done.stderr


def test_check_deploy_is_clean_with_production_settings(tmp_path, fresh_database):
    done = run(
        ["check", "--deploy", "--fail-level", "WARNING"], tmp_path, DATABASE_URL=fresh_database, **PRODUCTION
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_behind_a_tls_proxy_cookies_are_secure_and_hsts_is_on(tmp_path):
    probe = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SECURE_PROXY_SSL_HEADER, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS)"
    )
    done = run(probe, tmp_path, **PRODUCTION)
    assert done.stdout.split() == [
        "('HTTP_X_FORWARDED_PROTO',",
        "'https')",
        "True",
        "True",
        "True",
        "31536000",
    ]
    plain = run(probe.replace("s.SECURE_PROXY_SSL_HEADER, ", ""), tmp_path)
    assert plain.stdout.split() == ["False", "False", "False", "0"]  # the demo's http://127.0.0.1


def test_the_demo_makes_and_keeps_a_secret_key_of_its_own(tmp_path, monkeypatch):
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)
    monkeypatch.delenv("DJANGO_SECRET_KEY_FILE", raising=False)
    demo.ensure_secret_key(tmp_path)
    path = tmp_path / "secret-key"
    first = path.read_text()
    assert os.environ["DJANGO_SECRET_KEY_FILE"] == str(path)
    assert len(first) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    demo.ensure_secret_key(tmp_path)
    assert path.read_text() == first
    assert run(LOAD_WSGI, tmp_path, DJANGO_SECRET_KEY_FILE=str(path)).returncode == 0
