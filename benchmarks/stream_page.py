"""Benchmark: server time and query count of the stream page and its live parts.

Two streams in PostgreSQL, one with 1,000 and one with 10,000 partitions (lineage
of splits and merges over 30 days, built by tests/factories/lineage.py), each with 30
days of lag samples in the tiers partitions/pipeline/lag_samples.py keeps. Every page is requested
through Django's full handler (middleware, session login, templates) with the test
client; the time is the server's, without a network or a browser.

    .venv/bin/python benchmarks/stream_page.py \
        [--database-url postgres://postgres@127.0.0.1:5432/cdcweb_bench_page] [--repeat 20]

Goal: the stream page within 300 ms at 10,000 partitions, and the same query count
at 1,000 and 10,000 partitions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/cdcweb_bench_page"
SIZES = (1_000, 10_000)


def ensure_database(url: str) -> None:
    """Create the benchmark database if it does not exist yet."""
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    """Point Django at the benchmark database and migrate it."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcweb.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def stream_of(partitions: int):
    """Return the benchmark stream with this many partitions, building it on first use."""
    from streams.models import Stream
    from tests.factories.lineage import make_lineage_stream

    name = f"page-bench-{partitions}"
    stream = Stream.objects.filter(name=name).first()
    if stream is not None and stream.partitions.count() == partitions:
        return stream
    if stream is not None:
        stream.delete()
    started = time.perf_counter()
    stream = make_lineage_stream(name, partitions, lag_days=30)
    print(f"built {name}: {partitions} partitions, {stream.lag_samples.count()} lag samples "
          f"in {time.perf_counter() - started:.0f} s", file=sys.stderr)  # fmt: skip
    return stream


def measure(client, url: str, repeat: int) -> dict:
    """Return median / p95 server time (ms) and the query count of GET url."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(3):  # warm caches, connections and templates
        assert client.get(url).status_code == 200, url
    times = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, url
    times.sort()
    return {
        "median": statistics.median(times),
        "p95": times[max(0, int(len(times) * 0.95) - 1)],
        "queries": len(queries.captured_queries),
        "kb": len(response.content) / 1024,
    }


def pages(stream) -> dict[str, str]:
    """Return the URLs measured for one stream."""
    holder = stream.partitions.exclude(state="FINISHED").order_by("watermark").first()
    return {
        "stream page": f"/streams/{stream.pk}/",
        "live panel": f"/streams/{stream.pk}/panel/",
        "partition table (lag sort)": f"/streams/{stream.pk}/partitions/?sort=lag",
        "partition table (running, p3)": f"/streams/{stream.pk}/partitions/?state=RUNNING&page=3",
        "history": f"/streams/{stream.pk}/history/",
        "tree roots": f"/streams/{stream.pk}/tree/",
        "holding partition page": f"/partitions/{holder.pk}/",
    }


def _row(c: dict) -> str:
    return f"{c['median']:>13.1f} {c['p95']:>7.1f} {c['queries']:>8} {c['kb']:>5.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    ensure_database(args.database_url)
    setup_django(args.database_url)
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", password="x"
    )
    client = Client()
    client.force_login(user)
    results = {n: {name: measure(client, url, args.repeat) for name, url in pages(stream_of(n)).items()}
               for n in SIZES}  # fmt: skip
    print(f"{'page':32} " + " ".join(f"{f'{n:,} partitions':>34}" for n in SIZES))
    print(f"{'':32} " + " ".join(f"{'median ms  p95 ms  queries   KB':>34}" for _ in SIZES))
    for name in results[SIZES[0]]:
        cells = [results[n][name] for n in SIZES]
        print(f"{name:32} " + " ".join(_row(c) for c in cells))
    overview = measure(client, "/", args.repeat)
    print(f"{'overview (both streams)':32} {_row(overview)}")


if __name__ == "__main__":
    main()
