"""Shared setup of the API benchmarks: a PostgreSQL database with streams of 1,000 and 10,000 partitions.

Run from the project root; the database named by --database-url is created if
missing and filled once (pass --rebuild to start over). Streams:
  bench-1k   1,000 partitions, 30 days of lag samples
  bench-10k  10,000 partitions, 30 days of lag samples
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/cdcweb_bench"
SIZES = {"bench-1k": 1_000, "bench-10k": 10_000}


def setup_django(url: str) -> None:
    """Point Django at the benchmark database (created if missing) and load it."""
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    import django

    django.setup()


def ensure_data(rebuild: bool = False) -> dict:
    """Migrate, create the streams and an operator with a token; return {name: stream} and the token."""
    from django.apps import apps
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection
    from knox.models import AuthToken

    from streams.models import Stream
    from streams.roles import OPERATORS, ensure_roles
    from tests.factories.lineage import make_lineage_stream

    call_command("migrate", verbosity=0, interactive=False)
    ensure_roles(apps)
    if rebuild:
        Stream.objects.filter(name__in=SIZES).delete()
    streams = {}
    for name, count in SIZES.items():
        stream = Stream.objects.filter(name=name).first()
        if stream is None:
            print(f"building {name}: {count} partitions, 30 days of lag samples", flush=True)
            stream = make_lineage_stream(name, count, lag_days=30, seed=11)
        streams[name] = stream
    user, created = User.objects.get_or_create(username="bench")
    if created:
        user.groups.add(Group.objects.get(name=OPERATORS))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh statistics after the bulk load, as autovacuum would give
    # A fresh token each run: knox keeps only digests, so an old one cannot be read back.
    return {"streams": streams, "token": AuthToken.objects.create(user=user, expiry=None)[1]}
