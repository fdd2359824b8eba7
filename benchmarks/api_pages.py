"""Server time and query count of the heavy API endpoints at 1,000 and 10,000 partitions (PostgreSQL).

    .venv/bin/python benchmarks/api_pages.py [--database-url URL] [--runs 15] [--rebuild]

Each endpoint is called in-process through Django's test client with an
operator's token (the full stack: middleware, auth, permissions, DRF, JSON), first
once under CaptureQueriesContext to count queries, then --runs times to time it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from api_bench_db import DEFAULT_URL, ensure_data, setup_django

ENDPOINTS = (
    ("lineage", "/api/v1/streams/{id}/lineage/"),
    ("lineage, last day", "/api/v1/streams/{id}/lineage/?since=-1d"),
    ("partitions page", "/api/v1/streams/{id}/partitions/"),
    ("partitions by -lag", "/api/v1/streams/{id}/partitions/?ordering=-lag&page_size=100"),
    ("partitions RUNNING", "/api/v1/streams/{id}/partitions/?state=RUNNING"),
    ("stream detail", "/api/v1/streams/{id}/"),
    ("streams list", "/api/v1/streams/"),
    ("lag, 30 days", "/api/v1/streams/{id}/lag/"),
    ("lag, 6 hours", "/api/v1/streams/{id}/lag/?since=-6h"),
)


def measure(client, url: str, runs: int, headers: dict) -> tuple[float, float, int, int]:
    """Return (median ms, max ms, queries, response bytes) of GET url."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, **headers)
    count = len(queries)  # now: later requests reset the log the context slices
    assert response.status_code == 200, (url, response.status_code)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        client.get(url, **headers)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times), count, len(response.content)


def main() -> None:
    """Build the data if needed, then print one row per endpoint and stream size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    setup_django(args.database_url)
    from django.test import Client

    data = ensure_data(args.rebuild)
    headers = {"HTTP_AUTHORIZATION": f"Token {data['token']}"}
    client = Client()
    print(f"{'endpoint':<22} {'stream':<10} {'median ms':>10} {'max ms':>8} {'queries':>8} {'bytes':>10}")
    for label, template in ENDPOINTS:
        for name, stream in data["streams"].items():
            median, worst, queries, size = measure(client, template.format(id=stream.pk), args.runs, headers)
            print(f"{label:<22} {name:<10} {median:>10.1f} {worst:>8.1f} {queries:>8} {size:>10}", flush=True)


if __name__ == "__main__":
    main()
