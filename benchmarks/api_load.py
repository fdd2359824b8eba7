"""The API under 50 concurrent clients on gunicorn over loopback, while a writer mimics the pipeline.

    .venv/bin/python benchmarks/api_load.py [--database-url URL] [--clients 50] [--seconds 30]
        [--workers 3] [--threads 4] [--port 8765]

Starts gunicorn (gthread workers) on 127.0.0.1, then runs --clients threads, each
a keep-alive HTTP client looping over the dashboard's polling mix for --seconds,
while one writer thread checkpoints partitions and stores lag samples as the
pipeline does. Prints requests/s, latency percentiles and errors (non-2xx or
failed connections). Bounded: loopback only, one run of --seconds.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from api_bench_db import DEFAULT_URL, ensure_data, setup_django

ROOT = Path(__file__).resolve().parent.parent
# What an open dashboard and a script poll: (weight, path template).
MIX = (
    (3, "/api/v1/streams/"),
    (3, "/api/v1/streams/{id}/"),
    (3, "/api/v1/streams/{id}/partitions/?ordering=-lag"),
    (2, "/api/v1/streams/{id}/lag/?since=-10m"),
    (1, "/api/v1/streams/{id}/lineage/?since=-10m"),
    (1, "/api/v1/streams/{id}/transitions/"),
    (1, "/api/v1/streams/{id}/errors/"),
)


def start_gunicorn(url: str, port: int, workers: int, threads: int) -> subprocess.Popen:
    """Start gunicorn serving cdcweb and wait until it answers /healthz."""
    env = {**os.environ, "DATABASE_URL": url, "DATABASE_CONN_MAX_AGE": "60"}
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    proc = subprocess.Popen(
        [gunicorn, "cdcweb.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(workers), "-k", "gthread",
         "--threads", str(threads), "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status in (200, 503):
                return proc
        except OSError:
            time.sleep(0.3)
    stop(proc)
    raise SystemExit("gunicorn did not start")


def stop(proc: subprocess.Popen) -> None:
    """Stop gunicorn and its workers."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def client_loop(port: int, paths: list[str], token: str, until: float, out: list, errors: list) -> None:
    """Request random paths of the mix on one keep-alive connection until `until`."""
    rng = random.Random()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    while time.monotonic() < until:
        path = rng.choice(paths)
        start = time.perf_counter()
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status >= 300:
                errors.append(f"{response.status} {path}")
        except (OSError, http.client.HTTPException) as error:
            errors.append(f"{type(error).__name__} {path}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        out.append(time.perf_counter() - start)
    conn.close()


def writer_loop(stream_id: int, until: float) -> None:
    """Mimic the pipeline: checkpoint a running partition every 50 ms, a lag sample every second."""
    from django.db import transaction
    from django.db.models import F
    from django.utils import timezone

    from partitions import lag
    from partitions.models import Partition
    from streams.models import Stream

    stream = Stream.objects.get(pk=stream_id)
    running = list(Partition.objects.filter(stream=stream, state="RUNNING").values_list("pk", flat=True))
    next_sample = 0.0
    while time.monotonic() < until:
        with transaction.atomic():
            Partition.objects.filter(pk=random.choice(running)).update(
                watermark=timezone.now(), data_records=F("data_records") + 50, last_progress_at=timezone.now()
            )
        if time.monotonic() >= next_sample:
            lag.sample_lag(stream)
            next_sample = time.monotonic() + 1
        time.sleep(0.05)


def report(latencies: list[float], errors: list[str], seconds: float) -> None:
    """Print throughput, latency percentiles and errors."""
    ordered = sorted(latencies)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    print(f"requests {len(ordered)} in {seconds:.1f} s = {len(ordered) / seconds:.1f} req/s")
    print(f"latency ms: median {statistics.median(ordered) * 1000:.1f}  p90 {pct(0.90):.1f}  "
          f"p99 {pct(0.99):.1f}  max {ordered[-1] * 1000:.1f}")  # fmt: skip
    print(f"errors {len(errors)}" + (f": {sorted(set(errors))[:5]}" if errors else ""))


def main() -> None:
    """Start gunicorn, run the clients and the writer, report, stop gunicorn."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    setup_django(args.database_url)
    data = ensure_data()
    stream = data["streams"]["bench-10k"]
    paths = [p.format(id=stream.pk) for weight, p in MIX for _ in range(weight)]
    proc = start_gunicorn(args.database_url, args.port, args.workers, args.threads)
    try:
        until = time.monotonic() + args.seconds
        latencies, errors = [], []
        threads = [threading.Thread(target=writer_loop, args=(stream.pk, until))]
        threads += [
            threading.Thread(
                target=client_loop, args=(args.port, paths, data["token"], until, latencies, errors)
            )
            for _ in range(args.clients)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        report(latencies, errors, time.monotonic() - started)
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
